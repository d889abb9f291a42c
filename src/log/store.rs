//! The `EventStore` port: where sessions' logs live. The control plane
//! writes through an [`EventSink`] the store opens; `lt log verify`,
//! `show`, `replay` and `resume` read through [`EventStore::load`] and
//! [`EventStore::reopen`].
//!
//! ```text
//! EventStore ── create(session) ──▶ EventSink (append: numbered, chained, hashed)
//!            ── load(session)   ──▶ Loaded { events (verified prefix), report }
//!            ── reopen(session) ──▶ ReopenedLog { events, sink continuing the chain }
//! implementations: JsonlFile (one JSON Lines file, the CLI's --log),
//!                  MemoryStore (tests, embedders); SQLite/PostgreSQL later
//! ```
//!
//! **The write-ahead rule, per event kind** ([`write_ahead`], in
//! `write_ahead.rs`): every store keeps it.

use super::drop::drop_event;
use super::event::{Event, EventBody};
use super::read::read_prefix;
use super::verify::VerifyReport;
pub use super::write_ahead::{write_ahead, WriteAhead};
use super::writer::{EventSink, LogWriter, MemoryLog, ReopenError};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// A session's events as far as they verify, and what verification found.
#[derive(Debug)]
pub struct Loaded {
    /// The verified events, in order.
    pub events: Vec<Event>,
    /// The verification report (`ok`, the first problem, an incomplete tail).
    pub report: VerifyReport,
}

/// A session that has not ended, reopened to be continued (`lt resume`).
pub struct ReopenedLog {
    /// Appends after the last event, continuing its chain.
    pub sink: Box<dyn EventSink + Send>,
    /// The events so far (verified), for the replay before going live.
    pub events: Vec<Event>,
    /// Bytes of a torn last line cut off (a file store; 0 otherwise).
    pub dropped_bytes: u64,
}

