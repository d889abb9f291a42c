//! The loop's messages to the model: the task, diagnostics, run results,
//! unmet trace requirements. Made for models: compact, one problem per
//! entry, each with its code, position, message, fix hint and the offending
//! line, so that the model can fix every problem in one attempt
//! (`docs/llm-guide.md`, "How errors come back", documents this shape).
//!
//! ```text
//! Your program was rejected before anything ran (1 error). Fix every error and send the whole corrected program in one ```lt block.
//! E0202 at line 7, col 20: Field 'plan' not found in record type {id: String, email: String}
//!   7 | let p = account.plan in
//!   fix: the closest field is `id`; use one of the record's fields: id, email
//! ```

use crate::diag::Diagnostic;
use crate::log::EventBody;
use crate::source::SourceFile;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// Most problems listed in one message (the rest are counted).
pub const MAX_PROBLEMS: usize = 10;
/// Most characters of an offending line, a value or a tool's message.
const MAX_LINE: usize = 160;
/// Most characters of a run's value in the message.
const MAX_VALUE: usize = 4000;
/// Most calls listed after a run.
const MAX_CALLS: usize = 20;

/// The first message: the task, the session's rules (one sentence each:
/// denied tools, budgets, trace requirements), and what to send back.
pub fn task(task: &str, rules: &[String]) -> String {
    let mut out = format!("Task: {}\n", task.trim());
    if !rules.is_empty() {
        out.push_str("\nThis session's rules:\n");
        for r in rules {
            out.push_str(&format!("- {r}\n"));
        }
    }
    out.push_str("\nWrite one lt program that does this with the tools listed in the system prompt. Reply with the program in one ```lt block.");
    out
}

/// One problem of a rejected program, as the model sees it and as the log
/// records it (`program_checked.diagnostics`).
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// `E0202`, or `cut_off` / `no_program` for problems of the reply.
    pub code: String,
    /// 1-based line and column (0: not about a position).
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The message.
    pub message: String,
    /// The fix hint, when there is one.
    pub help: Option<String>,
}

impl Problem {
    /// A checker diagnostic.
    pub fn from_diagnostic(file: &SourceFile, d: &Diagnostic) -> Problem {
        let lc = file.line_col(d.span.start);
        // Clipped: a message can quote a huge type or literal, and the log
        // keeps every problem of every sample.
        Problem {
            code: d.code.as_str().to_string(),
            line: lc.line,
            column: lc.column,
            message: clip(&d.message, 1000),
            help: d
                .help
                .as_deref()
                .or_else(|| d.notes.first().map(String::as_str))
                .map(|h| clip(h, 1000)),
        }
    }

    /// The log's form: `{code, line, column, message, help}`.
    pub fn to_json(&self) -> Json {
        json!({
            "code": self.code,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "help": self.help,
        })
    }
}

/// At most `max` characters of `s`, control characters escaped, `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() && c != '\n' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The message for a rejected program: every problem (at most
/// [`MAX_PROBLEMS`]), `more` problems beyond those counted.
pub fn rejected(file: &SourceFile, problems: &[Problem], more: usize) -> String {
    let total = problems.len() + more;
    let mut out = format!(
        "Your program was rejected before anything ran ({total} error{}). Fix every error and send the whole corrected program in one ```lt block.",
        if total == 1 { "" } else { "s" }
    );
    for p in problems.iter().take(MAX_PROBLEMS) {
        out.push('\n');
        if p.line > 0 {
            out.push_str(&format!(
                "{} at line {}, col {}: {}",
                p.code,
                p.line,
                p.column,
                clip(&p.message, 400).replace('\n', " ")
            ));
            let text = file.line_text(p.line).trim_end();
            if !text.trim().is_empty() {
                out.push_str(&format!("\n  {} | {}", p.line, clip(text, MAX_LINE)));
            }
        } else {
            out.push_str(&format!("{}: {}", p.code, clip(&p.message, 400)));
        }
        if let Some(h) = &p.help {
            out.push_str(&format!("\n  fix: {}", clip(h, 400).replace('\n', " ")));
        }
    }
    let unlisted = total.saturating_sub(problems.len().min(MAX_PROBLEMS));
    if unlisted > 0 {
        out.push_str(&format!(
            "\n… and {unlisted} more error{} not listed: fix the ones above first.",
            if unlisted == 1 { "" } else { "s" }
        ));
    }
    out
}

