//! The `tools.toml` skeleton: one table per tool (its executor, `effects`,
//! `idempotent`) and its `[tools.NAME.checks]`.
//!
//! Values are written by the `toml` crate (its escaping); keys and comments
//! here. Each check schema is one inline table (the form `src/exec/config.rs`
//! reads):
//!
//! ```toml
//! [tools.create_event.checks]
//! input = { properties = { seats = { minimum = 1 }, start = { format = "date-time" } } }
//! ```
//!
//! The text is parsed back before it is returned, so a mistake here is an
//! error rather than a file that does not load.

use serde::Serialize;
use serde_json::{Map, Value as Json};

/// How a tool runs.
#[derive(Debug)]
pub(super) enum Executor {
    /// A live MCP server's command line (`--mcp -- COMMAND…`), and the
    /// folder to run it in when that matters.
    Mcp(Vec<String>, Option<String>),
    /// An MCP tool read from a file: the server's command is not known.
    McpUnknown,
    /// An OpenAI or Anthropic tool: nothing runs it yet.
    Missing,
}

/// One tool's table.
#[derive(Debug)]
pub(super) struct Table<'a> {
    /// The lt name (the table's key).
    pub name: &'a str,
    /// The name the definition gives.
    pub original: &'a str,
    /// Its executor.
    pub executor: &'a Executor,
    /// The effects to state, when the definition says; else the guess, as
    /// a comment.
    pub effects: &'a [String],
    /// Whether `effects` are known.
    pub effects_known: bool,
    /// `idempotent = true`, and why.
    pub idempotent: Option<&'static str>,
    /// `checks.input` and `checks.output`.
    pub input_checks: Option<&'a Map<String, Json>>,
    pub output_checks: Option<&'a Map<String, Json>>,
}

/// The file's text.
pub(super) fn tools_toml(header: &[String], tables: &[Table<'_>]) -> Result<String, String> {
    let mut out = String::new();
    for line in header {
        comment(&mut out, line);
    }
    for t in tables {
        out.push('\n');
        out.push_str(&format!("[tools.{}]\n", key(t.name)));
        let tool = value(&toml::Value::String(t.original.to_string()))?;
        match t.executor {
            Executor::Mcp(command, cwd) => {
                let mut mcp = toml::map::Map::new();
                if let Some(cwd) = cwd {
                    mcp.insert("cwd".into(), toml::Value::String(cwd.clone()));
                }
                mcp.insert(
                    "command".into(),
                    toml::Value::Array(command.iter().cloned().map(toml::Value::String).collect()),
                );
                mcp.insert("tool".into(), toml::Value::String(t.original.to_string()));
                out.push_str(&format!("mcp = {}\n", value(&toml::Value::Table(mcp))?));
            }
            Executor::McpUnknown => {
                comment(
                    &mut out,
                    "The MCP server that serves this tool: put its command line here,",
                );
                comment(&mut out, "uncomment the line and delete the `fixed` line.");
                out.push_str(&format!(
                    "# mcp = {{ command = [\"SERVER\", \"ARGUMENTS\"], tool = {tool} }}\n"
                ));
                let error = format!(
                    "{} has no executor yet: set its MCP server's command in tools.toml",
                    t.name
                );
                out.push_str(&format!(
                    "fixed = {{ error = {} }}\n",
                    value(&toml::Value::String(error))?
                ));
            }
            Executor::Missing => {
                if t.original != t.name {
                    comment(&mut out, &format!("The definition calls this tool {tool}."));
                }
                comment(
                    &mut out,
                    "No executor yet: replace the `fixed` line with one of",
                );
                comment(
                    &mut out,
                    &format!(
                        "  command = [\"python3\", \"tools/{}.py\"]     # argument JSON on stdin, result JSON on stdout",
                        t.name
                    ),
                );
                comment(
                    &mut out,
                    &format!(
                        "  http = {{ url = \"https://example.com/{}\" }}   # a POST per call",
                        t.name
                    ),
                );
                let error = format!("{} has no executor yet: set one in tools.toml", t.name);
                out.push_str(&format!(
                    "fixed = {{ error = {} }}\n",
                    value(&toml::Value::String(error))?
                ));
            }
        }
        let labels = value(&toml::Value::Array(
            t.effects.iter().cloned().map(toml::Value::String).collect(),
        ))?;
        if t.effects_known {
            out.push_str(&format!("effects = {labels}\n"));
        } else {
            comment(
                &mut out,
                "What the tool really does, once you know (the declaration must include these):",
            );
            out.push_str(&format!("# effects = {labels}\n"));
        }
        if let Some(why) = t.idempotent {
            out.push_str(&format!("idempotent = true   # {}\n", clean(why)));
        }
        if t.input_checks.is_some() || t.output_checks.is_some() {
            out.push('\n');
            out.push_str(&format!("[tools.{}.checks]\n", key(t.name)));
            for (which, checks) in [("input", t.input_checks), ("output", t.output_checks)] {
                if let Some(c) = checks {
                    let schema = to_toml(&Json::Object(c.clone()))?;
                    out.push_str(&format!("{which} = {}\n", value(&schema)?));
                }
            }
        }
    }
    if let Err(e) = toml::from_str::<toml::Value>(&out) {
        return Err(format!(
            "the tools.toml written does not parse: {}",
            e.message()
        ));
    }
    Ok(out)
}

/// `# text` (control characters made spaces).
fn comment(out: &mut String, text: &str) {
    let text = clean(text);
    if text.is_empty() {
        out.push_str("#\n");
    } else {
        out.push_str(&format!("# {text}\n"));
    }
}

fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A TOML key: bare when it can be, else a basic string.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return k.to_string();
    }
    let mut out = String::from("\"");
    for c in k.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML value's text.
