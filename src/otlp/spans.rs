//! A session's log, read back from its lines, as one OTLP trace: the
//! rows of its timeline (`log::timeline`) built into spans by `proto.rs`,
//! as a [`Recorder`](super::Recorder) builds them from the typed events of
//! a running session. `lt serve` (which reads each ended session's log from its
//! store) and `lt agent` export this way:
//!
//! ```text
//! invoke_workflow  the session: first event ─▶ last; lt.session.id,
//!                  lt.log.seq and lt.log.hash of its last event; approvals
//!                  as span events
//!  ├ execute_tool  one per call: proposed ─▶ outcome; gen_ai.tool.name,
//!  │               gen_ai.tool.call.id, lt.call.outcome, lt.call.venue,
//!  │               lt.log.seq and lt.log.hash of its last event; a denial
//!  │               as a span event and an error status; with payloads,
//!  │               gen_ai.tool.call.arguments and gen_ai.tool.call.result
//!  └ chat          one per model request of an agent session
//! ```
//!
//! Times are the events' `ts` (milliseconds).

use super::proto::{Approval, Encoded, Root, SpanKind, SpanRow, TraceBuilder};
use crate::log::timeline::{self, Kind, Row};
use serde_json::Value;
use std::collections::HashMap;

/// Milliseconds since the epoch as OTLP's nanoseconds (0 before it).
fn nanos(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

/// The first event, the last, and every event's hash by seq, of `lines`.
struct Ends {
    first_kind: String,
    last_kind: String,
    last_seq: u64,
    status: String,
    hashes: HashMap<u64, String>,
}

fn ends(lines: &[String]) -> Option<Ends> {
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        seq: u64,
        #[serde(default)]
        hash: String,
        #[serde(default)]
        status: Option<Value>,
    }
    let mut heads = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Head>(l).ok());
    let first = heads.next()?;
    let mut hashes = HashMap::with_capacity(lines.len());
    let first_kind = first.kind.clone();
    let mut last = first;
    hashes.insert(last.seq, std::mem::take(&mut last.hash));
    for mut h in heads {
        hashes.insert(h.seq, std::mem::take(&mut h.hash));
        last = h;
    }
    let status = match &last.status {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    Some(Ends {
        first_kind,
        last_kind: last.kind,
        last_seq: last.seq,
        status,
        hashes,
    })
}