/// What one call of a run did, for the model and for trace requirements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallNote {
    /// The call's identity.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// `ok`, `err`, `denied`, `failed`, `timed_out`, or `pending` (no outcome).
    pub status: String,
    /// The error or denial message, when not ok.
    pub message: Option<String>,
}

/// The calls of one run, gathered from its events in log order (live: as
/// they are appended; in replay: from the recorded events).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallNotes {
    /// One per proposed call, in proposal order.
    pub calls: Vec<CallNote>,
}

impl CallNotes {
    /// Takes note of `event` (events of other kinds are ignored).
    pub fn observe(&mut self, event: &EventBody) {
        match event {
            EventBody::Proposed { call_id, tool, .. } => self.calls.push(CallNote {
                call_id: call_id.clone(),
                tool: tool.clone(),
                status: "pending".into(),
                message: None,
            }),
            EventBody::Decided {
                call_id,
                decision: crate::log::Decision::Deny,
                rule,
                reason,
            } => self.set(call_id, "denied", Some(format!("{rule}: {reason}"))),
            EventBody::Completed {
                call_id, result, ..
            } => match result.get("Err") {
                Some(e) => self.set(
                    call_id,
                    "err",
                    Some(e.as_str().map_or_else(|| e.to_string(), str::to_string)),
                ),
                None => self.set(call_id, "ok", None),
            },
            EventBody::Failed {
                call_id, message, ..
            } => self.set(call_id, "failed", Some(message.clone())),
            EventBody::TimedOut {
                call_id, message, ..
            } => self.set(call_id, "timed_out", Some(message.clone())),
            _ => {}
        }
    }

    fn set(&mut self, call_id: &str, status: &str, message: Option<String>) {
        if let Some(c) = self.calls.iter_mut().rev().find(|c| c.call_id == call_id) {
            c.status = status.to_string();
            c.message = message;
        }
    }

    /// Successful calls per tool.
    pub fn successes(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for c in self.calls.iter().filter(|c| c.status == "ok") {
            *out.entry(c.tool.clone()).or_insert(0) += 1;
        }
        out
    }
}

/// How a run ended, for [`ran`].
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// The program's value, printed in lt's syntax ([`show_value`]).
    Value(String),
    /// The run stopped: its kind (`step_limit`, …) and message.
    Stopped {
        /// The run error's kind.
        kind: String,
        /// Its message.
        message: String,
    },
}

/// The message after a run: how it ended and what each call did.
/// `last`: no more runs are allowed (`max_turns`), so the model must answer.
pub fn ran(end: &RunEnd, calls: &CallNotes, last: bool) -> String {
    let n = calls.calls.len();
    let mut out = match end {
        RunEnd::Value(v) => format!(
            "The program ran: {n} tool call{}. Value: {v}",
            if n == 1 { "" } else { "s" },
        ),
        RunEnd::Stopped { kind, message } => format!(
            "The run stopped ({kind}) after {n} tool call{}: {}",
            if n == 1 { "" } else { "s" },
            clip(message, 400)
        ),
    };
    for c in calls.calls.iter().take(MAX_CALLS) {
        out.push_str(&format!("\n- {} {}", c.tool, c.status));
        if let Some(m) = &c.message {
            out.push_str(&format!(": {}", clip(m, MAX_LINE).replace('\n', " ")));
        }
    }
    if n > MAX_CALLS {
        out.push_str(&format!("\n- … and {} more calls", n - MAX_CALLS));
    }
    if last {
        out.push_str("\nThat was the last run this session allows: answer the task now in plain text (no code block), from the results above.");
    } else {
        out.push_str("\nIf this answers the task, reply with the answer in plain text (no code block). Otherwise send the next program in one ```lt block.");
    }
    out
}

