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
//! rows.rs: a batch's sessions rows     prepared.rs: statements prepared once
//! leases.rs: the lease thread (renew, claim, let go, mailbox) of this worker
//! followers.rs: the sessions streams here follow on other workers (notices)
//! ```
//!
//! The driver is synchronous and runs its own runtime inside each call, so
//! it is only ever called on this store's threads (the writer, the
//! readers), never on a tokio task's.
//!
//! One writer per session: within a process, the claim (`../claim.rs`);
//! across processes, the session's lease (leases.rs): its epoch is checked
//! by the database on every insert and status change (SQLSTATE LT002), and
//! `PRIMARY KEY (session, seq)` with the chain check on insert (`prev` must
//! be the stored hash of `seq - 1`) keep even a writer without a lease
//! from extending another's log. Any number of servers share a database.

mod bulk;
mod followers;
mod leases;
mod prepared;
mod readers;
mod rows;
mod schema;
pub mod scratch;
mod url;
mod writer;

#[cfg(test)]
mod checks_tests;
#[cfg(test)]
mod followers_tests;
#[cfg(test)]
mod hot_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cut;
#[cfg(test)]
mod tools_tests;

pub use schema::SCHEMA_VERSION;
pub use url::{redact_url, OpenError};

use super::logs::LogReads;
use super::queue::{self, Queue, Request};
use super::shared::Shared;
use super::{
    Created, CreatedThen, LeaseHooks, ListQuery, NewSession, ServerStore, SessionRecord,
    StoreOptions,
};
use crate::log::StoreError;
use postgres::types::{ToSql, Type};
use readers::Readers;
use serde_json::Value as Json;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use url::Target;

/// This worker as the leases name it.
#[derive(Clone, Debug)]
pub struct Worker {
    /// A random id, new at each start (16 hex digits).
    pub id: String,
    /// How long a lease lasts without renewal, in milliseconds.
    pub lease_ms: i64,
}

impl Worker {
    fn new(lease: std::time::Duration) -> Worker {
        let id = crate::log::new_session_id();
        Worker {
            id: id[..16].to_string(),
            lease_ms: i64::try_from(lease.as_millis()).unwrap_or(i64::MAX),
        }
    }
}

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
    target: Target,
    worker: Worker,
    options: StoreOptions,
    /// The lease thread's queue, once [`ServerStore::lease`] started it.
    let_go: Mutex<Option<Sender<leases::LetGo>>>,
    /// The sessions a stream here follows while another worker writes
    /// them (followers.rs).
    following: followers::Following,
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

impl PostgresStore {
    /// Connects to `url`, creates or migrates the schema, and starts the
    /// writer and reader threads, with the default [`StoreOptions`].
    /// Errors: a bad URL (`usage`), an unreachable server, a refused
    /// login, a newer schema.
    pub fn open(url: &str) -> Result<PostgresStore, OpenError> {
        PostgresStore::open_with(url, &StoreOptions::default())
    }

