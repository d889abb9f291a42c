//! The PostgreSQL store (`--store postgres://…`): the same logs and
//! sessions table as the SQLite store, in a PostgreSQL database, with the
//! same behaviour (`logs.rs`, `queue.rs`, `sink.rs` are shared).
//!
//! ```text
//! StoreSink::append ── Request ──▶ writer thread (../queue.rs + writer.rs):
//!                                   one transaction per batch (group commit)
//! create_session / set_status ── Request ──▶ the same transactions
//! load / reopen / events_after / session / list_sessions / unfinished / health
//!     ── readers.rs: reader threads, a connection each
//! schema.rs: versioned migrations, the chain trigger     url.rs: the URL, errors
//! ```
//!
//! The driver is synchronous and runs its own runtime inside each call, so
//! it is only ever called on this store's threads (the writer, the
//! readers), never on a tokio task's.
//!
//! One writer per session: within a process, the claim (`../claim.rs`);
//! in the database, `PRIMARY KEY (session, seq)` and the chain check on
//! insert (`prev` must be the stored hash of `seq - 1`), so a stale writer
//! of any process never extends another's log. One server per database
//! schema for now (sessions are not leased yet): the writer's connection
//! holds an advisory lock, and a second server is refused (`Conflict`).

mod bulk;
mod readers;
mod schema;
pub mod scratch;
mod url;
mod writer;

#[cfg(test)]
mod tests;

pub use schema::SCHEMA_VERSION;
pub use url::{redact_url, OpenError};

use super::logs::{self, LogReads};
use super::queue::{self, Queue, Request, Shared};
use super::{
    CommitObserver, Committed, Created, CreatedThen, ListQuery, NewSession, ServerStore,
    SessionRecord, SessionStatus,
};
use crate::log::{EventSink, EventStore, Loaded, ReopenedLog, StoreError};
use postgres::types::ToSql;
use postgres::Client;
use readers::Readers;
use serde_json::Value as Json;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::sync::broadcast;
use url::Target;

/// Reader threads (and connections).
const READERS: usize = 4;

/// The advisory lock the writer's connection holds: one server per
/// database schema (a key of the schema's name).
const SERVER_LOCK: &str =
    "SELECT pg_try_advisory_lock(('x' || substr(md5('lt serve ' || coalesce(current_schema(), '')), 1, 16))::bit(64)::bigint)";

/// Sessions' logs and the sessions table in a PostgreSQL database (see the
/// module note). Opened once per process; cheap to share behind an `Arc`.
pub struct PostgresStore {
    shared: Arc<Shared>,
    /// The writer thread's queue (`None` only while dropping).
    requests: Option<Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    readers: Readers,
    /// What stamps `ts` in new sinks (`None`: the system clock).
    clock: Option<fn() -> String>,
}

/// What `--migrate-only` did: the schema version before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The version found (0: a new database).
    pub from: i32,
    /// The version now ([`SCHEMA_VERSION`]).
    pub to: i32,
}

/// Connects to `url` and brings its schema to [`SCHEMA_VERSION`]
/// (`lt serve --migrate-only`). Errors: as [`PostgresStore::open`].
pub fn migrate_only(url: &str) -> Result<(String, Migrated), OpenError> {
    let target = Target::parse(url)?;
    let mut client = target.connect()?;
    let from = schema::migrate(&mut client, &target.name)?;
    Ok((
        target.name.clone(),
        Migrated {
            from,
            to: SCHEMA_VERSION,
        },
    ))
}

/// Takes the server's advisory lock on `client`'s connection. Errors:
/// another server holds it.
fn lock_server(client: &mut Client, target: &Target) -> Result<(), OpenError> {
    let got: bool = client
        .query_one(SERVER_LOCK, &[])
        .map_err(|e| OpenError {
            message: format!("the store {}: {}", target.name, target.scrub(&e)),
            hint: None,
            usage: false,
        })?
        .get(0);
    if got {
        return Ok(());
    }
    Err(OpenError {
        message: format!(
            "the store {} is in use by another lt serve: one server writes a database schema for now",
            target.name
        ),
        hint: Some(
            "stop the other one, or give this one a database of its own (--store postgres://…/OTHER_DB)"
                .into(),
        ),
        usage: false,
    })
}