fn detail<'r>(r: &'r Row, key: &str) -> Option<&'r str> {
    r.details
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The trace of session `id` from its log `lines`, encoded, its resource
/// named `service`; `None` while the log is not over (an agent's log: at
/// `agent_ended`, not at its runs' ends). `payloads`: export arguments
/// and results, cut to that many bytes.
pub(super) fn trace(
    service: &str,
    id: &str,
    lines: &[String],
    payloads: Option<usize>,
) -> Option<Encoded> {
    let e = ends(lines)?;
    let over = if e.first_kind == "agent_started" {
        "agent_ended"
    } else {
        "session_ended"
    };
    if e.last_kind != over {
        return None;
    }
    let hash_of = |seq: u64| e.hashes.get(&seq).map(String::as_str);
    let t = timeline::build(lines);
    let mut b = TraceBuilder::new(service, id, payloads);
    for r in &t.rows {
        if r.kind == Kind::Approval {
            b.approval(&Approval {
                seq: r.seqs.1,
                hash: hash_of(r.seqs.1),
                time: nanos(r.end.unwrap_or(r.start)),
                tool: &r.name,
                id: &r.id,
                outcome: &r.outcome,
                argument: detail(r, "argument"),
            });
            continue;
        }
        let decision = detail(r, "decision");
        b.span(&SpanRow {
            kind: if r.kind == Kind::Call {
                SpanKind::Tool
            } else {
                SpanKind::Chat
            },
            seqs: r.seqs,
            hash: hash_of(r.seqs.1),
            times: (nanos(r.start), nanos(r.end.unwrap_or(t.span.1))),
            tool: &r.name,
            id: &r.id,
            venue: r.venue.as_deref().unwrap_or("none"),
            outcome: &r.outcome,
            decision: decision.as_slice(),
            argument: detail(r, "argument"),
            result: detail(r, "result"),
        });
    }
    Some(b.finish(&Root {
        seq: e.last_seq,
        hash: hash_of(e.last_seq),
        times: (nanos(t.span.0), nanos(t.span.1)),
        status: &e.status,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::proto::tests::{assert_attrs, attr, decode};
    use super::trace;
    use opentelemetry_proto::tonic::trace::v1::Span;
    use serde_json::json;

    /// A log: one call allowed and completed, one denied, one approval.
    fn log(ended: bool) -> Vec<String> {
        let id = "0123456789abcdef0123456789abcdef";
        let mut events = vec![
            json!({"kind": "session_started"}),
            json!({"kind": "proposed", "call_id": "n1", "tool": "lookup", "argument": {"id": 1}}),
            json!({"kind": "decided", "call_id": "n1", "decision": "allow", "rule": "r", "reason": "ok"}),
            json!({"kind": "completed", "call_id": "n1", "result": {"Ok": 2}}),
            json!({"kind": "approval_requested", "approval_id": "a1", "tool": "refund", "argument": 5}),
            json!({"kind": "approval_decided", "approval_id": "a1", "decision": "deny", "by": "x", "reason": "no"}),
            json!({"kind": "proposed", "call_id": "n2", "tool": "refund", "argument": 5}),
            json!({"kind": "decided", "call_id": "n2", "decision": "deny", "rule": "approval", "reason": "refused"}),
        ];
        if ended {
            events.push(json!({"kind": "session_ended", "status": "error"}));
        }
        events
            .into_iter()
            .enumerate()
            .map(|(seq, mut e)| {
                e["session"] = json!(id);
                e["seq"] = json!(seq);
                e["ts"] = json!(format!("2026-12-06T00:00:0{seq}.000Z"));
                e["hash"] = json!(format!("h{seq}"));
                e.to_string()
            })
            .collect()
    }

    #[test]
    fn a_log_becomes_a_session_span_and_its_calls_spans() {
        let id = "0123456789abcdef0123456789abcdef";
        assert!(trace("lt run", id, &log(false), None).is_none(), "not over");
        let rs = decode(&trace("lt run", id, &log(true), Some(3)).expect("a trace"));
        let resource = rs.resource.as_ref().expect("resource");
        assert_eq!(
            attr(&resource.attributes, "service.name").as_deref(),
            Some("lt run")
        );
        let spans: &[Span] = &rs.scope_spans[0].spans;
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["execute_tool", "execute_tool", "invoke_workflow"]);
        let root = &spans[2];
        assert!(root.parent_span_id.is_empty());
        assert_eq!(hex::encode(&root.trace_id), id);
        assert_attrs(
            &root.attributes,
            &[
                ("lt.log.seq", "8"),
                ("lt.log.hash", "h8"),
                ("lt.session.status", "error"),
            ],
        );
        assert_eq!(root.status.as_ref().map(|s| s.code), Some(2));
        assert_eq!(
            root.start_time_unix_nano + 8_000_000_000,
            root.end_time_unix_nano
        );
        // The approval: an event of the session's span.
        let approval = &root.events[0];
        assert_eq!(approval.name, "approval");
        assert_attrs(
            &approval.attributes,
            &[("lt.approval.outcome", "refused"), ("lt.log.seq", "5")],
        );
        let (ok, denied) = (&spans[0], &spans[1]);
        for s in [ok, denied] {
            assert_eq!(s.trace_id, root.trace_id);
            assert_eq!(s.parent_span_id, root.span_id);
            assert_eq!(s.events[0].name, "decision");
        }
        assert_ne!(ok.span_id, denied.span_id);
        assert_attrs(
            &ok.attributes,
            &[
                ("gen_ai.tool.name", "lookup"),
                ("gen_ai.tool.call.id", "n1"),
                ("lt.log.seq", "3"),
                ("lt.log.hash", "h3"),
                ("lt.call.outcome", "ok"),
            ],
        );
        // Cut to 3 bytes.
        assert_eq!(
            attr(&ok.attributes, "gen_ai.tool.call.arguments").as_deref(),
            Some("{\"i…")
        );
        assert!(ok.status.is_none());
        assert_eq!(
            attr(&denied.attributes, "lt.call.outcome").as_deref(),
            Some("denied")
        );
        assert_eq!(denied.status.as_ref().map(|s| s.code), Some(2));
        // Without payloads: no argument, no result.
        let rs = decode(&trace("lt run", id, &log(true), None).expect("a trace"));
        let ok = &rs.scope_spans[0].spans[0];
        assert_eq!(attr(&ok.attributes, "gen_ai.tool.call.arguments"), None);
        assert_eq!(attr(&ok.attributes, "gen_ai.tool.call.result"), None);
    }
}