    /// [`PostgresStore::open`] with `options` (the pool size; the lease
    /// settings [`ServerStore::lease`] uses).
    pub fn open_with(url: &str, options: &StoreOptions) -> Result<PostgresStore, OpenError> {
        let target = Target::parse(url)?;
        let mut client = target.connect()?;
        schema::migrate(&mut client, &target.name)?;
        writer::by_key(&mut client).map_err(|e| OpenError {
            message: format!("the store {}: {}", target.name, target.scrub(&e)),
            hint: None,
            usage: false,
        })?;
        let worker = Worker::new(options.lease);
        let first_reader = target.connect()?;
        let shared = Arc::new(Shared::new(target.name.clone()));
        let thread_failed = |e: io::Error| OpenError {
            message: format!("the store {}: cannot start its threads: {e}", target.name),
            hint: None,
            usage: false,
        };
        let readers = Readers::start(&target, options.pool_size.max(1), first_reader)
            .map_err(thread_failed)?;
        let (requests, queue) = mpsc::channel();
        let writer = std::thread::Builder::new()
            .name("lt-pg-writer".into())
            .spawn({
                let shared = Arc::clone(&shared);
                let target = target.clone();
                let worker = worker.clone();
                move || {
                    let db = writer::PgWriter {
                        client: Some(client),
                        target,
                        worker,
                        shared: Arc::clone(&shared),
                        prepared: prepared::Prepared::default(),
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
            target,
            worker,
            options: options.clone(),
            let_go: Mutex::new(None),
            following: followers::Following::default(),
        })
    }

    /// This worker's id (in the leases' `owner`).
    pub fn worker(&self) -> &str {
        &self.worker.id
    }

    /// Holds session `id` at epoch 1 before its record is queued, so that
    /// its sink (opened meanwhile) writes under the lease the record gets.
    fn hold_new(&self, id: &str) {
        self.shared.leases().entry(id.to_string()).or_insert(1);
    }

    fn send_let_go(&self, what: leases::LetGo) {
        let queue = self.let_go.lock().unwrap_or_else(PoisonError::into_inner);
        match queue.as_ref() {
            Some(q) => {
                let _ = q.send(what);
            }
            None => {
                let (leases::LetGo::Ended(id) | leases::LetGo::Abandoned(id)) = what;
                self.shared.leases().remove(&id);
                self.shared.lost().remove(&id);
            }
        }
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
    /// Errors: a row that cannot be read as a record (`Damaged`).
    fn records(&self, filter: &str, args: Vec<Param>) -> Result<Vec<SessionRecord>, StoreError> {
        self.rows(filter, args)?
            .iter()
            .map(|r| schema::record_of(r).map_err(|e| self.shared.damaged(e)))
            .collect()
    }

    /// [`PostgresStore::records`] without the rows that cannot be read as
    /// records (a table edited past `lt serve`): each is left out and named
    /// on stderr once ([`Shared::readable`]), as SQLite does.
    fn readable_records(
        &self,
        filter: &str,
        args: Vec<Param>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let rows = self.rows(filter, args)?;
        Ok(self.shared.readable(rows.iter().map(schema::record_of)))
    }

    /// The rows of the sessions `filter` selects, as stored.
    fn rows(&self, filter: &str, args: Vec<Param>) -> Result<Vec<postgres::Row>, StoreError> {
        // PostgreSQL's text holds no NUL, so no row matches a value with
        // one (an id or a filter from a request): none, as on SQLite, not
        // the server's "invalid byte sequence" error (a 503).
        if args
            .iter()
            .any(|a| matches!(a, Param::Text(s) if s.contains('\0')))
        {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {} FROM sessions WHERE {filter}",
            schema::RECORD_COLUMNS
        );
        self.readers.read("cannot read the sessions", move |c| {
            let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(Param::as_sql).collect();
            c.query(&sql, &params)
        })
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
        self.let_go
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.requests = None;
        let idle = self.shared.sinks.load(Ordering::SeqCst) == 0;
        if let Some(writer) = self.writer.take().filter(|_| idle) {
            let _ = writer.join();
        }
        self.readers.stop();
    }
}

/// The reads of every session (its log, whether it exists) go as
/// `query_typed`: parse, bind and run in one round trip, where `query`
/// prepares the statement first (two).
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

    fn lines_page(
        &self,
        session: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map_or(-1, queue::to_i64);
        let limit = queue::to_i64(u64::try_from(limit).unwrap_or(u64::MAX));
        let session = session.to_string();
        self.readers.read("cannot read a log", move |c| {
            let rows = c.query_typed(
                "SELECT line FROM events WHERE session = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[
                    (&session, Type::TEXT),
                    (&after, Type::INT8),
                    (&limit, Type::INT8),
                ],
            )?;
            rows.iter().map(|r| r.try_get(0)).collect()
        })
    }

    fn recorded(&self, session: &str) -> Result<bool, StoreError> {
        let session = session.to_string();
        self.readers.read("cannot read the sessions", move |c| {
            Ok(c.query_typed_one(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1) \
                 OR EXISTS (SELECT 1 FROM events WHERE session = $1)",
                &[(&session, Type::TEXT)],
            )?
            .get(0))
        })
    }

    fn has_events(&self, session: &str) -> Result<bool, StoreError> {
        let session = session.to_string();
        self.readers.read("cannot read a log", move |c| {
            Ok(c.query_typed_opt(
                "SELECT 1 FROM events WHERE session = $1 LIMIT 1",
                &[(&session, Type::TEXT)],
            )?
            .is_some())
        })
    }

    fn flush_queue(&self) {
        self.queue().flush();
    }
}

impl ServerStore for PostgresStore {
    queued_store_methods!(POSTGRES);

