//! The SQLite store: sessions' logs and the sessions table in one
//! database file, written by one thread with group commit.
//!
//! ```text
//! SqliteSink::append(body)      (sink.rs: MemoryLog numbers, chains, hashes)
//!     ── Request::Append ──▶ writer thread (../queue.rs, writer.rs): one transaction per batch
//!     Commit event: waits for its transaction's commit;  Buffer event: does not
//! create_session / set_status ── Request ──▶ the same transactions
//! load / reopen / events_after / session / list_sessions / unfinished / health
//!     ── a reader connection of the pool (never waits behind the writer: WAL)
//! schema.rs: pragmas, the tables, PRAGMA user_version, session rows
//! ```
//!
//! One writer per session, as in [`crate::log::MemoryStore`]: a sink holds
//! its session's mark in `writing` until it is dropped; `create` refuses an
//! id with events or a mark, `reopen` a marked session; and the writer
//! thread refuses an event whose `seq` and `prev` do not continue the
//! stored chain, so a stale sink never extends another's log. A dropped
//! sink's mark goes once its buffered events are committed (the writer
//! lets it go; nobody waits for it).
//!
//! Guarantees: an event that [`commit_point`] says is `Commit` is in the
//! file and fsynced (`synchronous=FULL`), and its [`Committed`](super::Committed) notice
//! sent, when `append` returns; a `Buffer` event is committed with the
//! next request somebody waits for (its session's next `Commit` event, its
//! final status, any other session's) or after the writer's short gather
//! delay, whichever comes first. A dead writer thread makes every write
//! fail with an error naming the store; nothing waits forever on it.
//!
//! One process writes a database file: the writer holds an exclusive lock
//! on `FILE-lock` beside it (`flock`; it holds the writer's pid) for as
//! long as it runs, and a second `open` of the same file is refused
//! (`Conflict`) instead of interleaving two servers' sessions.
//!
//! [`commit_point`]: crate::log::write_ahead::commit_point

mod checkpoint;
mod schema;
mod writer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tools_tests;

pub use schema::SCHEMA_VERSION;

use super::logs::LogReads;
use super::queue::{self, Queue, Request};
use super::shared::Shared;
use super::{Created, CreatedThen, ListQuery, NewSession, ServerStore, SessionRecord};
use crate::log::StoreError;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension};
use schema::{record_of, OpenError, RawRecord, Role, RECORD_COLUMNS};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Reader connections kept open between reads.
const READERS: usize = 4;

/// A session's log and the sessions table in one SQLite file (see the
/// module note). Opened once per process; cheap to share behind an `Arc`.
pub struct SqliteStore {
    /// The database file.
    path: PathBuf,
    shared: Arc<Shared>,
    /// The writer thread's queue (`None` only while dropping).
    requests: Option<Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    /// Reader connections not in use.
    readers: Mutex<Vec<Connection>>,
    /// What stamps `ts` in new sinks (`None`: the system clock).
    clock: Option<fn() -> String>,
}

