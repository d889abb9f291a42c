//! The client venue (seed 001's "client execution"): a tool that `lt` does
//! not run. The control plane decides the call as for any tool, then hands
//! it to the client that started `lt` and waits for the outcome the client
//! reports.
//!
//! ```text
//! ControlPlane ── scheduled (venue client) ──▶ ClientChannel::call
//!   writer thread: {"type":"tool_call","call_id":"n3","tool":"edit","argument":{…},"idempotency_key":"…"}\n ──▶ stdout
//!   client_dispatched (once the line is flushed)
//!   reader thread: stdin ──lines──▶ judge each line:
//!     {"type":"tool_result","call_id":"n3","ok":…}     ──▶ client_reported ──▶ Ok(…)
//!     {"type":"tool_result","call_id":"n3","error":"…"} ──▶ client_reported ──▶ Err(failed)
//!     anything else                                    ──▶ client_rejected, keep waiting
//!   no report before the call's limit ──▶ Err(timed_out); stdin closed ──▶ Err(unavailable)
//! ```
//!
//! Two wire formats share this channel ([`Wire`]). The one above is lt's
//! own ([`Wire::Lt`], `docs/executors.md`): calls carry ids, so reports may
//! be checked against them. [`Wire::LambdaTool`] is the protocol of the
//! `lambda_tool` binary that λ-Tool hosts drive (`docs/protocol.md`):
//!
//! ```text
//!   writer thread: {"tool_call":{"tool":"edit","argument":{…}}}\n ──▶ stdout
//!   reader thread: {"tool_result":{"ok":…}}      ──▶ client_reported ──▶ Ok(…)
//!                  {"tool_result":{"error":"…"}} ──▶ client_reported ──▶ Err(the message, verbatim)
//!                  a blank line                  ──▶ client_rejected, keep waiting
//!                  any other line                ──▶ client_rejected ──▶ Err(bad_output)
//! ```
//!
//! It has no call ids: one call is outstanding at a time and the next
//! non-blank line answers it. So that host and `lt` never fall out of
//! step, a line that is not a well-formed report still answers the call
//! (with a failure the program handles) instead of being skipped, and a
//! call that timed out after its line was written is still owed a line:
//! the next non-blank line is taken as that late answer and skipped
//! (`client_rejected`), not as the answer to the call now waiting.
//!
//! Both ends of the pipe live on threads of their own and talk to the
//! caller over one bounded channel, so a wait is a `recv_timeout`: a call
//! never waits past the smaller of the run's time left and the tool's
//! `timeout_ms`, even when the client neither answers nor reads what `lt`
//! writes. A line longer than [`MAX_LINE_BYTES`] is counted and skipped,
//! never buffered whole.
//!
//! Invariant: an outcome is applied once. The channel keeps the ids of the
//! calls that ended (reported or timed out); a report for one of them, or
//! for an id that was never dispatched, is rejected and logged
//! (`client_rejected`, with the reason), as is every line that is not a
//! well-formed `tool_result`. Nothing a client writes can panic `lt`:
//! every line is parsed without a depth limit or recursion
//! (`runtime/deep_json.rs`) and every value is dropped with
//! [`drop_deep`].

use crate::log::EventBody;
use crate::runtime::boundary::drop_deep;
use crate::runtime::deep_json::{parse_slice, to_compact};
use crate::runtime::host::{CallRequest, FailureKind, Outcome, ToolFailure};
use serde_json::{Map, Value as Json};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
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
/// [`FailureKind::Unavailable`], without being written.
pub struct ClientChannel {
    /// Lines to write, with their number; the writer thread owns the writer.
    calls: Sender<(u64, Vec<u8>)>,
    incoming: Receiver<Incoming>,
    /// Tool name → its `timeout_ms` (from tools.toml).
    timeouts: BTreeMap<String, Duration>,
    /// The calls that ended, by call id.
    ended: BTreeMap<String, Ended>,
    /// [`Wire::LambdaTool`]: the calls that timed out after their line was
    /// written, oldest first. The host still owes each an answer, and the
    /// next non-blank lines are those answers (skipped), not the answers
    /// of later calls.
    owed: VecDeque<String>,
    /// Why no call can be reported any more, and during which call that
    /// became known (e.g. `the client closed its input`, `n7`).
    closed: Option<(String, String)>,
    /// The number of the last tool_call line handed to the writer thread.
    sent: u64,
    /// The number of the last line the writer thread wrote and flushed.
    written: Arc<AtomicU64>,
    /// The line format.
    wire: Wire,
}

/// What the control plane learns from one line of the client.
enum Judged {
    /// A well-formed report of the call being waited for.
    Report { outcome: Result<Json, String> },
    /// Any other line: rejected with a reason, the wait goes on.
    Rejected { report: Json, reason: String },
    /// [`Wire::LambdaTool`]: a line that is not a well-formed report. It is
    /// rejected, and it answers the waiting call with a failure (the wire
    /// has no ids, so a skipped line would shift every later answer).
    Malformed { report: Json, reason: String },
}

fn unavailable(message: String) -> ToolFailure {
    ToolFailure {
        kind: FailureKind::Unavailable,
        message,
    }
}

