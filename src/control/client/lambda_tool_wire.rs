//! λ-Tool's client wire ([`Wire::LambdaTool`](super::Wire::LambdaTool),
//! `docs/protocol.md`): the `tool_call` line of `lambda_tool
//! --interactive` and the judgement of each line the host writes back.
//!
//! ```text
//! out: {"tool_call":{"tool":"edit","argument":{…}}}
//! in:  {"tool_result":{"ok":…}}      ──▶ Ok(…)
//!      {"tool_result":{"error":"…"}} ──▶ Err(the message, verbatim)
//!      a blank line                  ──▶ skipped, the call keeps waiting
//!      any other line                ──▶ Err(bad_output): it answers the call
//! ```
//!
//! The wire has no call ids: one call is outstanding at a time and the
//! next non-blank line answers it. So that host and `lt` never fall out of
//! step, a line that is not a well-formed report still answers the call
//! (with a failure the program handles), and a call that timed out after
//! its line was written is still owed a line ([`Owed`]): the next
//! non-blank line is that late answer and is skipped, not taken as the
//! answer to the call now waiting.

use super::{kind_of, not_parsed, Judged};
use crate::runtime::boundary::drop_deep;
use crate::runtime::deep_json::{parse_slice, to_compact};
use crate::runtime::host::FailureKind;
use serde_json::Value as Json;
use std::collections::VecDeque;

/// The shape of a report, for messages.
const SHAPE: &str = r#"{"tool_result": {"ok": …}} or {"tool_result": {"error": "…"}}"#;

/// The calls that timed out after their line was written, oldest first.
/// The host still owes each an answer, and the next non-blank lines are
/// those answers (skipped), not the answers of later calls.
#[derive(Debug, Default)]
pub(super) struct Owed(VecDeque<String>);

impl Owed {
    /// Call `call_id` timed out after its line was written.
    pub(super) fn push(&mut self, call_id: &str) {
        self.0.push_back(call_id.to_string());
    }

    /// When an answer is owed: the reason for skipping the next non-blank
    /// line, which is that answer.
    fn take(&mut self) -> Option<String> {
        let late = self.0.pop_front()?;
        Some(format!(
            "the late answer to call {late}, which timed out before it came (one line answers one call)"
        ))
    }
}

