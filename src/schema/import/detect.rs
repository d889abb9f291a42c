//! Recognising the dialect: where the tools are in the file, and each
//! tool's name, description and schemas.
//!
//! | form | dialect |
//! | --- | --- |
//! | `{"type": "function", "function": {name, description?, parameters?}}` | OpenAI (Chat Completions) |
//! | `{"type": "function", name, description?, parameters?}` | OpenAI (Responses) |
//! | `{name, description?, parameters}` (legacy `functions`) | OpenAI |
//! | `{name, description?, input_schema}` | Anthropic |
//! | `{name, description?, inputSchema, outputSchema?, annotations?, _meta?}` | MCP |
//!
//! The file holds one of these, an array of them, `{"tools": […]}` (an MCP
//! `tools/list` result, or a request body), `{"functions": […]}`, or a
//! JSON-RPC response `{"result": {"tools": […]}}`.

use super::ImportError;
use crate::schema::Dialect;
use serde_json::Value as Json;

/// One tool definition, as read from the file.
#[derive(Debug)]
pub(super) struct ToolDef<'a> {
    /// Its dialect.
    pub dialect: Dialect,
    /// Where it is in the file, for messages (`tools[2]`).
    pub at: String,
    /// The name as the definition gives it.
    pub name: String,
    /// MCP's display title, if any.
    pub title: Option<String>,
    /// The description, if any.
    pub description: Option<String>,
    /// The input schema; `None` when the definition has none (an OpenAI
    /// function without parameters).
    pub input: Option<&'a Json>,
    /// MCP's `outputSchema`.
    pub output: Option<&'a Json>,
    /// MCP's `annotations`.
    pub annotations: Option<&'a Json>,
    /// MCP's `_meta["lt/effects"]` (written by `lt tools export`).
    pub lt_effects: Option<&'a Json>,
    /// MCP's `execution.taskSupport` is `"required"`: the tool must be
    /// called as a task (`tools/call` with `task`, then `tasks/get`), which
    /// the `mcp` executor does not do, so the import leaves it out.
    pub task_required: bool,
}

const FORMS: &str = "an MCP tool {\"name\", \"inputSchema\"}, an Anthropic tool {\"name\", \"input_schema\"}, \
an OpenAI tool {\"type\": \"function\", \"function\": {\"name\", \"parameters\"}}, a list of them, or {\"tools\": [...]}";

