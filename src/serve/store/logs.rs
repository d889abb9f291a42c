//! A database store's [`EventStore`] side (SQLite, PostgreSQL): creating,
//! loading and reopening a session's log, in terms of the few reads a
//! database answers ([`LogReads`]) and the writer's queue.
//!
//! ```text
//! create(id)  ─▶ claim id in `writing` ─▶ refuse an id with events ─▶ StoreSink
//! create_minted(id) ─▶ claim ─▶ StoreSink (an id just minted has no events)
//! load(id)    ─▶ lines ─▶ read_prefix (verified prefix + report); NotFound if unknown
//! reopen(id)  ─▶ flush ─▶ load ─▶ claim ─▶ refuse empty / ended / broken / extended
//!             ─▶ StoreSink continuing the chain
//! ```
//!
//! One writer per session within a process: the claim. Across processes
//! (two servers on one PostgreSQL database) the database refuses an event
//! that does not continue the stored chain, whoever sends it.

use super::claim::Claim;
use super::queue::Request;
use super::shared::Shared;
use super::sink::StoreSink;
use crate::log::{
    drop_event, read_prefix, Event, EventBody, EventSink, EventStore, Loaded, MemoryLog,
    ProblemKind, ReopenError, ReopenedLog, StoreError,
};
use std::io;
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// What a database store answers for [`EventStore`]: every store that
/// answers these reads is an `EventStore` by the functions below.
pub trait LogReads {
    /// What it shares with its sinks and writer.
    fn shared(&self) -> &Arc<Shared>;

    /// The writer's queue (`None` once the store is being dropped).
    fn queue(&self) -> Option<Sender<Request>>;

    /// What stamps `ts` in new sinks (`None`: the system clock).
    fn clock(&self) -> Option<fn() -> String>;

    /// The committed lines of `session` with `seq > after`, in order.
    fn lines(&self, session: &str, after: Option<u64>) -> Result<Vec<String>, StoreError> {
        self.lines_page(session, after, usize::MAX)
    }

    /// As [`LogReads::lines`], at most `limit` of them.
    fn lines_page(
        &self,
        session: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;

    /// Whether `session` has a row in the sessions table or events.
    fn recorded(&self, session: &str) -> Result<bool, StoreError>;

    /// Whether `session` has at least one event.
    fn has_events(&self, session: &str) -> Result<bool, StoreError>;

    /// Waits until everything queued so far is committed.
    fn flush_queue(&self);
}

impl<T: LogReads + Send + Sync> EventStore for T {
    fn create(&self, session: &str) -> Result<Box<dyn EventSink + Send>, StoreError> {
        create(self, session)
    }

    fn load(&self, session: &str) -> Result<Loaded, StoreError> {
        load(self, session)
    }

