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
//! [`LogWriter::reopen`] continues the log of a session that `lt` did not
//! end (`lt resume`).

use super::call_event::CallEvent;
use super::drop::{drop_body, drop_event};
use super::event::{encode_line, Event, EventBody, HashHex, ZERO_HASH};
use super::parse::is_hex;
use super::read::read_prefix;
use super::verify::{Problem, ProblemKind};
use std::collections::BTreeSet;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
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

    /// Whether the events' JSON payloads are kept: a call's argument, its
    /// output and the value of its result. `false` only for a sink that
    /// keeps no log and hands the events to a tap that needs none of them
    /// ([`super::tap`]): the control plane then builds outline events,
    /// those fields `null` (a result keeps whether it is `Ok` or `Err`).
    fn payloads(&self) -> bool {
        true
    }

    /// Whether [`EventSink::last`] gives the event just appended, with its
    /// hash (the file writer: a tap links to the log with it).
    fn keeps_last(&self) -> bool {
        false
    }

    /// The event last appended, when the sink [keeps it](EventSink::keeps_last).
    fn last(&self) -> Option<&Event> {
        None
    }

    /// Whether the sink takes a call's `proposed`, `decided` and
    /// `scheduled` borrowed ([`EventSink::observe`]), so that the control
    /// plane need not build them: a sink that keeps no log and hands them
    /// to a tap ([`super::tap::Tapped`]).
    fn observes(&self) -> bool {
        false
    }

    /// Records a call's event given borrowed; by default, the event built
    /// and [appended](EventSink::append).
    fn observe(&mut self, event: &CallEvent<'_>) -> io::Result<()> {
        self.append(event.to_body(self.payloads()))
    }

    /// Told the tools the session's tools.toml declares `idempotent`
    /// (names), before its first call. A store whose commits are grouped
    /// need not commit the `scheduled` of such a call before the call
    /// starts ([`commit_point`](super::write_ahead::commit_point)); the
    /// default ignores it.
    fn idempotent_tools(&mut self, tools: &BTreeSet<String>) {
        let _ = tools;
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

/// `EventSink` for a pointer to a sink (`&mut S`, `Box<S>`): every method
/// forwarded to the sink it points at.
macro_rules! forward_sink {
    ($($pointer:ty),+) => {$(
        impl<S: EventSink + ?Sized> EventSink for $pointer {
            fn append(&mut self, body: EventBody) -> io::Result<()> {
                (**self).append(body)
            }

            fn records(&self) -> bool {
                (**self).records()
            }

            fn payloads(&self) -> bool {
                (**self).payloads()
            }

            fn keeps_last(&self) -> bool {
                (**self).keeps_last()
            }

            fn last(&self) -> Option<&Event> {
                (**self).last()
            }

            fn observes(&self) -> bool {
                (**self).observes()
            }

            fn observe(&mut self, event: &CallEvent<'_>) -> io::Result<()> {
                (**self).observe(event)
            }

            fn idempotent_tools(&mut self, tools: &BTreeSet<String>) {
                (**self).idempotent_tools(tools)
            }
        }
    )+};
}

forward_sink!(&mut S, Box<S>);

/// A new session id: 32 lowercase hex digits (128 bits), ordered by time
/// like a UUIDv7 (RFC 9562 §5.7): the first 12 digits are the Unix time in
/// milliseconds, the other 20 (80 bits) come from the operating system's
/// random source (`getrandom`). Ids made later sort after earlier ones (to
/// the millisecond), so a store's indexes grow at one edge instead of
/// everywhere (fewer pages written per commit); 80 random bits keep an id
/// unguessable. Should the random source fail (it does not on supported
/// systems), those 80 bits are derived from the time, the process id and a
/// counter instead: unique on this machine, but guessable.
pub fn new_session_id() -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let millis = u64::try_from(now.as_millis()).unwrap_or(u64::MAX) & 0xffff_ffff_ffff;
    let mut random = [0u8; 10];
    if getrandom::fill(&mut random).is_ok() {
        return format!("{millis:012x}{}", hex::encode(random));
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let seed = format!("{}:{}:{n}", now.as_nanos(), std::process::id());
    format!(
        "{millis:012x}{}",
        &super::event::sha256_hex(seed.as_bytes())[..20]
    )
}

/// The current time, RFC 3339 UTC with milliseconds:
/// `2026-11-29T21:04:05.123Z`.
pub fn now_timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// What stamps `ts`.
#[derive(Clone, Debug)]
enum Clock {
    /// The system clock.
    System(SystemClock),
    /// A given clock (tests use a fixed one).
    Given(fn() -> String),
}

impl Clock {
    /// Replaces `out` with the current time.
    fn stamp(&mut self, out: &mut String) {
        match self {
            Clock::System(clock) => clock.stamp_at(SystemTime::now(), out),
            Clock::Given(clock) => *out = clock(),
        }
    }
}

/// The system clock's stamps, as [`now_timestamp`] writes them. Formatting
/// the date is the dear part of a stamp, so the text up to the seconds is
/// kept, and only the milliseconds are written anew while the second lasts.
#[derive(Clone, Debug, Default)]
struct SystemClock {
    /// The second (since the Unix epoch) `prefix` is for.
    second: Option<u64>,
    /// `2026-11-29T21:04:05.`: the stamp up to its milliseconds.
    prefix: String,
}

impl SystemClock {
    /// Replaces `out` with `now`, RFC 3339 UTC with milliseconds.
    fn stamp_at(&mut self, now: SystemTime, out: &mut String) {
        let Ok(since) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            // Before 1970: not worth a cache (humantime decides what to do).
            *out = humantime::format_rfc3339_millis(now).to_string();
            return;
        };
        let secs = since.as_secs();
        if self.second != Some(secs) {
            // `2026-11-29T21:04:05.000Z` without its last four bytes.
            let whole = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            let text = humantime::format_rfc3339_millis(whole).to_string();
            self.prefix.clear();
            self.prefix
                .push_str(text.get(..text.len().saturating_sub(4)).unwrap_or_default());
            self.second = Some(secs);
        }
        // humantime truncates to the millisecond, as this does.
        let millis = since.subsec_millis();
        out.clear();
        out.push_str(&self.prefix);
        for digit in [millis / 100, millis / 10 % 10, millis % 10] {
            out.push(char::from(b'0' + digit as u8));
        }
        out.push('Z');
    }
}

