//! The rows a [`Recorder`](super::Recorder) hands to the exporter's
//! thread: each ended call, model request or approval as a compact row
//! (seqs, times, outcome, and its texts as ranges of one buffer), a few
//! dozen at a time, the session's span in the last batch. The session's
//! thread only copies a row's texts into the batch's buffer (no string of
//! its own, no message built); the exporter's thread turns the rows into
//! spans (`proto.rs`), encodes and posts them while the session runs.
//!
//! ```text
//! session thread: Batch::call / approval / end ─▶ channel (a batch of ROWS)
//! exporter thread: Batch::replay(&mut TraceBuilder) ─▶ spans encoded
//! ```

use super::proto::{Approval, Root, SpanKind, SpanRow, TraceBuilder};
use std::ops::Range;
use std::sync::Arc;

/// A text of a batch: a range of its buffer.
type Text = Range<u32>;

/// What a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowKind {
    Span(SpanKind),
    Approval,
}

/// An ended row, its texts in the batch's buffer.
struct Row {
    kind: RowKind,
    /// The seq of its first event and of its last.
    seqs: (u64, u64),
    /// Start and end, ns since the epoch (an approval: when it ended).
    times: (u64, u64),
    hash: Option<Text>,
    tool: Text,
    id: Text,
    venue: Text,
    outcome: &'static str,
    /// The decision, its rule and its reason.
    decision: Option<(&'static str, Text, Text)>,
    argument: Option<Text>,
    result: Option<Text>,
}

/// The session's span: the last batch's.
struct End {
    seq: u64,
    hash: Option<Text>,
    times: (u64, u64),
    status: Text,
}

/// An open row's fields, borrowed, as it ends (see [`Batch::call`]).
pub(super) struct Ended<'a> {
    pub seqs: (u64, u64),
    pub times: (u64, u64),
    pub hash: Option<&'a str>,
    pub tool: &'a str,
    pub id: &'a str,
    pub venue: &'a str,
    pub outcome: &'static str,
    pub decision: Option<(&'static str, &'a str, &'a str)>,
    pub argument: Option<&'a str>,
    pub result: Option<&'a str>,
}

/// Rows of one session's trace, on their way to the exporter's thread.
pub(super) struct Batch {
    /// Which recorder's trace (one exporter may serve several).
    pub(super) trace: u64,
    /// The session's id.
    pub(super) session: Arc<str>,
    text: String,
    rows: Vec<Row>,
    end: Option<End>,
}

impl Batch {
    /// An empty batch of trace `trace`, session `session`.
    pub(super) fn new(trace: u64, session: Arc<str>) -> Batch {
        Batch {
            trace,
            session,
            text: String::new(),
            rows: Vec::new(),
            end: None,
        }
    }

    /// The next batch of the same trace, room made for as much as this
    /// one holds.
    pub(super) fn next(&self) -> Batch {
        Batch {
            trace: self.trace,
            session: self.session.clone(),
            text: String::with_capacity(self.text.len()),
            rows: Vec::with_capacity(self.rows.len()),
            end: None,
        }
    }

    /// How many rows it holds.
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds the session's span (the trace's last batch).
    pub(super) fn ends(&self) -> bool {
        self.end.is_some()
    }

    /// `s` copied into the buffer.
    fn text(&mut self, s: &str) -> Text {
        let start = self.text.len();
        self.text.push_str(s);
        to_u32(start)..to_u32(self.text.len())
    }

    /// `s`, the same text as the last row's decision `of` when it is
    /// (a run's calls are mostly decided by the same rule, for the same
    /// reason), else copied.
    fn text_again(&mut self, s: &str, of: impl Fn(&Row) -> Option<Text>) -> Text {
        if let Some(t) = self.rows.last().and_then(of) {
            if self.get(&t) == s {
                return t;
            }
        }
        self.text(s)
    }

    fn get(&self, t: &Text) -> &str {
        self.text
            .get(t.start as usize..t.end as usize)
            .unwrap_or_default()
    }

    /// Adds an ended call or model request.
    pub(super) fn call(&mut self, kind: SpanKind, e: &Ended<'_>) {
        let hash = e.hash.map(|h| self.text(h));
        let tool = self.text(e.tool);
        let id = self.text(e.id);
        let venue = self.text(e.venue);
        let decision = e.decision.map(|(d, rule, reason)| {
            let rule = self.text_again(rule, |r| r.decision.as_ref().map(|d| d.1.clone()));
            let reason = self.text_again(reason, |r| r.decision.as_ref().map(|d| d.2.clone()));
            (d, rule, reason)
        });
        let argument = e.argument.map(|a| self.text(a));
        let result = e.result.map(|a| self.text(a));
        self.rows.push(Row {
            kind: RowKind::Span(kind),
            seqs: e.seqs,
            times: e.times,
            hash,
            tool,
            id,
            venue,
            outcome: e.outcome,
            decision,
            argument,
            result,
        });
    }

    /// Adds an ended approval (its seq and time: its last event's).
    pub(super) fn approval(&mut self, e: &Ended<'_>) {
        let hash = e.hash.map(|h| self.text(h));
        let tool = self.text(e.tool);
        let id = self.text(e.id);
        let argument = e.argument.map(|a| self.text(a));
        self.rows.push(Row {
            kind: RowKind::Approval,
            seqs: e.seqs,
            times: e.times,
            hash,
            tool,
            id,
            venue: 0..0,
            outcome: e.outcome,
            decision: None,
            argument,
            result: None,
        });
    }

    /// Adds the session's span: the trace ends with this batch.
    pub(super) fn end(&mut self, seq: u64, hash: Option<&str>, times: (u64, u64), status: &str) {
        let hash = hash.map(|h| self.text(h));
        let status = self.text(status);
        self.end = Some(End {
            seq,
            hash,
            times,
            status,
        });
    }

    /// Adds the rows to `t` (the session's span last); whether the trace
    /// ended.
    pub(super) fn replay(&self, t: &mut TraceBuilder) -> bool {
        for r in &self.rows {
            let hash = r.hash.as_ref().map(|h| self.get(h));
            let argument = r.argument.as_ref().map(|a| self.get(a));
            match r.kind {
                RowKind::Approval => t.approval(&Approval {
                    seq: r.seqs.1,
                    hash,
                    time: r.times.1,
                    tool: self.get(&r.tool),
                    id: self.get(&r.id),
                    outcome: r.outcome,
                    argument,
                }),
                RowKind::Span(kind) => {
                    let decision = r.decision.as_ref().map(|(d, rule, reason)| {
                        [*d, " (", self.get(rule), ": ", self.get(reason), ")"]
                    });
                    t.span(&SpanRow {
                        kind,
                        seqs: r.seqs,
                        hash,
                        times: r.times,
                        tool: self.get(&r.tool),
                        id: self.get(&r.id),
                        venue: self.get(&r.venue),
                        outcome: r.outcome,
                        decision: decision.as_ref().map_or(&[], |d| &d[..]),
                        argument,
                        result: r.result.as_ref().map(|v| self.get(v)),
                    });
                }
            }
        }
        let Some(end) = &self.end else {
            return false;
        };
        t.end(&Root {
            seq: end.seq,
            hash: end.hash.as_ref().map(|h| self.get(h)),
            times: end.times,
            status: self.get(&end.status),
        });
        true
    }
}

/// A buffer offset (a batch's texts stay far under 4 GiB; a longer one
/// reads as empty rather than wrapping).
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