/// Why a store could not do what was asked.
#[derive(Debug)]
pub enum StoreError {
    /// No log for that session.
    NotFound(String),
    /// The store could not be read or written.
    Io(io::Error),
    /// The log cannot be continued: it does not verify, it is empty, it
    /// ended, it is locked by another writer.
    Reopen(ReopenError),
    /// One writer per session: the id is taken, or another writer is
    /// appending to it.
    Conflict(String),
    /// A stored record cannot be read as one (the store was changed past
    /// `lt`): retrying does not help; the text names the record and why.
    Damaged(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound(s) => write!(f, "no log for session {s}"),
            StoreError::Io(e) => write!(f, "{e}"),
            StoreError::Reopen(e) => write!(f, "{e}"),
            StoreError::Conflict(why) | StoreError::Damaged(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Where sessions' logs live. Implementations must keep [`write_ahead`]
/// and the hash chain exactly as [`LogWriter`] does, so a log read from one
/// store verifies and replays like any other.
pub trait EventStore: Send + Sync {
    /// Opens the log of a new session `session` (32 lowercase hex digits)
    /// for appending. Errors: the log cannot be created.
    fn create(&self, session: &str) -> Result<Box<dyn EventSink + Send>, StoreError>;

    /// Reads a session's log: the verified events and the report.
    fn load(&self, session: &str) -> Result<Loaded, StoreError>;

    /// Reopens the log of a session that stopped without `session_ended`,
    /// to continue it. Errors: [`StoreError::Reopen`] when it cannot be
    /// continued.
    fn reopen(&self, session: &str) -> Result<ReopenedLog, StoreError>;
}

/// One JSON Lines file holding one session (`lt run --log FILE`): the
/// session argument of each method names the session to create, and is
/// otherwise ignored (the file is the session).
#[derive(Clone, Debug)]
pub struct JsonlFile {
    path: PathBuf,
}

impl JsonlFile {
    /// The store of the file at `path`.
    pub fn new(path: impl AsRef<Path>) -> JsonlFile {
        JsonlFile {
            path: path.as_ref().to_path_buf(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's text: bytes that are not UTF-8 become U+FFFD (the line
    /// holding them then fails verification).
    pub fn read_text(&self) -> io::Result<String> {
        let bytes = std::fs::read(&self.path)?;
        Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

impl EventStore for JsonlFile {
    fn create(&self, session: &str) -> Result<Box<dyn EventSink + Send>, StoreError> {
        LogWriter::create(&self.path, session)
            .map(|w| Box::new(w) as Box<dyn EventSink + Send>)
            .map_err(StoreError::Io)
    }

    fn load(&self, _session: &str) -> Result<Loaded, StoreError> {
        let text = self.read_text().map_err(StoreError::Io)?;
        let (events, report) = read_prefix(&text);
        Ok(Loaded { events, report })
    }

    fn reopen(&self, _session: &str) -> Result<ReopenedLog, StoreError> {
        let r = LogWriter::reopen(&self.path).map_err(StoreError::Reopen)?;
        Ok(ReopenedLog {
            sink: Box::new(r.writer),
            events: r.events,
            dropped_bytes: r.dropped_bytes,
        })
    }
}

/// One session's log in a [`MemoryStore`]: its events, and whether a sink
/// is appending to it (one writer at a time).
#[derive(Debug, Default)]
struct Log {
    events: Vec<Event>,
    writing: bool,
}

type Logs = Arc<Mutex<BTreeMap<String, Log>>>;

/// Sessions' logs in memory, chained and hashed as a file would hold them.
/// Clones share the logs. For tests and embedders that keep logs
/// elsewhere.
///
/// One writer per session, enforced by the data: `create` refuses an id it
/// holds, `reopen` refuses a session a sink is appending to, and a sink's
/// append fails unless the log still ends with the last event that sink
/// saw (so a stale writer can never extend another's chain).
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    logs: Logs,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The ids of the sessions it holds, sorted.
    pub fn sessions(&self) -> Vec<String> {
        self.logs().keys().cloned().collect()
    }

    /// A copy of a session's events (empty when it has none).
    pub fn events(&self, session: &str) -> Vec<Event> {
        self.logs()
            .get(session)
            .map(|l| l.events.clone())
            .unwrap_or_default()
    }

    /// A session's log as the JSON Lines text of its file.
    pub fn to_jsonl(&self, session: &str) -> String {
        let mut out = String::new();
        for e in self.logs().get(session).into_iter().flat_map(|l| &l.events) {
            out.push_str(&e.to_line());
            out.push('\n');
        }
        out
    }

    fn logs(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Log>> {
        self.logs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sink of one session in a [`MemoryStore`]: each event is chained by
/// a [`MemoryLog`] and committed to the shared map before `append` returns,
/// if the log still ends where this sink left it.
struct MemorySink {
    logs: Logs,
    log: MemoryLog,
    /// The hash of the last event of the log as this sink knows it.
    last: Option<String>,
}

impl EventSink for MemorySink {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        let session = self.log.session().to_string();
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = logs.entry(session.clone()).or_default();
        if entry.events.last().map(|e| &e.hash) != self.last.as_ref() {
            return Err(io::Error::other(format!(
                "the log of session {session} was extended by another writer; nothing more is written by this one"
            )));
        }
        let event = self.log.append(body)?.clone();
        self.last = Some(event.hash.clone());
        entry.events.push(event);
        Ok(())
    }
}

impl Drop for MemorySink {
    fn drop(&mut self) {
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = logs.get_mut(self.log.session()) {
            l.writing = false;
        }
    }
}

impl EventStore for MemoryStore {
    fn create(&self, session: &str) -> Result<Box<dyn EventSink + Send>, StoreError> {
        let log = MemoryLog::new(session).map_err(StoreError::Io)?;
        let mut logs = self.logs();
        if logs.contains_key(session) {
            return Err(StoreError::Conflict(format!(
                "session {session} already has a log; a new session needs a new id"
            )));
        }
        logs.insert(
            session.to_string(),
            Log {
                events: Vec::new(),
                writing: true,
            },
        );
        Ok(Box::new(MemorySink {
            logs: Arc::clone(&self.logs),
            log,
            last: None,
        }))
    }

    fn load(&self, session: &str) -> Result<Loaded, StoreError> {
        let known = self.logs().contains_key(session);
        if !known {
            return Err(StoreError::NotFound(session.to_string()));
        }
        let text = self.to_jsonl(session);
        let (events, report) = read_prefix(&text);
        Ok(Loaded { events, report })
    }

    fn reopen(&self, session: &str) -> Result<ReopenedLog, StoreError> {
        if self.logs().get(session).is_some_and(|l| l.writing) {
            return Err(StoreError::Conflict(format!(
                "session {session} is being written by another writer; resume it once that one has ended"
            )));
        }
        let Loaded { events, report } = self.load(session)?;
        let refuse = |events: Vec<Event>, e: StoreError| {
            events.into_iter().for_each(drop_event);
            Err(e)
        };
        if let Some(p) = report.problem {
            return refuse(events, StoreError::Reopen(ReopenError::Problem(p)));
        }
        match events.last().map(|e| &e.body) {
            None => return refuse(events, StoreError::Reopen(ReopenError::Empty)),
            Some(EventBody::SessionEnded { .. }) => {
                return refuse(events, StoreError::Reopen(ReopenError::Ended))
            }
            Some(_) => {}
        }
        let log = MemoryLog::continuing(&events).map_err(StoreError::Io)?;
        {
            let mut logs = self.logs();
            let Some(entry) = logs.get_mut(session) else {
                drop(logs);
                return refuse(events, StoreError::NotFound(session.to_string()));
            };
            if entry.writing {
                drop(logs);
                return refuse(
                    events,
                    StoreError::Conflict(format!(
                        "session {session} is being written by another writer; resume it once that one has ended"
                    )),
                );
            }
            entry.writing = true;
        }
        let last = events.last().map(|e| e.hash.clone());
        Ok(ReopenedLog {
            sink: Box::new(MemorySink {
                logs: Arc::clone(&self.logs),
                log,
                last,
            }),
            events,
            dropped_bytes: 0,
        })
    }
}