/// The chain state shared by both sinks: what the next event's `seq`,
/// `prev` and `ts` are.
#[derive(Clone, Debug)]
struct Chain {
    session: String,
    next_seq: u64,
    prev: String,
    clock: Clock,
    /// The stamp of the event being sealed.
    ts: String,
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
            clock: Clock::System(SystemClock::default()),
            ts: String::new(),
        })
    }

    /// Stamps the next event and appends its line (without `\n`) to
    /// `out`; returns its hash. The chain moves on only by
    /// [`Chain::advance`], once the event is recorded.
    fn encode(&mut self, body: &EventBody, out: &mut Vec<u8>) -> HashHex {
        self.clock.stamp(&mut self.ts);
        encode_line(
            out,
            self.next_seq,
            &self.ts,
            &self.session,
            &self.prev,
            body,
        )
    }

    /// Moves the chain past the event just encoded (with `body` and
    /// `hash`) and returns that event.
    fn advance(&mut self, body: EventBody, hash: HashHex) -> Event {
        let event = Event {
            seq: self.next_seq,
            ts: self.ts.clone(),
            session: self.session.clone(),
            prev: self.prev.clone(),
            hash: hash.to_string(),
            body,
        };
        self.next_seq += 1;
        hash.write_to(&mut self.prev);
        event
    }

    /// [`Chain::advance`], storing the event in `last` in place of the
    /// previous one, whose strings it reuses: its `prev` is the previous
    /// `hash`, and only the body is moved (the strings, once grown to
    /// size, are overwritten without allocating).
    fn advance_into<'a>(
        &mut self,
        body: EventBody,
        hash: HashHex,
        last: &'a mut Option<Event>,
    ) -> &'a Event {
        let follows = last
            .as_ref()
            .is_some_and(|e| e.hash == self.prev && e.session == self.session);
        if !follows {
            if let Some(old) = last.take() {
                drop_event(old);
            }
        }
        match last {
            Some(event) => {
                std::mem::swap(&mut event.prev, &mut event.hash);
                hash.write_to(&mut event.hash);
                event.ts.clone_from(&self.ts);
                event.seq = self.next_seq;
                drop_body(std::mem::replace(&mut event.body, body));
                self.next_seq += 1;
                self.prev.clone_from(&event.hash);
                event
            }
            None => last.insert(self.advance(body, hash)),
        }
    }
}

