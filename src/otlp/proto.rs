//! A trace built as its spans end, with `opentelemetry-proto`'s message
//! types, and encoded once by `prost` when the session's span closes it.
//!
//! ```text
//! TraceBuilder::new(service, session, payloads)
//!   .span(&SpanRow)      an execute_tool or chat span, a child of the session's
//!   .approval(&Approval) a span event of the session's span
//!   .finish(&Root)       the session's span ─▶ Encoded: one ResourceSpans as the
//!                        one entry of an ExportTraceServiceRequest (field 1)
//! ```
//!
//! An entry is a whole request, and entries concatenated are one request
//! (protobuf merges a repeated field's entries), so the exporter's thread
//! joins traces without decoding them. Each span is a `Span` pushed as its
//! row ends; the request is encoded into a buffer of its exact length.
//! Ids are derived, not drawn: the trace id is the session id's 16 bytes
//! (a session id is 32 hex digits; another id is hashed), a span id a mix
//! of the session id's hash and the seq of the span's first event: a trace
//! names its session, and exporting a log twice sends the same spans.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{self, Event};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;
use sha2::{Digest, Sha256};

/// An attribute whose value is the string `v`.
fn text(key: &str, v: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        ..KeyValue::default()
    }
}

/// An attribute whose value is the integer `v` (at most `i64::MAX`).
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

/// An error status with `message`.
fn error(message: String) -> Option<Status> {
    Some(Status {
        message,
        code: StatusCode::Error as i32,
    })
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

/// What a span is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SpanKind {
    /// `execute_tool`: a tool call.
    Tool,
    /// `chat`: a model request.
    Chat,
}

/// One `execute_tool` or `chat` span.
pub(super) struct SpanRow<'a> {
    pub kind: SpanKind,
    /// The seq of its first event (its span id) and of its last.
    pub seqs: (u64, u64),
    /// The hash of its last event, when there is a log.
    pub hash: Option<&'a str>,
    /// Start and end, in nanoseconds since the epoch.
    pub times: (u64, u64),
    /// The tool's name (a tool call).
    pub tool: &'a str,
    /// The call id or the model request's id.
    pub id: &'a str,
    /// `client`, `local`, … (`none`: not scheduled).
    pub venue: &'a str,
    /// `ok`, `err`, `denied`, `failed`, `timed_out`, `answered`, `running`.
    pub outcome: &'a str,
    /// The decision on it, as text in pieces (`allow (rule: reason)`).
    pub decision: &'a [&'a str],
    /// The argument's text (exported only with payloads).
    pub argument: Option<&'a str>,
    /// The result's text, or a failure's message (only with payloads).
    pub result: Option<&'a str>,
}

/// An approval: a span event of the session's span.
pub(super) struct Approval<'a> {
    pub seq: u64,
    pub hash: Option<&'a str>,
    /// When it was answered (or asked, if it was not), ns since the epoch.
    pub time: u64,
    pub tool: &'a str,
    pub id: &'a str,
    /// `approved`, `refused`, `waiting`.
    pub outcome: &'a str,
    pub argument: Option<&'a str>,
}

/// The session's span.
pub(super) struct Root<'a> {
    /// The seq and hash of the log's last event.
    pub seq: u64,
    pub hash: Option<&'a str>,
    pub times: (u64, u64),
    /// `ok`/`error` (session_ended), `answered`/`gave_up`/`error` (agent_ended).
    pub status: &'a str,
}

/// A trace, encoded: `entry()` is one `ResourceSpans` entry of an
/// `ExportTraceServiceRequest` (field 1, framed), so entries concatenated
/// are a request.
#[derive(Debug)]
pub struct Encoded {
    pub(super) bytes: Vec<u8>,
    /// How many spans it holds.
    pub(super) spans: usize,
}

impl Encoded {
    /// The entry's bytes.
    pub fn entry(&self) -> &[u8] {
        &self.bytes
    }
}

