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
use std::collections::BTreeMap;
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
    /// Why no call can be reported any more, and during which call that
    /// became known (e.g. `the client closed its input`, `n7`).
    closed: Option<(String, String)>,
    /// The number of the last tool_call line handed to the writer thread.
    sent: u64,
    /// The number of the last line the writer thread wrote and flushed.
    written: Arc<AtomicU64>,
}

/// What the control plane learns from one line of the client.
enum Judged {
    /// A well-formed report of the call being waited for.
    Report { outcome: Result<Json, String> },
    /// Any other line: rejected with a reason.
    Rejected { report: Json, reason: String },
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
            closed: None,
            sent: 0,
            written: Arc::new(AtomicU64::new(0)),
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
        let line = call_line(&call_id, tool, request.arg, request.idempotency_key);
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
                    if let Some(n) = narrate.as_mut() {
                        let mut shown = String::from_utf8_lossy(&start).into_owned();
                        shown.push('…');
                        n(EventBody::ClientRejected {
                            report: Json::String(shown),
                            reason: format!(
                                "the line is {bytes} bytes long, more than the {} MiB a line may have; \
                                 it was skipped (report holds its first {} bytes)",
                                MAX_LINE_BYTES / (1024 * 1024),
                                start.len()
                            ),
                        });
                    }
                }
                Ok(Incoming::Line(bytes)) => match judge(&bytes, &call_id, &self.ended) {
                    Judged::Rejected { report, reason } => match narrate.as_mut() {
                        Some(n) => n(EventBody::ClientRejected { report, reason }),
                        None => drop_deep(report),
                    },
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
                        return outcome.map_err(|error| ToolFailure {
                            kind: FailureKind::Failed,
                            message: format!("tool {tool} failed in the client: {error}"),
                        });
                    }
                },
            }
        }
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
            Judged::Rejected { reason, .. } => reason,
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
}