/// Takes the exclusive advisory lock (`flock`) of an open log file, held
/// while the writer lives: one session is written by one `lt` at a time, so
/// a resume cannot run beside the run it continues (or another resume) and
/// run a call twice. Errors: the lock is taken (`WouldBlock`, naming the
/// file); a file that cannot be locked at all is written unlocked.
fn lock(file: &File, path: &Path) -> io::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "{} is being written by another lt session (a run or a resume of this one, in this process or another); wait for it to end, or give each session its own log",
                path.display()
            ),
        )),
        // A file system without locks (ENOLCK, e.g. some network mounts)
        // still gets its log: the lock guards against a mistake, not an
        // attack, and refusing to log would be worse.
        Err(std::fs::TryLockError::Error(_)) => Ok(()),
    }
}

/// What [`LogWriter::reopen`] found.
#[derive(Debug)]
pub struct Reopened {
    /// The writer, appending to the file after its last event.
    pub writer: LogWriter,
    /// The events of the file, verified, in order (the replay before going
    /// live).
    pub events: Vec<Event>,
    /// How many bytes of an incomplete last line were cut off the file (0
    /// when it ended in `\n`).
    pub dropped_bytes: u64,
}

/// Why [`LogWriter::reopen`] refused a log. A refused log is left as it
/// was (only a [`ReopenError::Io`] error after its incomplete last line
/// was cut off can leave it cut).
#[derive(Debug)]
pub enum ReopenError {
    /// The file could not be read, cut or opened for appending.
    Io(io::Error),
    /// The log does not verify: the first problem, as `lt log verify`
    /// reports it (its line, kind and message). A log that was edited,
    /// damaged or mixed with another one is not continued.
    Problem(Problem),
    /// The log ends with `session_ended`: the session already ended and
    /// there is nothing to resume (it can be replayed).
    Ended,
    /// The file holds no complete event: no session to continue.
    Empty,
}

impl fmt::Display for ReopenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReopenError::Io(e) => write!(f, "the log cannot be read or appended to: {e}"),
            ReopenError::Problem(problem) => write!(f, "the log does not verify: {problem}"),
            ReopenError::Ended => f.write_str("the session already ended; nothing to resume"),
            ReopenError::Empty => f.write_str(
                "the log holds no complete event (a log starts with session_started); nothing to resume",
            ),
        }
    }
}

impl std::error::Error for ReopenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReopenError::Io(e) => Some(e),
            ReopenError::Problem(_) | ReopenError::Ended | ReopenError::Empty => None,
        }
    }
}

impl From<io::Error> for ReopenError {
    fn from(e: io::Error) -> Self {
        ReopenError::Io(e)
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
        // Not truncated before it is locked: a log another lt is writing
        // (a run, a resume) must not be emptied under it.
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        lock(&file, &path)?;
        // A device or a pipe (`--log /dev/stderr`) is written as it is.
        if file.metadata()?.is_file() {
            file.set_len(0)?;
        }
        Ok(LogWriter {
            file,
            path,
            chain,
            last: None,
            pending: Vec::new(),
            broken: None,
        })
    }

