//! A trace encoded span by span with `opentelemetry-proto`'s message
//! types and `prost`, as its spans end.
//!
//! ```text
//! TraceBuilder::new(service, session, payloads)
//!   .span(&SpanRow)      an execute_tool or chat span, a child of the session's:
//!                        encoded at once (one Span message, reused)
//!   .approval(&Approval) a span event of the session's span (kept)
//!   .end(&Root)          the session's span, with the approvals, encoded
//!   .flush()             the spans encoded since the last flush ─▶ Encoded: one
//!                        ResourceSpans as the one entry of an
//!                        ExportTraceServiceRequest (field 1)
//!   .finish(&Root)       end, then flush: the whole trace as one entry
//! ```
//!
//! An entry is a whole request, and entries concatenated are one request
//! (protobuf merges a repeated field's entries), so the exporter's thread
//! joins entries without decoding them, and a trace may go out in several
//! entries (`lt run` posts its spans in batches as they end, the session's
//! span last). Each span is filled into one `Span` message whose strings
//! and vectors are kept from span to span, and prost encodes it as a
//! length-delimited `ScopeSpans.spans` entry (field 2) onto the spans
//! encoded so far; `flush` puts the `ResourceSpans` and `ScopeSpans`
//! headers, each encoded by prost without its spans, in front of them. A
//! trace of many spans thus allocates for its first span only.
//!
//! Ids are derived, not drawn: the trace id is the session id's 16 bytes
//! (a session id is 32 hex digits; another id is hashed), a span id a mix
//! of the session id's hash and the seq of the span's first event: a trace
//! names its session, and exporting a log twice sends the same spans.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{self, Event};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;
use sha2::{Digest, Sha256};

/// The key of `ExportTraceServiceRequest.resource_spans` (field 1,
/// length-delimited), of `ResourceSpans.scope_spans` (field 2) and of
/// `ScopeSpans.spans` (field 2): what frames an encoded message as an
/// entry of the one that holds it.
const RESOURCE_SPANS: u8 = 1 << 3 | 2;
const SCOPE_SPANS: u8 = 2 << 3 | 2;
const SPANS: u8 = 2 << 3 | 2;

/// Sets the next attribute of `kvs` (number `*n`) to key `key`, keeping
/// the strings of the attribute that was there; its value to fill.
fn slot<'a>(kvs: &'a mut Vec<KeyValue>, n: &mut usize, key: &str) -> &'a mut Option<AnyValue> {
    if *n == kvs.len() {
        kvs.push(KeyValue::default());
    }
    let i = *n;
    *n += 1;
    let kv = &mut kvs[i];
    if kv.key != key {
        kv.key.clear();
        kv.key.push_str(key);
    }
    &mut kv.value
}

/// Sets `value` to a string filled by `fill`, keeping the string that
/// was there.
fn put_string(value: &mut Option<AnyValue>, fill: impl FnOnce(&mut String)) {
    let mut s = match value.take() {
        Some(AnyValue {
            value: Some(any_value::Value::StringValue(s)),
        }) => s,
        _ => String::new(),
    };
    s.clear();
    fill(&mut s);
    *value = Some(AnyValue {
        value: Some(any_value::Value::StringValue(s)),
    });
}

/// Sets the next attribute to the text of `pieces`, concatenated.
fn put_text(kvs: &mut Vec<KeyValue>, n: &mut usize, key: &str, pieces: &[&str]) {
    put_string(slot(kvs, n, key), |s| {
        for p in pieces {
            s.push_str(p);
        }
    });
}

/// Sets the next attribute to `v` cut to `limit` bytes ([`cut`]).
fn put_cut(kvs: &mut Vec<KeyValue>, n: &mut usize, key: &str, v: &str, limit: usize) {
    put_string(slot(kvs, n, key), |s| {
        let end = cut_at(v, limit);
        s.push_str(&v[..end]);
        if end < v.len() {
            s.push('…');
        }
    });
}

/// Sets the next attribute to the integer `v` (at most `i64::MAX`).
fn put_int(kvs: &mut Vec<KeyValue>, n: &mut usize, key: &str, v: u64) {
    *slot(kvs, n, key) = Some(AnyValue {
        value: Some(any_value::Value::IntValue(
            i64::try_from(v).unwrap_or(i64::MAX),
        )),
    });
}

/// Sets `status` to an error with message `message` (`None`: unset),
/// keeping its string.
fn put_status(status: &mut Option<Status>, message: Option<&[&str]>) {
    let Some(pieces) = message else {
        *status = None;
        return;
    };
    let s = status.get_or_insert_with(Status::default);
    s.code = StatusCode::Error as i32;
    s.message.clear();
    for p in pieces {
        s.message.push_str(p);
    }
}

