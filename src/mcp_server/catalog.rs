//! The catalog of an `lt mcp` server: what it loads once at start and
//! shares between every program it runs.
//!
//! ```text
//! tools.lt ──ToolList::load (agent::task)──▶ declarations, checked (errors: refused)
//! tools.toml ──Registry::load──▶ executors ──executors_cover──▶ every listed tool runs on the server
//!            ──understated_effects──▶ no declaration hides an effect tools.toml gives its tool
//! --profile P.toml, else tools.toml's [profile], else allow everything ──▶ Profile
//! ──▶ Catalog { declarations' text, entries (name, doc, declaration), profile,
//!               ExecutorHost (one for the server's life: MCP servers kept), log dir }
//! ```
//!
//! The catalog holds only `Send + Sync` data (texts, the profile, the
//! executor host): each program is checked again on its session's thread,
//! where the declarations are parsed with it.

use crate::agent::task::{executors_cover, ExecutorGap, ToolList, ToolListError};
use crate::control::profile::Profile;
use crate::exec::{ExecutorHost, Registry};
use crate::runtime::limits::Limits;
use crate::source::SourceFile;
use std::path::{Path, PathBuf};

/// What `lt mcp` is started with.
#[derive(Clone, Debug)]
pub struct CatalogOptions {
    /// The declarations file (`--tools tools.lt`).
    pub tools: String,
    /// The executors file (`--executors tools.toml`).
    pub executors: String,
    /// A file with a `[profile]` table (`--profile`); else tools.toml's.
    pub profile: Option<String>,
    /// Where each session's log is written (`--log-dir`), one file per
    /// `run_program` call, `<session id>.jsonl`.
    pub log_dir: Option<PathBuf>,
    /// The limits of every run.
    pub limits: Limits,
    /// The longest wait for an answer to an approval question
    /// (`--approval-timeout-ms`), whatever the run's deadline.
    pub approval_wait: std::time::Duration,
}

/// One declared tool, as `search_tools` and `describe_tools` show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The tool's name.
    pub name: String,
    /// Its doc comment (the `//` lines above it), without the slashes.
    pub doc: Option<String>,
    /// Its declaration as written (`tool name: … ;`).
    pub declaration: String,
    /// The `type` aliases and `effect` labels its declaration names.
    pub needs: Vec<String>,
}

/// A `type` or `effect` declaration of tools.lt, with the names it declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Support {
    /// The names it declares (an alias, or effect labels).
    pub names: Vec<String>,
    /// Its text as written.
    pub text: String,
}

/// Why the server cannot start: a message and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
}

impl LoadError {
    fn new(message: impl Into<String>, help: Option<&str>) -> LoadError {
        LoadError {
            message: message.into(),
            help: help.map(str::to_string),
        }
    }
}

/// Everything the server's programs share.
pub struct Catalog {
    /// The declarations file's name (as diagnostics show it).
    pub tools_name: String,
    /// Its text, joined before every program.
    pub tools_text: String,
    /// The text the description shows (the declarations with their doc
    /// comments; an expression after them left out).
    pub shown: String,
    /// The declared tools, in declaration order.
    pub entries: Vec<Entry>,
    /// The `type` and `effect` declarations.
    pub support: Vec<Support>,
    /// The session's policy, as JSON ([`Profile::to_json`]: the parsed
    /// form is not `Send`); [`Catalog::profile`] parses it.
    pub profile_json: serde_json::Value,
    /// The policy's name.
    pub profile_name: String,
    /// The executors, kept for the server's life.
    pub host: ExecutorHost,
    /// tools.toml's bytes (hashed into every `session_started`).
    pub registry_bytes: Vec<u8>,
    /// Where each session's log goes.
    pub log_dir: Option<PathBuf>,
    /// The limits of every run.
    pub limits: Limits,
    /// The longest wait for an answer to an approval question
    /// (`--approval-timeout-ms`), whatever the run's deadline.
    pub approval_wait: std::time::Duration,
}