impl SqliteStore {
    /// Opens the store in the file at `path`, creating the file (and its
    /// folder) when missing and the schema in a new file, and starts its
    /// writer thread. Errors ([`StoreError::Io`], naming the file): it
    /// cannot be created or opened, it is not an `lt` store, or a newer
    /// `lt` wrote it ([`SCHEMA_VERSION`]).
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_locked(path, true)
    }

    /// [`SqliteStore::open`] without the writer's lock: two stores on one
    /// file, to test what the chain check stops.
    #[cfg(test)]
    pub(super) fn open_unlocked(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_locked(path, false)
    }

    fn open_locked(path: &Path, exclusive: bool) -> Result<SqliteStore, StoreError> {
        let named = |e: &dyn std::fmt::Display| {
            StoreError::Io(io::Error::other(format!(
                "the store {} cannot be opened: {e}",
                path.display()
            )))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| named(&e))?;
        }
        let lock = if exclusive {
            Some(lock_writer(path)?)
        } else {
            None
        };
        let mut conn = schema::connect(path, Role::Writer).map_err(|e| named(&e))?;
        schema::migrate(&mut conn).map_err(|e| named(&e))?;
        let reader = schema::connect(path, Role::Reader).map_err(|e| named(&e))?;
        let shared = Arc::new(Shared::new(path.display().to_string()));
        let checkpointer = schema::connect(path, Role::Checkpointer).map_err(|e| named(&e))?;
        let (kick, kicks) = checkpoint::channel();
        std::thread::Builder::new()
            .name("lt-store-checkpoint".into())
            .spawn(move || checkpoint::run(checkpointer, kicks))
            .map_err(|e| named(&e))?;
        let (requests, queue) = mpsc::channel();
        let writer = std::thread::Builder::new()
            .name("lt-store-writer".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || {
                    let db = writer::SqliteWriter::new(conn, Arc::clone(&shared), kick);
                    queue::run(db, &shared, queue);
                    // The lock goes after the connection closed.
                    drop(lock);
                }
            })
            .map_err(|e| named(&e))?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            shared,
            requests: Some(requests),
            writer: Some(writer),
            readers: Mutex::new(vec![reader]),
            clock: None,
        })
    }

    /// Stamps `ts` of the events of sinks opened from now on with `clock`
    /// instead of the system clock (tests use a fixed one).
    pub fn with_clock(mut self, clock: fn() -> String) -> SqliteStore {
        self.clock = Some(clock);
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a reader connection (one of the pool, or a new one).
    fn read<T>(
        &self,
        what: &str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let pooled = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match pooled {
            Some(c) => c,
            None => schema::connect(&self.path, Role::Reader)
                .map_err(|e: OpenError| self.shared.error(what, e))?,
        };
        let result = f(&conn).map_err(|e| self.shared.error(what, e));
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if readers.len() < READERS {
            readers.push(conn);
        }
        result
    }

    /// The writer's queue.
    fn queue(&self) -> Queue<'_> {
        Queue {
            shared: &self.shared,
            requests: self.requests.as_ref(),
        }
    }

    /// Session records matching `filter` (SQL after `WHERE`, with `args`).
    /// The rows of the sessions `filter` selects, as stored.
    fn raw_records(&self, filter: &str, args: Vec<SqlValue>) -> Result<Vec<RawRecord>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM sessions WHERE {filter}");
        self.read("cannot read the sessions", |c| {
            c.prepare_cached(&sql)?
                .query_map(rusqlite::params_from_iter(args), RawRecord::read)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
    }

    fn records(&self, filter: &str, args: Vec<SqlValue>) -> Result<Vec<SessionRecord>, StoreError> {
        let raws = self.raw_records(filter, args)?;
        raws.into_iter()
            .map(|r| record_of(r).map_err(|e| self.shared.damaged(e)))
            .collect()
    }

    /// [`SqliteStore::records`] without the rows that cannot be read as
    /// records (a file edited by hand): each is left out and named on
    /// stderr once ([`Shared::readable`]), so one damaged row does not hide
    /// a tenant's other sessions or stop the server's start.
    fn readable_records(
        &self,
        filter: &str,
        args: Vec<SqlValue>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let raws = self.raw_records(filter, args)?;
        Ok(self.shared.readable(raws.into_iter().map(record_of)))
    }
}

