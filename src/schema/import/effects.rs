//! A tool's effects and idempotence, from MCP annotations (or lt's own
//! `_meta["lt/effects"]`); OpenAI and Anthropic definitions say nothing.
//!
//! MCP's annotations are hints, with the spec's defaults when absent:
//! `readOnlyHint` false, `destructiveHint` true, `idempotentHint` false,
//! `openWorldHint` true (destructive and idempotent mean something only for
//! a tool that is not read-only). So a tool without annotations is taken to
//! write, delete and reach the network.

use super::detect::{dialect_name, ToolDef};
use crate::schema::Dialect;
use serde_json::Value as Json;

/// The built-in labels, in the order lt prints them first.
const BUILTIN: [&str; 3] = ["Read", "Write", "Network"];

/// What the importer decides about a tool's effects.
#[derive(Debug)]
pub(super) struct Effects {
    /// The labels, in lt's order (Read, Write, Network, then the others sorted).
    pub labels: Vec<String>,
    /// Whether they come from the definition (then `tools.toml` states them).
    pub known: bool,
    /// Whether repeating a call is safe (`idempotent = true`), and why.
    pub idempotent: Option<&'static str>,
    /// Where the labels come from, for the comment above the tool.
    pub note: String,
    /// Annotations that are not what MCP says (a hint that is not a
    /// boolean), for a warning.
    pub warnings: Vec<String>,
}

/// The hints MCP defines, with their defaults.
const HINTS: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

/// The effects of `def`.
pub(super) fn effects(def: &ToolDef<'_>) -> Effects {
    if def.dialect != Dialect::Mcp {
        return Effects {
            labels: vec!["Write".into()],
            known: false,
            idempotent: None,
            warnings: Vec::new(),
            note: format!(
                "effects unknown ({} definitions do not say): Write is a guess; narrow it (-{{Read}}->) or widen it (Network), and state it as `effects` in tools.toml",
                dialect_name(def.dialect)
            ),
        };
    }
    let mut ignored = String::new();
    if let Some(meta) = def.lt_effects {
        match lt_labels(meta) {
            Ok(labels) => {
                let idempotent = if labels.is_empty() {
                    Some("no effects (lt/effects), so a repeated call is harmless")
                } else if labels.iter().all(|l| l == "Read") {
                    Some("read-only (lt/effects), so a repeated call is harmless")
                } else {
                    None
                };
                return Effects {
                    labels,
                    known: true,
                    idempotent,
                    note: "effects as lt declared them (_meta \"lt/effects\")".into(),
                    warnings: Vec::new(),
                };
            }
            Err(why) => ignored = format!(" (_meta \"lt/effects\" ignored: {why})"),
        }
    }
    let hint = |key: &str| {
        def.annotations
            .and_then(|a| a.get(key))
            .and_then(Json::as_bool)
    };
    let read_only = hint("readOnlyHint").unwrap_or(false);
    let destructive = !read_only && hint("destructiveHint").unwrap_or(true);
    let open_world = hint("openWorldHint").unwrap_or(true);
    let mut labels = vec![if read_only { "Read" } else { "Write" }.to_string()];
    if destructive {
        labels.push("Delete".into());
    }
    if open_world {
        labels.push("Network".into());
    }
    // Hints given, but not as booleans: MCP's default applies, and the
    // note and a warning say so.
    let mut malformed = Vec::new();
    match def.annotations {
        None => {}
        Some(Json::Object(a)) => {
            for (key, default) in HINTS {
                if let Some(v) = a.get(key).filter(|v| !v.is_boolean()) {
                    malformed.push(format!(
                        "{key} is {}, not a boolean: MCP's default ({default}) applies",
                        super::text::short_json(v, 40)
                    ));
                }
            }
        }
        Some(other) => malformed.push(format!(
            "annotations is {}, not an object: MCP's defaults apply",
            super::detect::kind(other)
        )),
    }
    for m in &malformed {
        ignored = format!("{ignored}; {m}");
    }
    let given = HINTS
        .iter()
        .any(|(k, _)| def.annotations.and_then(|a| a.get(*k)).is_some());
    let note = if given {
        // Each label and the hint it comes from; "(default)" where the
        // hint is absent and MCP's default decides.
        let said = |key: &str| {
            if hint(key).is_some() {
                ""
            } else {
                ", by default"
            }
        };
        let mut parts = vec![if read_only {
            "Read (readOnlyHint)".to_string()
        } else {
            format!("Write (not readOnlyHint{})", said("readOnlyHint"))
        }];
        if !read_only {
            parts.push(if destructive {
                format!("Delete (destructiveHint{})", said("destructiveHint"))
            } else {
                "no Delete (destructiveHint false)".to_string()
            });
        }
        parts.push(if open_world {
            format!("Network (openWorldHint{})", said("openWorldHint"))
        } else {
            "no Network (openWorldHint false)".to_string()
        });
        format!(
            "effects from the MCP annotations: {}{ignored}",
            parts.join(", ")
        )
    } else {
        let usable = if malformed.is_empty() { "" } else { "usable " };
        format!(
            "no {usable}MCP annotations, so MCP's defaults: Write (not read-only), Delete (destructive), Network (open world){ignored}"
        )
    };
    let idempotent = if read_only {
        Some("read-only (readOnlyHint), so a repeated call is harmless")
    } else if hint("idempotentHint") == Some(true) {
        Some("idempotentHint: true")
    } else {
        None
    };
    Effects {
        labels: ordered(labels),
        known: true,
        idempotent,
        note,
        warnings: malformed,
    }
}

/// The labels of `_meta["lt/effects"]`: a list of capitalised names
/// (`Pure` means none).
fn lt_labels(meta: &Json) -> Result<Vec<String>, String> {
    let Json::Array(items) = meta else {
        return Err("not a list".into());
    };
    let mut labels = Vec::new();
    for item in items {
        let Some(label) = item.as_str() else {
            return Err("not a list of strings".into());
        };
        if !is_label(label) {
            return Err(format!(
                "{} is not an effect label",
                super::text::short_json(item, 40)
            ));
        }
        if label != "Pure" && !labels.iter().any(|l| l == label) {
            labels.push(label.to_string());
        }
    }
    Ok(ordered(labels))
}

/// `[A-Z][A-Za-z0-9_]*`.
pub(super) fn is_label(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Read, Write, Network first, then the others sorted, as lt prints a row.
fn ordered(mut labels: Vec<String>) -> Vec<String> {
    labels.sort_by_key(|l| {
        (
            BUILTIN.iter().position(|b| b == l).unwrap_or(BUILTIN.len()),
            l.clone(),
        )
    });
    labels.dedup();
    labels
}

/// True for a label lt declares itself (no `effect` declaration needed).
pub(super) fn is_builtin(label: &str) -> bool {
    BUILTIN.contains(&label)
}
