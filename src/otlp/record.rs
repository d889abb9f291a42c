//! The spans of a session recorded as it runs: a [`Recorder`] is the
//! session's [`EventTap`] (`Session::tap`), so each typed event is seen
//! once, as it is recorded; nothing is read back, parsed, or kept beyond
//! the calls still open. When a call ends, the recorder copies it as a
//! compact row into a [`Batch`] (`batch.rs`); every [`ROWS`] rows the
//! batch goes to the exporter's thread, which builds, encodes and posts
//! the spans while the session runs (as OpenTelemetry's batch span
//! processor does); the session's span goes last, with the rows left,
//! at `session_ended` (or `agent_ended` for an agent's log).
//!
//! Rows as `log::timeline` makes them from a log's lines: a call from
//! `proposed` to its outcome (`completed`, `failed`, `timed_out`, or a
//! denying `decided`), an approval from `approval_requested` to
//! `approval_decided`, a model request from `model_requested` to
//! `model_replied` or `model_failed`. Each span carries the seq of its
//! last event (`lt.log.seq`) and, when the session's log is a file,
//! that event's hash as the writer computed it (`lt.log.hash`); without
//! a log there is no verifiable record to link to, and no hash. Times are
//! the clock's when the tap sees each event (the log's `ts` are stamped
//! from the same clock microseconds before).
//!
//! The strings of a closed row are kept for the next one: a run of many
//! calls allocates the open rows for its first few only, and a batch's
//! texts are one buffer.

use super::batch::{Batch, Ended};
use super::proto::{Encoded, SpanKind, TraceBuilder};
use super::Exporter;
use crate::log::{CallEvent, Decision, EventBody, EventTap};
use std::sync::Arc;
use std::time::SystemTime;

/// The rows a batch carries to the exporter's thread: small enough that
/// the thread keeps up with the run and little is left to do as it ends,
/// large enough that handing it over costs little a row.
pub const ROWS: usize = 64;

/// A row still open: a call, an approval or a model request.
#[derive(Default)]
struct Open {
    kind: Option<SpanKind>,
    id: String,
    tool: String,
    venue: String,
    first_seq: u64,
    /// The seq of its last event so far.
    last_seq: u64,
    start: u64,
    /// The decision (`allow`, `deny`), once decided, its rule and its
    /// reason (their strings kept from row to row).
    decision: Option<&'static str>,
    rule: String,
    reason: String,
    argument: String,
}

/// The session's trace, recorded as its events are; its rows sent to the
/// exporter (when there is one) in batches as they end, else kept for
/// [`Recorder::take`].
pub struct Recorder {
    exporter: Option<Exporter>,
    /// Which trace of the exporter's this is.
    trace: u64,
    service: &'static str,
    payloads: Option<usize>,
    /// The rows not yet sent (`None`: the session has not started, or has
    /// ended).
    batch: Option<Batch>,
    /// Calls and model requests (`kind` set) and approvals (`kind`
    /// `None`) still open, in the order they opened.
    open: Vec<Open>,
    free: Vec<Open>,
    start: u64,
    agent: bool,
    /// The batches of a recorder without an exporter.
    kept: Vec<Batch>,
    /// The session's id, once it started.
    session: Option<Arc<str>>,
    result: String,
}