impl ClientChannel {
    /// A channel over the process's stdout (calls) and stdin (reports),
    /// as `lt run` uses it.
    pub fn stdio() -> ClientChannel {
        ClientChannel::new(std::io::stdout(), std::io::stdin())
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
        let mut channel = ClientChannel {
            calls,
            incoming,
            timeouts: BTreeMap::new(),
            ended: BTreeMap::new(),
            owed: VecDeque::new(),
            closed: None,
            sent: 0,
            written: Arc::new(AtomicU64::new(0)),
            wire: Wire::Lt,
        };
        let lines = to_plane.clone();
        let written = Arc::clone(&channel.written);
        let started = std::thread::Builder::new()
            .name("lt-client-in".into())
            .spawn(move || read_lines(BufReader::new(reader), cap, &lines))
            .and_then(|_| {
                std::thread::Builder::new()
                    .name("lt-client-out".into())
                    .spawn(move || write_calls(writer, &to_write, &to_plane, &written))
            });
        if let Err(e) = started {
            channel.closed = Some((
                format!("the client channel could not start its threads ({e})"),
                "the first call".into(),
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
    pub(crate) fn call(
        &mut self,
        request: CallRequest<'_>,
        mut narrate: Option<&mut dyn FnMut(EventBody)>,
    ) -> Outcome {
        let tool = request.tool;
        let call_id = request.id.to_string();
        if let Some((cause, during)) = &self.closed {
            drop_deep(request.arg);
            return Err(unavailable(format!(
                "tool {tool}: {cause} (during {during}), so call {call_id} was not sent to the client"
            )));
        }
        let limit = match (request.time_left, self.timeouts.get(tool)) {
            (Some(a), Some(b)) => Some(a.min(*b)),
            (a, b) => a.or(b.copied()),
        };
        let timed_out = |limit: Duration, what: &str| ToolFailure {
            kind: FailureKind::TimedOut,
            message: format!(
                "tool {tool} timed out after {} ms {what}",
                limit.as_millis()
            ),
        };
        if let Some(limit) = limit.filter(Duration::is_zero) {
            drop_deep(request.arg);
            return Err(timed_out(limit, "(no time was left to ask the client)"));
        }
        let line = match self.wire {
            Wire::Lt => call_line(&call_id, tool, request.arg, request.idempotency_key),
            Wire::LambdaTool => lambda_tool_call_line(tool, request.arg),
        };
        self.sent += 1;
        let number = self.sent;
        let deadline = limit.map(|l| Instant::now() + l);
        if self.calls.send((number, line)).is_err() {
            return Err(self.close(
                "the client's output could not be written".into(),
                &call_id,
                tool,
            ));
        }
        let mut dispatched = false;
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
            match next {
                Err(RecvTimeoutError::Timeout) => {
                    let limit = limit.unwrap_or_default();
                    self.ended.insert(call_id.clone(), Ended::TimedOut);
                    if dispatched || self.written.load(Ordering::SeqCst) >= number {
                        if self.wire == Wire::LambdaTool {
                            self.owed.push_back(call_id.clone());
                        }
                        return Err(timed_out(
                            limit,
                            &format!("waiting for the client's report of call {call_id}"),
                        ));
                    }
                    // The line is still being written: the client does not
                    // read its input, and later lines would queue behind it.
                    self.closed = Some((
                        "the client stopped reading the calls written to it".into(),
                        format!("call {call_id} of {tool}"),
                    ));
                    return Err(timed_out(
                        limit,
                        &format!("writing call {call_id} to the client, which did not read it"),
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.close(
                        "the client channel's threads stopped".into(),
                        &call_id,
                        tool,
                    ))
                }
                Ok(Incoming::Written(n)) => {
                    if n == number && !dispatched {
                        dispatched = true;
                        if let Some(narrate) = narrate.as_mut() {
                            narrate(EventBody::ClientDispatched {
                                call_id: call_id.clone(),
                            });
                        }
                    }
                }
                Ok(Incoming::WriteFailed(e)) => {
                    return Err(self.close(
                        format!("the client's output could not be written ({e})"),
                        &call_id,
                        tool,
                    ));
                }
                Ok(Incoming::Closed(why)) => {
                    let cause = match why {
                        None => "the client closed its input".to_string(),
                        Some(e) => format!("the client's input could not be read ({e})"),
                    };
                    return Err(self.close(cause, &call_id, tool));
                }
                Ok(Incoming::TooLong { start, bytes }) => {
                    let mut shown = String::from_utf8_lossy(&start).into_owned();
                    shown.push('…');
                    let reason = format!(
                        "the line is {bytes} bytes long, more than the {} MiB a line may have; \
                         it was skipped (report holds its first {} bytes)",
                        MAX_LINE_BYTES / (1024 * 1024),
                        start.len()
                    );
                    // On the λ-Tool wire the line still answers a call: an
                    // earlier one that timed out, else this one.
                    let late = self.late_answer();
                    let ends = self.wire == Wire::LambdaTool && late.is_none();
                    let reason = match late {
                        Some(late) => format!("{late}; {reason}"),
                        None => reason,
                    };
                    let report = Json::String(shown);
                    if let Some(failure) = self.refuse(
                        report,
                        reason,
                        ends,
                        &call_id,
                        tool,
                        dispatched,
                        &mut narrate,
                    ) {
                        return Err(failure);
                    }
                }
                Ok(Incoming::Line(bytes)) => match self.judge(&bytes, &call_id) {
                    Judged::Rejected { report, reason } => {
                        self.refuse(
                            report,
                            reason,
                            false,
                            &call_id,
                            tool,
                            dispatched,
                            &mut narrate,
                        );
                    }
                    Judged::Malformed { report, reason } => {
                        if let Some(failure) = self.refuse(
                            report,
                            reason,
                            true,
                            &call_id,
                            tool,
                            dispatched,
                            &mut narrate,
                        ) {
                            return Err(failure);
                        }
                    }
                    Judged::Report { outcome } => {
                        self.ended.insert(call_id.clone(), Ended::Reported);
                        if let Some(n) = narrate.as_mut() {
                            if !dispatched {
                                // Answered before the writer's notice came:
                                // the line was read, so it was written.
                                n(EventBody::ClientDispatched {
                                    call_id: call_id.clone(),
                                });
                            }
                            // The line parsed once already; parsing it again
                            // gives the report without a (recursive) clone.
                            let report = parse_slice(&bytes, true).unwrap_or_else(|_| {
                                Json::String(String::from_utf8_lossy(&bytes).into_owned())
                            });
                            n(EventBody::ClientReported {
                                call_id: call_id.clone(),
                                report,
                            });
                        }
                        let wire = self.wire;
                        return outcome.map_err(|error| ToolFailure {
                            kind: FailureKind::Failed,
                            message: match wire {
                                Wire::Lt => format!("tool {tool} failed in the client: {error}"),
                                // λ-Tool gives the program the host's message as it is.
                                Wire::LambdaTool => error,
                            },
                        });
                    }
                },
            }
        }
    }

    /// Judges one line of the client while call `waiting` is outstanding.
    fn judge(&mut self, bytes: &[u8], waiting: &str) -> Judged {
        match self.wire {
            Wire::Lt => judge(bytes, waiting, &self.ended),
            Wire::LambdaTool => {
                let judged = judge_lambda_tool(bytes);
                if matches!(judged, Judged::Rejected { .. }) {
                    return judged; // a blank line answers nothing
                }
                let Some(late) = self.late_answer() else {
                    return judged;
                };
                let (report, why) = match judged {
                    Judged::Report { outcome } => {
                        if let Ok(v) = outcome {
                            drop_deep(v);
                        }
                        let report = parse_slice(bytes, true).unwrap_or_else(|_| {
                            Json::String(String::from_utf8_lossy(bytes).into_owned())
                        });
                        (report, "skipped".to_string())
                    }
                    Judged::Rejected { report, reason } | Judged::Malformed { report, reason } => {
                        (report, format!("skipped ({reason})"))
                    }
                };
                Judged::Rejected {
                    report,
                    reason: format!("{late}; {why}"),
                }
            }
        }
    }

    /// On the λ-Tool wire, when a call that timed out is still owed its
    /// answer: the reason for skipping the line that is that answer.
    fn late_answer(&mut self) -> Option<String> {
        if self.wire != Wire::LambdaTool {
            return None;
        }
        let late = self.owed.pop_front()?;
        Some(format!(
            "the late answer to call {late}, which timed out before it came (one line answers one call)"
        ))
    }

    /// Records (`client_rejected`) a line that is not applied as a report.
    /// Unless it `ends` the call (a malformed λ-Tool answer), the call
    /// keeps waiting (`None`); else the call's failure is returned.
    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &mut self,
        report: Json,
        reason: String,
        ends: bool,
        call_id: &str,
        tool: &str,
        dispatched: bool,
        narrate: &mut Option<&mut dyn FnMut(EventBody)>,
    ) -> Option<ToolFailure> {
        let failure = ends.then(|| ToolFailure {
            kind: FailureKind::BadOutput,
            message: format!("tool {tool}: the host's answer is not a tool_result: {reason}"),
        });
        match narrate.as_mut() {
            Some(n) => {
                if ends && !dispatched {
                    // Answered before the writer's notice came: the line
                    // was read, so it was written.
                    n(EventBody::ClientDispatched {
                        call_id: call_id.to_string(),
                    });
                }
                n(EventBody::ClientRejected { report, reason });
            }
            None => drop_deep(report),
        }
        if ends {
            self.ended.insert(call_id.to_string(), Ended::Reported);
        }
        failure
    }

    /// Marks the channel closed for `cause`, found during `call_id`, and
    /// returns that call's failure.
    fn close(&mut self, cause: String, call_id: &str, tool: &str) -> ToolFailure {
        let failure = unavailable(format!(
            "tool {tool}: {cause} before reporting call {call_id}"
        ));
        self.closed = Some((cause, format!("call {call_id} of {tool}")));
        failure
    }
}

/// The tool_call line of a call, `\n` included: compact JSON, `type`
/// first. The argument is consumed (and dropped without recursion).
fn call_line(call_id: &str, tool: &str, arg: Json, key: Option<&str>) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    line.extend_from_slice(br#"{"type":"tool_call","call_id":"#);
    line.extend_from_slice(&to_compact(call_id));
    line.extend_from_slice(br#","tool":"#);
    line.extend_from_slice(&to_compact(tool));
    line.extend_from_slice(br#","argument":"#);
    line.extend_from_slice(&to_compact(&arg));
    drop_deep(arg);
    line.extend_from_slice(br#","idempotency_key":"#);
    line.extend_from_slice(&to_compact(&key));
    line.extend_from_slice(b"}\n");
    line
}

/// The `tool_call` line of [`Wire::LambdaTool`], `\n` included:
/// `{"tool_call":{"tool":…,"argument":…}}`. The argument is consumed.
fn lambda_tool_call_line(tool: &str, arg: Json) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    line.extend_from_slice(br#"{"tool_call":{"tool":"#);
    line.extend_from_slice(&to_compact(tool));
    line.extend_from_slice(br#","argument":"#);
    line.extend_from_slice(&to_compact(&arg));
    drop_deep(arg);
    line.extend_from_slice(b"}}\n");
    line
}

/// The writer thread: writes and flushes each line, then says so.
fn write_calls(
    mut writer: impl Write,
    lines: &Receiver<(u64, Vec<u8>)>,
    plane: &SyncSender<Incoming>,
    written: &AtomicU64,
) {
    while let Ok((n, line)) = lines.recv() {
        // One `write_all`: stdout's lock is held for the whole line, so
        // nothing printed elsewhere can land inside it.
        match writer.write_all(&line).and_then(|()| writer.flush()) {
            Ok(()) => {
                written.store(n, Ordering::SeqCst);
                if plane.send(Incoming::Written(n)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = plane.send(Incoming::WriteFailed(e.to_string()));
                return;
            }
        }
    }
}

/// The reader thread: forwards each line (at most `cap` bytes kept), then
/// the end of the input.
fn read_lines(mut reader: impl BufRead, cap: usize, plane: &SyncSender<Incoming>) {
    loop {
        let mut line = Vec::new();
        // Bytes of the current line seen so far, once it passed `cap`.
        let mut skipped: Option<u64> = None;
        let mut ended_line = false;
        let mut at_eof = false;
        while !ended_line {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = plane.send(Incoming::Closed(Some(e.to_string())));
                    return;
                }
            };
            if buf.is_empty() {
                at_eof = true;
                break;
            }
            let (chunk, used) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    ended_line = true;
                    (&buf[..i], i + 1)
                }
                None => (buf, buf.len()),
            };
            match &mut skipped {
                Some(total) => *total += chunk.len() as u64,
                None if line.len() + chunk.len() > cap => {
                    skipped = Some((line.len() + chunk.len()) as u64);
                    let room = KEPT_PREFIX.saturating_sub(line.len());
                    line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                    line.truncate(KEPT_PREFIX);
                    line.shrink_to_fit();
                }
                None => line.extend_from_slice(chunk),
            }
            reader.consume(used);
        }
        // A last line without `\n` is still a line.
        if ended_line || !line.is_empty() || skipped.is_some() {
            if line.last() == Some(&b'\r') && skipped.is_none() {
                line.pop();
            }
            let message = match skipped {
                Some(bytes) => Incoming::TooLong { start: line, bytes },
                None => Incoming::Line(line),
            };
            if plane.send(message).is_err() {
                return;
            }
        }
        if at_eof {
            let _ = plane.send(Incoming::Closed(None));
            return;
        }
    }
}

/// The shape of a report, for rejection messages.
const SHAPE: &str = r#"{"type": "tool_result", "call_id": "…", "ok": …} or {"type": "tool_result", "call_id": "…", "error": "…"}"#;

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

/// At most 80 characters of a short JSON value, for messages.
fn excerpt(v: &Json) -> String {
    let text = String::from_utf8_lossy(&to_compact(v)).into_owned();
    if text.chars().count() > 80 {
        text.chars().take(80).collect::<String>() + "…"
    } else {
        text
    }
}

/// Judges one line of the client while call `waiting` is outstanding.
fn judge(bytes: &[u8], waiting: &str, ended: &BTreeMap<String, Ended>) -> Judged {
    let rejected = |report: Json, reason: String| Judged::Rejected { report, reason };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return rejected(
                Json::String(String::from_utf8_lossy(bytes).into_owned()),
                format!(
                    "the line is not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            )
        }
    };
    // The limits of a command tool's output (depth, value count).
    if let Err(why) = crate::exec::check_shape(bytes) {
        let mut shown: String = text.chars().take(KEPT_PREFIX).collect();
        if shown.len() < text.len() {
            shown.push('…');
        }
        return rejected(
            Json::String(shown),
            format!("the line was not parsed: {why}, more than a tool result may be (report holds its start)"),
        );
    }
    if text.trim().is_empty() {
        return rejected(
            Json::String(text.to_string()),
            format!("the line is empty; expected {SHAPE}"),
        );
    }
    let value = match parse_slice(bytes, true) {
        Ok(v) => v,
        Err(e) => {
            return rejected(
                Json::String(text.to_string()),
                format!("the line is not JSON: {e}"),
            )
        }
    };
    let Json::Object(mut fields) = value else {
        let reason = format!(
            "the line is {}, not an object; expected {SHAPE}",
            kind_of(&value)
        );
        return rejected(value, reason);
    };
    let reason = match shape_problem(&fields) {
        Some(reason) => reason,
        None => {
            let id = fields.get("call_id").and_then(Json::as_str).unwrap_or("");
            if id == waiting {
                let outcome = match (fields.remove("ok"), fields.remove("error")) {
                    (Some(ok), _) => Ok(ok),
                    (None, Some(Json::String(e))) => Err(e),
                    // Ruled out by `shape_problem`.
                    (None, _) => Err("the client reported no outcome".to_string()),
                };
                drop_deep(Json::Object(fields));
                return Judged::Report { outcome };
            }
            match ended.get(id) {
                Some(Ended::Reported) => format!(
                    "call {id} was already reported; an outcome is applied once (the call waiting is {waiting})"
                ),
                Some(Ended::TimedOut) => format!(
                    "call {id} already ended: it timed out before this report (the call waiting is {waiting})"
                ),
                None => format!(
                    "call_id {} is not a call sent to the client (the call waiting is {waiting})",
                    Json::String(id.to_string())
                ),
            }
        }
    };
    rejected(Json::Object(fields), reason)
}

/// The shape of a [`Wire::LambdaTool`] report, for messages.
const LAMBDA_TOOL_SHAPE: &str = r#"{"tool_result": {"ok": …}} or {"tool_result": {"error": "…"}}"#;

/// Judges one line of a λ-Tool host: the answer to the waiting call. A
/// blank line is skipped; any other line that is not a report is
/// malformed. Keys besides `tool_result`, `ok` and `error` are ignored (and
/// kept in the logged report).
fn judge_lambda_tool(bytes: &[u8]) -> Judged {
    let malformed = |report: Json, reason: String| Judged::Malformed { report, reason };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return malformed(
                Json::String(String::from_utf8_lossy(bytes).into_owned()),
                format!(
                    "the line is not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            )
        }
    };
    if text.trim().is_empty() {
        return Judged::Rejected {
            report: Json::String(text.to_string()),
            reason: format!("the line is blank; skipped (expected {LAMBDA_TOOL_SHAPE})"),
        };
    }
    if let Err(why) = crate::exec::check_shape(bytes) {
        let mut shown: String = text.chars().take(KEPT_PREFIX).collect();
        if shown.len() < text.len() {
            shown.push('…');
        }
        return malformed(
            Json::String(shown),
            format!("the line was not parsed: {why}, more than a tool result may be (report holds its start)"),
        );
    }
    let value = match parse_slice(bytes, true) {
        Ok(v) => v,
        Err(e) => {
            return malformed(
                Json::String(text.to_string()),
                format!("the line is not JSON: {e}; expected {LAMBDA_TOOL_SHAPE}"),
            )
        }
    };
    if let Some(reason) = lambda_tool_problem(&value) {
        return malformed(value, reason);
    }
    Judged::Report {
        outcome: take_lambda_tool_outcome(value),
    }
}

/// What keeps a parsed line from being a λ-Tool report, if anything.
fn lambda_tool_problem(value: &Json) -> Option<String> {
    let Json::Object(fields) = value else {
        return Some(format!(
            "the line is {}, not an object; expected {LAMBDA_TOOL_SHAPE}",
            kind_of(value)
        ));
    };
    match fields.get("tool_result") {
        None => Some(format!(
            "`tool_result` is missing; expected {LAMBDA_TOOL_SHAPE}"
        )),
        Some(Json::Object(result)) => match (result.get("ok"), result.get("error")) {
            (Some(_), Some(_)) => {
                Some("both `ok` and `error` are given: a tool_result has one outcome".into())
            }
            (None, None) => Some(
                "neither `ok` nor `error` is given: a tool_result has `ok` (the result) or `error` (a message)"
                    .into(),
            ),
            (None, Some(Json::String(_))) | (Some(_), None) => None,
            (None, Some(other)) => Some(format!(
                "`error` must be a string (the failure message), found {}",
                kind_of(other)
            )),
        },
        Some(other) => Some(format!(
            "`tool_result` must be an object, found {}; expected {LAMBDA_TOOL_SHAPE}",
            kind_of(other)
        )),
    }
}

/// The outcome a λ-Tool report (checked by [`lambda_tool_problem`])
/// carries; the rest of the line is dropped without recursion.
fn take_lambda_tool_outcome(value: Json) -> Result<Json, String> {
    let none = || Err("the host reported no outcome".to_string());
    let Json::Object(mut fields) = value else {
        drop_deep(value);
        return none();
    };
    let outcome = match fields.remove("tool_result") {
        Some(Json::Object(mut result)) => {
            let outcome = match (result.remove("ok"), result.remove("error")) {
                (Some(ok), _) => Ok(ok),
                (None, Some(Json::String(e))) => Err(e),
                (None, other) => {
                    if let Some(v) = other {
                        drop_deep(v);
                    }
                    none()
                }
            };
            drop_deep(Json::Object(result));
            outcome
        }
        other => {
            if let Some(v) = other {
                drop_deep(v);
            }
            none()
        }
    };
    drop_deep(Json::Object(fields));
    outcome
}

/// What is wrong with the fields of a `tool_result` object, if anything
/// (the call id aside).
fn shape_problem(fields: &Map<String, Json>) -> Option<String> {
    match fields.get("type") {
        None => return Some(format!("`type` is missing; expected {SHAPE}")),
        Some(Json::String(t)) if t == "tool_result" => {}
        Some(other) => {
            return Some(format!(
                "`type` is {}, expected \"tool_result\" (the only line a client sends)",
                excerpt(other)
            ))
        }
    }
    let unknown: Vec<String> = fields
        .keys()
        .filter(|k| !matches!(k.as_str(), "type" | "call_id" | "ok" | "error"))
        .map(|k| format!("`{}`", k.escape_debug()))
        .collect();
    if !unknown.is_empty() {
        return Some(format!(
            "unknown field{} {}: a tool_result has only `type`, `call_id` and one of `ok` or `error`",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", ")
        ));
    }
    match fields.get("call_id") {
        None => return Some("`call_id` is missing: which call does this report?".into()),
        Some(Json::String(_)) => {}
        Some(other) => {
            return Some(format!(
                "`call_id` must be a string (the call_id of the tool_call line), found {}",
                kind_of(other)
            ))
        }
    }
    match (fields.get("ok"), fields.get("error")) {
        (Some(_), Some(_)) => {
            Some("both `ok` and `error` are given: a report has one outcome".into())
        }
        (None, None) => Some(
            "neither `ok` nor `error` is given: a report has `ok` (the result) or `error` (a message)"
                .into(),
        ),
        (None, Some(Json::String(_))) | (Some(_), None) => None,
        (None, Some(other)) => Some(format!(
            "`error` must be a string (the failure message), found {}",
            kind_of(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::host::CallId;
    use serde_json::json;

    fn lines_of(text: &str, cap: usize) -> Vec<String> {
        let (tx, rx) = mpsc::sync_channel(64);
        read_lines(text.as_bytes(), cap, &tx);
        drop(tx);
        rx.iter()
            .map(|m| match m {
                Incoming::Line(l) => format!("line {}", String::from_utf8_lossy(&l)),
                Incoming::TooLong { start, bytes } => {
                    format!("long {bytes} {}", String::from_utf8_lossy(&start))
                }
                Incoming::Closed(None) => "eof".into(),
                Incoming::Closed(Some(e)) => format!("error {e}"),
                Incoming::Written(_) | Incoming::WriteFailed(_) => "write".into(),
            })
            .collect()
    }

    #[test]
    fn lines_are_split_and_long_ones_skipped() {
        assert_eq!(
            lines_of("a\r\nbb\n\nlast", 10),
            ["line a", "line bb", "line ", "line last", "eof"]
        );
        let long = format!("{}\nok\n", "x".repeat(5000));
        let got = lines_of(&long, 100);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], format!("long 5000 {}", "x".repeat(KEPT_PREFIX)));
        assert_eq!(got[1..], ["line ok", "eof"]);
    }

    fn reason(line: &str) -> String {
        let mut ended = BTreeMap::new();
        ended.insert("n1".to_string(), Ended::Reported);
        ended.insert("n2".to_string(), Ended::TimedOut);
        match judge(line.as_bytes(), "n3", &ended) {
            Judged::Rejected { reason, .. } | Judged::Malformed { reason, .. } => reason,
            Judged::Report { outcome } => format!("report {outcome:?}"),
        }
    }

    #[test]
    fn every_malformed_report_has_its_reason() {
        let cases = [
            ("garbage", "the line is not JSON"),
            ("", "the line is empty"),
            ("[1]", "the line is an array, not an object"),
            (r#"{"call_id":"n3","ok":1}"#, "`type` is missing"),
            (
                r#"{"type":"tool_call","call_id":"n3","ok":1}"#,
                "`type` is \"tool_call\"",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"x":2}"#,
                "unknown field `x`",
            ),
            (r#"{"type":"tool_result","ok":1}"#, "`call_id` is missing"),
            (
                r#"{"type":"tool_result","call_id":3,"ok":1}"#,
                "`call_id` must be a string",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"error":"e"}"#,
                "both `ok` and `error`",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3"}"#,
                "neither `ok` nor `error`",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","error":5}"#,
                "`error` must be a string",
            ),
            (
                r#"{"type":"tool_result","call_id":"n1","ok":1}"#,
                "call n1 was already reported",
            ),
            (
                r#"{"type":"tool_result","call_id":"n2","ok":1}"#,
                "call n2 already ended: it timed out",
            ),
            (
                r#"{"type":"tool_result","call_id":"n9","ok":1}"#,
                "call_id \"n9\" is not a call sent",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":1,"ok":2}"#,
                "appears twice",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","ok":{"a":[1]}}"#,
                "report Ok(Object",
            ),
            (
                r#"{"type":"tool_result","call_id":"n3","error":"no"}"#,
                "report Err(\"no\")",
            ),
        ];
        for (line, expected) in cases {
            let got = reason(line);
            assert!(got.contains(expected), "{line}: {got}");
        }
        let deep = format!(
            r#"{{"type":"tool_result","call_id":"n3","ok":{}{}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(reason(&deep).contains("nested more than 10000 levels deep"));
        let ok = format!(
            r#"{{"type":"tool_result","call_id":"n3","ok":"{}"}}"#,
            "[".repeat(2 * MAX_DEPTH)
        );
        assert!(reason(&ok).starts_with("report Ok"), "brackets in a string");
        let bytes = b"\xff\xfe";
        assert!(matches!(
            judge(bytes, "n3", &BTreeMap::new()),
            Judged::Rejected { reason, .. } if reason.contains("not UTF-8")
        ));
    }

    /// A writer that never finishes a write (a client that does not read),
    /// or fails at once.
    struct Stuck(Option<mpsc::Receiver<()>>);

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            match &self.0 {
                Some(never) => {
                    let _ = never.recv();
                    Ok(0)
                }
                None => Err(std::io::Error::other("pipe closed")),
            }
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn call(channel: &mut ClientChannel, node: u32) -> Outcome {
        let id = CallId { node, path: vec![] };
        channel.call(
            CallRequest {
                id: &id,
                tool: "t",
                arg: json!(null),
                time_left: Some(Duration::from_millis(100)),
                idempotency_key: None,
            },
            None,
        )
    }

    #[test]
    fn a_client_that_does_not_read_times_out_and_is_gone() {
        let (_keep, never) = mpsc::channel();
        let (lt_in, _input) = std::io::pipe().expect("pipe");
        let mut channel = ClientChannel::new(Stuck(Some(never)), lt_in);
        let started = Instant::now();
        let first = call(&mut channel, 1).expect_err("times out");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(first.kind, FailureKind::TimedOut);
        assert!(first
            .message
            .contains("writing call n1 to the client, which did not read it"));
        let second = call(&mut channel, 2).expect_err("fails at once");
        assert_eq!(second.kind, FailureKind::Unavailable);
        assert!(
            second.message.contains("stopped reading")
                && second.message.contains("n2 was not sent"),
            "{}",
            second.message
        );
    }

    #[test]
    fn a_client_whose_output_cannot_be_written_is_gone() {
        let (lt_in, _input) = std::io::pipe().expect("pipe");
        let mut channel = ClientChannel::new(Stuck(None), lt_in);
        let first = call(&mut channel, 1).expect_err("fails");
        assert_eq!(first.kind, FailureKind::Unavailable);
        assert_eq!(
            first.message,
            "tool t: the client's output could not be written (pipe closed) before reporting call n1"
        );
        assert_eq!(
            call(&mut channel, 2).expect_err("fails").kind,
            FailureKind::Unavailable
        );
    }

    #[test]
    fn a_report_through_pipes_and_a_late_duplicate() {
        let (client_in, lt_out) = std::io::pipe().expect("pipe");
        let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
        let mut channel = ClientChannel::new(lt_out, lt_in);
        let client = std::thread::spawn(move || {
            let mut calls = std::io::BufReader::new(client_in);
            let mut seen = Vec::new();
            for _ in 0..2 {
                let mut line = String::new();
                calls.read_line(&mut line).expect("read");
                let call: Json = serde_json::from_str(&line).expect("json");
                let id = call["call_id"].as_str().expect("id").to_string();
                let report = format!(r#"{{"type":"tool_result","call_id":"{id}","ok":7}}"#);
                writeln!(client_out, "{report}").expect("write");
                writeln!(client_out, "{report}").expect("write");
                seen.push(call);
            }
            seen
        });
        let mut events = Vec::new();
        for node in [1, 2] {
            let id = CallId { node, path: vec![] };
            let request = CallRequest {
                id: &id,
                tool: "t",
                arg: json!({"a": node}),
                time_left: Some(Duration::from_secs(10)),
                idempotency_key: Some("k"),
            };
            let mut record = |e: EventBody| events.push(e.kind());
            assert_eq!(channel.call(request, Some(&mut record)), Ok(json!(7)));
        }
        let seen = client.join().expect("client thread");
        assert_eq!(
            seen[0],
            json!({"type": "tool_call", "call_id": "n1", "tool": "t", "argument": {"a": 1}, "idempotency_key": "k"})
        );
        // The duplicate of n1's report arrives while n2 is waited for
        // (before or after the writer's notice of n2's line).
        assert_eq!(events[..2], ["client_dispatched", "client_reported"]);
        let mut second = events[2..].to_vec();
        assert_eq!(second.pop(), Some("client_reported"));
        second.sort_unstable();
        assert_eq!(second, ["client_dispatched", "client_rejected"]);
    }

    fn lambda_tool_judgement(line: &str) -> String {
        match judge_lambda_tool(line.as_bytes()) {
            Judged::Rejected { reason, .. } => format!("skip: {reason}"),
            Judged::Malformed { reason, .. } => format!("fail: {reason}"),
            Judged::Report { outcome } => format!("report {outcome:?}"),
        }
    }

    #[test]
    fn every_lambda_tool_line_is_an_answer_or_blank() {
        let cases = [
            (r#"{"tool_result":{"ok":{"a":1}}}"#, "report Ok(Object"),
            (r#"{"tool_result":{"ok":null}}"#, "report Ok(Null)"),
            (
                r#"{"tool_result":{"error":"offline"}}"#,
                "report Err(\"offline\")",
            ),
            // Keys the protocol does not name are ignored.
            (
                r#"{"tool_result":{"ok":1,"note":2},"id":3}"#,
                "report Ok(Number(1))",
            ),
            ("", "skip: the line is blank"),
            ("  ", "skip: the line is blank"),
            ("garbage", "fail: the line is not JSON"),
            ("[1]", "fail: the line is an array, not an object"),
            (r#"{"ok":1}"#, "fail: `tool_result` is missing"),
            (
                r#"{"tool_result":1}"#,
                "fail: `tool_result` must be an object, found a number",
            ),
            (r#"{"tool_result":{}}"#, "fail: neither `ok` nor `error`"),
            (
                r#"{"tool_result":{"ok":1,"error":"e"}}"#,
                "fail: both `ok` and `error`",
            ),
            (
                r#"{"tool_result":{"error":5}}"#,
                "fail: `error` must be a string",
            ),
            (
                r#"{"tool_result":{"ok":1,"ok":2}}"#,
                "fail: the line is not JSON",
            ),
        ];
        for (line, expected) in cases {
            let got = lambda_tool_judgement(line);
            assert!(got.starts_with(expected), "{line}: {got}");
        }
        let deep = format!(
            r#"{{"tool_result":{{"ok":{}{}}}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(lambda_tool_judgement(&deep).contains("nested more than 10000 levels deep"));
        assert!(matches!(
            judge_lambda_tool(b"\xff"),
            Judged::Malformed { reason, .. } if reason.contains("not UTF-8")
        ));
    }

    #[test]
    fn the_lambda_tool_wire_answers_calls_in_step() {
        let (client_in, lt_out) = std::io::pipe().expect("pipe");
        let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
        // Lines over 64 bytes are too long.
        let mut channel = ClientChannel::with_cap(lt_out, lt_in, 64).with_wire(Wire::LambdaTool);
        let answers = [
            vec!["".to_string(), r#"{"tool_result":{"ok":7}}"#.to_string()],
            vec![r#"{"tool_result":{"error":"offline"}}"#.to_string()],
            vec!["not json".to_string()],
            vec![format!(
                r#"{{"tool_result":{{"ok":"{}"}}}}"#,
                "x".repeat(100)
            )],
            vec![r#"{"tool_result":{"ok":8}}"#.to_string()],
        ];
        let client = std::thread::spawn(move || {
            let mut calls = std::io::BufReader::new(client_in);
            let mut seen = Vec::new();
            for lines in answers {
                let mut line = String::new();
                calls.read_line(&mut line).expect("read");
                seen.push(line);
                for l in lines {
                    writeln!(client_out, "{l}").expect("write");
                }
            }
            seen
        });
        let mut outcomes = Vec::new();
        let mut events = Vec::new();
        for node in 1..=5 {
            let id = CallId { node, path: vec![] };
            let request = CallRequest {
                id: &id,
                tool: "t",
                arg: json!({"n": node}),
                time_left: Some(Duration::from_secs(10)),
                idempotency_key: Some("k"),
            };
            let mut record = |e: EventBody| events.push(e.kind());
            outcomes.push(channel.call(request, Some(&mut record)));
        }
        let seen = client.join().expect("client thread");
        assert_eq!(
            seen[0],
            "{\"tool_call\":{\"tool\":\"t\",\"argument\":{\"n\":1}}}\n"
        );
        assert_eq!(outcomes[0], Ok(json!(7)));
        // The host's message, as it wrote it.
        assert_eq!(
            outcomes[1],
            Err(ToolFailure {
                kind: FailureKind::Failed,
                message: "offline".into()
            })
        );
        for bad in &outcomes[2..4] {
            let f = bad.as_ref().expect_err("a malformed answer fails its call");
            assert_eq!(f.kind, FailureKind::BadOutput);
            assert!(
                f.message
                    .starts_with("tool t: the host's answer is not a tool_result: "),
                "{}",
                f.message
            );
        }
        // Still in step: the fifth answer answers the fifth call.
        assert_eq!(outcomes[4], Ok(json!(8)));
        assert_eq!(
            events.iter().filter(|k| **k == "client_rejected").count(),
            3,
            "the blank line and the two malformed answers: {events:?}"
        );
        assert_eq!(
            events.iter().filter(|k| **k == "client_dispatched").count(),
            5
        );
    }

    #[test]
    fn a_late_lambda_tool_answer_is_not_taken_for_the_next_call() {
        let (client_in, lt_out) = std::io::pipe().expect("pipe");
        let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
        let mut channel = ClientChannel::new(lt_out, lt_in).with_wire(Wire::LambdaTool);
        let (timed_out_tx, timed_out) = mpsc::channel::<()>();
        let client = std::thread::spawn(move || {
            let mut calls = std::io::BufReader::new(client_in);
            let mut line = String::new();
            calls.read_line(&mut line).expect("read call 1");
            // The host answers call 1 only after lt gave up on it, then
            // reads and answers call 2.
            timed_out.recv().expect("call 1 timed out");
            writeln!(client_out, r#"{{"tool_result":{{"ok":"late"}}}}"#).expect("write");
            line.clear();
            calls.read_line(&mut line).expect("read call 2");
            writeln!(client_out, r#"{{"tool_result":{{"ok":"second"}}}}"#).expect("write");
        });
        let mut events = Vec::new();
        let mut ask = |node: u32, wait: u64, events: &mut Vec<EventBody>| {
            let id = CallId { node, path: vec![] };
            let request = CallRequest {
                id: &id,
                tool: "t",
                arg: json!(node),
                time_left: Some(Duration::from_millis(wait)),
                idempotency_key: None,
            };
            let mut record = |e: EventBody| events.push(e);
            channel.call(request, Some(&mut record))
        };
        let first = ask(1, 200, &mut events).expect_err("times out");
        assert_eq!(first.kind, FailureKind::TimedOut);
        timed_out_tx.send(()).expect("tell the host");
        assert_eq!(ask(2, 10_000, &mut events), Ok(json!("second")));
        client.join().expect("client thread");
        let rejected: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::ClientRejected { reason, .. } => Some(reason.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            rejected,
            ["the late answer to call n1, which timed out before it came (one line answers one call); skipped"]
        );
    }
}
