//! Failures as data: the engine's refusals become JSON objects
//! `{"failure": {"class": …, …}}` that the Python layer (`lt/_errors.py`)
//! raises as the matching `lt.Error` subclass (`CheckError`,
//! `ConfigError`, `RunStopped`, `LogError`, `InternalError`). Nothing
//! here raises: a failure is a value until it reaches Python.

use lt::control::report::StartFailure;
use lt::exec::ConfigError;
use serde_json::{json, Value as Json};

/// A failure for the Python layer to raise: `{"failure": {...}}`.
#[derive(Debug)]
pub struct Failure(pub Json);

impl Failure {
    /// A failure of `class` with `message` (and `fields` merged in).
    pub fn new(class: &str, message: impl Into<String>, fields: Json) -> Failure {
        let mut obj = json!({"class": class, "message": message.into()});
        if let (Some(o), Json::Object(extra)) = (obj.as_object_mut(), fields) {
            o.extend(extra);
        }
        Failure(obj)
    }

    /// `{"failure": …}`, what a front-end function returns; its message
    /// and help speak of keywords, not of the command line's flags.
    pub fn into_json(mut self) -> Json {
        if let Some(o) = self.0.as_object_mut() {
            for key in ["message", "help"] {
                if let Some(Json::String(text)) = o.get_mut(key) {
                    *text = pythonize(text);
                }
            }
        }
        json!({ "failure": self.0 })
    }
}

/// `text` (an engine message or hint written for the command line) with
/// each flag of `lt run` / `lt check` named as the Python keyword that
/// does the same (`--max-steps N` → `limits={"max_steps": N}`).
pub fn pythonize(text: &str) -> String {
    if !text.contains("--") {
        return text.to_string();
    }
    let mut t = text.to_string();
    if let Some(at) = t.find("pass --executors tools.toml with a `[tools.") {
        // The session has no executors: a function, or a tools.toml.
        let rest = &t[at + "pass --executors tools.toml with a `[tools.".len()..];
        let tool: String = rest.chars().take_while(|c| *c != ']').collect();
        let replaced = format!(
            "pass tools={{\"{tool}\": function}} (a Python function taking the tool's argument), or tools=\"tools.toml\" with a `[tools.{tool}]`"
        );
        let end = rest.find("]`").map_or(t.len(), |e| {
            at + "pass --executors tools.toml with a `[tools.".len() + e + 2
        });
        t.replace_range(at..end, &replaced);
    }
    for (flag, key) in [
        ("--max-steps N", "max_steps"),
        ("--max-calls N", "max_calls"),
        ("--max-list-len N", "max_list_len"),
        ("--timeout-ms N", "timeout_ms"),
    ] {
        t = t.replace(flag, &format!("limits={{\"{key}\": N}}"));
    }
    for (flag, keyword) in [
        ("`--log session.jsonl`", "`log=\"session.jsonl\"`"),
        ("the --log path", "the log= path"),
        ("--log ", "log="),
        ("--force", "force=True"),
        ("--executors ", "tools="),
        ("--executors", "tools="),
        ("--profile ", "profile="),
        ("--profile", "profile="),
        ("--tools ", "declarations="),
        ("--tools", "declarations="),
        // The importer's dialect: the function of `lt.tools` that reads it.
        ("`--format openai`", "`lt.tools.from_openai`"),
        ("`--format anthropic`", "`lt.tools.from_anthropic`"),
        ("`--format mcp`", "`lt.tools.from_mcp`"),
        (
            "`--format` says which dialect to read",
            "`lt.tools.from_openai`, `from_anthropic` or `from_mcp` says which dialect to read",
        ),
    ] {
        t = t.replace(flag, keyword);
    }
    t
}

/// An invalid tools.toml or profile (`lt.ConfigError` with its file,
/// line, column and hint).
pub fn config_error(e: &ConfigError) -> Failure {
    Failure::new(
        "ConfigError",
        e.message.clone(),
        json!({"file": e.path, "line": e.line, "column": e.column, "help": e.help, "stage": "profile"}),
    )
}

/// A session that could not start (`lt.ConfigError`).
pub fn start_failure(f: &StartFailure) -> Failure {
    let stage = serde_json::to_value(f.stage).unwrap_or(Json::Null);
    Failure::new(
        "ConfigError",
        f.message.clone(),
        json!({"file": f.file, "line": f.line, "column": f.column, "help": f.help, "stage": stage}),
    )
}

/// A bug in lt (a panic caught, a thread lost): `lt.InternalError`.
pub fn internal(message: impl Into<String>) -> Failure {
    Failure::new(
        "InternalError",
        message,
        json!({"help": "this is a bug in lt; please report it with the program that caused it"}),
    )
}

/// The text of a caught panic's payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}