impl PostgresStore {
    /// Connects to `url`, creates or migrates the schema, takes the
    /// server's lock, and starts the writer and reader threads. Errors: a
    /// bad URL (`usage`), an unreachable server, a refused login, a newer
    /// schema, another server on the database.
    pub fn open(url: &str) -> Result<PostgresStore, OpenError> {
        PostgresStore::open_locked(url, true)
    }

    /// [`PostgresStore::open`] without the server's lock: two stores on
    /// one database, to test what the database's chain check stops.
    #[cfg(test)]
    pub(super) fn open_unlocked(url: &str) -> Result<PostgresStore, OpenError> {
        PostgresStore::open_locked(url, false)
    }

    fn open_locked(url: &str, exclusive: bool) -> Result<PostgresStore, OpenError> {
        let target = Target::parse(url)?;
        let mut client = target.connect()?;
        schema::migrate(&mut client, &target.name)?;
        if exclusive {
            lock_server(&mut client, &target)?;
        }
        let first_reader = target.connect()?;
        let shared = Arc::new(Shared::new(target.name.clone()));
        let thread_failed = |e: io::Error| OpenError {
            message: format!("the store {}: cannot start its threads: {e}", target.name),
            hint: None,
            usage: false,
        };
        let readers = Readers::start(&target, READERS, first_reader).map_err(thread_failed)?;
        let (requests, queue) = mpsc::channel();
        let writer = std::thread::Builder::new()
            .name("lt-pg-writer".into())
            .spawn({
                let shared = Arc::clone(&shared);
                let target = target.clone();
                move || {
                    let db = writer::PgWriter {
                        client: Some(client),
                        exclusive,
                        target,
                        shared: Arc::clone(&shared),
                    };
                    queue::run(db, &shared, queue);
                }
            })
            .map_err(thread_failed)?;
        Ok(PostgresStore {
            shared,
            requests: Some(requests),
            writer: Some(writer),
            readers,
            clock: None,
        })
    }

    /// Stamps `ts` of the events of sinks opened from now on with `clock`
    /// instead of the system clock (tests use a fixed one).
    pub fn with_clock(mut self, clock: fn() -> String) -> PostgresStore {
        self.clock = Some(clock);
        self
    }

    /// The store's URL without its password.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The writer's queue.
    fn queue(&self) -> Queue<'_> {
        Queue {
            shared: &self.shared,
            requests: self.requests.as_ref(),
        }
    }

    /// Session records matching `filter` (SQL after `WHERE`, with `args`).
    fn records(&self, filter: &str, args: Vec<Param>) -> Result<Vec<SessionRecord>, StoreError> {
        let sql = format!(
            "SELECT {} FROM sessions WHERE {filter}",
            schema::RECORD_COLUMNS
        );
        let rows = self.readers.read("cannot read the sessions", move |c| {
            let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(Param::as_sql).collect();
            c.query(&sql, &params)
        })?;
        rows.iter()
            .map(|r| {
                schema::record_of(r).map_err(|e| self.shared.error("a damaged session record", e))
            })
            .collect()
    }
}

/// A statement's parameter, owned (reads run on another thread).
enum Param {
    Text(String),
    Int(i64),
}

impl Param {
    fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Param::Text(s) => s,
            Param::Int(n) => n,
        }
    }
}

impl Drop for PostgresStore {
    /// Closes the queue; when no sink is left, waits for the writer to
    /// commit what is queued. The readers stop after their current read.
    fn drop(&mut self) {
        self.requests = None;
        let idle = self.shared.sinks.load(Ordering::SeqCst) == 0;
        if let Some(writer) = self.writer.take().filter(|_| idle) {
            let _ = writer.join();
        }
        self.readers.stop();
    }
}