/// A trace being built (see the module's note).
pub(super) struct TraceBuilder {
    service: String,
    session: String,
    payloads: Option<usize>,
    trace_id: [u8; 16],
    /// The session id's hash, mixed with a seq into a span id.
    key: u64,
    /// The spans ended so far, in the order they ended.
    spans: Vec<Span>,
    /// The approvals: events of the session's span.
    approvals: Vec<Event>,
}

impl TraceBuilder {
    /// The trace of session `session`, its resource named `service`;
    /// `payloads`: export arguments and results, cut to that many bytes.
    pub(super) fn new(service: &str, session: &str, payloads: Option<usize>) -> TraceBuilder {
        let digest = Sha256::digest(session.as_bytes());
        let trace_id = match hex::decode(session) {
            Ok(b) if b.len() == 16 && b.iter().any(|x| *x != 0) => {
                let mut id = [0u8; 16];
                id.copy_from_slice(&b);
                id
            }
            _ => {
                let mut id = [0u8; 16];
                id.copy_from_slice(&digest[..16]);
                id
            }
        };
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[16..24]);
        TraceBuilder {
            service: service.to_string(),
            session: session.to_string(),
            payloads,
            trace_id,
            key: u64::from_be_bytes(key),
            // A few hundred spans before the first reallocation.
            spans: Vec::with_capacity(256),
            approvals: Vec::new(),
        }
    }

    /// The span id of the span whose first event is `seq` (`None`: the
    /// session's span).
    fn span_id(&self, seq: Option<u64>) -> [u8; 8] {
        // splitmix64: distinct seqs give distinct ids.
        let mut z = self.key ^ seq.map_or(u64::MAX, |s| s.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let mut id = z.to_be_bytes();
        id[0] |= 1; // never all zeros (an invalid id)
        id
    }

    /// The export of `s`, cut to the payload limit.
    fn payload(&self, s: Option<&str>) -> Option<String> {
        Some(cut(s?, self.payloads?))
    }

    /// Adds an `execute_tool` or `chat` span.
    pub(super) fn span(&mut self, r: &SpanRow<'_>) {
        let name = match r.kind {
            SpanKind::Tool => "execute_tool",
            SpanKind::Chat => "chat",
        };
        let mut attributes = Vec::with_capacity(10);
        attributes.push(text("gen_ai.operation.name", name));
        match r.kind {
            SpanKind::Tool => {
                attributes.push(text("gen_ai.tool.name", r.tool));
                attributes.push(text("gen_ai.tool.call.id", r.id));
                attributes.push(text("gen_ai.tool.type", "function"));
                attributes.push(text("lt.call.venue", r.venue));
            }
            SpanKind::Chat => attributes.push(text("lt.model.request_id", r.id)),
        }
        attributes.push(text("lt.call.outcome", r.outcome));
        attributes.push(int("lt.log.seq", r.seqs.1));
        if let Some(h) = r.hash {
            attributes.push(text("lt.log.hash", h));
        }
        if r.kind == SpanKind::Tool {
            if let Some(s) = self.payload(r.argument) {
                attributes.push(text("gen_ai.tool.call.arguments", s));
            }
            if let Some(s) = self.payload(r.result) {
                attributes.push(text("gen_ai.tool.call.result", s));
            }
        }
        let events = if r.decision.is_empty() {
            Vec::new()
        } else {
            vec![Event {
                time_unix_nano: r.times.0,
                name: "decision".into(),
                attributes: vec![text("lt.decision", r.decision.concat())],
                ..Event::default()
            }]
        };
        let failed = matches!(r.outcome, "err" | "failed" | "timed_out" | "denied");
        self.spans.push(Span {
            trace_id: self.trace_id.to_vec(),
            span_id: self.span_id(Some(r.seqs.0)).to_vec(),
            parent_span_id: self.span_id(None).to_vec(),
            name: name.into(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: r.times.0,
            end_time_unix_nano: r.times.1.max(r.times.0),
            attributes,
            events,
            status: if failed {
                error(r.outcome.to_string())
            } else {
                None
            },
            ..Span::default()
        });
    }

    /// Adds an approval (an event of the session's span).
    pub(super) fn approval(&mut self, a: &Approval<'_>) {
        let mut attributes = Vec::with_capacity(6);
        attributes.push(text("gen_ai.tool.name", a.tool));
        attributes.push(text("lt.approval.id", a.id));
        attributes.push(text("lt.approval.outcome", a.outcome));
        attributes.push(int("lt.log.seq", a.seq));
        if let Some(h) = a.hash {
            attributes.push(text("lt.log.hash", h));
        }
        if let Some(s) = self.payload(a.argument) {
            attributes.push(text("gen_ai.tool.call.arguments", s));
        }
        self.approvals.push(Event {
            time_unix_nano: a.time,
            name: "approval".into(),
            attributes,
            ..Event::default()
        });
    }

    /// Adds the session's span and encodes the whole.
    pub(super) fn finish(mut self, root: &Root<'_>) -> Encoded {
        let mut attributes = Vec::with_capacity(5);
        attributes.push(text("gen_ai.operation.name", "invoke_workflow"));
        attributes.push(text("lt.session.id", self.session.as_str()));
        attributes.push(int("lt.log.seq", root.seq));
        if let Some(h) = root.hash {
            attributes.push(text("lt.log.hash", h));
        }
        attributes.push(text("lt.session.status", root.status));
        let failed = root.status == "error" || root.status == "gave_up";
        self.spans.push(Span {
            trace_id: self.trace_id.to_vec(),
            span_id: self.span_id(None).to_vec(),
            name: "invoke_workflow".into(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: root.times.0,
            end_time_unix_nano: root.times.1.max(root.times.0),
            attributes,
            events: std::mem::take(&mut self.approvals),
            status: if failed {
                error(format!("the session ended with status {}", root.status))
            } else {
                None
            },
            ..Span::default()
        });
        let spans = self.spans.len();
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![text("service.name", self.service)],
                    ..Resource::default()
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "lt".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..InstrumentationScope::default()
                    }),
                    spans: self.spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        };
        Encoded {
            bytes: request.encode_to_vec(),
            spans,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::{cut, Approval, Encoded, Root, SpanKind, SpanRow, TraceBuilder};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::common::v1::KeyValue;
    use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
    use prost::Message;

    /// The one resource's spans of an encoded trace, decoded by prost as
    /// a receiver would.
    pub(in crate::otlp) fn decode(e: &Encoded) -> ResourceSpans {
        let mut r = ExportTraceServiceRequest::decode(e.entry()).expect("a request");
        assert_eq!(r.resource_spans.len(), 1);
        let rs = r.resource_spans.remove(0);
        assert_eq!(rs.scope_spans[0].spans.len(), e.spans, "the count of spans");
        rs
    }

    /// Attribute `key`'s value as text.
    /// Asserts that each `(key, value)` of `expected` is an attribute of
    /// `kvs` with that value (as [`attr`] renders it).
    pub(in crate::otlp) fn assert_attrs(kvs: &[KeyValue], expected: &[(&str, &str)]) {
        for (key, value) in expected {
            assert_eq!(attr(kvs, key).as_deref(), Some(*value), "attribute {key}");
        }
    }

    pub(in crate::otlp) fn attr(kvs: &[KeyValue], key: &str) -> Option<String> {
        let kv = kvs.iter().find(|kv| kv.key == key)?;
        match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            Any::IntValue(n) => Some(n.to_string()),
            other => Some(format!("{other:?}")),
        }
    }

    #[test]
    fn a_payload_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("aé", 2), "a…");
        assert_eq!(cut("", 0), "");
    }

    /// A trace of one call and one approval, of session `id`.
    fn one_call(id: &str) -> Encoded {
        let mut t = TraceBuilder::new("lt run", id, Some(3));
        t.span(&SpanRow {
            kind: SpanKind::Tool,
            seqs: (2, 4),
            hash: Some("h4"),
            times: (10, 20),
            tool: "lookup",
            id: "c1",
            venue: "local",
            outcome: "denied",
            decision: &["deny", " (", "r", ": ", "no", ")"],
            argument: Some("{\"k\": 1}"),
            result: None,
        });
        t.approval(&Approval {
            seq: 6,
            hash: None,
            time: 30,
            tool: "lookup",
            id: "a1",
            outcome: "approved",
            argument: Some("ab"),
        });
        t.finish(&Root {
            seq: 7,
            hash: Some("h7"),
            times: (5, 40),
            status: "error",
        })
    }

    #[test]
    fn a_trace_is_one_entry_and_entries_join_into_one_request() {
        let a = one_call("0123456789abcdef0123456789abcdef");
        let rs = decode(&a);
        let scope = rs.scope_spans[0].scope.as_ref().expect("a scope");
        assert_eq!(scope.name, "lt");
        let resource = rs.resource.as_ref().expect("a resource");
        assert_eq!(
            attr(&resource.attributes, "service.name").as_deref(),
            Some("lt run")
        );
        let [call, root] = &rs.scope_spans[0].spans[..] else {
            panic!("two spans");
        };
        assert_eq!(call.name, "execute_tool");
        assert_eq!(call.parent_span_id, root.span_id);
        assert!(root.parent_span_id.is_empty());
        assert_eq!(
            (call.start_time_unix_nano, call.end_time_unix_nano),
            (10, 20)
        );
        let a_ = |k| attr(&call.attributes, k);
        assert_eq!(a_("gen_ai.tool.call.arguments").as_deref(), Some("{\"k…"));
        assert_eq!(a_("gen_ai.tool.call.result"), None);
        assert_eq!(a_("lt.log.seq").as_deref(), Some("4"));
        assert_eq!(a_("lt.log.hash").as_deref(), Some("h4"));
        assert_eq!(call.events[0].name, "decision");
        assert_eq!(
            attr(&call.events[0].attributes, "lt.decision").as_deref(),
            Some("deny (r: no)")
        );
        assert_eq!(
            call.status.as_ref().map(|s| s.message.as_str()),
            Some("denied")
        );
        let approval = &root.events[0];
        assert_eq!(
            (approval.name.as_str(), approval.time_unix_nano),
            ("approval", 30)
        );
        assert_eq!(attr(&approval.attributes, "lt.log.hash"), None);
        assert_eq!(
            attr(&approval.attributes, "gen_ai.tool.call.arguments").as_deref(),
            Some("ab")
        );
        assert_eq!(
            root.status.as_ref().map(|s| s.message.as_str()),
            Some("the session ended with status error")
        );
        // Two traces' entries, concatenated, are one request of both.
        let b = one_call("agent-1");
        let joined: Vec<u8> = [a.entry(), b.entry()].concat();
        let r = ExportTraceServiceRequest::decode(&joined[..]).expect("a request");
        assert_eq!(r.resource_spans.len(), 2);
        assert_ne!(
            r.resource_spans[0].scope_spans[0].spans[0].trace_id,
            r.resource_spans[1].scope_spans[0].spans[0].trace_id
        );
    }

    #[test]
    fn a_session_id_is_its_trace_id_and_span_ids_differ() {
        let id = "0123456789abcdef0123456789abcdef";
        let t = TraceBuilder::new("lt run", id, None);
        assert_eq!(hex::encode(t.trace_id), id);
        let other = TraceBuilder::new("lt run", "agent-1", None);
        assert_ne!(other.trace_id, [0; 16]);
        assert_ne!(t.span_id(None), t.span_id(Some(0)));
        let ids: std::collections::HashSet<[u8; 8]> =
            (0..10_000).map(|s| t.span_id(Some(s))).collect();
        assert_eq!(ids.len(), 10_000);
        assert_ne!(t.span_id(Some(1)), other.span_id(Some(1)));
    }
}
