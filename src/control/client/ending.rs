//! How a call of a [`ClientChannel`] ends when no report comes, and how
//! the channel closes.
//!
//! ```text
//! the call's limit passes  ──▶ its line written: timed_out (λ-Tool: an answer is owed)
//!                              not begun: cancelled, never written; timed_out
//!                              being written: timed_out; the client stopped reading,
//!                                             the channel closes
//! the client's input ends  ──▶ its line written (waited for ≤ 1 s): unavailable
//!                              not begun: cancelled; unavailable, "was not sent"
//! the end already known    ──▶ (every line before it was taken) no line; unavailable, "was not sent"
//! the channel is dropped   ──▶ no line starts; the line being written is waited for
//! ```
//!
//! Once closed, every call fails at once, unwritten.

use super::pipe::Fate;
use super::{
    drop_deep, reparse, unavailable, ClientChannel, Ended, Incoming, Judged, Narrate, Waiting,
    Wire, FLUSH_STALL, WRITE_GRACE,
};
use crate::runtime::host::{FailureKind, ToolFailure};
use std::sync::mpsc;
use std::time::{Duration, Instant};

impl ClientChannel {
    /// The failure of the waiting call, whose limit passed, its line's
    /// `fate` being known. A line still being written means the client
    /// stopped reading: the channel closes, since later lines would queue
    /// behind it.
    pub(super) fn time_out(&mut self, w: &Waiting<'_>, fate: Fate) -> ToolFailure {
        let (call_id, tool) = (w.call_id, w.tool);
        self.ended.insert(call_id.to_string(), Ended::TimedOut);
        let what = match fate {
            Fate::Written => {
                if self.wire == Wire::LambdaTool {
                    self.owed.push(call_id);
                }
                format!("waiting for the client's report of call {call_id}")
            }
            Fate::Cancelled => {
                format!("before call {call_id} could be written to the client (it was not sent)")
            }
            Fate::Started => {
                self.closed = Some((
                    "the client stopped reading the calls written to it".into(),
                    format!("during call {call_id} of {tool}"),
                ));
                self.gate.close();
                format!("writing call {call_id} to the client, which did not read it")
            }
        };
        timed_out(tool, w.limit, &what)
    }

    /// After the client's input ended while line `number` waited for its
    /// report: what became of the line. One not begun is cancelled; one
    /// being written is waited for, until `deadline` and for at most
    /// [`WRITE_GRACE`] (`Started`: it is still being written).
    pub(super) fn fate_after_end(&self, number: u64, deadline: Option<Instant>) -> Fate {
        match self.gate.cancel(number) {
            Fate::Started => {
                let grace = Instant::now() + WRITE_GRACE;
                let until = deadline.map_or(grace, |d| d.min(grace));
                if self.gate.wait_written(number, until) {
                    Fate::Written
                } else {
                    Fate::Started
                }
            }
            fate => fate,
        }
    }

    /// The client's input ended before call `call_id`, which is therefore
    /// not written. The lines the client wrote before the end are judged
    /// (none reports anything: no call waits) and the channel closes.
    pub(super) fn close_unsent(
        &mut self,
        call_id: &str,
        tool: &str,
        narrate: &mut Narrate<'_>,
    ) -> ToolFailure {
        // The end is known only once every line before it was taken, so
        // what is left is the end itself (and the writer's notices); a
        // line, should one come, is judged and rejected: no call waits.
        let cause = loop {
            let next = self.incoming.recv_timeout(WRITE_GRACE);
            self.took(&next);
            let (judged, bytes) = match next {
                Ok(Incoming::Line(bytes)) => (self.judge(&bytes, None), bytes),
                Ok(Incoming::TooLong { start, bytes }) => {
                    (self.judge_too_long(&start, bytes, false), Vec::new())
                }
                Ok(Incoming::Written(_) | Incoming::WriteFailed(_)) => continue,
                Ok(Incoming::Closed(why)) => break end_of_input(why),
                Err(_) => break end_of_input(None),
            };
            let (report, reason) = match judged {
                Judged::Rejected { report, reason } | Judged::Malformed { report, reason } => {
                    (report, reason)
                }
                // Not with no call waiting; rejected all the same.
                Judged::Report { outcome, .. } => {
                    if let Ok(v) = outcome {
                        drop_deep(v);
                    }
                    let reason = "no call is waiting: the client's input has ended".to_string();
                    (reparse(&bytes), reason)
                }
            };
            self.refuse(report, reason, narrate);
        };
        self.close_unwritten(cause, call_id, tool)
    }

    /// Marks the channel closed for `cause`, found before call `call_id`'s
    /// line was written (it never will be), and returns that call's failure.
    pub(super) fn close_unwritten(
        &mut self,
        cause: String,
        call_id: &str,
        tool: &str,
    ) -> ToolFailure {
        let failure = unavailable(format!(
            "tool {tool}: {cause}, so call {call_id} was not sent to the client"
        ));
        self.closed = Some((cause, format!("before call {call_id} of {tool}")));
        self.gate.close();
        failure
    }

    /// Marks the channel closed for `cause`, found during `call_id`, and
    /// returns that call's failure.
    pub(super) fn close(&mut self, cause: String, call_id: &str, tool: &str) -> ToolFailure {
        let failure = unavailable(format!(
            "tool {tool}: {cause} before reporting call {call_id}"
        ));
        self.closed = Some((cause, format!("during call {call_id} of {tool}")));
        self.gate.close();
        failure
    }
}

impl Drop for ClientChannel {
    /// Closes the channel: no queued line starts any more, and a line being
    /// written is waited for as long as the client takes its bytes (up to
    /// 2 s without one, `FLUSH_STALL`). So what is printed after the channel
    /// is gone comes after every call line, or, when the client stopped
    /// reading in the middle of a line, is known to be blocked
    /// ([`StdoutHandoff::write_final`](super::StdoutHandoff::write_final) then gives up at once).
    fn drop(&mut self) {
        self.gate.close();
        // Nobody listens any more: a thread blocked handing over a line or
        // a notice stops, and the writer's queue ends.
        let (_, nobody) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.incoming, nobody));
        let (nothing, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.calls, nothing));
        if !self.gate.wait_writer(FLUSH_STALL) {
            if let Some(handoff) = &self.on_stdout {
                handoff.left_half_written();
            }
        }
    }
}

/// The cause of the end of the client's input (`why`: a read error).
pub(super) fn end_of_input(why: Option<String>) -> String {
    match why {
        None => "the client closed its input".to_string(),
        Some(e) => format!("the client's input could not be read ({e})"),
    }
}

pub(super) fn timed_out(tool: &str, limit: Duration, what: &str) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind: FailureKind::TimedOut,
        message: format!(
            "tool {tool} timed out after {} ms {what}",
            limit.as_millis()
        ),
    }
}
