//! The two threads at the ends of a client channel's pipes, and the gate
//! that the writer thread and the waiting call share.
//!
//! ```text
//! ClientChannel::call ──Outgoing{number, bytes, deadline}──▶ writer thread ──▶ stdout
//!        ▲                                                        │ Gate::begin(n): may line n start?
//!        │ Incoming::{Line, TooLong, Closed, Written, WriteFailed} │ (not after its deadline, the end of
//!        └──────────────────── reader thread ◀── stdin            │  the input, or the channel's close)
//! ```
//!
//! The gate decides, under one lock, whether a line is ever written: the
//! writer asks [`Gate::begin`] before the first byte, and a call that gives
//! up on its line asks [`Gate::cancel`]. Exactly one of them wins, so a
//! call always knows whether its line was written, is being written, or
//! never will be. Lines are written in chunks of [`CHUNK`] bytes so that
//! a closing channel can tell a slow reader (the bytes move) from one
//! that stopped reading ([`Gate::wait_writer`]).
//!
//! Invariant: the end of the client's input takes effect in order. It is
//! known ([`Gate::input_ended`]) once the reader thread saw it and the
//! waiting call took every line read before it, never while such a line
//! is still queued; from then on no tool_call line starts.

use super::{Incoming, KEPT_PREFIX};
use std::io::{BufRead, ErrorKind, Write};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How many bytes of a line the writer hands to one `write` call.
const CHUNK: usize = 64 * 1024;

/// A tool_call line for the writer thread.
pub(super) struct Outgoing {
    /// Its number (1, 2, …, one per call).
    pub number: u64,
    /// The line, `\n` included.
    pub bytes: Vec<u8>,
    /// Past this instant the line is not started: its call gave up.
    pub deadline: Option<Instant>,
}

/// What became of a line when its call gave up on it ([`Gate::cancel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    /// Not started; now it never will be.
    Cancelled,
    /// Being written (the client does not read, or reads slowly).
    Started,
    /// Written and flushed.
    Written,
}

#[derive(Default)]
struct GateState {
    /// The waiting call took the end of the client's input (or a read error).
    input_ended: bool,
    /// The reader thread saw the end of the input (or a read error): every
    /// line before it is counted in `queued`.
    eof_seen: bool,
    /// Lines the reader thread handed over, and lines the calls took.
    queued: u64,
    taken: u64,
    /// The channel is closing: no further line starts.
    closed: bool,
    /// Lines up to this number are never to be written.
    cancelled: u64,
    /// The last line the writer began.
    started: u64,
    /// The last line the writer wrote and flushed.
    written: u64,
    /// Bytes written so far, all lines together.
    bytes: u64,
    /// The writer thread ended.
    writer_done: bool,
}

impl GateState {
    /// The end of the input takes effect in order: not while a line read
    /// before it waits to be judged.
    fn ended(&self) -> bool {
        self.input_ended || (self.eof_seen && self.taken >= self.queued)
    }
}

