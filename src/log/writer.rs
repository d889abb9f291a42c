//! Writing the log: [`LogWriter`] (a JSON Lines file) and [`MemoryLog`]
//! (events kept in memory), both behind [`EventSink`].
//!
//! The writer, not its caller, fills in `seq`, `ts`, `session`, `prev` and
//! `hash`: a caller hands over an [`EventBody`] and cannot get the chain
//! wrong. [`LogWriter::append`] returns only once the line is in the
//! operating system (written and flushed, one `write` of the whole line),
//! so the `scheduled` event of a call is on record before the call's side
//! effect starts. It does not `fsync`: the log survives a crash of `lt`,
//! not a crash of the machine (call [`LogWriter::sync`] for that).

use super::event::{Event, EventBody, ZERO_HASH};
use super::parse::is_hex;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Where events go. The control plane records through this trait, so a
/// session can log to a file ([`LogWriter`]) or to memory ([`MemoryLog`]).
pub trait EventSink {
    /// Records one event: the sink numbers, chains, timestamps and hashes
    /// it. When this returns `Ok`, the event is recorded (for a file: in the
    /// operating system, not necessarily on disk).
    fn append(&mut self, body: EventBody) -> io::Result<()>;

    /// Whether appended events are kept. A sink that drops them
    /// ([`Discard`]) lets the control plane skip building them.
    fn records(&self) -> bool {
        true
    }
}

/// A sink that keeps nothing: a session without `--log`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Discard;

impl EventSink for Discard {
    fn append(&mut self, _: EventBody) -> io::Result<()> {
        Ok(())
    }

    fn records(&self) -> bool {
        false
    }
}

impl<S: EventSink + ?Sized> EventSink for &mut S {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        (**self).append(body)
    }

    fn records(&self) -> bool {
        (**self).records()
    }
}

impl<S: EventSink + ?Sized> EventSink for Box<S> {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        (**self).append(body)
    }

    fn records(&self) -> bool {
        (**self).records()
    }
}

/// A new session id: 32 lowercase hex digits (128 bits) from the operating
/// system's random source (`getrandom`). Should that source fail (it does
/// not on supported systems), the id is derived instead from the time, the
/// process id and a counter: unique on this machine, but guessable.
pub fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_ok() {
        return hex::encode(bytes);
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{nanos}:{}:{n}", std::process::id());
    super::event::sha256_hex(seed.as_bytes())[..32].to_string()
}

/// The current time, RFC 3339 UTC with milliseconds:
/// `2026-11-29T21:04:05.123Z`.
pub fn now_timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// The chain state shared by both sinks: what the next event's `seq` and
/// `prev` are.
#[derive(Clone, Debug)]
struct Chain {
    session: String,
    next_seq: u64,
    prev: String,
    clock: fn() -> String,
}

impl Chain {
    fn new(session_id: String) -> io::Result<Chain> {
        if !is_hex(&session_id, 32) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "session id `{session_id}` is not 32 lowercase hex digits (use new_session_id)"
                ),
            ));
        }
        Ok(Chain {
            session: session_id,
            next_seq: 0,
            prev: ZERO_HASH.to_string(),
            clock: now_timestamp,
        })
    }

    /// The next event, hashed; the chain moves on only by [`Chain::advance`].
    fn seal(&self, body: EventBody) -> Event {
        self.seal_with_line(body).0
    }

    /// The sealed event and its line (without `\n`), serialised once.
    fn seal_with_line(&self, body: EventBody) -> (Event, Vec<u8>) {
        let mut event = Event {
            seq: self.next_seq,
            ts: (self.clock)(),
            session: self.session.clone(),
            prev: self.prev.clone(),
            hash: String::new(),
            body,
        };
        let (hash, line) = event.seal_encoding();
        event.hash = hash;
        (event, line)
    }

    fn advance(&mut self, event: &Event) {
        self.next_seq += 1;
        self.prev.clone_from(&event.hash);
    }
}

/// Appends a session's events to a JSON Lines file.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    chain: Chain,
    last: Option<Event>,
    /// Lines of events that need not reach the file before lt goes on
    /// (`proposed`, `decided`): written with the next event that must.
    pending: Vec<u8>,
    /// Set when a write failed: the file may end in a partial line, and
    /// anything appended after it would not verify.
    broken: Option<String>,
}

