//! The client venue (seed 001's "client execution"): a tool that `lt` does
//! not run. The control plane decides the call as for any tool, then hands
//! it to the client that started `lt` and waits for the outcome the client
//! reports.
//!
//! ```text
//! ControlPlane ── scheduled (venue client) ──▶ ClientChannel::call
//!   the client's input already ended ──▶ no line; Err(unavailable)
//!   writer thread: {"type":"tool_call","call_id":"n3",…}\n ──▶ stdout   (lt_wire.rs)
//!   client_dispatched (once the line is written and flushed)
//!   reader thread: stdin ──lines──▶ judge each line:
//!     a report of n3 ──▶ client_reported ──▶ Ok(…) | Err(failed)
//!     anything else  ──▶ client_rejected, keep waiting
//!   no report before the call's limit ──▶ Err(timed_out)
//!   stdin ends, every line before it judged ──▶ Err(unavailable), and
//!     every later call fails at once (the end takes effect in order)
//! ```
//!
//! Two wire formats share this channel ([`Wire`]): lt's own, whose calls
//! carry ids (`lt_wire.rs`, `docs/executors.md`), and λ-Tool's, which has
//! none, so that one line answers one call (`lambda_tool_wire.rs`,
//! `docs/protocol.md`). `pipe.rs` holds the two threads; `ending.rs` how a
//! call ends without a report and how the channel closes; `stdout.rs` the
//! run's final output on a stdout shared with a client.
//!
//! Both ends of the pipe live on threads of their own and talk to the
//! caller over one bounded channel, so a wait is a `recv_timeout`: a call
//! never waits past the smaller of the run's time left and the tool's
//! `timeout_ms`, even when the client neither answers nor reads what `lt`
//! writes. A line longer than [`MAX_LINE_BYTES`] is counted and skipped,
//! never buffered whole.
//!
//! A tool_call line is written whole or not at all, and the call knows
//! which (the gate of `pipe.rs`): a line does not start once its call's
//! deadline passed, once the client's input ended, or once the channel
//! closed. A line that started goes out whole, even late: a client that
//! reads late may receive a call that already timed out (its report is
//! then rejected; the line's idempotency key lets the client de-duplicate).
//! When the channel is dropped it waits for the line being written while
//! the client takes its bytes, so what the process prints next comes
//! after every call line, and never waits on a client that stopped reading.
//!
//! Invariant: an outcome is applied once. The channel keeps the ids of the
//! calls that ended (reported or timed out); a report for one of them, or
//! for an id that was never dispatched, is rejected and logged
//! (`client_rejected`, with the reason), as is every line that is not a
//! well-formed `tool_result`. Nothing a client writes can panic `lt`:
//! every line is parsed without a depth limit or recursion
//! (`runtime/deep_json.rs`) and every value is dropped with
//! [`drop_deep`].
//!
//! Invariant: every tool_call line written is narrated (`client_dispatched`)
//! before its call's outcome, unless the client stopped reading in the
//! middle of it (the call then times out or fails, and the line may still
//! reach the client later).

mod ending;
mod lambda_tool_wire;
mod lt_wire;
mod pipe;
mod stdout;
#[cfg(test)]
mod tests;

pub use lt_wire::kind_problem;
pub use stdout::{FinalOutput, StdoutHandoff};

use crate::log::EventBody;
use crate::runtime::boundary::drop_deep;
use crate::runtime::deep_json::parse_slice;
use crate::runtime::host::{CallRequest, FailureKind, Outcome, ToolFailure};
use ending::{end_of_input, timed_out};
use lambda_tool_wire::Owed;
use pipe::{Fate, Gate, Outgoing, WriterDone};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest line a client may write: 16 MiB. A longer line is
/// rejected (`client_rejected`, its first KiB kept as the report) without
/// being held in memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an over-long (or over-deep) line the rejection keeps.
const KEPT_PREFIX: usize = 1024;

/// The deepest nesting a report line may have: that of a command tool's
/// output. No output type nests deeper, and values this shallow may be
/// cloned and dropped recursively.
#[cfg(test)]
const MAX_DEPTH: usize = crate::exec::MAX_OUTPUT_DEPTH;

/// How many lines the reader thread may read ahead of the control plane;
/// past it the thread stops reading and the client's writes block.
const READ_AHEAD: usize = 8;

