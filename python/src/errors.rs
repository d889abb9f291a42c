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

    /// `{"failure": …}`, what a front-end function returns.
    pub fn into_json(self) -> Json {
        json!({ "failure": self.0 })
    }
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