impl LogWriter {
    /// Creates the log file at `path` for session `session_id` (32
    /// lowercase hex digits, see [`new_session_id`]). An existing file is
    /// truncated: one file holds one session.
    pub fn create(path: impl AsRef<Path>, session_id: impl Into<String>) -> io::Result<LogWriter> {
        let chain = Chain::new(session_id.into())?;
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path)?;
        Ok(LogWriter {
            file,
            path,
            chain,
            last: None,
            pending: Vec::new(),
            broken: None,
        })
    }

    /// Replaces the clock that stamps `ts` (tests use a fixed one).
    pub fn with_clock(mut self, clock: fn() -> String) -> LogWriter {
        self.chain.clock = clock;
        self
    }

    /// Appends one event: numbers, chains, stamps and hashes it, and
    /// returns it. Every event that precedes or records an action —
    /// `session_started`, `scheduled`, an outcome, a denial, `session_ended`
    /// — is written before `append` returns, together with the events
    /// buffered before it, in one `write` call (no `fsync`). `proposed` and
    /// an allowing `decided` are buffered: nothing has happened yet when
    /// they are recorded, and they reach the file, in order, with the
    /// `scheduled` (or outcome) that follows them. A crash can therefore
    /// lose only the proposal and decision of a call that never started.
    ///
    /// After a failed write every later append fails too: the file may end
    /// in a partial line, which verification reports as an incomplete tail
    /// as long as nothing follows it.
    pub fn append(&mut self, body: EventBody) -> io::Result<&Event> {
        if let Some(why) = &self.broken {
            return Err(io::Error::other(format!(
                "the log {} is incomplete after an earlier write failed ({why}); nothing more is written",
                self.path.display()
            )));
        }
        let (event, line) = self.chain.seal_with_line(body);
        let buffered = match &event.body {
            EventBody::Proposed { .. } => true,
            EventBody::Decided { decision, .. } => *decision == super::Decision::Allow,
            _ => false,
        };
        self.pending.extend_from_slice(&line);
        self.pending.push(b'\n');
        if !buffered {
            self.flush_pending()?;
        }
        self.chain.advance(&event);
        Ok(self.last.insert(event))
    }

    /// Writes the buffered lines, if any, with one `write` call.
    pub fn flush_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let result = self
            .file
            .write_all(&self.pending)
            .and_then(|()| self.file.flush());
        self.pending.clear();
        if let Err(e) = result {
            self.broken = Some(e.to_string());
            return Err(e);
        }
        Ok(())
    }

    /// Forces the written events to disk (`fsync` of the data).
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.chain.session
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many events were written.
    pub fn len(&self) -> u64 {
        self.chain.next_seq
    }

    /// No event was written yet.
    pub fn is_empty(&self) -> bool {
        self.chain.next_seq == 0
    }

    /// The last event written.
    pub fn last(&self) -> Option<&Event> {
        self.last.as_ref()
    }
}

impl Drop for LogWriter {
    /// Writes what is still buffered (best effort: a log cut short is
    /// still valid up to its last complete line).
    fn drop(&mut self) {
        if self.broken.is_none() {
            let _ = self.flush_pending();
        }
    }
}

impl EventSink for LogWriter {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        LogWriter::append(self, body).map(|_| ())
    }
}

/// A session's events kept in memory, chained and hashed exactly as
/// [`LogWriter`] writes them; [`MemoryLog::to_jsonl`] gives the file text.
#[derive(Clone, Debug)]
pub struct MemoryLog {
    chain: Chain,
    events: Vec<Event>,
}

impl MemoryLog {
    /// An empty log for session `session_id` (32 lowercase hex digits).
    pub fn new(session_id: impl Into<String>) -> io::Result<MemoryLog> {
        Ok(MemoryLog {
            chain: Chain::new(session_id.into())?,
            events: Vec::new(),
        })
    }

    /// Replaces the clock that stamps `ts` (tests use a fixed one).
    pub fn with_clock(mut self, clock: fn() -> String) -> MemoryLog {
        self.chain.clock = clock;
        self
    }

    /// Appends one event and returns it. Never fails; the `Result` matches
    /// [`LogWriter::append`].
    pub fn append(&mut self, body: EventBody) -> io::Result<&Event> {
        let event = self.chain.seal(body);
        self.chain.advance(&event);
        self.events.push(event);
        Ok(&self.events[self.events.len() - 1])
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.chain.session
    }

    /// The events so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The events, taken out.
    pub fn into_events(self) -> Vec<Event> {
        self.events
    }

    /// The log as its file would hold it: one line per event, each ending
    /// in `\n`.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for event in &self.events {
            out.push_str(&event.to_line());
            out.push('\n');
        }
        out
    }
}

impl EventSink for MemoryLog {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        MemoryLog::append(self, body).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_32_hex_digits_and_differ() {
        let a = new_session_id();
        let b = new_session_id();
        assert!(is_hex(&a, 32), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        let ts = now_timestamp();
        assert_eq!(ts.len(), "2026-11-29T21:04:05.123Z".len(), "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T' && ts.as_bytes()[19] == b'.');
    }

    #[test]
    fn bad_session_ids_are_refused() {
        assert!(MemoryLog::new("not-hex").is_err());
        assert!(MemoryLog::new("0123456789ABCDEF0123456789ABCDEF").is_err());
    }
}