/// The state the writer thread, the reader thread and the waiting call share.
#[derive(Default)]
pub(super) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, f: impl FnOnce(&mut GateState)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    /// The writer: may line `n` start? If so it counts as started.
    fn begin(&self, n: u64, deadline: Option<Instant>) -> bool {
        let mut s = self.lock();
        let late = deadline.is_some_and(|d| Instant::now() >= d);
        if s.ended() || s.closed || n <= s.cancelled || late {
            return false;
        }
        s.started = n;
        true
    }

    /// The writer: `n` more bytes went out.
    pub(super) fn advance(&self, n: usize) {
        self.update(|s| s.bytes += n as u64);
    }

    /// The reader: one more line is handed over.
    fn queue_line(&self) {
        self.update(|s| s.queued += 1);
    }

    /// The reader: the client's input ended (every line before it queued).
    fn see_eof(&self) {
        self.update(|s| s.eof_seen = true);
    }

    /// Whether the reader thread saw the end of the input (lines read
    /// before it may still be queued).
    #[cfg(test)]
    pub(super) fn eof_seen(&self) -> bool {
        self.lock().eof_seen
    }

    /// A call took a line from the queue.
    pub(super) fn take_line(&self) {
        self.update(|s| s.taken += 1);
    }

    /// A call took the end of the client's input from the queue.
    pub(super) fn end_input(&self) {
        self.update(|s| s.input_ended = true);
    }

    /// Whether the client's input is known to have ended: its end was
    /// taken, or seen with every line before it taken.
    pub(super) fn input_ended(&self) -> bool {
        self.lock().ended()
    }

    /// A call gives up on line `n`: unless the writer began it, it is
    /// never written.
    pub(super) fn cancel(&self, n: u64) -> Fate {
        let mut s = self.lock();
        if s.written >= n {
            Fate::Written
        } else if s.started >= n {
            Fate::Started
        } else {
            s.cancelled = s.cancelled.max(n);
            Fate::Cancelled
        }
    }

    /// Waits until line `n` (already started) is written, or `until`.
    /// `true`: it was written.
    pub(super) fn wait_written(&self, n: u64, until: Instant) -> bool {
        let mut s = self.lock();
        loop {
            if s.written >= n {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if s.writer_done || left.is_zero() {
                return false;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The channel closes: no further line starts.
    pub(super) fn close(&self) {
        self.update(|s| s.closed = true);
    }

    /// Waits for the writer thread to end, as long as it makes progress:
    /// `false` when no byte moved for `stall` (the client stopped reading
    /// in the middle of a line).
    pub(super) fn wait_writer(&self, stall: Duration) -> bool {
        let mut s = self.lock();
        let mut seen = s.bytes;
        let mut since = Instant::now();
        loop {
            if s.writer_done {
                return true;
            }
            if s.bytes != seen {
                seen = s.bytes;
                since = Instant::now();
            }
            let left = stall.saturating_sub(since.elapsed());
            if left.is_zero() {
                return false;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Marks the writer thread ended when dropped: when the thread returns,
/// panics, or never starts.
pub(super) struct WriterDone(pub Arc<Gate>);

impl Drop for WriterDone {
    fn drop(&mut self) {
        self.0.update(|s| s.writer_done = true);
    }
}

/// Writes `bytes` in chunks, calling `progress` with each chunk's length,
/// then flushes.
pub(super) fn write_chunked(
    writer: &mut impl Write,
    bytes: &[u8],
    mut progress: impl FnMut(usize),
) -> std::io::Result<()> {
    for chunk in bytes.chunks(CHUNK) {
        writer.write_all(chunk)?;
        progress(chunk.len());
    }
    writer.flush()
}

/// The writer thread: writes each line the gate lets start, then says so;
/// a line the gate refuses is dropped unwritten.
pub(super) fn write_calls(
    mut writer: impl Write,
    lines: &Receiver<Outgoing>,
    plane: &SyncSender<Incoming>,
    done: WriterDone,
) {
    let gate = &done.0;
    while let Ok(line) = lines.recv() {
        if !gate.begin(line.number, line.deadline) {
            continue;
        }
        let written = write_chunked(&mut writer, &line.bytes, |n| gate.advance(n));
        match written {
            Ok(()) => {
                gate.update(|s| s.written = line.number);
                if plane.send(Incoming::Written(line.number)).is_err() {
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
/// the end of the input, counting each on the gate before it is sent
/// (the end takes effect once the calls took every line, see
/// [`Gate::input_ended`]).
pub(super) fn read_lines(
    mut reader: impl BufRead,
    cap: usize,
    plane: &SyncSender<Incoming>,
    gate: &Gate,
) {
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
                    gate.see_eof();
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
            gate.queue_line();
            if plane.send(message).is_err() {
                return;
            }
        }
        if at_eof {
            gate.see_eof();
            let _ = plane.send(Incoming::Closed(None));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn lines_of(text: &str, cap: usize) -> Vec<String> {
        let (tx, rx) = mpsc::sync_channel(64);
        let gate = Gate::default();
        read_lines(text.as_bytes(), cap, &tx, &gate);
        assert!(gate.eof_seen(), "the end of the input is on the gate");
        assert!(!gate.input_ended(), "not in effect: no line was taken");
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

    #[test]
    fn a_line_is_written_or_cancelled_never_both() {
        let gate = Gate::default();
        assert_eq!(gate.cancel(1), Fate::Cancelled);
        assert!(!gate.begin(1, None), "a cancelled line does not start");
        assert!(gate.begin(2, None));
        assert_eq!(gate.cancel(2), Fate::Started);
        gate.update(|s| s.written = 2);
        assert_eq!(gate.cancel(2), Fate::Written);
        let past = Instant::now();
        assert!(!gate.begin(3, Some(past)), "past its deadline");
        gate.end_input();
        assert!(!gate.begin(4, None), "after the end of the input");
    }

    #[test]
    fn the_writer_skips_lines_after_the_end_of_the_input() {
        let gate = Arc::new(Gate::default());
        gate.end_input();
        let (to_write, lines) = mpsc::channel();
        let (plane, incoming) = mpsc::sync_channel(8);
        to_write
            .send(Outgoing {
                number: 1,
                bytes: b"call\n".to_vec(),
                deadline: None,
            })
            .expect("queue");
        drop(to_write);
        let mut out = Vec::new();
        write_calls(&mut out, &lines, &plane, WriterDone(Arc::clone(&gate)));
        assert!(out.is_empty());
        assert!(incoming.try_recv().is_err(), "no Written notice");
        assert!(gate.wait_writer(Duration::ZERO));
    }
}