/// Sets `to` to `bytes`, keeping its buffer.
fn put_bytes(to: &mut Vec<u8>, bytes: &[u8]) {
    to.clear();
    to.extend_from_slice(bytes);
}

/// Where `s` is cut to at most `limit` bytes (on a character boundary).
fn cut_at(s: &str, limit: usize) -> usize {
    if s.len() <= limit {
        return s.len();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// `s` cut to at most `limit` bytes (on a character boundary), with `…`
/// after a cut.
pub fn cut(s: &str, limit: usize) -> String {
    let end = cut_at(s, limit);
    if end == s.len() {
        return s.to_string();
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

/// Spans encoded: `entry()` is one `ResourceSpans` entry of an
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
    /// The session id's hash, mixed with a seq into a span id.
    key: u64,
    /// The spans encoded since the last flush, each a framed
    /// `ScopeSpans.spans` entry, in the order they ended.
    spans: Vec<u8>,
    /// How many.
    count: usize,
    /// The message each span is filled into before it is encoded.
    scratch: Span,
    /// A decision event kept while a span has none.
    spare: Option<Event>,
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
            key: u64::from_be_bytes(key),
            spans: Vec::new(),
            count: 0,
            scratch: Span {
                trace_id: trace_id.to_vec(),
                kind: span::SpanKind::Internal as i32,
                ..Span::default()
            },
            spare: None,
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

    /// How many spans wait for [`TraceBuilder::flush`].
    pub(super) fn pending(&self) -> usize {
        self.count
    }

    /// Encodes the span filled in `scratch` after the others.
    fn push_scratch(&mut self) {
        self.spans.push(SPANS);
        // A Vec grows as needed: encoding into it cannot run short.
        let _ = self.scratch.encode_length_delimited(&mut self.spans);
        self.count += 1;
    }

    /// Adds an `execute_tool` or `chat` span.
    pub(super) fn span(&mut self, r: &SpanRow<'_>) {
        let name = match r.kind {
            SpanKind::Tool => "execute_tool",
            SpanKind::Chat => "chat",
        };
        let (id, parent) = (self.span_id(Some(r.seqs.0)), self.span_id(None));
        let s = &mut self.scratch;
        put_bytes(&mut s.span_id, &id);
        put_bytes(&mut s.parent_span_id, &parent);
        s.name.clear();
        s.name.push_str(name);
        s.start_time_unix_nano = r.times.0;
        s.end_time_unix_nano = r.times.1.max(r.times.0);
        let (kvs, n) = (&mut s.attributes, &mut 0);
        put_text(kvs, n, "gen_ai.operation.name", &[name]);
        match r.kind {
            SpanKind::Tool => {
                put_text(kvs, n, "gen_ai.tool.name", &[r.tool]);
                put_text(kvs, n, "gen_ai.tool.call.id", &[r.id]);
                put_text(kvs, n, "gen_ai.tool.type", &["function"]);
                put_text(kvs, n, "lt.call.venue", &[r.venue]);
            }
            SpanKind::Chat => put_text(kvs, n, "lt.model.request_id", &[r.id]),
        }
        put_text(kvs, n, "lt.call.outcome", &[r.outcome]);
        put_int(kvs, n, "lt.log.seq", r.seqs.1);
        if let Some(h) = r.hash {
            put_text(kvs, n, "lt.log.hash", &[h]);
        }
        if let (SpanKind::Tool, Some(limit)) = (r.kind, self.payloads) {
            if let Some(a) = r.argument {
                put_cut(kvs, n, "gen_ai.tool.call.arguments", a, limit);
            }
            if let Some(v) = r.result {
                put_cut(kvs, n, "gen_ai.tool.call.result", v, limit);
            }
        }
        kvs.truncate(*n);
        if r.decision.is_empty() {
            if let Some(e) = s.events.pop() {
                self.spare = Some(e);
            }
        } else {
            if s.events.is_empty() {
                s.events.push(self.spare.take().unwrap_or_default());
            }
            let e = &mut s.events[0];
            e.time_unix_nano = r.times.0;
            if e.name != "decision" {
                e.name = "decision".into();
            }
            let n = &mut 0;
            put_text(&mut e.attributes, n, "lt.decision", r.decision);
            e.attributes.truncate(*n);
        }
        let failed = matches!(r.outcome, "err" | "failed" | "timed_out" | "denied");
        put_status(&mut s.status, failed.then_some(&[r.outcome][..]));
        self.push_scratch();
    }

    /// Adds an approval (an event of the session's span).
    pub(super) fn approval(&mut self, a: &Approval<'_>) {
        let (mut attributes, n) = (Vec::with_capacity(6), &mut 0);
        put_text(&mut attributes, n, "gen_ai.tool.name", &[a.tool]);
        put_text(&mut attributes, n, "lt.approval.id", &[a.id]);
        put_text(&mut attributes, n, "lt.approval.outcome", &[a.outcome]);
        put_int(&mut attributes, n, "lt.log.seq", a.seq);
        if let Some(h) = a.hash {
            put_text(&mut attributes, n, "lt.log.hash", &[h]);
        }
        if let (Some(limit), Some(arg)) = (self.payloads, a.argument) {
            put_cut(&mut attributes, n, "gen_ai.tool.call.arguments", arg, limit);
        }
        self.approvals.push(Event {
            time_unix_nano: a.time,
            name: "approval".into(),
            attributes,
            ..Event::default()
        });
    }

    /// Adds the session's span (the approvals its events).
    pub(super) fn end(&mut self, root: &Root<'_>) {
        let id = self.span_id(None);
        let s = &mut self.scratch;
        put_bytes(&mut s.span_id, &id);
        s.parent_span_id.clear();
        s.name.clear();
        s.name.push_str("invoke_workflow");
        s.start_time_unix_nano = root.times.0;
        s.end_time_unix_nano = root.times.1.max(root.times.0);
        let (kvs, n) = (&mut s.attributes, &mut 0);
        put_text(kvs, n, "gen_ai.operation.name", &["invoke_workflow"]);
        put_text(kvs, n, "lt.session.id", &[&self.session]);
        put_int(kvs, n, "lt.log.seq", root.seq);
        if let Some(h) = root.hash {
            put_text(kvs, n, "lt.log.hash", &[h]);
        }
        put_text(kvs, n, "lt.session.status", &[root.status]);
        kvs.truncate(*n);
        let failed = root.status == "error" || root.status == "gave_up";
        put_status(
            &mut s.status,
            failed.then_some(&["the session ended with status ", root.status][..]),
        );
        let decision = std::mem::replace(&mut s.events, std::mem::take(&mut self.approvals));
        self.push_scratch();
        self.scratch.events = decision;
    }

    /// The spans encoded since the last flush, as one entry (`None`: no
    /// span).
    pub(super) fn flush(&mut self) -> Option<Encoded> {
        if self.count == 0 {
            return None;
        }
        // The headers, each encoded without its spans; the spans after.
        let scope = ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "lt".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..InstrumentationScope::default()
            }),
            ..ScopeSpans::default()
        }
        .encode_to_vec();
        let resource = ResourceSpans {
            resource: Some(Resource {
                attributes: {
                    let (mut kvs, n) = (Vec::with_capacity(1), &mut 0);
                    put_text(&mut kvs, n, "service.name", &[&self.service]);
                    kvs
                },
                ..Resource::default()
            }),
            ..ResourceSpans::default()
        }
        .encode_to_vec();
        let scope_len = scope.len() + self.spans.len();
        let resource_len = resource.len() + 1 + prost::length_delimiter_len(scope_len) + scope_len;
        let mut bytes =
            Vec::with_capacity(resource_len + 1 + prost::length_delimiter_len(resource_len));
        // Lengths written into a Vec cannot run short either.
        bytes.push(RESOURCE_SPANS);
        let _ = prost::encode_length_delimiter(resource_len, &mut bytes);
        bytes.extend_from_slice(&resource);
        bytes.push(SCOPE_SPANS);
        let _ = prost::encode_length_delimiter(scope_len, &mut bytes);
        bytes.extend_from_slice(&scope);
        bytes.extend_from_slice(&self.spans);
        self.spans.clear();
        let spans = std::mem::take(&mut self.count);
        Some(Encoded { bytes, spans })
    }

    /// Adds the session's span and encodes what is left of the trace
    /// (the whole trace, if nothing was flushed before).
    pub(super) fn finish(mut self, root: &Root<'_>) -> Encoded {
        self.end(root);
        self.flush().unwrap_or(Encoded {
            bytes: Vec::new(),
            spans: 0,
        })
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
        assert_eq!(hex::encode(&t.scratch.trace_id), id);
        let other = TraceBuilder::new("lt run", "agent-1", None);
        assert_ne!(other.scratch.trace_id, [0; 16]);
        assert_ne!(t.span_id(None), t.span_id(Some(0)));
        let ids: std::collections::HashSet<[u8; 8]> =
            (0..10_000).map(|s| t.span_id(Some(s))).collect();
        assert_eq!(ids.len(), 10_000);
        assert_ne!(t.span_id(Some(1)), other.span_id(Some(1)));
    }
}
