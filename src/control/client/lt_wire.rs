//! lt's own client wire ([`Wire::Lt`](super::Wire::Lt), `docs/executors.md`):
//! the tool_call line `lt` writes and the judgement of each line the
//! client writes back.
//!
//! ```text
//! out: {"type":"tool_call","call_id":"n3","tool":"edit","argument":{…},"idempotency_key":"…"}
//! in:  {"type":"tool_result","call_id":"n3","ok":…}       a report of n3
//!      {"type":"tool_result","call_id":"n3","error":"…"}  a reported failure of n3
//!      {"type":"tool_result","call_id":"n3","error":"…","kind":"timed_out"}
//!                                                        … of a named kind
//! ```
//!
//! Calls carry ids, so a line is a report only of the call waiting for it;
//! any other line (malformed, another id, a call already reported or timed
//! out) is rejected with its reason and the wait goes on.

use super::{kind_of, not_parsed, Ended, Judged};
use crate::runtime::boundary::drop_deep;
use crate::runtime::deep_json::{parse_slice, to_compact};
use crate::runtime::host::FailureKind;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// The shape of a report, for rejection messages.
const SHAPE: &str = r#"{"type": "tool_result", "call_id": "…", "ok": …} or {"type": "tool_result", "call_id": "…", "error": "…"}"#;