impl Catalog {
    /// Loads the catalog of `opts`, its executors on `handle` (a
    /// multi-thread runtime). Needs the stack the checker needs (the
    /// binary's main thread). Errors: a file that cannot be read or has
    /// errors, a tool without an executor, an understated effect.
    pub fn load(
        opts: &CatalogOptions,
        handle: tokio::runtime::Handle,
    ) -> Result<Catalog, LoadError> {
        let (tools_name, tools_text) = crate::frontend::read_source(&opts.tools)
            .map_err(|m| LoadError::new(format!("--tools: {m}"), None))?;
        let tools = match ToolList::load(&tools_text) {
            Ok(t) => t,
            Err(ToolListError::Errors(e)) => {
                let file = SourceFile::new(tools_name.clone(), tools_text.clone());
                let first: Vec<String> = e
                    .diagnostics
                    .iter()
                    .take(5)
                    .map(|d| {
                        let lc = file.line_col(d.span.start);
                        format!("{} at line {}, col {}: {}", d.code.as_str(), lc.line, lc.column, d.message)
                    })
                    .collect();
                return Err(LoadError::new(
                    format!("{tools_name} has errors:\n  {}", first.join("\n  ")),
                    Some("fix the declarations (`lt check` shows every error)"),
                ));
            }
            Err(ToolListError::NoTools) => {
                return Err(LoadError::new(
                    format!("{tools_name} declares no tools"),
                    Some("declare each tool: `tool lookup: {id: String} -{Read}-> {email: String};`, or write the file with `lt tools import`"),
                ))
            }
        };
        let path = Path::new(&opts.executors);
        let registry_bytes = crate::exec::read_config_bytes(path).map_err(|e| {
            LoadError::new(
                format!("cannot read {}: {e}", opts.executors),
                Some("check the path of --executors"),
            )
        })?;
        let registry = Registry::load(path).map_err(|e| LoadError::new(e.to_string(), None))?;
        match executors_cover(&tools, &registry) {
            Ok(()) => {}
            Err(ExecutorGap::Missing(m)) => {
                return Err(LoadError::new(
                    format!("{} has no executor for {}, which {tools_name} declares", opts.executors, m.join(", ")),
                    Some("add a `[tools.NAME]` table to tools.toml (docs/executors.md), or remove the tool from the declarations"),
                ))
            }
            Err(ExecutorGap::Client(t)) => {
                return Err(LoadError::new(
                    format!("tool {t} runs on the client (venue = \"client\"), which lt mcp does not support"),
                    Some("give it a server executor (command, http, mcp, fixed)"),
                ))
            }
        }
        let file = SourceFile::new(tools_name.clone(), tools_text.clone());
        if let Some(f) = crate::control::session::understated_effects(
            &file,
            &tools.sigs(),
            &tools.names(),
            &registry,
            Some(&opts.executors),
        ) {
            return Err(LoadError {
                message: f.message.clone(),
                help: f.help.clone(),
            });
        }
        let profile = load_profile(opts, &String::from_utf8_lossy(&registry_bytes))?;
        if profile.approvals == crate::control::profile::ApprovalMode::Api {
            return Err(LoadError::new(
                format!(
                    "the profile `{}` has approvals = \"api\": answers posted to `lt serve`'s approval API, which `lt mcp` does not have (every approval would be refused)",
                    profile.name
                ),
                Some("under `lt mcp` write approvals = \"prompt\" (asked of the person at the MCP client through elicitation, refused when the client cannot be asked), or \"allow\" or \"deny\" for a fixed answer"),
            ));
        }
        // Each session parses the profile again from its JSON: it must
        // come back whole (a policy lost would allow everything).
        if Profile::from_json(&profile.to_json()).is_err() {
            return Err(LoadError::new(
                format!(
                    "the profile {} cannot be shared between sessions",
                    profile.name
                ),
                None,
            ));
        }
        let (entries, support) = entries(&tools, &tools_text);
        Ok(Catalog {
            tools_name,
            shown: tools.shown.clone(),
            tools_text,
            entries,
            support,
            profile_json: profile.to_json(),
            profile_name: profile.name.clone(),
            host: ExecutorHost::new(registry, handle),
            registry_bytes,
            log_dir: opts.log_dir.clone(),
            limits: opts.limits.clone(),
            approval_wait: opts.approval_wait,
        })
    }
}