/// The `tool_call` line, `\n` included: `{"tool_call":{"tool":…,"argument":…}}`.
/// The argument is consumed.
pub(super) fn call_line(tool: &str, arg: Json) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    line.extend_from_slice(br#"{"tool_call":{"tool":"#);
    line.extend_from_slice(&to_compact(tool));
    line.extend_from_slice(br#","argument":"#);
    line.extend_from_slice(&to_compact(&arg));
    drop_deep(arg);
    line.extend_from_slice(b"}}\n");
    line
}

/// Judges one line of the host: the answer to the waiting call (`waiting`
/// false: no call waits, the host's input having ended), or the late
/// answer to an earlier one.
pub(super) fn judge(bytes: &[u8], owed: &mut Owed, waiting: bool) -> Judged {
    let judged = judge_line(bytes);
    if matches!(judged, Judged::Rejected { .. }) {
        return judged; // a blank line answers nothing
    }
    settle(judged, bytes, owed, waiting)
}

/// An answer that was not judged (a line too long to keep): `report` and
/// `reason` as for a malformed line.
pub(super) fn unjudged(report: Json, reason: String, owed: &mut Owed, waiting: bool) -> Judged {
    settle(Judged::Malformed { report, reason }, &[], owed, waiting)
}

/// A non-blank line (judged as an answer) when it is the late answer to an
/// earlier call, or when no call waits: rejected and skipped.
fn settle(judged: Judged, bytes: &[u8], owed: &mut Owed, waiting: bool) -> Judged {
    let why = match owed.take() {
        Some(late) => late,
        None if !waiting => {
            "the line answers no call: the host's input has ended, so none is waiting".to_string()
        }
        None => return judged,
    };
    let (report, what) = match judged {
        Judged::Report { outcome, .. } => {
            if let Ok(v) = outcome {
                drop_deep(v);
            }
            let report = parse_slice(bytes, true)
                .unwrap_or_else(|_| Json::String(String::from_utf8_lossy(bytes).into_owned()));
            (report, "skipped".to_string())
        }
        Judged::Rejected { report, reason } | Judged::Malformed { report, reason } => {
            (report, format!("skipped ({reason})"))
        }
    };
    Judged::Rejected {
        report,
        reason: format!("{why}; {what}"),
    }
}

/// Judges one line as the answer to the waiting call. A blank line is
/// skipped; any other line that is not a report is malformed. Keys besides
/// `tool_result`, `ok` and `error` are ignored (and kept in the logged
/// report).
fn judge_line(bytes: &[u8]) -> Judged {
    let malformed = |report: Json, reason: String| Judged::Malformed { report, reason };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return malformed(
                Json::String(String::from_utf8_lossy(bytes).into_owned()),
                format!(
                    "the line is not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            )
        }
    };
    if text.trim().is_empty() {
        return Judged::Rejected {
            report: Json::String(text.to_string()),
            reason: format!("the line is blank; skipped (expected {SHAPE})"),
        };
    }
    if let Err(why) = crate::exec::check_shape(bytes) {
        let (report, reason) = not_parsed(text, &why);
        return malformed(report, reason);
    }
    let value = match parse_slice(bytes, true) {
        Ok(v) => v,
        Err(e) => {
            return malformed(
                Json::String(text.to_string()),
                format!("the line is not JSON: {e}; expected {SHAPE}"),
            )
        }
    };
    if let Some(reason) = problem(&value) {
        return malformed(value, reason);
    }
    Judged::Report {
        outcome: take_outcome(value),
        // λ-Tool's tool_result has no failure kind.
        failure: FailureKind::Failed,
    }
}

/// What keeps a parsed line from being a report, if anything.
fn problem(value: &Json) -> Option<String> {
    let Json::Object(fields) = value else {
        return Some(format!(
            "the line is {}, not an object; expected {SHAPE}",
            kind_of(value)
        ));
    };
    match fields.get("tool_result") {
        None => Some(format!("`tool_result` is missing; expected {SHAPE}")),
        Some(Json::Object(result)) => match (result.get("ok"), result.get("error")) {
            (Some(_), Some(_)) => {
                Some("both `ok` and `error` are given: a tool_result has one outcome".into())
            }
            (None, None) => Some(
                "neither `ok` nor `error` is given: a tool_result has `ok` (the result) or `error` (a message)"
                    .into(),
            ),
            (None, Some(Json::String(_))) | (Some(_), None) => None,
            (None, Some(other)) => Some(format!(
                "`error` must be a string (the failure message), found {}",
                kind_of(other)
            )),
        },
        Some(other) => Some(format!(
            "`tool_result` must be an object, found {}; expected {SHAPE}",
            kind_of(other)
        )),
    }
}

/// The outcome a report (checked by [`problem`]) carries; the rest of the
/// line is dropped without recursion.
fn take_outcome(value: Json) -> Result<Json, String> {
    let none = || Err("the host reported no outcome".to_string());
    let Json::Object(mut fields) = value else {
        drop_deep(value);
        return none();
    };
    let outcome = match fields.remove("tool_result") {
        Some(Json::Object(mut result)) => {
            let outcome = match (result.remove("ok"), result.remove("error")) {
                (Some(ok), _) => Ok(ok),
                (None, Some(Json::String(e))) => Err(e),
                (None, other) => {
                    if let Some(v) = other {
                        drop_deep(v);
                    }
                    none()
                }
            };
            drop_deep(Json::Object(result));
            outcome
        }
        other => {
            if let Some(v) = other {
                drop_deep(v);
            }
            none()
        }
    };
    drop_deep(Json::Object(fields));
    outcome
}

#[cfg(test)]
mod tests {
    use super::super::MAX_DEPTH;
    use super::*;

    fn judgement(line: &str) -> String {
        match judge_line(line.as_bytes()) {
            Judged::Rejected { reason, .. } => format!("skip: {reason}"),
            Judged::Malformed { reason, .. } => format!("fail: {reason}"),
            Judged::Report { outcome, .. } => format!("report {outcome:?}"),
        }
    }

    #[test]
    fn every_line_is_an_answer_or_blank() {
        let cases = [
            (r#"{"tool_result":{"ok":{"a":1}}}"#, "report Ok(Object"),
            (r#"{"tool_result":{"ok":null}}"#, "report Ok(Null)"),
            (
                r#"{"tool_result":{"error":"offline"}}"#,
                "report Err(\"offline\")",
            ),
            // Keys the protocol does not name are ignored.
            (
                r#"{"tool_result":{"ok":1,"note":2},"id":3}"#,
                "report Ok(Number(1))",
            ),
            ("", "skip: the line is blank"),
            ("  ", "skip: the line is blank"),
            ("garbage", "fail: the line is not JSON"),
            ("[1]", "fail: the line is an array, not an object"),
            (r#"{"ok":1}"#, "fail: `tool_result` is missing"),
            (
                r#"{"tool_result":1}"#,
                "fail: `tool_result` must be an object, found a number",
            ),
            (r#"{"tool_result":{}}"#, "fail: neither `ok` nor `error`"),
            (
                r#"{"tool_result":{"ok":1,"error":"e"}}"#,
                "fail: both `ok` and `error`",
            ),
            (
                r#"{"tool_result":{"error":5}}"#,
                "fail: `error` must be a string",
            ),
            (
                r#"{"tool_result":{"ok":1,"ok":2}}"#,
                "fail: the line is not JSON",
            ),
        ];
        for (line, expected) in cases {
            let got = judgement(line);
            assert!(got.starts_with(expected), "{line}: {got}");
        }
        let deep = format!(
            r#"{{"tool_result":{{"ok":{}{}}}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(judgement(&deep).contains("nested more than 10000 levels deep"));
        assert!(matches!(
            judge_line(b"\xff"),
            Judged::Malformed { reason, .. } if reason.contains("not UTF-8")
        ));
    }

    #[test]
    fn an_owed_answer_and_an_answer_to_no_call_are_skipped() {
        let reason = |judged: Judged| match judged {
            Judged::Rejected { reason, .. } => reason,
            Judged::Malformed { reason, .. } => format!("malformed: {reason}"),
            Judged::Report { outcome, .. } => format!("report {outcome:?}"),
        };
        let mut owed = Owed::default();
        owed.push("n1");
        let ok = br#"{"tool_result":{"ok":1}}"#;
        assert_eq!(
            reason(judge(b"", &mut owed, true)),
            format!("the line is blank; skipped (expected {SHAPE})"),
            "a blank line pays no debt"
        );
        assert_eq!(
            reason(judge(ok, &mut owed, true)),
            "the late answer to call n1, which timed out before it came (one line answers one call); skipped"
        );
        assert_eq!(reason(judge(ok, &mut owed, true)), "report Ok(Number(1))");
        assert!(reason(judge(ok, &mut owed, false)).starts_with("the line answers no call"));
        assert!(
            reason(unjudged(json_str("x…"), "too long".into(), &mut owed, true))
                .starts_with("malformed: too long")
        );
    }

    fn json_str(s: &str) -> Json {
        Json::String(s.to_string())
    }

    #[test]
    fn the_call_line_has_tool_and_argument() {
        assert_eq!(
            call_line("t", serde_json::json!({"n": 1})),
            b"{\"tool_call\":{\"tool\":\"t\",\"argument\":{\"n\":1}}}\n"
        );
    }
}
