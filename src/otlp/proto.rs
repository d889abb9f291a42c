//! A trace encoded as OTLP protobuf as its spans end: each span written
//! once, straight into the request's bytes, with no message structs in
//! between (the field numbers are `opentelemetry-proto`'s, whose types the
//! tests decode it with).
//!
//! ```text
//! TraceBuilder::new(service, session, payloads)
//!   .span(&SpanRow)      an execute_tool or chat span, a child of the session's
//!   .approval(&Approval) a span event of the session's span
//!   .finish(&Root)       the session's span ─▶ Encoded: one ResourceSpans entry
//!                        of an ExportTraceServiceRequest (field 1, framed)
//! ```
//!
//! The request's head (the entry's tag and length, the resource, the
//! scope) is written last, into room kept before the spans, so the spans
//! are never copied. Ids are derived, not drawn: the trace id is the
//! session id's 16 bytes (a session id is 32 hex digits; another id is
//! hashed), a span id a mix of the session id's hash and the seq of the
//! span's first event: a trace names its session, and exporting a log
//! twice sends the same spans.

use sha2::{Digest, Sha256};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

/// `SpanKind::Internal`, `StatusCode::Error`.
const KIND_INTERNAL: u64 = 1;
const STATUS_ERROR: u64 = 2;

fn tag(out: &mut Vec<u8>, field: u8, wire: u8) {
    out.push((field << 3) | wire);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A length-delimited field of `len` bytes (its tag and length; the
/// bytes are the caller's to write).
fn head(out: &mut Vec<u8>, field: u8, len: usize) {
    tag(out, field, LEN);
    varint(out, len as u64);
}

fn field_len(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

fn bytes(out: &mut Vec<u8>, field: u8, b: &[u8]) {
    head(out, field, b.len());
    out.extend_from_slice(b);
}

fn fixed64(out: &mut Vec<u8>, field: u8, v: u64) {
    tag(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

fn uint(out: &mut Vec<u8>, field: u8, v: u64) {
    tag(out, field, VARINT);
    varint(out, v);
}

/// A `KeyValue` (as field `field`) whose value is the string made of
/// `pieces`.
fn text(out: &mut Vec<u8>, field: u8, key: &str, pieces: &[&str]) {
    let s: usize = pieces.iter().map(|p| p.len()).sum();
    let any = field_len(s); // AnyValue.string_value = 1
    head(out, field, field_len(key.len()) + field_len(any));
    bytes(out, 1, key.as_bytes());
    head(out, 2, any);
    head(out, 1, s);
    for p in pieces {
        out.extend_from_slice(p.as_bytes());
    }
}

/// A `KeyValue` (as field `field`) whose value is the integer `v`.
fn int(out: &mut Vec<u8>, field: u8, key: &str, v: u64) {
    let v = v.min(i64::MAX as u64);
    let any = 1 + varint_len(v); // AnyValue.int_value = 3
    head(out, field, field_len(key.len()) + field_len(any));
    bytes(out, 1, key.as_bytes());
    head(out, 2, any);
    uint(out, 3, v);
}

/// `s` cut to at most `limit` bytes (on a character boundary), and
/// whether it was cut (then `…` follows it).
fn cut_at(s: &str, limit: usize) -> (&str, &'static str) {
    if s.len() <= limit {
        return (s, "");
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], "…")
}

/// `s` cut to at most `limit` bytes (on a character boundary), with `…`
/// after a cut.
pub fn cut(s: &str, limit: usize) -> String {
    let (kept, mark) = cut_at(s, limit);
    format!("{kept}{mark}")
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

/// A trace, encoded: `bytes[start..]` is one `ResourceSpans` entry of an
/// `ExportTraceServiceRequest` (field 1, framed), so entries concatenated
/// are a request.
#[derive(Debug)]
pub struct Encoded {
    pub(super) bytes: Vec<u8>,
    pub(super) start: usize,
    /// How many spans it holds.
    pub(super) spans: usize,
}

impl Encoded {
    /// The entry's bytes.
    pub fn entry(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// A trace being encoded (see the module's note).
pub(super) struct TraceBuilder {
    session: String,
    payloads: Option<usize>,
    trace_id: [u8; 16],
    /// The session id's hash, mixed with a seq into a span id.
    key: u64,
    /// The head's bytes: the resource and the scope, as fields of
    /// `ResourceSpans` and `ScopeSpans`.
    resource: Vec<u8>,
    scope: Vec<u8>,
    /// Room for the head, then the spans (each a `ScopeSpans.spans` entry).
    out: Vec<u8>,
    room: usize,
    spans: usize,
    /// The approvals (`Span.events` entries of the session's span).
    approvals: Vec<u8>,
    /// One span's fields, then its framing.
    scratch: Vec<u8>,
    event: Vec<u8>,
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
        let mut attrs = Vec::new();
        text(&mut attrs, 1, "service.name", &[service]);
        let mut resource = Vec::new();
        bytes(&mut resource, 1, &attrs); // ResourceSpans.resource
        let mut scope_fields = Vec::new();
        bytes(&mut scope_fields, 1, b"lt");
        bytes(&mut scope_fields, 2, env!("CARGO_PKG_VERSION").as_bytes());
        let mut scope = Vec::new();
        bytes(&mut scope, 1, &scope_fields); // ScopeSpans.scope
                                             // Two tags and two lengths of at most 10 bytes each.
        let room = resource.len() + scope.len() + 22;
        TraceBuilder {
            session: session.to_string(),
            payloads,
            trace_id,
            key: u64::from_be_bytes(key),
            resource,
            scope,
            out: {
                // Room for a few hundred spans before the first copy.
                let mut out = Vec::with_capacity(room + (64 << 10));
                out.resize(room, 0);
                out
            },
            room,
            spans: 0,
            approvals: Vec::new(),
            scratch: Vec::with_capacity(512),
            event: Vec::with_capacity(256),
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

    /// The export of `s`, cut to the payload limit, as pieces.
    fn payload<'s>(&self, s: Option<&'s str>) -> Option<(&'s str, &'static str)> {
        Some(cut_at(s?, self.payloads?))
    }

    /// Adds an `execute_tool` or `chat` span.
    pub(super) fn span(&mut self, r: &SpanRow<'_>) {
        let mut f = std::mem::take(&mut self.scratch);
        f.clear();
        bytes(&mut f, 1, &self.trace_id);
        bytes(&mut f, 2, &self.span_id(Some(r.seqs.0)));
        bytes(&mut f, 4, &self.span_id(None));
        let name = match r.kind {
            SpanKind::Tool => "execute_tool",
            SpanKind::Chat => "chat",
        };
        bytes(&mut f, 5, name.as_bytes());
        uint(&mut f, 6, KIND_INTERNAL);
        fixed64(&mut f, 7, r.times.0);
        fixed64(&mut f, 8, r.times.1.max(r.times.0));
        text(&mut f, 9, "gen_ai.operation.name", &[name]);
        match r.kind {
            SpanKind::Tool => {
                text(&mut f, 9, "gen_ai.tool.name", &[r.tool]);
                text(&mut f, 9, "gen_ai.tool.call.id", &[r.id]);
                text(&mut f, 9, "gen_ai.tool.type", &["function"]);
                text(&mut f, 9, "lt.call.venue", &[r.venue]);
            }
            SpanKind::Chat => text(&mut f, 9, "lt.model.request_id", &[r.id]),
        }
        text(&mut f, 9, "lt.call.outcome", &[r.outcome]);
        int(&mut f, 9, "lt.log.seq", r.seqs.1);
        if let Some(h) = r.hash {
            text(&mut f, 9, "lt.log.hash", &[h]);
        }
        if r.kind == SpanKind::Tool {
            if let Some((s, mark)) = self.payload(r.argument) {
                text(&mut f, 9, "gen_ai.tool.call.arguments", &[s, mark]);
            }
            if let Some((s, mark)) = self.payload(r.result) {
                text(&mut f, 9, "gen_ai.tool.call.result", &[s, mark]);
            }
        }
        if !r.decision.is_empty() {
            let e = &mut self.event;
            e.clear();
            fixed64(e, 1, r.times.0);
            bytes(e, 2, b"decision");
            text(e, 3, "lt.decision", r.decision);
            bytes(&mut f, 11, e);
        }
        if matches!(r.outcome, "err" | "failed" | "timed_out" | "denied") {
            let m = field_len(r.outcome.len()) + 2;
            head(&mut f, 15, m);
            bytes(&mut f, 2, r.outcome.as_bytes());
            uint(&mut f, 3, STATUS_ERROR);
        }
        bytes(&mut self.out, 2, &f); // ScopeSpans.spans
        self.scratch = f;
        self.spans += 1;
    }

    /// Adds an approval (an event of the session's span).
    pub(super) fn approval(&mut self, a: &Approval<'_>) {
        let e = &mut self.event;
        e.clear();
        fixed64(e, 1, a.time);
        bytes(e, 2, b"approval");
        text(e, 3, "gen_ai.tool.name", &[a.tool]);
        text(e, 3, "lt.approval.id", &[a.id]);
        text(e, 3, "lt.approval.outcome", &[a.outcome]);
        int(e, 3, "lt.log.seq", a.seq);
        if let Some(h) = a.hash {
            text(e, 3, "lt.log.hash", &[h]);
        }
        if let Some((s, mark)) = a.argument.and_then(|s| Some(cut_at(s, self.payloads?))) {
            text(e, 3, "gen_ai.tool.call.arguments", &[s, mark]);
        }
        bytes(&mut self.approvals, 11, e); // Span.events
    }

    /// Adds the session's span and frames the whole.
    pub(super) fn finish(mut self, root: &Root<'_>) -> Encoded {
        let mut f = std::mem::take(&mut self.scratch);
        f.clear();
        bytes(&mut f, 1, &self.trace_id);
        bytes(&mut f, 2, &self.span_id(None));
        bytes(&mut f, 5, b"invoke_workflow");
        uint(&mut f, 6, KIND_INTERNAL);
        fixed64(&mut f, 7, root.times.0);
        fixed64(&mut f, 8, root.times.1.max(root.times.0));
        text(&mut f, 9, "gen_ai.operation.name", &["invoke_workflow"]);
        text(&mut f, 9, "lt.session.id", &[&self.session]);
        int(&mut f, 9, "lt.log.seq", root.seq);
        if let Some(h) = root.hash {
            text(&mut f, 9, "lt.log.hash", &[h]);
        }
        text(&mut f, 9, "lt.session.status", &[root.status]);
        f.extend_from_slice(&self.approvals);
        if root.status == "error" || root.status == "gave_up" {
            let message = ["the session ended with status ", root.status];
            let m = field_len(message[0].len() + message[1].len()) + 2;
            head(&mut f, 15, m);
            head(&mut f, 2, message[0].len() + message[1].len());
            f.extend_from_slice(message[0].as_bytes());
            f.extend_from_slice(message[1].as_bytes());
            uint(&mut f, 3, STATUS_ERROR);
        }
        bytes(&mut self.out, 2, &f);
        self.spans += 1;
        // The head, written just before the spans.
        let spans_len = self.out.len() - self.room;
        let scope_spans = self.scope.len() + spans_len;
        let resource_spans = self.resource.len() + field_len(scope_spans);
        let mut h = Vec::with_capacity(self.room);
        head(&mut h, 1, resource_spans); // ExportTraceServiceRequest.resource_spans
        h.extend_from_slice(&self.resource);
        head(&mut h, 2, scope_spans); // ResourceSpans.scope_spans
        h.extend_from_slice(&self.scope);
        let start = self.room - h.len();
        self.out[start..self.room].copy_from_slice(&h);
        Encoded {
            bytes: self.out,
            start,
            spans: self.spans,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::{cut, varint, varint_len, Encoded, TraceBuilder};
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

    #[test]
    fn varints_are_as_long_as_written() {
        for v in [0, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
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
