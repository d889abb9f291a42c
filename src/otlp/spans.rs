//! A session's log as one OTLP trace request, built straight from the
//! log's timeline (`log::timeline`'s rows) with the `opentelemetry-proto`
//! crate's message types, no tracer in between:
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
//! Ids are derived, not drawn: the trace id is the session id's 16 bytes
//! (a session id is 32 hex digits; another id is hashed), a span id the
//! first 8 bytes of SHA-256 over the session id and the seq of the span's
//! first event. So a trace names its session, and exporting a log twice
//! sends the same spans. Times are the events' `ts`.

use crate::log::timeline::{self, Kind, Row};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

fn text(key: &str, v: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        ..KeyValue::default()
    }
}

fn int(key: &str, v: u64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(
                i64::try_from(v).unwrap_or(i64::MAX),
            )),
        }),
        ..KeyValue::default()
    }
}

/// Milliseconds since the epoch as OTLP's nanoseconds (0 before it).
fn nanos(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

/// `s` cut to at most `limit` bytes (on a character boundary), with `…`
/// after a cut.
pub fn cut(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The trace id of session `id`.
fn trace_id(id: &str) -> Vec<u8> {
    match hex::decode(id) {
        Ok(bytes) if bytes.len() == 16 && bytes.iter().any(|b| *b != 0) => bytes,
        _ => Sha256::digest(id.as_bytes())[..16].to_vec(),
    }
}

/// The span id of the span that starts at event `seq` of session `id`
/// (`None`: the session's span).
fn span_id(id: &str, seq: Option<u64>) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(id.as_bytes());
    match seq {
        Some(seq) => h.update(seq.to_be_bytes()),
        None => h.update(b"session"),
    }
    let mut out = h.finalize()[..8].to_vec();
    out[0] |= 1; // never all zeros (an invalid id)
    out
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

fn detail(r: &Row, key: &str) -> Option<String> {
    r.details
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// The trace of session `id` from its log `lines`, as the one resource's
/// spans, its resource named `service`; `None` while the log is not over
/// (an agent's log: at `agent_ended`, not at its runs' ends).
/// `payloads`: export arguments and results, cut to that many bytes.
pub fn trace(
    service: &str,
    id: &str,
    lines: &[String],
    payloads: Option<usize>,
) -> Option<ResourceSpans> {
    let e = ends(lines)?;
    let over = if e.first_kind == "agent_started" {
        "agent_ended"
    } else {
        "session_ended"
    };
    if e.last_kind != over {
        return None;
    }
    let hash_of = |seq: u64| e.hashes.get(&seq).cloned().unwrap_or_default();
    let t = timeline::build(lines);
    let trace = trace_id(id);
    let root_id = span_id(id, None);
    // `ok`/`error` (session_ended), `answered`/`gave_up`/`error` (agent_ended).
    let status = e.status.as_str();
    let mut spans = Vec::with_capacity(t.rows.len() + 1);
    let mut approvals = Vec::new();
    for r in &t.rows {
        if r.kind == Kind::Approval {
            approvals.push(r);
            continue;
        }
        let (name, mut attributes) = match r.kind {
            Kind::Call => (
                "execute_tool",
                vec![
                    text("gen_ai.operation.name", "execute_tool"),
                    text("gen_ai.tool.name", r.name.as_str()),
                    text("gen_ai.tool.call.id", r.id.as_str()),
                    text("gen_ai.tool.type", "function"),
                    text("lt.call.venue", r.venue.as_deref().unwrap_or("none")),
                ],
            ),
            _ => (
                "chat",
                vec![
                    text("gen_ai.operation.name", "chat"),
                    text("lt.model.request_id", r.id.as_str()),
                ],
            ),
        };
        attributes.push(text("lt.call.outcome", r.outcome.as_str()));
        attributes.push(int("lt.log.seq", r.seqs.1));
        attributes.push(text("lt.log.hash", hash_of(r.seqs.1)));
        if let (Some(limit), Kind::Call) = (payloads, r.kind) {
            for (key, attr) in [
                ("argument", "gen_ai.tool.call.arguments"),
                ("result", "gen_ai.tool.call.result"),
            ] {
                if let Some(v) = detail(r, key) {
                    attributes.push(text(attr, cut(&v, limit)));
                }
            }
        }
        let events = detail(r, "decision")
            .map(|d| Event {
                time_unix_nano: nanos(r.start),
                name: "decision".into(),
                attributes: vec![text("lt.decision", d)],
                dropped_attributes_count: 0,
            })
            .into_iter()
            .collect();
        let failed = matches!(
            r.outcome.as_str(),
            "err" | "failed" | "timed_out" | "denied"
        );
        spans.push(Span {
            trace_id: trace.clone(),
            span_id: span_id(id, Some(r.seqs.0)),
            parent_span_id: root_id.clone(),
            name: name.into(),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: nanos(r.start),
            end_time_unix_nano: nanos(r.end.unwrap_or(t.span.1)),
            attributes,
            events,
            status: failed.then(|| Status {
                message: r.outcome.clone(),
                code: StatusCode::Error as i32,
            }),
            ..Span::default()
        });
    }
    let events = approvals
        .into_iter()
        .map(|a| {
            let mut attributes = vec![
                text("gen_ai.tool.name", a.name.as_str()),
                text("lt.approval.id", a.id.as_str()),
                text("lt.approval.outcome", a.outcome.as_str()),
                int("lt.log.seq", a.seqs.1),
                text("lt.log.hash", hash_of(a.seqs.1)),
            ];
            if let (Some(limit), Some(v)) = (payloads, detail(a, "argument")) {
                attributes.push(text("gen_ai.tool.call.arguments", cut(&v, limit)));
            }
            Event {
                time_unix_nano: nanos(a.end.unwrap_or(a.start)),
                name: "approval".into(),
                attributes,
                dropped_attributes_count: 0,
            }
        })
        .collect();
    let failed = status == "error" || status == "gave_up";
    spans.insert(
        0,
        Span {
            trace_id: trace,
            span_id: root_id,
            name: "invoke_workflow".into(),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: nanos(t.span.0),
            end_time_unix_nano: nanos(t.span.1),
            attributes: vec![
                text("gen_ai.operation.name", "invoke_workflow"),
                text("lt.session.id", id),
                int("lt.log.seq", e.last_seq),
                text("lt.log.hash", hash_of(e.last_seq)),
                text("lt.session.status", status),
            ],
            events,
            status: failed.then(|| Status {
                message: format!("the session ended with status {status}"),
                code: StatusCode::Error as i32,
            }),
            ..Span::default()
        },
    );
    Some(ResourceSpans {
        resource: Some(Resource {
            attributes: vec![text("service.name", service)],
            ..Resource::default()
        }),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "lt".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..InstrumentationScope::default()
            }),
            spans,
            schema_url: String::new(),
        }],
        schema_url: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::{cut, span_id, trace, trace_id};
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::trace::v1::Span;
    use serde_json::json;

    fn attr(kvs: &[super::KeyValue], key: &str) -> Option<String> {
        let kv = kvs.iter().find(|kv| kv.key == key)?;
        match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            Any::IntValue(n) => Some(n.to_string()),
            other => Some(format!("{other:?}")),
        }
    }

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
        let rs = trace("lt run", id, &log(true), Some(3)).expect("a trace");
        let resource = rs.resource.as_ref().expect("resource");
        assert_eq!(
            attr(&resource.attributes, "service.name").as_deref(),
            Some("lt run")
        );
        let spans: &[Span] = &rs.scope_spans[0].spans;
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["invoke_workflow", "execute_tool", "execute_tool"]);
        let root = &spans[0];
        assert!(root.parent_span_id.is_empty());
        assert_eq!(hex::encode(&root.trace_id), id);
        assert_eq!(attr(&root.attributes, "lt.log.seq").as_deref(), Some("8"));
        assert_eq!(attr(&root.attributes, "lt.log.hash").as_deref(), Some("h8"));
        assert_eq!(
            attr(&root.attributes, "lt.session.status").as_deref(),
            Some("error")
        );
        assert_eq!(root.status.as_ref().map(|s| s.code), Some(2));
        assert_eq!(
            root.start_time_unix_nano + 8_000_000_000,
            root.end_time_unix_nano
        );
        // The approval: an event of the session's span.
        let approval = &root.events[0];
        assert_eq!(approval.name, "approval");
        assert_eq!(
            attr(&approval.attributes, "lt.approval.outcome").as_deref(),
            Some("refused")
        );
        assert_eq!(
            attr(&approval.attributes, "lt.log.seq").as_deref(),
            Some("5")
        );
        let (ok, denied) = (&spans[1], &spans[2]);
        for s in [ok, denied] {
            assert_eq!(s.trace_id, root.trace_id);
            assert_eq!(s.parent_span_id, root.span_id);
            assert_eq!(s.events[0].name, "decision");
        }
        assert_ne!(ok.span_id, denied.span_id);
        assert_eq!(
            attr(&ok.attributes, "gen_ai.tool.name").as_deref(),
            Some("lookup")
        );
        assert_eq!(
            attr(&ok.attributes, "gen_ai.tool.call.id").as_deref(),
            Some("n1")
        );
        assert_eq!(attr(&ok.attributes, "lt.log.seq").as_deref(), Some("3"));
        assert_eq!(attr(&ok.attributes, "lt.log.hash").as_deref(), Some("h3"));
        assert_eq!(
            attr(&ok.attributes, "lt.call.outcome").as_deref(),
            Some("ok")
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
        let rs = trace("lt run", id, &log(true), None).expect("a trace");
        let ok = &rs.scope_spans[0].spans[1];
        assert_eq!(attr(&ok.attributes, "gen_ai.tool.call.arguments"), None);
        assert_eq!(attr(&ok.attributes, "gen_ai.tool.call.result"), None);
    }

    #[test]
    fn a_payload_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("aé", 2), "a…");
        assert_eq!(cut("", 0), "");
    }

    #[test]
    fn a_session_id_is_its_trace_id_and_span_ids_differ() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(hex::encode(trace_id(id)), id);
        assert_eq!(trace_id("agent-1").len(), 16);
        assert_ne!(span_id(id, None), span_id(id, Some(0)));
        assert_ne!(span_id(id, Some(1)), span_id(id, Some(2)));
        assert_eq!(span_id(id, Some(1)).len(), 8);
    }
}