/// Takes the exclusive lock of `path`'s writer (`PATH-lock`, holding
/// this process's pid). Errors: `Conflict` when another process (or
/// another store of this one) writes the file; `Io` when the lock file
/// cannot be made.
fn lock_writer(path: &Path) -> Result<std::fs::File, StoreError> {
    use std::io::{Read, Seek, Write};
    let mut name = path.as_os_str().to_owned();
    name.push("-lock");
    let lock_path = PathBuf::from(name);
    let io_err = |e: io::Error| {
        StoreError::Io(io::Error::other(format!(
            "the store {} cannot be opened: its lock file {}: {e}",
            path.display(),
            lock_path.display()
        )))
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&lock_path)
        .map_err(io_err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => String::new(),
                pid => format!(" (pid {pid})"),
            };
            return Err(StoreError::Conflict(format!(
                "the store {} is in use by another process{holder}: one server writes a store file; \
                 stop the other one, or give this one a store of its own (--store sqlite:PATH)",
                path.display()
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
    }
    // Who holds it, for the message above (best effort).
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    Ok(file)
}

impl Drop for SqliteStore {
    /// Closes the queue; when no sink is left, waits for the writer to
    /// commit what is queued and close the file.
    fn drop(&mut self) {
        self.requests = None;
        // A live sink holds a sender: the writer would never see the end.
        let idle = self.shared.sinks.load(Ordering::SeqCst) == 0;
        if let Some(writer) = self.writer.take().filter(|_| idle) {
            let _ = writer.join();
        }
    }
}

impl LogReads for SqliteStore {
    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn queue(&self) -> Option<Sender<Request>> {
        self.requests.clone()
    }

    fn clock(&self) -> Option<fn() -> String> {
        self.clock
    }

    fn lines_page(
        &self,
        session: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map_or(-1, queue::to_i64);
        let limit = queue::to_i64(u64::try_from(limit).unwrap_or(u64::MAX));
        self.read("cannot read a log", |c| {
            c.prepare_cached(
                "SELECT line FROM events WHERE session = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?
            .query_map(params![session, after, limit], |r| r.get(0))?
            .collect()
        })
    }

    fn recorded(&self, session: &str) -> Result<bool, StoreError> {
        self.read("cannot read the sessions", |c| {
            c.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1) \
                 OR EXISTS (SELECT 1 FROM events WHERE session = ?1)",
            )?
            .query_row([session], |r| r.get(0))
        })
    }

    fn has_events(&self, session: &str) -> Result<bool, StoreError> {
        let found = self.read("cannot read a log", |c| {
            c.prepare_cached("SELECT 1 FROM events WHERE session = ?1 LIMIT 1")?
                .query_row([session], |_| Ok(()))
                .optional()
        })?;
        Ok(found.is_some())
    }

    fn flush_queue(&self) {
        self.queue().flush();
    }
}

impl ServerStore for SqliteStore {
    queued_store_methods!(SQLITE);

    fn create_session(&self, s: &NewSession) -> Result<Created, StoreError> {
        self.queue().create_session(s)
    }

    fn create_session_then(&self, s: &NewSession, done: CreatedThen) {
        self.queue().create_session_then(s, done);
    }

    fn session(&self, tenant: &str, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let args = vec![SqlValue::Text(id.into()), SqlValue::Text(tenant.into())];
        Ok(self.records("id = ?1 AND tenant = ?2", args)?.pop())
    }

    fn session_by_key(&self, tenant: &str, key: &str) -> Result<Option<SessionRecord>, StoreError> {
        let args = vec![SqlValue::Text(tenant.into()), SqlValue::Text(key.into())];
        Ok(self
            .records("tenant = ?1 AND idempotency_key = ?2", args)?
            .pop())
    }

    fn list_sessions(&self, q: &ListQuery) -> Result<Vec<SessionRecord>, StoreError> {
        super::list::readable_page(q, |q| {
            let (filter, args) = super::list::filter(q, &super::list::SQLITE);
            let args = args
                .into_iter()
                .map(|a| a.into_sql(SqlValue::Text, SqlValue::Integer))
                .collect();
            let raws = self.raw_records(&filter, args)?;
            let last = raws.last().map(RawRecord::key);
            let fetched = raws.len();
            let kept = self.shared.readable(raws.into_iter().map(record_of));
            Ok((kept, fetched, last))
        })
    }

    fn health(&self) -> Result<(), StoreError> {
        if self.writer.as_ref().is_none_or(JoinHandle::is_finished) {
            return Err(StoreError::Io(io::Error::other(self.shared.writer_gone())));
        }
        self.read("does not answer", |c| {
            c.query_row("SELECT 1", [], |_| Ok(()))
        })
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({"kind": "sqlite", "name": self.shared.name})
    }
}