    /// Reopens the log of a session that stopped without `session_ended`
    /// (`lt` was killed), to continue it: `lt resume`.
    ///
    /// The file must pass every check of `lt log verify` ([`verify()`]);
    /// it must hold at least one complete event, and its last one must not
    /// be `session_ended`. A refused log is left as it was. An incomplete
    /// last line (a write cut short: text after the last `\n`) is cut off
    /// the file, and [`Reopened::dropped_bytes`] says how many bytes that
    /// was. The writer appends at the end of the file, continuing the
    /// chain: the next event gets `seq` = last `seq` + 1, `prev` = the last
    /// `hash`, and the same session id. [`LogWriter::last`] is `None` until
    /// it appends.
    ///
    /// The file is read once into memory to be verified; the text is
    /// dropped before this returns and only the events are kept.
    ///
    /// [`verify()`]: super::verify()
    pub fn reopen(path: impl AsRef<Path>) -> Result<Reopened, ReopenError> {
        let path = path.as_ref().to_path_buf();
        if !std::fs::metadata(&path)?.is_file() {
            return Err(ReopenError::Io(io::Error::other(
                "not a regular file (a log is a file written by `lt run --log`)",
            )));
        }
        let mut file = OpenOptions::new().read(true).append(true).open(&path)?;
        lock(&file, &path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        // Everything up to the last `\n`; after it, a line cut short.
        let mut complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // Unless that line is a whole event that verifies and chains, cut
        // off just before its `\n`: kept, and the file gets its newline
        // (dropping it would turn a recorded outcome into "unknown").
        let mut newline_missing = false;
        if complete < bytes.len() {
            let mut whole = bytes.clone();
            whole.push(b'\n');
            if let Ok(text) = std::str::from_utf8(&whole) {
                let (events, report) = read_prefix(text);
                newline_missing = report.problem.is_none() && !report.incomplete_tail;
                events.into_iter().for_each(drop_event);
            }
            if newline_missing {
                bytes = whole;
                complete = bytes.len();
            }
        }
        let dropped_bytes = (bytes.len() - complete) as u64;
        bytes.truncate(complete);
        // As `lt log verify` reads a file: bytes that are not UTF-8 become
        // U+FFFD, and the line holding them fails its checks.
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let (events, report) = read_prefix(&text);
        drop(text);
        let refuse = |events: Vec<Event>, error: ReopenError| {
            events.into_iter().for_each(drop_event);
            Err(error)
        };
        if let Some(problem) = report.problem {
            return match problem.kind {
                ProblemKind::Empty => refuse(events, ReopenError::Empty),
                _ => refuse(events, ReopenError::Problem(problem)),
            };
        }
        let (session, seq, prev) = match events.last() {
            None => return refuse(events, ReopenError::Empty),
            Some(Event {
                body: EventBody::SessionEnded { .. },
                ..
            }) => return refuse(events, ReopenError::Ended),
            Some(last) => (last.session.clone(), last.seq, last.hash.clone()),
        };
        if dropped_bytes > 0 {
            file.set_len(complete as u64)?;
        }
        // Appending writes at the end whatever the position; it is put
        // there anyway.
        file.seek(SeekFrom::End(0))?;
        if newline_missing {
            file.write_all(b"\n")?;
            file.sync_data()?;
        }
        let mut chain = Chain::new(session)?;
        chain.next_seq = seq + 1;
        chain.prev = prev;
        Ok(Reopened {
            writer: LogWriter {
                file,
                path,
                chain,
                last: None,
                pending: Vec::new(),
                broken: None,
            },
            events,
            dropped_bytes,
        })
    }

    /// Replaces the clock that stamps `ts` (tests use a fixed one).
    pub fn with_clock(mut self, clock: fn() -> String) -> LogWriter {
        self.chain.clock = Clock::Given(clock);
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
        let buffered =
            super::write_ahead::write_ahead(&body) == super::write_ahead::WriteAhead::Buffer;
        // The line goes straight into the buffer of lines to write.
        let hash = self.chain.encode(&body, &mut self.pending);
        self.pending.push(b'\n');
        if !buffered {
            self.flush_pending()?;
        }
        // Only now does `last` change: after a failed write it is still the
        // last event written.
        Ok(self.chain.advance_into(body, hash, &mut self.last))
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

    fn keeps_last(&self) -> bool {
        true
    }

    fn last(&self) -> Option<&Event> {
        LogWriter::last(self)
    }
}

/// A session's events kept in memory, chained and hashed exactly as
/// [`LogWriter`] writes them; [`MemoryLog::to_jsonl`] gives the file text.
#[derive(Clone, Debug)]
pub struct MemoryLog {
    chain: Chain,
    events: Vec<Event>,
    /// The line of the event being sealed (only its hash is kept).
    line: Vec<u8>,
}

impl MemoryLog {
    /// An empty log for session `session_id` (32 lowercase hex digits).
    pub fn new(session_id: impl Into<String>) -> io::Result<MemoryLog> {
        Ok(MemoryLog {
            chain: Chain::new(session_id.into())?,
            events: Vec::new(),
            line: Vec::new(),
        })
    }

    /// A log continuing after `events` (a session's verified events, at
    /// least one): the next event gets the last `seq` + 1, `prev` = the
    /// last `hash`, and the same session id. The events are not kept.
    pub fn continuing(events: &[Event]) -> io::Result<MemoryLog> {
        let Some(last) = events.last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a log continues after at least one event",
            ));
        };
        let mut chain = Chain::new(last.session.clone())?;
        chain.next_seq = last.seq + 1;
        chain.prev = last.hash.clone();
        Ok(MemoryLog {
            chain,
            events: Vec::new(),
            line: Vec::new(),
        })
    }

    /// Replaces the clock that stamps `ts` (tests use a fixed one).
    pub fn with_clock(mut self, clock: fn() -> String) -> MemoryLog {
        self.chain.clock = Clock::Given(clock);
        self
    }

    /// Appends one event and returns it. Never fails; the `Result` matches
    /// [`LogWriter::append`].
    pub fn append(&mut self, body: EventBody) -> io::Result<&Event> {
        self.line.clear();
        let hash = self.chain.encode(&body, &mut self.line);
        let event = self.chain.advance(body, hash);
        self.events.push(event);
        Ok(&self.events[self.events.len() - 1])
    }

    /// Seals one event without keeping it: numbers, stamps, chains and
    /// hashes `body` as [`MemoryLog::append`] does, and returns the event
    /// with its line (the file's text, without `\n`), encoded once. The
    /// log goes on from it, but [`MemoryLog::events`] does not list it (a
    /// database sink hands each event on as it is sealed).
    pub fn seal(&mut self, body: EventBody) -> (Event, String) {
        // Most lines fit: one allocation, handed on as the line itself.
        let mut line = Vec::with_capacity(512);
        let hash = self.chain.encode(&body, &mut line);
        let event = self.chain.advance(body, hash);
        // The encoder writes JSON of Rust strings and numbers: UTF-8.
        let line = String::from_utf8(line)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (event, line)
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
    use super::super::verify;
    use super::*;

    #[test]
    fn session_ids_are_32_hex_digits_and_differ() {
        let a = new_session_id();
        let b = new_session_id();
        assert!(is_hex(&a, 32), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn session_ids_sort_by_time() {
        let a = new_session_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_session_id();
        assert!(a < b, "{a} then {b}");
        let millis = u64::from_str_radix(&a[..12], 16).expect("hex digits");
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis() as u64;
        assert!(now - millis < 60_000, "{a}: {millis} vs {now}");
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        let ts = now_timestamp();
        assert_eq!(ts.len(), "2026-11-29T21:04:05.123Z".len(), "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T' && ts.as_bytes()[19] == b'.');
    }

    #[test]
    fn the_cached_clock_stamps_as_humantime_does() {
        use std::time::Duration;
        let mut clock = SystemClock::default();
        let mut out = String::new();
        let starts = [
            0,
            951_782_399,   // 2000-02-28T23:59:59
            1_709_251_199, // 2024-02-29T23:59:59
            1_796_000_000,
            4_102_444_799, // 2099-12-31T23:59:59
        ];
        for start in starts {
            for step in 0..2_500u64 {
                let t = SystemTime::UNIX_EPOCH
                    + Duration::from_secs(start)
                    + Duration::from_nanos(step * 999_983);
                clock.stamp_at(t, &mut out);
                assert_eq!(out, humantime::format_rfc3339_millis(t).to_string());
            }
        }
    }

    const SESSION: &str = "0123456789abcdef0123456789abcdef";

    fn temp_log(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("lt-writer-{name}-{}.jsonl", std::process::id()))
    }

    fn started() -> EventBody {
        EventBody::SessionStarted {
            lt_version: "0.1.0".into(),
            program: "exec tool ping 1".into(),
            program_hash: ZERO_HASH.into(),
            profile: serde_json::json!({"name": "default"}),
            registry_hash: ZERO_HASH.into(),
            limits: serde_json::json!({"max_calls": 10}),
        }
    }

    /// The events of one call, `proposed` to `completed`.
    fn call(n: u32) -> Vec<EventBody> {
        let call_id = format!("n5[n3:{n}]");
        vec![
            EventBody::Proposed {
                call_id: call_id.clone(),
                tool: "ping".into(),
                argument: serde_json::json!(n),
            },
            EventBody::Decided {
                call_id: call_id.clone(),
                decision: super::super::Decision::Allow,
                rule: "policy".into(),
                reason: "every rule passed".into(),
            },
            EventBody::Scheduled {
                call_id: call_id.clone(),
                tool: "ping".into(),
                venue: "server".into(),
                idempotency_key: format!("{SESSION}:{call_id}"),
            },
            EventBody::Completed {
                call_id,
                output: serde_json::json!(1),
                result: serde_json::json!({"Ok": 1}),
            },
        ]
    }

    fn ended() -> EventBody {
        EventBody::SessionEnded {
            status: "ok".into(),
            value: Some(serde_json::json!(1)),
            r#type: Some("Int".into()),
            error: None,
            calls: 2,
            steps: 9,
        }
    }

    #[test]
    fn sealed_events_are_the_appended_ones_with_their_own_line() {
        let clock = || "2026-01-01T00:00:00.000Z".to_string();
        let mut kept = MemoryLog::new(SESSION)
            .expect("a session id")
            .with_clock(clock);
        let mut sealed = MemoryLog::new(SESSION)
            .expect("a session id")
            .with_clock(clock);
        let bodies = || {
            std::iter::once(started())
                .chain(call(1))
                .chain(call(2))
                .chain([ended()])
        };
        for (a, b) in bodies().zip(bodies()) {
            let want = kept.append(a).expect("appended").to_line();
            let (event, line) = sealed.seal(b);
            assert_eq!(line, want);
            assert_eq!(event.to_line(), want);
        }
        assert!(sealed.events().is_empty());
        let report = verify::verify(&kept.to_jsonl());
        assert!(report.ok && report.events == 10, "{:?}", report.problem);
    }

    /// Writes a log of `bodies` at `path` and returns its text.
    fn write_log(path: &Path, bodies: Vec<EventBody>) -> String {
        let mut writer = LogWriter::create(path, SESSION).expect("create");
        for body in bodies {
            writer.append(body).expect("append");
        }
        drop(writer);
        std::fs::read_to_string(path).expect("read")
    }

    fn reopen_err(path: &Path) -> ReopenError {
        match LogWriter::reopen(path) {
            Ok(r) => panic!(
                "reopened a log that should be refused: {:?}",
                r.events.len()
            ),
            Err(e) => e,
        }
    }

    #[test]
    fn reopen_keeps_a_whole_last_event_that_lacks_only_its_newline() {
        let path = temp_log("no-newline");
        let mut bodies = vec![started()];
        bodies.extend(call(0));
        let text = write_log(&path, bodies);
        // Killed between the last event's bytes and its `\n`.
        let cut = &text[..text.len() - 1];
        std::fs::write(&path, cut).expect("write");
        assert!(verify(cut).incomplete_tail);

        let reopened = LogWriter::reopen(&path).expect("reopens");
        assert_eq!(reopened.dropped_bytes, 0);
        assert_eq!(reopened.events.len(), 5, "the outcome is kept");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        let mut writer = reopened.writer;
        let next = writer.append(EventBody::SessionResumed {
            lt_version: "0.1.0".into(),
            registry_hash: ZERO_HASH.into(),
            dropped_bytes: 0,
        });
        assert_eq!(next.expect("append").seq, 5);
        let after = std::fs::read_to_string(&path).expect("read");
        assert!(!verify(&after).incomplete_tail && verify(&after).problem.is_none());
    }

    #[test]
    fn reopen_cuts_a_torn_line_and_continues_the_chain() {
        let path = temp_log("torn");
        let mut bodies = vec![started()];
        bodies.extend(call(0));
        // The proposal of the next call reached the file; its decision was
        // being written when lt was killed.
        bodies.extend(call(1).into_iter().take(1));
        let text = write_log(&path, bodies);
        let torn = r#"{"call_id":"n5[n3:1]","decision":"al"#;
        std::fs::write(&path, format!("{text}{torn}")).expect("write");
        assert!(verify(&format!("{text}{torn}")).incomplete_tail);

        let reopened = LogWriter::reopen(&path).expect("reopens");
        assert_eq!(reopened.dropped_bytes, torn.len() as u64);
        assert_eq!(reopened.events.len(), 6);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        let mut writer = reopened.writer;
        assert_eq!((writer.session(), writer.len()), (SESSION, 6));
        assert!(writer.last().is_none());
        let resumed = EventBody::SessionResumed {
            lt_version: "0.1.0".into(),
            registry_hash: ZERO_HASH.into(),
            dropped_bytes: reopened.dropped_bytes,
        };
        let first = writer.append(resumed).expect("append").clone();
        assert_eq!(first.seq, 6);
        assert_eq!(first.prev, reopened.events[5].hash);
        for body in call(1).into_iter().skip(1).chain(call(2)).chain([ended()]) {
            writer.append(body).expect("append");
        }
        drop(writer);

        let text = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        let report = verify(&text);
        assert!(report.ok && !report.incomplete_tail, "{report}");
        assert_eq!(report.events, 6 + 1 + 3 + 4 + 1);
        let events = super::super::read_log(&text).expect("reads");
        assert!(events.iter().all(|e| e.session == SESSION));
        assert_eq!(events[7].kind(), "decided");
    }

    #[test]
    fn reopen_keeps_a_log_that_ends_in_a_newline() {
        let path = temp_log("clean");
        let mut bodies = vec![started()];
        bodies.extend(call(0).into_iter().take(3));
        let text = write_log(&path, bodies);
        let reopened = LogWriter::reopen(&path).expect("reopens");
        assert_eq!(reopened.dropped_bytes, 0);
        assert_eq!(reopened.events.len(), 4);
        let mut writer = reopened.writer;
        writer.append(call(0).remove(3)).expect("append");
        drop(writer);
        let after = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        assert!(after.starts_with(&text));
        let report = verify(&after);
        assert!(report.ok && report.events == 5, "{report}");
    }

    #[test]
    fn reopen_refuses_an_ended_session_and_leaves_it_as_it_was() {
        let path = temp_log("ended");
        let mut bodies = vec![started()];
        bodies.extend(call(0));
        bodies.push(ended());
        let text = write_log(&path, bodies);
        // Even with a torn line after the end, nothing is cut.
        let with_tail = format!("{text}{{\"cal");
        std::fs::write(&path, &with_tail).expect("write");
        let e = reopen_err(&path);
        let after = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        assert!(matches!(e, ReopenError::Ended), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the session already ended; nothing to resume"
        );
        assert_eq!(after, with_tail);
    }

    #[test]
    fn reopen_refuses_a_tampered_log_with_the_line_of_the_problem() {
        let path = temp_log("tampered");
        let mut bodies = vec![started()];
        bodies.extend(call(0));
        let text = write_log(&path, bodies);
        let edited = text.replacen("\"tool\":\"ping\"", "\"tool\":\"pong\"", 1);
        assert_ne!(edited, text);
        std::fs::write(&path, &edited).expect("write");
        let e = reopen_err(&path);
        let after = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        let ReopenError::Problem(problem) = &e else {
            panic!("expected a verify problem, got {e:?}");
        };
        assert_eq!((problem.line, problem.kind), (2, ProblemKind::Hash));
        assert!(e.to_string().contains("line 2: hash mismatch"), "{e}");
        assert_eq!(after, edited);
    }

    #[test]
    fn reopen_refuses_an_empty_or_missing_log() {
        let path = temp_log("empty");
        for text in ["", "{\"hash\":\"12"] {
            std::fs::write(&path, text).expect("write");
            let e = reopen_err(&path);
            assert!(matches!(e, ReopenError::Empty), "{text:?}: {e:?}");
            assert!(e.to_string().contains("nothing to resume"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        }
        let _ = std::fs::remove_file(&path);
        let e = reopen_err(&path);
        assert!(matches!(e, ReopenError::Io(_)), "{e:?}");
        assert!(e.to_string().starts_with("the log cannot be read"), "{e}");
    }

    #[test]
    fn bad_session_ids_are_refused() {
        assert!(MemoryLog::new("not-hex").is_err());
        assert!(MemoryLog::new("0123456789ABCDEF0123456789ABCDEF").is_err());
    }
}