fn value(v: &toml::Value) -> Result<String, String> {
    let mut out = String::new();
    v.serialize(toml::ser::ValueSerializer::new(&mut out))
        .map_err(|e| format!("cannot write a TOML value: {e}"))?;
    Ok(out)
}

/// JSON → TOML: integers that fit in 64 bits stay integers, other numbers
/// are floats; `null` has no TOML form (pruned schemas hold none).
fn to_toml(v: &Json) -> Result<toml::Value, String> {
    Ok(match v {
        Json::Null => return Err("a check holds null, which TOML cannot write".into()),
        Json::Bool(b) => toml::Value::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(
                n.as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or("a number TOML cannot write")?,
            ),
        },
        Json::String(s) => toml::Value::String(s.clone()),
        Json::Array(items) => {
            toml::Value::Array(items.iter().map(to_toml).collect::<Result<_, _>>()?)
        }
        Json::Object(map) => {
            let mut t = toml::map::Map::new();
            for (k, v) in map {
                t.insert(k.clone(), to_toml(v)?);
            }
            toml::Value::Table(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys() {
        assert_eq!(key("repo_path"), "repo_path");
        assert_eq!(key("a.b"), "\"a.b\"");
        assert_eq!(key("q\"\n"), "\"q\\\"\\u000A\"");
        assert_eq!(key(""), "\"\"");
    }

    #[test]
    fn checks_round_trip() {
        let checks = json!({"properties": {"a.b": {"format": "uri"}, "n": {"minimum": 1.5, "maximum": 18446744073709551615u64},
                            "e": {"anyOf": [{"enum": [1, 2]}, {"type": "null"}]}}});
        let Json::Object(c) = &checks else { return };
        let executor = Executor::McpUnknown;
        let table = Table {
            name: "t",
            original: "t-1",
            executor: &executor,
            effects: &["Read".to_string()],
            effects_known: true,
            idempotent: Some("idempotentHint: true"),
            input_checks: Some(c),
            output_checks: None,
        };
        let text = tools_toml(&["header".into()], &[table]).expect("valid TOML");
        let back: toml::Value = toml::from_str(&text).expect("parses");
        let input = &back["tools"]["t"]["checks"]["input"];
        assert_eq!(input["properties"]["a.b"]["format"].as_str(), Some("uri"));
        assert_eq!(input["properties"]["n"]["minimum"].as_float(), Some(1.5));
        assert_eq!(back["tools"]["t"]["effects"][0].as_str(), Some("Read"));
    }
}