impl LogReads for PostgresStore {
    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn queue(&self) -> Option<Sender<Request>> {
        self.requests.clone()
    }

    fn clock(&self) -> Option<fn() -> String> {
        self.clock
    }

    fn lines(&self, session: &str, after: Option<u64>) -> Result<Vec<String>, StoreError> {
        let after = after.map_or(-1, queue::to_i64);
        let session = session.to_string();
        self.readers.read("cannot read a log", move |c| {
            let rows = c.query(
                "SELECT line FROM events WHERE session = $1 AND seq > $2 ORDER BY seq",
                &[&session, &after],
            )?;
            rows.iter().map(|r| r.try_get(0)).collect()
        })
    }

    fn recorded(&self, session: &str) -> Result<bool, StoreError> {
        let session = session.to_string();
        self.readers.read("cannot read the sessions", move |c| {
            Ok(c.query_one(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1) \
                 OR EXISTS (SELECT 1 FROM events WHERE session = $1)",
                &[&session],
            )?
            .get(0))
        })
    }

    fn has_events(&self, session: &str) -> Result<bool, StoreError> {
        let session = session.to_string();
        self.readers.read("cannot read a log", move |c| {
            Ok(c.query_opt(
                "SELECT 1 FROM events WHERE session = $1 LIMIT 1",
                &[&session],
            )?
            .is_some())
        })
    }

    fn flush_queue(&self) {
        self.queue().flush();
    }
}

impl EventStore for PostgresStore {
    fn create(&self, session: &str) -> Result<Box<dyn EventSink + Send>, StoreError> {
        logs::create(self, session)
    }

    fn load(&self, session: &str) -> Result<Loaded, StoreError> {
        logs::load(self, session)
    }

    fn reopen(&self, session: &str) -> Result<ReopenedLog, StoreError> {
        logs::reopen(self, session)
    }
}

impl ServerStore for PostgresStore {
    fn create_session(&self, s: &NewSession) -> Result<Created, StoreError> {
        self.queue().create_session(s)
    }

    fn create_session_then(&self, s: &NewSession, done: CreatedThen) {
        self.queue().create_session_then(s, done);
    }

    fn flush(&self) {
        self.queue().flush();
    }

    fn session(&self, tenant: &str, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let args = vec![Param::Text(id.into()), Param::Text(tenant.into())];
        Ok(self.records("id = $1 AND tenant = $2", args)?.pop())
    }

    fn list_sessions(&self, q: &ListQuery) -> Result<Vec<SessionRecord>, StoreError> {
        let (filter, args) = super::list::filter(q, &super::list::POSTGRES);
        let args = args
            .into_iter()
            .map(|a| match a {
                super::list::Arg::Text(s) => Param::Text(s),
                super::list::Arg::Int(n) => Param::Int(n),
            })
            .collect();
        self.records(&filter, args)
    }

    fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        output: Option<&Json>,
        calls: u64,
    ) -> Result<(), StoreError> {
        self.queue().set_status(id, status, output, calls)
    }

    fn unfinished(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let open: Vec<String> = SessionStatus::ALL
            .iter()
            .filter(|s| !s.is_final())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        let filter = format!("status IN ({}) ORDER BY created_ms, id", open.join(", "));
        self.records(&filter, Vec::new())
    }

    fn events_after(&self, id: &str, after: Option<u64>) -> Result<Vec<String>, StoreError> {
        logs::events_after(self, id, after)
    }

    fn subscribe(&self) -> broadcast::Receiver<Committed> {
        self.shared.commits.subscribe()
    }

    fn health(&self) -> Result<(), StoreError> {
        if self.writer.as_ref().is_none_or(JoinHandle::is_finished) {
            return Err(StoreError::Io(io::Error::other(self.shared.writer_gone())));
        }
        self.readers.read("does not answer", |c| {
            c.query_one("SELECT 1", &[]).map(|_| ())
        })
    }

    fn observe_commits(&self, observer: CommitObserver) {
        self.queue().observe_commits(observer);
    }
}