/// The message when the model wants to finish but the profile's trace
/// requirements are not met. `unmet`: (tag, required, done, tools with the tag).
pub fn trace_unmet(unmet: &[(String, u64, u64, Vec<String>)]) -> String {
    let mut out = String::from(
        "You cannot finish yet: this session requires more successful tool calls before an answer.",
    );
    for (tag, min, done, tools) in unmet {
        out.push_str(&format!(
            "\n- at least {min} successful call{} of a tool tagged `{tag}` ({}); done so far: {done}",
            if *min == 1 { "" } else { "s" },
            if tools.is_empty() {
                "no declared tool has this tag".to_string()
            } else {
                tools.join(", ")
            }
        ));
    }
    out.push_str("\nSend a program that makes these calls, in one ```lt block.");
    out
}

/// Longest string shown whole in a run's value (longer: its start and its length).
const MAX_SHOWN_STRING: usize = 500;
/// Most list elements shown in a run's value (more: the count of the rest).
const MAX_SHOWN_ITEMS: usize = 50;

/// A run's value as the model sees it: lt syntax (`{tx = "t1", n = 2}`),
/// long strings and lists cut *inside* the value with their size said, so
/// that a large field does not push the later ones out of the message; the
/// whole is then cut at `MAX_VALUE` characters with a note.
pub fn show_value(v: &crate::runtime::value::Value) -> String {
    let mut out = String::new();
    write_value(v, &mut out);
    let n = out.chars().count();
    if n > MAX_VALUE {
        let mut cut = clip(&out, MAX_VALUE);
        cut.push_str(&format!(
            " (the value is {n} characters; cut at {MAX_VALUE})"
        ));
        return cut;
    }
    out
}

fn write_value(v: &crate::runtime::value::Value, out: &mut String) {
    use crate::runtime::value::Value;
    if out.len() > MAX_VALUE * 4 {
        return;
    }
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || match v {
        Value::Str(s) => {
            let n = s.chars().count();
            if n > MAX_SHOWN_STRING {
                let head: String = s.chars().take(MAX_SHOWN_STRING).collect();
                out.push_str(&format!("{head:?}… ({n} characters)"));
            } else {
                out.push_str(&format!("{:?}", &**s));
            }
        }
        Value::Some(x) => {
            out.push_str("Some(");
            write_value(x, out);
            out.push(')');
        }
        Value::Ok(x) => {
            out.push_str("Ok(");
            write_value(x, out);
            out.push(')');
        }
        Value::Err(x) => {
            out.push_str("Err(");
            write_value(x, out);
            out.push(')');
        }
        Value::Record(fields) => {
            out.push('{');
            for (i, (name, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(" = ");
                write_value(x, out);
            }
            out.push('}');
        }
        Value::List(items) => {
            out.push('[');
            for (i, x) in items.iter().take(MAX_SHOWN_ITEMS).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(x, out);
            }
            if items.len() > MAX_SHOWN_ITEMS {
                out.push_str(&format!(", … ({} items in all)", items.len()));
            }
            out.push(']');
        }
        Value::Json(j) => {
            let text = j.to_string();
            out.push_str(&clip(&text, MAX_SHOWN_STRING * 2));
        }
        other => out.push_str(&other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::value::Value;

    #[test]
    fn a_long_field_does_not_hide_the_next_one() {
        let big: std::rc::Rc<str> = "x".repeat(5000).into();
        let v = Value::Record(
            vec![
                ("log".into(), Value::Str(big)),
                ("tx".into(), Value::Str("tx_IMPORTANT".into())),
                (
                    "items".into(),
                    Value::List(std::rc::Rc::new((0..80).map(Value::Int).collect())),
                ),
            ]
            .into(),
        );
        let shown = show_value(&v);
        assert!(shown.contains("(5000 characters)"), "{shown}");
        assert!(shown.contains("tx = \"tx_IMPORTANT\""), "{shown}");
        assert!(shown.contains("… (80 items in all)"), "{shown}");
        assert!(shown.len() < 1200, "{}", shown.len());
        assert_eq!(show_value(&Value::Str("hi".into())), "\"hi\"");
    }
}
