//! Run-time checks at the executor boundary: what a tool's JSON Schema says
//! that lt's types cannot (formats, numeric bounds, lengths, patterns).
//!
//! A tool table may carry two JSON Schemas, written as TOML tables:
//!
//! ```toml
//! [tools.create_event.checks]
//! input = { properties = { start = { format = "date-time" }, seats = { minimum = 1 } } }
//! output = { properties = { link = { format = "uri" } } }
//! ```
//!
//! `lt tools import` writes them from the definitions it reads (the parts of
//! a schema that have no lt type: `format`, `minimum`/`maximum`/
//! `exclusiveMinimum`/`exclusiveMaximum`/`multipleOf`, `minLength`/
//! `maxLength`/`pattern`, `minItems`/`maxItems`), pruned to the paths where
//! they occur; any JSON Schema (draft 2020-12) is accepted. Both are
//! compiled once, when `tools.toml` is loaded (an invalid schema is a
//! configuration error), by the `jsonschema` crate with format assertions
//! on (the 2020-12 vocabulary makes `format` an annotation by default; here
//! it is a check, as the importer promised).
//!
//! Where they apply, for every server-venue tool (command, http, mcp,
//! fixed):
//!
//! - `input`: the argument, after lt's type check, before the executor is
//!   started. A failure is the call's `Err` (`Failed`): `tool T was not run:
//!   its argument fails the checks of tools.toml: at /start: "soon" is not a
//!   "date-time"`. The tool never sees it.
//! - `output`: the tool's result JSON, before the boundary converts it to a
//!   value of the declared type. A failure is the call's `Err`
//!   (`BadOutput`): `tool T returned a result that fails the checks of
//!   tools.toml: at /count: -1 is less than the minimum of 0`.
//!
//! Either way the outcome is recorded in the log like any other, so replay
//! reproduces it without the checks. Client-venue tools are run by the
//! client; `checks` is rejected on them at load time.

use crate::runtime::host::{FailureKind, ToolFailure};
use serde_json::Value as Json;

/// How many violations one message lists (the rest are counted).
const SHOWN: usize = 3;

/// One tool's compiled checks.
pub(crate) struct Checks {
    input: Option<jsonschema::Validator>,
    output: Option<jsonschema::Validator>,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checks")
            .field("input", &self.input.is_some())
            .field("output", &self.output.is_some())
            .finish()
    }
}

impl Checks {
    /// Compiles the schemas. Errors: `input: <why the schema is invalid>`.
    pub(crate) fn compile(input: Option<&Json>, output: Option<&Json>) -> Result<Checks, String> {
        let build = |which: &str, schema: Option<&Json>| {
            schema
                .map(|s| {
                    jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft202012)
                        .should_validate_formats(true)
                        .build(s)
                        .map_err(|e| format!("{which}: not a valid JSON Schema: {e}"))
                })
                .transpose()
        };
        Ok(Checks {
            input: build("input", input)?,
            output: build("output", output)?,
        })
    }

    /// Checks a call's argument; `Err` (the tool must not run) on a violation.
    pub(crate) fn check_input(&self, tool: &str, arg: &Json) -> Result<(), ToolFailure> {
        match self.input.as_ref().and_then(|v| violations(v, arg)) {
            None => Ok(()),
            Some(why) => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Failed,
                message: format!(
                    "tool {tool} was not run: its argument fails the checks of tools.toml: {why}"
                ),
            }),
        }
    }

    /// Checks a tool's result JSON; `Err` on a violation.
    pub(crate) fn check_output(&self, tool: &str, result: &Json) -> Result<(), ToolFailure> {
        match self.output.as_ref().and_then(|v| violations(v, result)) {
            None => Ok(()),
            Some(why) => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::BadOutput,
                message: format!(
                    "tool {tool} returned a result that fails the checks of tools.toml: {why}"
                ),
            }),
        }
    }
}

/// The first few violations of `value`, as `at /a/0: <message>; …`, or
/// `None` when it is valid.
fn violations(validator: &jsonschema::Validator, value: &Json) -> Option<String> {
    if validator.is_valid(value) {
        return None;
    }
    let mut shown = Vec::new();
    let mut more = 0usize;
    for error in validator.iter_errors(value) {
        if shown.len() < SHOWN {
            let path = error.instance_path().to_string();
            let at = if path.is_empty() {
                "/".to_string()
            } else {
                path
            };
            shown.push(format!("at {at}: {}", clip(&error.to_string())));
        } else {
            more += 1;
        }
    }
    if shown.is_empty() {
        // is_valid and iter_errors disagree only on a library bug; say so
        // rather than letting an invalid value through.
        return Some("the value does not satisfy the schema".to_string());
    }
    let mut text = shown.join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    Some(text)
}

/// A message cut to 200 characters (an error may quote a large value).
fn clip(message: &str) -> String {
    const MAX: usize = 200;
    match message.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_and_bounds_are_checked() {
        let input = json!({"properties": {
            "start": {"format": "date-time"},
            "seats": {"minimum": 1, "maximum": 10},
            "email": {"format": "email"},
            "site": {"format": "uri"}
        }});
        let checks = Checks::compile(Some(&input), None).expect("valid schema");
        let ok = json!({"start": "2026-12-02T10:00:00Z", "seats": 3,
                        "email": "a@example.com", "site": "https://example.com/x"});
        assert!(checks.check_input("t", &ok).is_ok());
        let bad = json!({"start": "soon", "seats": 0, "email": "nope", "site": "::"});
        let err = checks.check_input("t", &bad).expect_err("four violations");
        assert_eq!(err.kind, FailureKind::Failed);
        assert!(
            err.message.starts_with("tool t was not run"),
            "{}",
            err.message
        );
        assert!(
            err.message
                .contains("at /seats: 0 is less than the minimum of 1"),
            "{}",
            err.message
        );
        assert!(err.message.contains("and 1 more"), "{}", err.message);
        // Absent optional fields and nulls pass: the keywords apply to
        // strings and numbers only.
        assert!(checks.check_input("t", &json!({"start": null})).is_ok());
        assert!(checks.check_output("t", &bad).is_ok(), "no output checks");
    }

    #[test]
    fn an_invalid_schema_is_reported() {
        let err = Checks::compile(None, Some(&json!({"minimum": "one"}))).expect_err("invalid");
        assert!(err.starts_with("output: not a valid JSON Schema"), "{err}");
    }
}