/// When the client's input ends while its call's line is being written:
/// how long the call waits for the write to finish (to narrate it), at most.
const WRITE_GRACE: Duration = Duration::from_secs(1);

/// When the channel is dropped: how long the line being written may go
/// without the client taking a byte before it is left half-written.
const FLUSH_STALL: Duration = Duration::from_secs(2);

/// The line formats of a [`ClientChannel`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// lt's own: `{"type":"tool_call","call_id",…}` out, `{"type":
    /// "tool_result","call_id",…}` in; reports name their call, and a line
    /// that is not a report of the waiting call is rejected and skipped.
    #[default]
    Lt,
    /// λ-Tool's `--interactive` protocol: `{"tool_call":{"tool","argument"}}`
    /// out, `{"tool_result":{"ok": …}}` or `{"tool_result":{"error": "…"}}`
    /// in. No call ids: each non-blank line answers the waiting call, a
    /// malformed one with a `bad_output` failure; a reported error reaches
    /// the program verbatim.
    LambdaTool,
}

/// What the two pipe threads tell the waiting call.
enum Incoming {
    /// A line from the client, without its `\n` (or `\r\n`).
    Line(Vec<u8>),
    /// A line past the cap: its first bytes and its length.
    TooLong { start: Vec<u8>, bytes: u64 },
    /// The client's input ended: `None` at end of file, else the error.
    Closed(Option<String>),
    /// The tool_call line with this number was written and flushed.
    Written(u64),
    /// Writing a tool_call line failed (the writer thread then stops).
    WriteFailed(String),
}

/// How a call that the client can no longer report ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Reported,
    TimedOut,
}

/// What the control plane learns from one line of the client.
enum Judged {
    /// A well-formed report of the call being waited for.
    /// `failure`: the kind an `Err` is logged with (`failed` unless the
    /// client named another, [`FailureKind::CLIENT_REPORTABLE`]).
    Report {
        outcome: Result<Json, String>,
        failure: FailureKind,
    },
    /// Any other line: rejected with a reason, the wait goes on.
    Rejected { report: Json, reason: String },
    /// [`Wire::LambdaTool`]: a line that is not a well-formed report. It is
    /// rejected, and it answers the waiting call with a failure (the wire
    /// has no ids, so a skipped line would shift every later answer).
    Malformed { report: Json, reason: String },
}

/// A JSON value named by its type, for messages.
fn kind_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The report and reason for a line past the limits of a command tool's
/// output (`why`), which is not parsed: its start is kept.
fn not_parsed(text: &str, why: &str) -> (Json, String) {
    let mut shown: String = text.chars().take(KEPT_PREFIX).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    (
        Json::String(shown),
        format!("the line was not parsed: {why}, more than a tool result may be (report holds its start)"),
    )
}

fn unavailable(message: String) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind: FailureKind::Unavailable,
        message,
    }
}

/// The narration callback of a call (`None`: nothing is recorded).
type Narrate<'a> = Option<&'a mut dyn FnMut(EventBody)>;

/// The call a [`ClientChannel`] waits for.
struct Waiting<'a> {
    call_id: &'a str,
    tool: &'a str,
    /// The number of its tool_call line.
    number: u64,
    deadline: Option<Instant>,
    /// How long it may wait (zero: no limit).
    limit: Duration,
    /// Its line is known to be written, and `client_dispatched` narrated.
    dispatched: bool,
}

impl Waiting<'_> {
    /// Its line was written: narrated once.
    fn dispatch(&mut self, narrate: &mut Narrate<'_>) {
        if !self.dispatched {
            self.dispatched = true;
            if let Some(n) = narrate.as_mut() {
                n(EventBody::ClientDispatched {
                    call_id: self.call_id.to_string(),
                });
            }
        }
    }
}