/// Now, in nanoseconds since the epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Recorder {
    /// A recorder whose spans' resource is named `service`, exporting
    /// arguments and results cut to `payloads` bytes when that is given.
    /// With an `exporter`, the rows are sent to it as they end (`trace`:
    /// the exporter's number for this trace).
    pub(super) fn new(
        exporter: Option<(Exporter, u64)>,
        service: &'static str,
        payloads: Option<usize>,
    ) -> Recorder {
        let (exporter, trace) = match exporter {
            Some((x, trace)) => (Some(x), trace),
            None => (None, 0),
        };
        Recorder {
            exporter,
            trace,
            service,
            payloads,
            batch: None,
            open: Vec::new(),
            free: Vec::new(),
            start: 0,
            agent: false,
            kept: Vec::new(),
            session: None,
            result: String::new(),
        }
    }

    /// The trace of a session that ended, when there is no exporter to
    /// send it to: the whole trace as one entry.
    pub fn take(&mut self) -> Option<Encoded> {
        let session = self.session.as_ref()?;
        if !self.kept.last().is_some_and(Batch::ends) {
            return None;
        }
        let mut t = TraceBuilder::new(self.service, session, self.payloads);
        for b in std::mem::take(&mut self.kept) {
            b.replay(&mut t);
        }
        t.flush()
    }

    fn opened(&mut self, kind: Option<SpanKind>, id: &str, tool: &str, seq: u64, at: u64) {
        let mut o = self.free.pop().unwrap_or_default();
        o.kind = kind;
        o.id.clear();
        o.id.push_str(id);
        o.tool.clear();
        o.tool.push_str(tool);
        o.venue.clear();
        o.venue.push_str("none");
        o.first_seq = seq;
        o.last_seq = seq;
        o.start = at;
        o.decision = None;
        o.argument.clear();
        self.open.push(o);
    }

    fn find(&self, kind: Option<SpanKind>, id: &str) -> Option<usize> {
        self.open.iter().rposition(|o| o.kind == kind && o.id == id)
    }

    /// Closes open row `i` as `outcome` at `at`, its last event `seq`;
    /// sends the batch when it is full.
    fn close(&mut self, i: usize, outcome: &'static str, seq: u64, hash: Option<&str>, at: u64) {
        let o = self.open.remove(i);
        if let Some(b) = &mut self.batch {
            add(b, &o, outcome, (seq, hash), at, &self.result);
            if b.len() >= ROWS {
                self.send();
            }
        }
        self.free.push(o);
    }

    /// Sends the batch (or keeps it, without an exporter); a new one
    /// follows unless it ended the trace.
    fn send(&mut self) {
        let Some(b) = self.batch.take() else {
            return;
        };
        if !b.ends() {
            self.batch = Some(b.next());
        }
        match &self.exporter {
            Some(x) => {
                x.send_rows(b);
            }
            None => self.kept.push(b),
        }
    }

    /// The argument of the row just opened, kept when payloads are asked for.
    fn argument(&mut self, v: &serde_json::Value) {
        if self.payloads.is_some() {
            if let Some(o) = self.open.last_mut() {
                o.argument = v.to_string();
            }
        }
    }

    /// A call's `proposed`, `decided` or `scheduled`, built or borrowed.
    fn call_event(&mut self, seq: u64, hash: Option<&str>, event: &CallEvent<'_>) {
        let call = Some(SpanKind::Tool);
        match *event {
            CallEvent::Proposed {
                call_id,
                tool,
                argument,
            } => {
                self.opened(call, call_id, tool, seq, now());
                self.argument(argument);
            }
            CallEvent::Decided {
                call_id,
                decision,
                rule,
                reason,
            } => {
                let Some(i) = self.find(call, call_id) else {
                    return;
                };
                let o = &mut self.open[i];
                o.last_seq = seq;
                o.decision = Some(decision.as_str());
                o.rule.clear();
                o.rule.push_str(rule);
                o.reason.clear();
                o.reason.push_str(reason);
                if decision == Decision::Deny {
                    self.result.clear();
                    self.close(i, "denied", seq, hash, now());
                }
            }
            CallEvent::Scheduled { call_id, venue, .. } => {
                if let Some(i) = self.find(call, call_id) {
                    let o = &mut self.open[i];
                    o.last_seq = seq;
                    o.venue.clear();
                    o.venue.push_str(venue);
                }
            }
        }
    }

    fn ended(&mut self, status: &str, seq: u64, hash: Option<&str>, at: u64) {
        let Some(b) = &mut self.batch else {
            return;
        };
        // What is still open ends with the session, as the log leaves it.
        for o in std::mem::take(&mut self.open) {
            let outcome = if o.kind.is_some() {
                "running"
            } else {
                "waiting"
            };
            add(b, &o, outcome, (o.last_seq, None), at, "");
            self.free.push(o);
        }
        b.end(seq, hash, (self.start, at), status);
        self.send();
    }
}

