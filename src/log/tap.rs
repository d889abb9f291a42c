//! A tap on a session's events: each typed event, as it is recorded, handed
//! to an [`EventTap`] beside the sink that keeps the log (the OTLP exporter
//! builds its spans this way, without reading the log back).
//!
//! ```text
//! control plane ─append(body)─▶ Tapped ─▶ inner sink (a file, a store, Discard)
//!                                  └─▶ tap.recorded(session, seq, hash, &body)
//! control plane ─observe(&CallEvent)─▶ Tapped ─▶ tap.observed(session, seq, &event)
//!                 (no log kept: a call's proposed, decided and scheduled, borrowed)
//! ```
//!
//! `seq` is the event's number in the log (counted by the tap when the
//! inner sink keeps no log: the number the log would have given it);
//! `hash` is the event's hash as the file writer computed it, when the
//! inner sink is one that keeps its last event ([`EventSink::last`]),
//! and `None` otherwise (no verifiable log to link to). A tapped sink
//! always [`EventSink::records`]: the events are built even when the
//! inner sink discards them, as outlines (without their JSON payloads,
//! [`EventSink::payloads`]) when the tap does not read those; and when
//! the inner sink keeps nothing, a call's `proposed`, `decided` and
//! `scheduled` (three of the four events of a call) are not built at all:
//! the sink [observes](EventSink::observes) them, and the control plane
//! hands it their fields borrowed ([`CallEvent`]).

use super::call_event::CallEvent;
use super::event::EventBody;
use super::writer::EventSink;
use std::io;

/// What sees each event a [`Tapped`] sink records.
pub trait EventTap {
    /// Event `seq` of session `session` was recorded: `body`, and its
    /// `hash` when the log keeps one.
    fn recorded(&mut self, session: &str, seq: u64, hash: Option<&str>, body: &EventBody);

    /// Whether the tap reads the events' JSON payloads (a call's argument,
    /// output, result value). When neither it nor the inner sink does, the
    /// events it sees are outlines ([`EventSink::payloads`]).
    fn payloads(&self) -> bool {
        true
    }

    /// A call's event `seq` of session `session`, borrowed: the sink keeps
    /// no log, so no event was built (and there is no hash). By default,
    /// [`EventTap::recorded`] of the event built.
    fn observed(&mut self, session: &str, seq: u64, event: &CallEvent<'_>) {
        let body = event.to_body(self.payloads());
        self.recorded(session, seq, None, &body);
    }
}

/// A sink that hands each event to a tap as its inner sink records it.
pub struct Tapped<'a> {
    inner: Box<dyn EventSink + 'a>,
    tap: &'a mut dyn EventTap,
    session: String,
    next_seq: u64,
    /// The inner sink keeps its last event (with its hash).
    hashed: bool,
}

impl<'a> Tapped<'a> {
    /// `inner`, tapped by `tap`, for session `session` whose next event is
    /// number `next_seq` (0 for a new log).
    pub fn new(
        inner: Box<dyn EventSink + 'a>,
        tap: &'a mut dyn EventTap,
        session: &str,
        next_seq: u64,
    ) -> Tapped<'a> {
        // Only a sink that keeps its last event can say its hash.
        let hashed = inner.records() && inner.keeps_last();
        Tapped {
            inner,
            tap,
            session: session.to_string(),
            next_seq,
            hashed,
        }
    }
}

impl EventSink for Tapped<'_> {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        if self.hashed {
            self.inner.append(body)?;
            if let Some(e) = self.inner.last() {
                self.next_seq = e.seq + 1;
                self.tap
                    .recorded(&self.session, e.seq, Some(&e.hash), &e.body);
            }
            return Ok(());
        }
        let seq = self.next_seq;
        self.tap.recorded(&self.session, seq, None, &body);
        self.inner.append(body)?;
        self.next_seq = seq + 1;
        Ok(())
    }

    fn records(&self) -> bool {
        true
    }

    fn payloads(&self) -> bool {
        (self.inner.records() && self.inner.payloads()) || self.tap.payloads()
    }

    fn idempotent_tools(&mut self, tools: &std::collections::BTreeSet<String>) {
        self.inner.idempotent_tools(tools)
    }

    /// When the inner sink keeps nothing: only the tap reads a call's
    /// events, and it reads them borrowed.
    fn observes(&self) -> bool {
        !self.inner.records()
    }

    fn observe(&mut self, event: &CallEvent<'_>) -> io::Result<()> {
        if !self.observes() {
            return self.append(event.to_body(self.payloads()));
        }
        let seq = self.next_seq;
        self.tap.observed(&self.session, seq, event);
        self.next_seq = seq + 1;
        Ok(())
    }
}