/// A line, as the report a log records: its JSON (parsing it again gives
/// it without a recursive clone), else its text.
fn reparse(bytes: &[u8]) -> Json {
    parse_slice(bytes, true)
        .unwrap_or_else(|_| Json::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The pipe between `lt` and a client that runs `venue = "client"` tools
/// (`docs/executors.md`, "Client venue").
///
/// Each call is written as one JSON line (`{"type": "tool_call", "call_id",
/// "tool", "argument", "idempotency_key"}`) to the writer (stdout for `lt
/// run`), and its outcome is read from the reader (stdin) as one JSON line
/// (`{"type": "tool_result", "call_id", "ok": …}` or `… "error": "…"}`).
/// Attach it to a control plane with
/// [`ControlPlane::with_client`](super::ControlPlane::with_client), which
/// records `client_dispatched`, `client_reported` and `client_rejected`
/// around the call and validates the reported value against the tool's
/// declared output type.
///
/// Once the client's input has ended (or its output could not be written,
/// or it stopped reading), every later call fails at once with
/// [`FailureKind::Unavailable`], without being written. Dropping the
/// channel waits (boundedly) for the line being written, so that output
/// printed afterwards follows every call line.
pub struct ClientChannel {
    /// Lines to write; the writer thread owns the writer.
    calls: Sender<Outgoing>,
    incoming: Receiver<Incoming>,
    /// Whether each line may start, was started, was written.
    gate: Arc<Gate>,
    /// Tool name → its `timeout_ms` (from tools.toml).
    timeouts: BTreeMap<String, Duration>,
    /// The calls that ended, by call id.
    ended: BTreeMap<String, Ended>,
    /// [`Wire::LambdaTool`]: the calls still owed a (late) answer.
    owed: Owed,
    /// Why no call can be reported any more, and when that became known
    /// (e.g. `the client closed its input`, `during call n7 of edit`).
    closed: Option<(String, String)>,
    /// The number of the last tool_call line handed to the writer thread.
    sent: u64,
    /// The line format.
    wire: Wire,
    /// The writer is the process's stdout, shared with the front end.
    on_stdout: Option<StdoutHandoff>,
}

impl ClientChannel {
    /// A channel over the process's stdout (calls) and stdin (reports),
    /// as `lt run` uses it. The run's final output must then be written
    /// with [`StdoutHandoff::write_final`] of `handoff`, after the channel
    /// is dropped.
    pub fn stdio(handoff: &StdoutHandoff) -> ClientChannel {
        handoff.hand_to_client();
        let mut channel = ClientChannel::new(std::io::stdout(), std::io::stdin());
        channel.on_stdout = Some(handoff.clone());
        channel
    }

    /// A channel writing calls to `writer` and reading reports from
    /// `reader` (a pipe, a socket), each on a thread of its own.
    pub fn new(
        writer: impl Write + Send + 'static,
        reader: impl Read + Send + 'static,
    ) -> ClientChannel {
        ClientChannel::with_cap(writer, reader, MAX_LINE_BYTES)
    }

    fn with_cap(
        writer: impl Write + Send + 'static,
        reader: impl Read + Send + 'static,
        cap: usize,
    ) -> ClientChannel {
        let (to_plane, incoming) = mpsc::sync_channel(READ_AHEAD);
        let (calls, to_write) = mpsc::channel();
        let gate = Arc::new(Gate::default());
        let mut channel = ClientChannel {
            calls,
            incoming,
            gate: Arc::clone(&gate),
            timeouts: BTreeMap::new(),
            ended: BTreeMap::new(),
            owed: Owed::default(),
            closed: None,
            sent: 0,
            wire: Wire::Lt,
            on_stdout: None,
        };
        let lines = to_plane.clone();
        let reader_gate = Arc::clone(&gate);
        // Marks the writer ended however its thread ends, or if it never starts.
        let done = WriterDone(gate);
        let started = std::thread::Builder::new()
            .name("lt-client-in".into())
            .spawn(move || pipe::read_lines(BufReader::new(reader), cap, &lines, &reader_gate))
            .and_then(|_| {
                std::thread::Builder::new()
                    .name("lt-client-out".into())
                    .spawn(move || pipe::write_calls(writer, &to_write, &to_plane, done))
            });
        if let Err(e) = started {
            channel.closed = Some((
                format!("the client channel could not start its threads ({e})"),
                "before the first call".into(),
            ));
        }
        channel
    }

    /// Speaks `wire` instead of lt's own line format.
    pub fn with_wire(mut self, wire: Wire) -> ClientChannel {
        self.wire = wire;
        self
    }

    /// How long to wait for the report of each tool's calls (tools.toml's
    /// `timeout_ms` of client-venue tools). A call waits for at most the
    /// smaller of this and the time its request has left; a tool not named
    /// waits only for the latter.
    pub fn with_timeouts(mut self, timeouts: BTreeMap<String, Duration>) -> ClientChannel {
        self.timeouts = timeouts;
        self
    }

    /// Hands `request` to the client and waits for its report. `narrate`
    /// receives the `client_dispatched`, `client_reported` and
    /// `client_rejected` events to record (`None`: nothing is recorded and
    /// no event is built). The result is the reported `ok` value (not yet
    /// checked against the tool's output type), or a failure: `failed`
    /// (the client reported an error), `timed_out`, or `unavailable` (the
    /// client is gone).
    pub(crate) fn call(&mut self, request: CallRequest<'_>, mut narrate: Narrate<'_>) -> Outcome {
        let tool = request.tool;
        let call_id = request.id.to_string();
        if let Some((cause, when)) = &self.closed {
            drop_deep(request.arg);
            return Err(unavailable(format!(
                "tool {tool}: {cause} ({when}), so call {call_id} was not sent to the client"
            )));
        }
        let limit = match (request.time_left, self.timeouts.get(tool)) {
            (Some(a), Some(b)) => Some(a.min(*b)),
            (a, b) => a.or(b.copied()),
        };
        if let Some(limit) = limit.filter(Duration::is_zero) {
            drop_deep(request.arg);
            return Err(timed_out(
                tool,
                limit,
                "(no time was left to ask the client)",
            ));
        }
        if self.gate.input_ended() {
            // No tool_call line once the end of the input is known.
            drop_deep(request.arg);
            return Err(self.close_unsent(&call_id, tool, &mut narrate));
        }
        let line = match self.wire {
            Wire::Lt => lt_wire::call_line(&call_id, tool, request.arg, request.idempotency_key),
            Wire::LambdaTool => lambda_tool_wire::call_line(tool, request.arg),
        };
        self.sent += 1;
        let number = self.sent;
        let deadline = limit.map(|l| Instant::now() + l);
        let outgoing = Outgoing {
            number,
            bytes: line,
            deadline,
        };
        if self.calls.send(outgoing).is_err() {
            return Err(self.close(
                "the client's output could not be written".into(),
                &call_id,
                tool,
            ));
        }
        let mut waiting = Waiting {
            call_id: &call_id,
            tool,
            number,
            deadline,
            limit: limit.unwrap_or_default(),
            dispatched: false,
        };
        loop {
            let next = match deadline {
                Some(d) => self
                    .incoming
                    .recv_timeout(d.saturating_duration_since(Instant::now())),
                None => self
                    .incoming
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
            };
            if let Some(outcome) = self.receive(next, &mut waiting, &mut narrate) {
                return outcome;
            }
        }
    }

    /// Takes what came (or that nothing came in time) while a call waits:
    /// `Some` when it ends the call.
    fn receive(
        &mut self,
        next: Result<Incoming, RecvTimeoutError>,
        w: &mut Waiting<'_>,
        narrate: &mut Narrate<'_>,
    ) -> Option<Outcome> {
        self.took(&next);
        let (judged, bytes) = match next {
            Err(RecvTimeoutError::Timeout) => {
                let fate = if w.dispatched {
                    Fate::Written
                } else {
                    self.gate.cancel(w.number)
                };
                if fate == Fate::Written {
                    w.dispatch(narrate);
                }
                return Some(Err(self.time_out(w, fate)));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let cause = "the client channel's threads stopped".to_string();
                return Some(Err(self.close(cause, w.call_id, w.tool)));
            }
            Ok(Incoming::Written(n)) => {
                if n == w.number {
                    w.dispatch(narrate);
                }
                return None;
            }
            Ok(Incoming::WriteFailed(e)) => {
                let cause = format!("the client's output could not be written ({e})");
                return Some(Err(self.close(cause, w.call_id, w.tool)));
            }
            Ok(Incoming::Closed(why)) => {
                // The line went out (narrated even when the writer's notice
                // is still on its way), or it never will.
                let fate = if w.dispatched {
                    Fate::Written
                } else {
                    self.fate_after_end(w.number, w.deadline)
                };
                let cause = end_of_input(why);
                return Some(Err(match fate {
                    Fate::Cancelled => self.close_unwritten(cause, w.call_id, w.tool),
                    Fate::Written | Fate::Started => {
                        if fate == Fate::Written {
                            w.dispatch(narrate);
                        }
                        self.close(cause, w.call_id, w.tool)
                    }
                }));
            }
            Ok(Incoming::TooLong { start, bytes }) => {
                (self.judge_too_long(&start, bytes, true), Vec::new())
            }
            Ok(Incoming::Line(bytes)) => (self.judge(&bytes, Some(w.call_id)), bytes),
        };
        self.apply(judged, &bytes, w, narrate)
    }

    /// Counts on the gate what a call took from the reader: the end of the
    /// input takes effect once every line before it was taken.
    fn took<E>(&self, next: &Result<Incoming, E>) {
        match next {
            Ok(Incoming::Line(_) | Incoming::TooLong { .. }) => self.gate.take_line(),
            Ok(Incoming::Closed(_)) => self.gate.end_input(),
            _ => {}
        }
    }

    /// Applies the judgement of a line while a call waits: `Some` when it
    /// ends the call (a report; a malformed λ-Tool answer), `None` when the
    /// wait goes on (the line was rejected and recorded).
    fn apply(
        &mut self,
        judged: Judged,
        bytes: &[u8],
        w: &mut Waiting<'_>,
        narrate: &mut Narrate<'_>,
    ) -> Option<Outcome> {
        if !w.dispatched && !matches!(judged, Judged::Rejected { .. }) {
            // An answer before the writer's notice came: usually the line
            // was read, so it was written. Or the client wrote its answers
            // in advance (a script): the answer counts all the same, so
            // that the outcome never depends on how fast the writer was,
            // and a line not begun is now never written.
            if self.gate.cancel(w.number) != Fate::Cancelled {
                w.dispatch(narrate);
            }
        }
        let (tool, call_id) = (w.tool, w.call_id);
        match judged {
            Judged::Rejected { report, reason } => {
                self.refuse(report, reason, narrate);
                None
            }
            Judged::Malformed { report, reason } => {
                self.ended.insert(call_id.to_string(), Ended::Reported);
                let message =
                    format!("tool {tool}: the host's answer is not a tool_result: {reason}");
                self.refuse(report, reason, narrate);
                Some(Err(ToolFailure {
                    stderr: None,
                    kind: FailureKind::BadOutput,
                    message,
                }))
            }
            Judged::Report { outcome, failure } => {
                self.ended.insert(call_id.to_string(), Ended::Reported);
                if let Some(n) = narrate.as_mut() {
                    n(EventBody::ClientReported {
                        call_id: call_id.to_string(),
                        report: reparse(bytes),
                    });
                }
                let wire = self.wire;
                Some(outcome.map_err(|error| ToolFailure {
                    stderr: None,
                    kind: failure,
                    message: match wire {
                        // A message that already names the tool (an
                        // executor's, as `lt run --server` reports them) is
                        // the program's as it is: the same Err as a local run.
                        Wire::Lt if error.starts_with(&format!("tool {tool} ")) => error,
                        Wire::Lt => format!("tool {tool} failed in the client: {error}"),
                        // λ-Tool gives the program the host's message as it is.
                        Wire::LambdaTool => error,
                    },
                }))
            }
        }
    }

    /// Judges one line of the client while call `waiting` is outstanding
    /// (`None`: no call is, the client's input having ended).
    fn judge(&mut self, bytes: &[u8], waiting: Option<&str>) -> Judged {
        match self.wire {
            Wire::Lt => lt_wire::judge(bytes, waiting, &self.ended),
            Wire::LambdaTool => lambda_tool_wire::judge(bytes, &mut self.owed, waiting.is_some()),
        }
    }

    /// Judges a line past [`MAX_LINE_BYTES`], of which `start` was kept.
    fn judge_too_long(&mut self, start: &[u8], bytes: u64, waiting: bool) -> Judged {
        let mut shown = String::from_utf8_lossy(start).into_owned();
        shown.push('…');
        let reason = format!(
            "the line is {bytes} bytes long, more than the {} MiB a line may have; \
             it was skipped (report holds its first {} bytes)",
            MAX_LINE_BYTES / (1024 * 1024),
            start.len()
        );
        let report = Json::String(shown);
        match self.wire {
            Wire::Lt => Judged::Rejected { report, reason },
            // On the λ-Tool wire the line still answers a call: an earlier
            // one that timed out, else this one.
            Wire::LambdaTool => lambda_tool_wire::unjudged(report, reason, &mut self.owed, waiting),
        }
    }

    /// Records (`client_rejected`) a line that is not applied as a report.
    fn refuse(&mut self, report: Json, reason: String, narrate: &mut Narrate<'_>) {
        match narrate.as_mut() {
            Some(n) => n(EventBody::ClientRejected { report, reason }),
            None => drop_deep(report),
        }
    }
}