/// A session that did not end (its log could not be written, the command
/// stopped): the rows that ended are sent all the same.
impl Drop for Recorder {
    fn drop(&mut self) {
        if let (Some(x), Some(b)) = (&self.exporter, self.batch.take()) {
            if b.len() > 0 {
                x.send_rows(b);
            }
        }
    }
}

/// A payload kept (an empty text: none).
fn payload(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// Adds closed row `o` to `b`: `outcome` at `at`, its last event's seq
/// and hash `last`.
fn add(
    b: &mut Batch,
    o: &Open,
    outcome: &'static str,
    last: (u64, Option<&str>),
    at: u64,
    result: &str,
) {
    let e = Ended {
        seqs: (o.first_seq, last.0),
        times: (o.start, at),
        hash: last.1,
        tool: &o.tool,
        id: &o.id,
        venue: &o.venue,
        outcome,
        decision: o.decision.map(|d| (d, o.rule.as_str(), o.reason.as_str())),
        argument: payload(&o.argument),
        result: payload(result),
    };
    match o.kind {
        Some(kind) => b.call(kind, &e),
        None => b.approval(&e),
    }
}

impl EventTap for Recorder {
    /// Arguments and results are read only when they are exported.
    fn payloads(&self) -> bool {
        self.payloads.is_some()
    }

    /// A call's event, borrowed (no log is kept): as [`Self::recorded`]
    /// of the event, which is not built.
    fn observed(&mut self, _: &str, seq: u64, event: &CallEvent<'_>) {
        self.call_event(seq, None, event);
    }

    fn recorded(&mut self, session: &str, seq: u64, hash: Option<&str>, body: &EventBody) {
        if let Some(event) = CallEvent::of(body) {
            self.call_event(seq, hash, &event);
            return;
        }
        // The clock is read only for the events that open or close a row.
        let at = match body {
            EventBody::SessionStarted { .. }
            | EventBody::AgentStarted { .. }
            | EventBody::ApprovalRequested { .. }
            | EventBody::ModelRequested { .. }
            | EventBody::Completed { .. }
            | EventBody::Failed { .. }
            | EventBody::TimedOut { .. }
            | EventBody::ApprovalDecided { .. }
            | EventBody::ModelReplied { .. }
            | EventBody::ModelFailed { .. }
            | EventBody::SessionEnded { .. }
            | EventBody::AgentEnded { .. } => now(),
            _ => 0,
        };
        let call = Some(SpanKind::Tool);
        match body {
            // The first start: an agent's runs start within its log.
            EventBody::SessionStarted { .. } | EventBody::AgentStarted { .. }
                if self.batch.is_none() =>
            {
                self.agent = matches!(body, EventBody::AgentStarted { .. });
                self.start = at;
                let session: Arc<str> = Arc::from(session);
                self.session = Some(session.clone());
                self.batch = Some(Batch::new(self.trace, session));
            }
            EventBody::ApprovalRequested {
                approval_id,
                tool,
                argument,
            } => {
                self.opened(None, approval_id, tool, seq, at);
                self.argument(argument);
            }
            EventBody::ModelRequested { request_id, .. } => {
                self.opened(Some(SpanKind::Chat), request_id, "", seq, at);
            }
            EventBody::Completed {
                call_id, result, ..
            } => {
                let Some(i) = self.find(call, call_id) else {
                    return;
                };
                let outcome = if result.get("Err").is_some() {
                    "err"
                } else {
                    "ok"
                };
                self.result.clear();
                if self.payloads.is_some() {
                    self.result = result.to_string();
                }
                self.close(i, outcome, seq, hash, at);
            }
            EventBody::Failed {
                call_id, message, ..
            }
            | EventBody::TimedOut {
                call_id, message, ..
            } => {
                let Some(i) = self.find(call, call_id) else {
                    return;
                };
                let outcome = body.kind();
                self.result.clear();
                if self.payloads.is_some() {
                    self.result.push_str(message);
                }
                self.close(i, outcome, seq, hash, at);
            }
            EventBody::ApprovalDecided {
                approval_id,
                decision,
                ..
            } => {
                let Some(i) = self.find(None, approval_id) else {
                    return;
                };
                let outcome = if *decision == crate::log::Decision::Allow {
                    "approved"
                } else {
                    "refused"
                };
                self.close(i, outcome, seq, hash, at);
            }
            EventBody::ModelReplied { request_id, .. }
            | EventBody::ModelFailed { request_id, .. } => {
                let Some(i) = self.find(Some(SpanKind::Chat), request_id) else {
                    return;
                };
                let outcome = if matches!(body, EventBody::ModelReplied { .. }) {
                    "answered"
                } else {
                    "failed"
                };
                self.result.clear();
                self.close(i, outcome, seq, hash, at);
            }
            EventBody::SessionEnded { status, .. } if !self.agent => {
                self.ended(status, seq, hash, at);
            }
            EventBody::AgentEnded { status, .. } => self.ended(status, seq, hash, at),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::tests::{assert_attrs, attr, decode};
    use super::Recorder;
    use crate::log::{CallEvent, Decision, Discard, EventBody, EventSink, LogWriter, Tapped};
    use serde_json::json;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    /// A session: one call allowed and completed, an approval refused,
    /// one call denied, ended with an error.
    fn events() -> Vec<EventBody> {
        let proposed = |id: &str, tool: &str, argument| EventBody::Proposed {
            call_id: id.into(),
            tool: tool.into(),
            argument,
        };
        let decided = |id: &str, decision| EventBody::Decided {
            call_id: id.into(),
            decision,
            rule: "r".into(),
            reason: "because".into(),
        };
        vec![
            crate::otlp::tests::started(),
            proposed("n1", "lookup", json!({"id": 1})),
            decided("n1", Decision::Allow),
            EventBody::Scheduled {
                call_id: "n1".into(),
                tool: "lookup".into(),
                venue: "local".into(),
                idempotency_key: "k".into(),
            },
            EventBody::Completed {
                call_id: "n1".into(),
                output: json!(2),
                result: json!({"Ok": 2}),
            },
            EventBody::ApprovalRequested {
                approval_id: "a1".into(),
                tool: "refund".into(),
                argument: json!(5),
            },
            EventBody::ApprovalDecided {
                approval_id: "a1".into(),
                decision: Decision::Deny,
                by: "x".into(),
                reason: "no".into(),
                token: json!(null),
            },
            proposed("n2", "refund", json!(5)),
            decided("n2", Decision::Deny),
            EventBody::SessionEnded {
                status: "error".into(),
                value: None,
                r#type: None,
                error: None,
                calls: 2,
                steps: 3,
            },
        ]
    }

    /// The spans recorded from `sink`'s tap, after `events()`.
    fn record(
        inner: Box<dyn EventSink + '_>,
        payloads: Option<usize>,
    ) -> opentelemetry_proto::tonic::trace::v1::ResourceSpans {
        let mut r = Recorder::new(None, "lt run", payloads);
        let mut sink = Tapped::new(inner, &mut r, ID, 0);
        for e in events() {
            sink.append(e).expect("append");
        }
        drop(sink);
        decode(&r.take().expect("a trace at session_ended"))
    }

    #[test]
    fn a_session_is_recorded_as_spans_with_seqs_and_no_hash_without_a_log() {
        let rs = record(Box::new(Discard), Some(3));
        let spans = &rs.scope_spans[0].spans;
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["execute_tool", "execute_tool", "invoke_workflow"]);
        let (ok, denied, root) = (&spans[0], &spans[1], &spans[2]);
        assert!(root.parent_span_id.is_empty());
        assert_eq!(hex::encode(&root.trace_id), ID);
        assert_eq!(attr(&root.attributes, "lt.log.seq").as_deref(), Some("9"));
        assert_eq!(attr(&root.attributes, "lt.session.id").as_deref(), Some(ID));
        assert_eq!(
            attr(&root.attributes, "lt.session.status").as_deref(),
            Some("error")
        );
        assert_eq!(root.status.as_ref().map(|s| s.code), Some(2));
        assert!(root.end_time_unix_nano >= root.start_time_unix_nano);
        assert!(root.start_time_unix_nano > 0);
        let approval = &root.events[0];
        assert_eq!(approval.name, "approval");
        assert_attrs(
            &approval.attributes,
            &[("lt.approval.outcome", "refused"), ("lt.log.seq", "6")],
        );
        for s in [ok, denied] {
            assert_eq!(s.trace_id, root.trace_id);
            assert_eq!(s.parent_span_id, root.span_id);
            assert_eq!(s.events[0].name, "decision");
        }
        assert_ne!(ok.span_id, denied.span_id);
        assert_eq!(
            attr(&ok.events[0].attributes, "lt.decision").as_deref(),
            Some("allow (r: because)")
        );
        assert_attrs(
            &ok.attributes,
            &[
                ("gen_ai.tool.name", "lookup"),
                ("gen_ai.tool.call.id", "n1"),
                ("lt.call.venue", "local"),
                ("lt.log.seq", "4"),
                ("lt.call.outcome", "ok"),
                ("gen_ai.tool.call.arguments", "{\"i…"),
                ("gen_ai.tool.call.result", "{\"O…"),
            ],
        );
        assert!(ok.status.is_none());
        assert_attrs(
            &denied.attributes,
            &[("lt.log.seq", "8"), ("lt.call.outcome", "denied")],
        );
        assert_eq!(denied.status.as_ref().map(|s| s.code), Some(2));
        // No log: no hash anywhere.
        for s in spans {
            assert_eq!(attr(&s.attributes, "lt.log.hash"), None, "{s:?}");
        }
        assert_eq!(attr(&approval.attributes, "lt.log.hash"), None);
        // Without payloads: no argument, no result.
        let rs = record(Box::new(Discard), None);
        let ok = &rs.scope_spans[0].spans[0];
        assert_eq!(attr(&ok.attributes, "gen_ai.tool.call.arguments"), None);
        assert_eq!(attr(&ok.attributes, "gen_ai.tool.call.result"), None);
    }

    #[test]
    fn a_calls_events_observed_borrowed_give_the_spans_built_ones_give() {
        // Without a log the control plane hands a call's proposed, decided
        // and scheduled to the tap borrowed: the same spans must come out.
        let spans = |observe: bool| {
            let mut r = Recorder::new(None, "lt run", Some(3));
            let mut sink = Tapped::new(Box::new(Discard), &mut r, ID, 0);
            let mut observed = 0;
            for e in events() {
                match CallEvent::of(&e) {
                    Some(c) if observe => {
                        sink.observe(&c).expect("observe");
                        observed += 1;
                    }
                    _ => sink.append(e).expect("append"),
                }
            }
            assert_eq!(observed, if observe { 5 } else { 0 });
            drop(sink);
            let mut rs = decode(&r.take().expect("a trace at session_ended"));
            // The times are the clock's as the tap saw each event.
            for s in &mut rs.scope_spans[0].spans {
                (s.start_time_unix_nano, s.end_time_unix_nano) = (0, 0);
                for e in &mut s.events {
                    e.time_unix_nano = 0;
                }
            }
            rs
        };
        let (built, borrowed) = (spans(false), spans(true));
        assert_eq!(built.scope_spans[0].spans.len(), 3);
        assert_eq!(built, borrowed);
    }

    #[test]
    fn with_a_log_file_each_span_carries_its_last_events_hash() {
        let path = std::env::temp_dir().join(format!("lt-record-{}.jsonl", std::process::id()));
        let writer = LogWriter::create(&path, ID).expect("create");
        let rs = record(Box::new(writer), None);
        let hashes = crate::log::tap::hashes_of_log(&path);
        assert_eq!(hashes.len(), 10);
        let spans = &rs.scope_spans[0].spans;
        for (s, seq) in spans.iter().zip([4, 8, 9]) {
            assert_eq!(
                attr(&s.attributes, "lt.log.seq"),
                Some(seq.to_string()),
                "{}",
                s.name
            );
            assert_eq!(
                attr(&s.attributes, "lt.log.hash"),
                Some(hashes[seq].clone()),
                "{}",
                s.name
            );
        }
        let approval = &spans[2].events[0];
        assert_eq!(
            attr(&approval.attributes, "lt.log.hash"),
            Some(hashes[6].clone())
        );
    }
}