/// The `hash` of each line of the log file at `path`, which is removed
/// (tests of what a tap saw against what the writer wrote).
#[cfg(test)]
pub(crate) fn hashes_of_log(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("log");
    let _ = std::fs::remove_file(path);
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            v["hash"].as_str().expect("hash").to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{CallEvent, EventTap, Tapped};
    use crate::log::{Discard, EventBody, EventSink, LogWriter};

    #[derive(Default)]
    struct Seen(Vec<(u64, Option<String>, &'static str)>);

    impl EventTap for Seen {
        fn recorded(&mut self, _: &str, seq: u64, hash: Option<&str>, body: &EventBody) {
            self.0.push((seq, hash.map(str::to_string), body.kind()));
        }
    }

    /// A tap that reads no payloads.
    struct Outline;

    impl EventTap for Outline {
        fn recorded(&mut self, _: &str, _: u64, _: Option<&str>, _: &EventBody) {}

        fn payloads(&self) -> bool {
            false
        }
    }

    #[test]
    fn events_are_outlines_only_when_neither_the_log_nor_the_tap_reads_payloads() {
        let mut tap = Outline;
        assert!(!Tapped::new(Box::new(Discard), &mut tap, "s", 0).payloads());
        let path = std::env::temp_dir().join(format!("lt-tap-o-{}.jsonl", std::process::id()));
        let writer = LogWriter::create(&path, crate::log::new_session_id()).expect("create");
        let mut tap = Outline;
        let logged = Tapped::new(Box::new(writer), &mut tap, "s", 0).payloads();
        let _ = std::fs::remove_file(&path);
        assert!(logged, "a log keeps every payload");
    }

    fn annotation(id: &str) -> EventBody {
        EventBody::AnnotationEnded {
            annotation_id: id.into(),
            calls: serde_json::json!([]),
            outcome: "ok".into(),
        }
    }

    #[test]
    fn a_discarding_sink_is_tapped_with_seqs_and_no_hash() {
        let mut seen = Seen::default();
        let mut sink = Tapped::new(Box::new(Discard), &mut seen, "s", 0);
        assert!(sink.records(), "the events are built for the tap");
        assert!(
            sink.payloads(),
            "a tap reads the payloads unless it says not"
        );
        sink.append(annotation("a")).expect("append");
        sink.append(annotation("b")).expect("append");
        drop(sink);
        assert_eq!(
            seen.0,
            [(0, None, "annotation_ended"), (1, None, "annotation_ended")]
        );
    }

    #[test]
    fn a_discarding_sink_observes_a_calls_events_borrowed_numbered_with_the_others() {
        let mut seen = Seen::default();
        let mut sink = Tapped::new(Box::new(Discard), &mut seen, "s", 0);
        assert!(sink.observes(), "no log: the call's events are not built");
        sink.append(annotation("a")).expect("append");
        let argument = serde_json::json!(1);
        sink.observe(&CallEvent::Proposed {
            call_id: "n1",
            tool: "t",
            argument: &argument,
        })
        .expect("observe");
        sink.append(annotation("b")).expect("append");
        drop(sink);
        assert_eq!(
            seen.0,
            [
                (0, None, "annotation_ended"),
                (1, None, "proposed"),
                (2, None, "annotation_ended")
            ]
        );
    }

    #[test]
    fn a_file_is_tapped_with_the_hashes_it_wrote() {
        let path = std::env::temp_dir().join(format!("lt-tap-{}.jsonl", std::process::id()));
        let id = crate::log::new_session_id();
        let writer = LogWriter::create(&path, id).expect("create");
        let mut seen = Seen::default();
        let mut sink = Tapped::new(Box::new(writer), &mut seen, "s", 0);
        assert!(!sink.observes(), "a log keeps every event, built");
        sink.append(annotation("a")).expect("append");
        sink.append(annotation("b")).expect("append");
        drop(sink);
        let hashes = super::hashes_of_log(&path);
        assert_eq!(hashes.len(), 2);
        assert_eq!(
            seen.0,
            [
                (0, Some(hashes[0].clone()), "annotation_ended"),
                (1, Some(hashes[1].clone()), "annotation_ended")
            ]
        );
    }
}