/// The tool_call line of a call, `\n` included: compact JSON, `type`
/// first. The argument is consumed (and dropped without recursion).
pub(super) fn call_line(call_id: &str, tool: &str, arg: Json, key: Option<&str>) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    line.extend_from_slice(br#"{"type":"tool_call","call_id":"#);
    line.extend_from_slice(&to_compact(call_id));
    line.extend_from_slice(br#","tool":"#);
    line.extend_from_slice(&to_compact(tool));
    line.extend_from_slice(br#","argument":"#);
    line.extend_from_slice(&to_compact(&arg));
    drop_deep(arg);
    line.extend_from_slice(br#","idempotency_key":"#);
    line.extend_from_slice(&to_compact(&key));
    line.extend_from_slice(b"}\n");
    line
}

/// At most 80 characters of a short JSON value, for messages.
fn excerpt(v: &Json) -> String {
    let text = String::from_utf8_lossy(&to_compact(v)).into_owned();
    if text.chars().count() > 80 {
        text.chars().take(80).collect::<String>() + "…"
    } else {
        text
    }
}

/// Judges one line of the client while call `waiting` is outstanding
/// (`None`: no call is, the client's input having ended before the next
/// call was written). `ended`: the calls that can no longer be reported.
pub(super) fn judge(
    bytes: &[u8],
    waiting: Option<&str>,
    ended: &BTreeMap<String, Ended>,
) -> Judged {
    let rejected = |report: Json, reason: String| Judged::Rejected { report, reason };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return rejected(
                Json::String(String::from_utf8_lossy(bytes).into_owned()),
                format!(
                    "the line is not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            )
        }
    };
    // The limits of a command tool's output (depth, value count).
    if let Err(why) = crate::exec::check_shape(bytes) {
        let (report, reason) = not_parsed(text, &why);
        return rejected(report, reason);
    }
    if text.trim().is_empty() {
        return rejected(
            Json::String(text.to_string()),
            format!("the line is empty; expected {SHAPE}"),
        );
    }
    let value = match parse_slice(bytes, true) {
        Ok(v) => v,
        Err(e) => {
            return rejected(
                Json::String(text.to_string()),
                format!("the line is not JSON: {e}"),
            )
        }
    };
    let Json::Object(mut fields) = value else {
        let reason = format!(
            "the line is {}, not an object; expected {SHAPE}",
            kind_of(&value)
        );
        return rejected(value, reason);
    };
    let reason = match shape_problem(&fields) {
        Some(reason) => reason,
        None => {
            let id = fields.get("call_id").and_then(Json::as_str).unwrap_or("");
            if Some(id) == waiting {
                // Checked by `shape_problem`: absent, or a reportable name.
                let failure = fields
                    .get("kind")
                    .and_then(Json::as_str)
                    .and_then(FailureKind::from_name)
                    .unwrap_or(FailureKind::Failed);
                let outcome = match (fields.remove("ok"), fields.remove("error")) {
                    (Some(ok), _) => Ok(ok),
                    (None, Some(Json::String(e))) => Err(e),
                    // Ruled out by `shape_problem`.
                    (None, _) => Err("the client reported no outcome".to_string()),
                };
                drop_deep(Json::Object(fields));
                return Judged::Report { outcome, failure };
            }
            let now = match waiting {
                Some(w) => format!("the call waiting is {w}"),
                None => "no call is waiting: the client's input has ended".to_string(),
            };
            match ended.get(id) {
                Some(Ended::Reported) => {
                    format!("call {id} was already reported; an outcome is applied once ({now})")
                }
                Some(Ended::TimedOut) => {
                    format!("call {id} already ended: it timed out before this report ({now})")
                }
                None => format!(
                    "call_id {} is not a call sent to the client ({now})",
                    Json::String(id.to_string())
                ),
            }
        }
    };
    rejected(Json::Object(fields), reason)
}

/// What is wrong with the fields of a `tool_result` object, if anything
/// (the call id aside).
fn shape_problem(fields: &Map<String, Json>) -> Option<String> {
    match fields.get("type") {
        None => return Some(format!("`type` is missing; expected {SHAPE}")),
        Some(Json::String(t)) if t == "tool_result" => {}
        Some(other) => {
            return Some(format!(
                "`type` is {}, expected \"tool_result\" (the only line a client sends)",
                excerpt(other)
            ))
        }
    }
    let unknown: Vec<String> = fields
        .keys()
        .filter(|k| !matches!(k.as_str(), "type" | "call_id" | "ok" | "error" | "kind"))
        .map(|k| format!("`{}`", k.escape_debug()))
        .collect();
    if !unknown.is_empty() {
        return Some(format!(
            "unknown field{} {}: a tool_result has only `type`, `call_id`, one of `ok` or `error`, and with `error` an optional `kind`",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", ")
        ));
    }
    match fields.get("call_id") {
        None => return Some("`call_id` is missing: which call does this report?".into()),
        Some(Json::String(_)) => {}
        Some(other) => {
            return Some(format!(
                "`call_id` must be a string (the call_id of the tool_call line), found {}",
                kind_of(other)
            ))
        }
    }
    if let Some(problem) = kind_problem(fields) {
        return Some(problem);
    }
    match (fields.get("ok"), fields.get("error")) {
        (Some(_), Some(_)) => {
            Some("both `ok` and `error` are given: a report has one outcome".into())
        }
        (None, None) => Some(
            "neither `ok` nor `error` is given: a report has `ok` (the result) or `error` (a message)"
                .into(),
        ),
        (None, Some(Json::String(_))) | (Some(_), None) => None,
        (None, Some(other)) => Some(format!(
            "`error` must be a string (the failure message), found {}",
            kind_of(other)
        )),
    }
}

/// What is wrong with a report's `kind`, if anything: it goes with `error`
/// only, and names one of [`FailureKind::CLIENT_REPORTABLE`].
pub fn kind_problem(fields: &Map<String, Json>) -> Option<String> {
    let kind = fields.get("kind")?;
    let names: Vec<&str> = FailureKind::CLIENT_REPORTABLE
        .iter()
        .map(|k| k.as_str())
        .collect();
    let reportable = kind
        .as_str()
        .and_then(FailureKind::from_name)
        .is_some_and(|k| FailureKind::CLIENT_REPORTABLE.contains(&k));
    if !reportable {
        return Some(format!(
            "`kind` is {}; a client reports one of {}",
            excerpt(kind),
            names.join(", ")
        ));
    }
    if fields.contains_key("ok") {
        return Some("`kind` goes with `error` only: it names how the call failed".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::MAX_DEPTH;
    use super::*;

    fn reason_while(line: &str, waiting: Option<&str>) -> String {
        let mut ended = BTreeMap::new();
        ended.insert("n1".to_string(), Ended::Reported);
        ended.insert("n2".to_string(), Ended::TimedOut);
        match judge(line.as_bytes(), waiting, &ended) {
            Judged::Rejected { reason, .. } | Judged::Malformed { reason, .. } => reason,
            Judged::Report { outcome, .. } => format!("report {outcome:?}"),
        }
    }

    fn reason(line: &str) -> String {
        reason_while(line, Some("n3"))
    }

    #[test]
    fn a_reported_kind_is_carried_and_failed_is_the_default() {
        let failure = |line: &str| match judge(line.as_bytes(), Some("n3"), &BTreeMap::new()) {
            Judged::Report { failure, .. } => failure,
            Judged::Rejected { reason, .. } | Judged::Malformed { reason, .. } => {
                panic!("{line} was rejected: {reason}")
            }
        };
        let timed_out =
            r#"{"type":"tool_result","call_id":"n3","error":"slow","kind":"timed_out"}"#;
        assert_eq!(failure(timed_out), FailureKind::TimedOut);
        let plain = r#"{"type":"tool_result","call_id":"n3","error":"no"}"#;
        assert_eq!(failure(plain), FailureKind::Failed);
        let ok = r#"{"type":"tool_result","call_id":"n3","ok":1}"#;
        assert_eq!(failure(ok), FailureKind::Failed);
    }

    #[test]
    fn every_malformed_report_has_its_reason() {
        let cases = [
            ("garbage", "the line is not JSON"),
            ("", "the line is empty"),
            ("[1]", "the line is an array, not an object"),
            (r#"{"call_id":"n3","ok":1}"#, "`type` is missing"),
            (
                r#"{"type":"tool_call","call_id":"n3","ok":1}"#,
                "`type` is \"tool_call\"",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"x":2}"#,
                "unknown field `x`",
            ),
            (r#"{"type":"tool_result","ok":1}"#, "`call_id` is missing"),
            (
                r#"{"type":"tool_result","call_id":3,"ok":1}"#,
                "`call_id` must be a string",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"error":"e"}"#,
                "both `ok` and `error`",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3"}"#,
                "neither `ok` nor `error`",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","error":5}"#,
                "`error` must be a string",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","error":"e","kind":"denied"}"#,
                "`kind` is \"denied\"; a client reports one of failed, crashed, timed_out, bad_output, unavailable",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","error":"e","kind":3}"#,
                "`kind` is 3",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"kind":"crashed"}"#,
                "`kind` goes with `error` only",
            ),
            (
                r#"{"type":"tool_result","call_id":"n1","ok":1}"#,
                "call n1 was already reported",
            ),
            (
                r#"{"type":"tool_result","call_id":"n2","ok":1}"#,
                "call n2 already ended: it timed out",
            ),
            (
                r#"{"type":"tool_result","call_id":"n9","ok":1}"#,
                "call_id \"n9\" is not a call sent",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"ok":2}"#,
                "appears twice",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":{"a":[1]}}"#,
                "report Ok(Object",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","error":"no"}"#,
                "report Err(\"no\")",
            ),
        ];
        for (line, expected) in cases {
            let got = reason(line);
            assert!(got.contains(expected), "{line}: {got}");
        }
        let deep = format!(
            r#"{{"type":"tool_result","call_id":"n3","ok":{}{}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(reason(&deep).contains("nested more than 10000 levels deep"));
        let ok = format!(
            r#"{{"type":"tool_result","call_id":"n3","ok":"{}"}}"#,
            "[".repeat(2 * MAX_DEPTH)
        );
        assert!(reason(&ok).starts_with("report Ok"), "brackets in a string");
        let bytes = b"\xff\xfe";
        assert!(matches!(
            judge(bytes, Some("n3"), &BTreeMap::new()),
            Judged::Rejected { reason, .. } if reason.contains("not UTF-8")
        ));
    }

    #[test]
    fn with_no_call_waiting_no_line_is_a_report() {
        let got = reason_while(r#"{"type":"tool_result","call_id":"n3","ok":1}"#, None);
        assert_eq!(
            got,
            "call_id \"n3\" is not a call sent to the client (no call is waiting: the client's input has ended)"
        );
    }

    #[test]
    fn the_call_line_is_compact_with_type_first() {
        let line = call_line("n4", "edit", serde_json::json!({"a": [1]}), Some("s:n4"));
        assert_eq!(
            String::from_utf8(line).expect("utf-8"),
            "{\"type\":\"tool_call\",\"call_id\":\"n4\",\"tool\":\"edit\",\"argument\":{\"a\":[1]},\"idempotency_key\":\"s:n4\"}\n"
        );
    }
}