    fn create_session(&self, s: &NewSession) -> Result<Created, StoreError> {
        self.hold_new(&s.id);
        let created = self.queue().create_session(s);
        if !matches!(created, Ok(Created::New)) {
            self.shared.leases().remove(&s.id);
        }
        created
    }

    fn create_session_then(&self, s: &NewSession, done: CreatedThen) {
        self.hold_new(&s.id);
        let shared = Arc::clone(&self.shared);
        let id = s.id.clone();
        self.queue().create_session_then(
            s,
            Box::new(move |created| {
                if !matches!(created, Ok(Created::New)) {
                    shared.leases().remove(&id);
                }
                done(created)
            }),
        );
    }

    fn session(&self, tenant: &str, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let args = vec![Param::Text(id.into()), Param::Text(tenant.into())];
        Ok(self.records("id = $1 AND tenant = $2", args)?.pop())
    }

    fn session_by_key(&self, tenant: &str, key: &str) -> Result<Option<SessionRecord>, StoreError> {
        let args = vec![Param::Text(tenant.into()), Param::Text(key.into())];
        Ok(self
            .records("tenant = $1 AND idempotency_key = $2", args)?
            .pop())
    }

    fn list_sessions(&self, q: &ListQuery) -> Result<Vec<SessionRecord>, StoreError> {
        super::list::readable_page(q, |q| {
            let (filter, args) = super::list::filter(q, &super::list::POSTGRES);
            let args = args
                .into_iter()
                .map(|a| a.into_sql(Param::Text, Param::Int))
                .collect();
            let rows = self.rows(&filter, args)?;
            let last = rows.last().and_then(schema::list_key);
            let fetched = rows.len();
            let kept = self.shared.readable(rows.iter().map(schema::record_of));
            Ok((kept, fetched, last))
        })
    }

    fn health(&self) -> Result<(), StoreError> {
        if self.writer.as_ref().is_none_or(JoinHandle::is_finished) {
            return Err(StoreError::Io(io::Error::other(self.shared.writer_gone())));
        }
        self.readers.read("does not answer", |c| {
            c.query_one("SELECT 1", &[]).map(|_| ())
        })
    }

    fn describe(&self) -> Json {
        serde_json::json!({
            "kind": "postgres",
            "name": self.shared.name,
            "worker": self.worker.id,
            "lease_ms": self.worker.lease_ms,
        })
    }

    fn lease(&self, hooks: LeaseHooks) -> Option<usize> {
        let mut queue = self.let_go.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.is_some() {
            return Some(0);
        }
        let (tx, rx) = mpsc::channel();
        let (first_tx, first) = mpsc::sync_channel(1);
        let thread = leases::Leases {
            target: self.target.clone(),
            worker: self.worker.clone(),
            renew: self.options.renew,
            shared: Arc::clone(&self.shared),
            hooks,
            let_go: rx,
            first: Some(first_tx),
            waiting_since: std::collections::HashMap::new(),
        };
        let started = std::thread::Builder::new()
            .name("lt-pg-leases".into())
            .spawn(move || thread.run());
        if started.is_err() {
            return None;
        }
        *queue = Some(tx);
        // The first round's claims (a store that does not answer: later).
        let wait = self.options.lease.max(std::time::Duration::from_secs(5));
        Some(first.recv_timeout(wait).unwrap_or(0))
    }

    fn holds(&self, id: &str) -> bool {
        self.shared.leases().contains_key(id)
    }

    fn let_go(&self, id: &str, abandoned: bool) {
        let what = match abandoned {
            true => leases::LetGo::Abandoned(id.to_string()),
            false => leases::LetGo::Ended(id.to_string()),
        };
        self.send_let_go(what);
    }

    fn follow(&self, id: &str, on: bool) {
        self.follow_session(id, on);
    }

    fn deliver(&self, id: &str, kind: &str, body: &Json) -> Result<bool, StoreError> {
        let (id, kind, body) = (id.to_string(), kind.to_string(), body.to_string());
        self.readers
            .read("cannot post to another worker", move |c| {
                let mut tx = c.transaction()?;
                tx.execute(
                    "INSERT INTO mailbox (session, kind, body) VALUES ($1, $2, $3)",
                    &[&id, &kind, &body],
                )?;
                tx.execute("SELECT pg_notify('lt_mailbox', $1)", &[&id])?;
                tx.commit()
            })?;
        Ok(true)
    }
}