impl Catalog {
    /// The session's policy (a program's check and its session each parse
    /// one on their thread; [`Catalog::load`] made sure it parses).
    pub fn profile(&self) -> Profile {
        let mut p = Profile::from_json(&self.profile_json).unwrap_or_default();
        p.name = self.profile_name.clone();
        p
    }
}

/// The profile: `--profile`, else tools.toml's `[profile]`, else the
/// default (named `default`).
fn load_profile(opts: &CatalogOptions, registry_text: &str) -> Result<Profile, LoadError> {
    let err = |e: crate::exec::ConfigError| LoadError::new(e.to_string(), None);
    let p = match &opts.profile {
        Some(path) => {
            let text =
                crate::exec::read_config_text(Path::new(path), "the profile").map_err(err)?;
            Profile::from_toml(&text, path).map_err(err)?
        }
        None => Profile::from_toml(registry_text, &opts.executors).map_err(err)?,
    }
    .unwrap_or_default();
    Ok(if p.name.is_empty() {
        Profile {
            name: "default".into(),
            ..p
        }
    } else {
        p
    })
}

/// The tools and the `type`/`effect` declarations of a checked tool list.
fn entries(tools: &ToolList, text: &str) -> (Vec<Entry>, Vec<Support>) {
    use crate::syntax::ast::Decl;
    let slice = |s: crate::source::Span| {
        text.get(s.start as usize..s.end as usize)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let support: Vec<Support> = tools
        .decls
        .program
        .decls
        .iter()
        .filter_map(|d| match d {
            Decl::Type(a) => Some(Support {
                names: vec![a.name.name.to_string()],
                text: slice(a.span),
            }),
            Decl::Effect(labels, span) => Some(Support {
                names: labels.iter().map(|l| l.name.to_string()).collect(),
                text: slice(*span),
            }),
            _ => None,
        })
        .collect();
    let entries = tools
        .decls
        .tools
        .iter()
        .map(|t| {
            let mut declaration = slice(t.sig.span);
            if !declaration.ends_with(';') {
                declaration.push(';');
            }
            let needs = needed(&declaration, &support);
            Entry {
                name: t.sig.name.to_string(),
                doc: t.doc.clone(),
                declaration,
                needs,
            }
        })
        .collect();
    (entries, support)
}

/// The support declarations `declaration` names, directly or through
/// another alias, in file order.
fn needed(declaration: &str, support: &[Support]) -> Vec<String> {
    let mut taken = vec![false; support.len()];
    let mut texts = vec![declaration.to_string()];
    loop {
        let mut grew = false;
        for (i, s) in support.iter().enumerate() {
            if !taken[i] && s.names.iter().any(|n| texts.iter().any(|t| mentions(t, n))) {
                taken[i] = true;
                texts.push(s.text.clone());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    support
        .iter()
        .zip(taken)
        .filter(|(_, t)| *t)
        .map(|(s, _)| s.text.clone())
        .collect()
}

/// Whether `text` has the word `name` (not inside a longer identifier).
fn mentions(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_needs_the_aliases_it_names_and_theirs() {
        let support = vec![
            Support {
                names: vec!["Money".into()],
                text: "type Money = {cents: Int};".into(),
            },
            Support {
                names: vec!["Order".into()],
                text: "type Order = {total: Money};".into(),
            },
            Support {
                names: vec!["Payment".into()],
                text: "effect Payment;".into(),
            },
            Support {
                names: vec!["Other".into()],
                text: "type Other = Int;".into(),
            },
        ];
        let n = needed(
            "tool pay: Order -{Write, Payment}-> {id: String};",
            &support,
        );
        assert_eq!(
            n,
            vec![
                "type Money = {cents: Int};",
                "type Order = {total: Money};",
                "effect Payment;"
            ]
        );
        assert!(!mentions("tool t: Moneys -> Int", "Money"));
    }
}