    fn reopen(&self, session: &str) -> Result<ReopenedLog, StoreError> {
        reopen(self, session)
    }
}

/// Marks `session` as being written. Errors: it already is (`busy` says
/// why that is refused).
fn claim(store: &impl LogReads, session: &str, busy: String) -> Result<Claim, StoreError> {
    if !store.shared().writing().insert(session.to_string()) {
        return Err(StoreError::Conflict(busy));
    }
    Ok(Claim {
        shared: Arc::clone(store.shared()),
        session: session.to_string(),
    })
}

/// A sink appending after `log`'s chain, holding `claim`.
fn sink(store: &impl LogReads, log: MemoryLog, claim: Claim) -> Result<StoreSink, StoreError> {
    let Some(requests) = store.queue() else {
        return Err(StoreError::Io(io::Error::other(
            store.shared().writer_gone(),
        )));
    };
    Ok(StoreSink::new(claim, requests, log, store.clock()))
}

/// Whether `session` exists: recorded, with events, or being written.
pub fn known(store: &impl LogReads, session: &str) -> Result<bool, StoreError> {
    if store.shared().writing().contains(session) {
        return Ok(true);
    }
    store.recorded(session)
}

/// [`EventStore::create`](crate::log::EventStore::create).
pub fn create(
    store: &impl LogReads,
    session: &str,
) -> Result<Box<dyn EventSink + Send>, StoreError> {
    let log = MemoryLog::new(session).map_err(StoreError::Io)?;
    let taken = || format!("session {session} already has a log; a new session needs a new id");
    let claim = claim(store, session, taken())?;
    if store.has_events(session)? {
        return Err(StoreError::Conflict(taken()));
    }
    Ok(Box::new(sink(store, log, claim)?))
}

/// [`super::ServerStore::create_minted`]: [`create`] without the read that
/// refuses an id with events. Errors: the id is being written here.
pub fn create_minted(
    store: &impl LogReads,
    session: &str,
) -> Result<Box<dyn EventSink + Send>, StoreError> {
    let log = MemoryLog::new(session).map_err(StoreError::Io)?;
    let taken = format!("session {session} already has a log; a new session needs a new id");
    let claim = claim(store, session, taken)?;
    Ok(Box::new(sink(store, log, claim)?))
}

/// [`EventStore::load`](crate::log::EventStore::load).
pub fn load(store: &impl LogReads, session: &str) -> Result<Loaded, StoreError> {
    let lines = store.lines(session, None)?;
    if lines.is_empty() && !known(store, session)? {
        return Err(StoreError::NotFound(session.to_string()));
    }
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    let (events, report) = read_prefix(&text);
    Ok(Loaded { events, report })
}

/// [`ServerStore::events_after`](super::ServerStore::events_after).
pub fn events_after(
    store: &impl LogReads,
    id: &str,
    after: Option<u64>,
) -> Result<Vec<String>, StoreError> {
    let lines = store.lines(id, after)?;
    if lines.is_empty() && !known(store, id)? {
        return Err(StoreError::NotFound(id.to_string()));
    }
    Ok(lines)
}

/// [`ServerStore::events_page`](super::ServerStore::events_page).
pub fn events_page(
    store: &impl LogReads,
    id: &str,
    after: Option<u64>,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let lines = store.lines_page(id, after, limit)?;
    if lines.is_empty() && !known(store, id)? {
        return Err(StoreError::NotFound(id.to_string()));
    }
    Ok(lines)
}

/// [`EventStore::reopen`](crate::log::EventStore::reopen).
pub fn reopen(store: &impl LogReads, session: &str) -> Result<ReopenedLog, StoreError> {
    let busy = format!(
        "session {session} is being written by another writer; resume it once that one has ended"
    );
    // What a sink dropped before this call queued (its last buffered
    // events, its claim's release) is committed first.
    store.flush_queue();
    // Loaded before the claim: a session that is not known is
    // `NotFound`, not "being written" by this very call.
    let Loaded { events, report } = load(store, session)?;
    let refuse = |events: Vec<Event>, e: StoreError| {
        events.into_iter().for_each(drop_event);
        Err(e)
    };
    let claim = match claim(store, session, busy) {
        Ok(c) => c,
        Err(e) => return refuse(events, e),
    };
    // As `LogWriter::reopen`: no event at all is `Empty` (`MemoryStore`
    // reports it as a problem of kind `empty`).
    if let Some(p) = report.problem {
        let e = match p.kind {
            ProblemKind::Empty => ReopenError::Empty,
            _ => ReopenError::Problem(p),
        };
        return refuse(events, StoreError::Reopen(e));
    }
    match events.last().map(|e| &e.body) {
        None => return refuse(events, StoreError::Reopen(ReopenError::Empty)),
        Some(EventBody::SessionEnded { .. }) => {
            return refuse(events, StoreError::Reopen(ReopenError::Ended))
        }
        Some(_) => {}
    }
    // What was loaded may be stale if a sink appended and was dropped
    // in between: the claim is held now, so read once more and refuse
    // unless nothing changed.
    let latest = store.lines(session, events.last().map(|e| e.seq))?;
    if !latest.is_empty() {
        return refuse(
            events,
            StoreError::Conflict(format!(
                "session {session} was extended while it was being reopened; try again"
            )),
        );
    }
    let log = match MemoryLog::continuing(&events) {
        Ok(log) => log,
        Err(e) => return refuse(events, StoreError::Io(e)),
    };
    let sink = match sink(store, log, claim) {
        Ok(s) => s,
        Err(e) => return refuse(events, e),
    };
    Ok(ReopenedLog {
        sink: Box::new(sink),
        events,
        dropped_bytes: 0,
    })
}