/// The tool definitions in `value`, in file order.
pub(super) fn tool_defs(
    value: &Json,
    forced: Option<Dialect>,
) -> Result<Vec<ToolDef<'_>>, ImportError> {
    let (items, prefix): (Vec<&Json>, &str) = match value {
        Json::Array(items) => (items.iter().collect(), ""),
        Json::Object(map) => {
            if let Some(Json::Array(items)) = map.get("tools") {
                (items.iter().collect(), "tools")
            } else if let Some(Json::Array(items)) = map.get("result").and_then(|r| r.get("tools"))
            {
                (items.iter().collect(), "result.tools")
            } else if let Some(Json::Array(items)) = map.get("functions") {
                (items.iter().collect(), "functions")
            } else if let Some(error) = map.get("error").filter(|_| map.contains_key("jsonrpc")) {
                return Err(ImportError::new(format!(
                    "the file is a JSON-RPC error response, not a tool list: {}",
                    super::text::short_json(error, 200)
                )));
            } else if map.contains_key("tools") {
                return Err(
                    ImportError::new("`tools` is not a list of tool definitions")
                        .with_help(format!("expected {FORMS}")),
                );
            } else {
                return Ok(vec![tool_def(value, "the tool".to_string(), forced)?]);
            }
        }
        other => {
            return Err(ImportError::new(format!(
                "the file holds {}, not tool definitions",
                kind(other)
            ))
            .with_help(format!("expected {FORMS}")))
        }
    };
    if items.is_empty() {
        return Err(ImportError::new(
            "the file lists no tools (the list is empty)",
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| tool_def(item, format!("{prefix}[{i}]"), forced))
        .collect()
}

/// "a string", "an array", … for messages.
pub(super) fn kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn tool_def(item: &Json, at: String, forced: Option<Dialect>) -> Result<ToolDef<'_>, ImportError> {
    let Json::Object(map) = item else {
        return Err(ImportError::new(format!(
            "{at} is {}, not a tool definition (an object)",
            kind(item)
        ))
        .with_help(format!("expected {FORMS}")));
    };
    let function = map.get("function").filter(|f| f.is_object());
    let recognised = recognise(map);
    // With `--format`, what the definition looks like, when that differs.
    let looks_like = match (forced, recognised) {
        (Some(f), Some(r)) if f != r => Some(format!(
            "is `--format {}` right? it looks like {} tool (`--format {}`)",
            dialect_flag(f),
            match r {
                Dialect::Openai => "an OpenAI",
                Dialect::Anthropic => "an Anthropic",
                Dialect::Mcp => "an MCP",
            },
            dialect_flag(r)
        )),
        _ => None,
    };
    let dialect = match forced.or(recognised) {
        Some(d) => d,
        None => {
            if let Some(t) = map.get("type").and_then(Json::as_str) {
                return Err(ImportError::new(format!(
                    "{at}{} has `type: {t}` and no schema: an Anthropic built-in tool, or not a tool definition",
                    name_hint(map)
                ))
                .with_help("only tools with a JSON Schema can be imported; remove it from the list"));
            } else {
                return Err(ImportError::new(format!(
                    "{at}{} is not a recognisable tool definition: it has none of `inputSchema` (MCP), `input_schema` (Anthropic), `function` or `parameters` (OpenAI)",
                    name_hint(map)
                ))
                .with_help(format!("expected {FORMS}; `--format` says which dialect to read")));
            }
        }
    };
    let body = match dialect {
        Dialect::Openai => function.unwrap_or(item),
        Dialect::Anthropic | Dialect::Mcp => item,
    };
    let name = match body.get("name") {
        Some(Json::String(s)) if !s.is_empty() => s.clone(),
        Some(Json::String(_)) => return Err(ImportError::new(format!("{at} has an empty `name`"))),
        Some(other) => {
            return Err(ImportError::new(format!(
                "the `name` of {at} is {}, not a string",
                kind(other)
            )))
        }
        None => {
            return Err(ImportError::new(format!("{at} has no `name`")).with_help(
                looks_like.unwrap_or_else(|| {
                    "every tool definition names its tool: {\"name\": \"get_weather\", …}".into()
                }),
            ))
        }
    };
    let (schema_key, other_keys): (&str, [&str; 2]) = match dialect {
        Dialect::Openai => ("parameters", ["inputSchema", "input_schema"]),
        Dialect::Anthropic => ("input_schema", ["inputSchema", "parameters"]),
        Dialect::Mcp => ("inputSchema", ["input_schema", "parameters"]),
    };
    let input = body.get(schema_key);
    let found = other_keys.iter().find(|k| body.get(**k).is_some());
    if input.is_none() && (dialect != Dialect::Openai || found.is_some()) {
        let help = match (found, looks_like) {
            (Some(k), Some(hint)) => format!("it has `{k}`: {hint}"),
            (Some(k), None) => format!(
                "it has `{k}`: is `--format {}` right?",
                dialect_flag(dialect)
            ),
            (None, Some(hint)) => hint,
            (None, None) => format!(
                "{} tools describe their input in `{schema_key}`",
                dialect_name(dialect)
            ),
        };
        return Err(
            ImportError::new(format!("{at} (`{name}`) has no `{schema_key}`")).with_help(help),
        );
    }
    for (key, value) in [
        (schema_key, input),
        ("outputSchema", body.get("outputSchema")),
    ] {
        if let Some(v) = value {
            if !(v.is_object() || v.is_boolean()) {
                return Err(ImportError::new(format!(
                    "the `{key}` of {at} (`{name}`) is {}, not a JSON Schema",
                    kind(v)
                ))
                .with_help("a JSON Schema is an object such as {\"type\": \"object\", \"properties\": {…}}"));
            }
        }
    }
    let text = |key: &str| body.get(key).and_then(Json::as_str).map(str::to_string);
    let mcp = dialect == Dialect::Mcp;
    Ok(ToolDef {
        dialect,
        at,
        name,
        title: if mcp { text("title") } else { None },
        description: text("description"),
        input,
        output: if mcp { body.get("outputSchema") } else { None },
        annotations: if mcp { body.get("annotations") } else { None },
        lt_effects: if mcp {
            body.get("_meta").and_then(|m| m.get("lt/effects"))
        } else {
            None
        },
        task_required: mcp
            && body
                .get("execution")
                .and_then(|e| e.get("taskSupport"))
                .and_then(Json::as_str)
                == Some("required"),
    })
}

/// The dialect a definition's keys say, if any.
fn recognise(map: &serde_json::Map<String, Json>) -> Option<Dialect> {
    if map.get("function").is_some_and(Json::is_object)
        || map.get("type").and_then(Json::as_str) == Some("function")
        || map.contains_key("parameters")
    {
        Some(Dialect::Openai)
    } else if map.contains_key("inputSchema") {
        Some(Dialect::Mcp)
    } else if map.contains_key("input_schema") {
        Some(Dialect::Anthropic)
    } else {
        None
    }
}

fn name_hint(map: &serde_json::Map<String, Json>) -> String {
    match map.get("name").and_then(Json::as_str) {
        Some(n) => format!(" (`{n}`)"),
        None => String::new(),
    }
}

/// The dialect as `--format` spells it.
pub(super) fn dialect_flag(d: Dialect) -> &'static str {
    match d {
        Dialect::Openai => "openai",
        Dialect::Anthropic => "anthropic",
        Dialect::Mcp => "mcp",
    }
}

/// The dialect as prose names it.
pub(super) fn dialect_name(d: Dialect) -> &'static str {
    match d {
        Dialect::Openai => "OpenAI",
        Dialect::Anthropic => "Anthropic",
        Dialect::Mcp => "MCP",
    }
}
