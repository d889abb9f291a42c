//! The writer thread: the one connection that writes, and group commit.
//!
//! ```text
//! sinks, create_session, set_status ──Request──▶ queue (mpsc)
//! writer: take one request, drain the queue (up to MAX_BATCH); while no
//!   request of the batch has a waiter, wait up to GATHER for one, then
//!   BEGIN IMMEDIATE
//!     each append: chain check (seq = stored next, prev = stored last hash) ─▶ INSERT
//!     each create_session: INSERT … ON CONFLICT (tenant, idempotency_key) DO NOTHING
//!     each set_status: UPDATE
//!   COMMIT (fsynced: synchronous=FULL)
//!   ─▶ broadcast Committed {session, seq, line} ─▶ answer every waiter
//!   ─▶ release the claims of the batch's dropped sinks ─▶ observer(took, events)
//!   ─▶ kick the checkpointer (checkpoint.rs)
//! ```
//!
//! Why GATHER: a `Buffer` event (an outcome, say) has nobody waiting for
//! it, and its session's next `Commit` event (the next call's `scheduled`)
//! is usually microseconds behind it. Committing the outcome alone would
//! cost an fsync nobody asked for; waiting for the next one puts both in
//! one transaction (PostgreSQL's `commit_delay` does the same for
//! concurrent transactions). A batch with a waiter never waits.
//!
//! Invariant: nothing is answered `Ok` before the transaction holding it
//! has committed; when the commit fails every request of the batch is
//! answered with the error. A request's own failure (a broken chain, a
//! taken id) fails that request alone and writes nothing for it: every
//! other SQLite error fails the whole batch (SQLite may have rolled the
//! transaction back).

use super::super::{Committed, Created, NewSession, SessionStatus};
use super::checkpoint::Kick;
use super::claim::Claim;
use super::schema::{record_of, RawRecord, RECORD_COLUMNS};
use super::Shared;
use crate::log::{StoreError, ZERO_HASH};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// At most this many requests per transaction (bounds a commit's latency).
const MAX_BATCH: usize = 4096;

/// How long a batch nobody waits for waits for a request somebody does
/// (see the module note).
const GATHER: Duration = Duration::from_millis(2);

/// Where one answer goes (a channel of one, per request).
pub(super) type Reply<T> = SyncSender<T>;

/// What a sink hands the writer: one event, numbered, chained and hashed.
pub(super) struct Append {
    /// The session.
    pub session: String,
    /// The event's `seq`.
    pub seq: u64,
    /// Its `prev`.
    pub prev: String,
    /// Its `hash`.
    pub hash: String,
    /// Its line (`docs/log-format.md`, no `\n`).
    pub line: String,
    /// For a `Commit` event: told once the transaction holding it
    /// committed (or why not). `None` for a `Buffer` event.
    pub reply: Option<Reply<Result<(), String>>>,
    /// Where the failure of a `Buffer` event is left for its sink.
    pub failed: Arc<Mutex<Option<String>>>,
}

/// A request to the writer thread.
pub(super) enum Request {
    /// Append one event to a session's log.
    Append(Append),
    /// Record a new session ([`crate::serve::store::ServerStore::create_session`]).
    CreateSession {
        new: NewSession,
        request: String,
        reply: CreateReply,
    },
    /// Let a dropped sink's claim go once everything before it committed.
    Release(Claim),
    /// Set a session's status ([`crate::serve::store::ServerStore::set_status`]).
    SetStatus {
        id: String,
        status: SessionStatus,
        output: Option<String>,
        calls: i64,
        at_ms: i64,
        reply: Reply<Result<(), StoreError>>,
    },
    /// Answered once everything queued before it is committed.
    Flush(Reply<()>),
    /// Stops the thread, answering nothing (tests of a dead writer).
    #[cfg(test)]
    Stop,
}

/// Where the answer to a `CreateSession` goes.
pub(super) enum CreateReply {
    /// A caller blocked on it.
    Wait(Reply<Result<Created, StoreError>>),
    /// Called after the commit; nobody is blocked (the batch may gather).
    Then(Box<dyn FnOnce(Result<Created, StoreError>) + Send>),
}

impl CreateReply {
    pub(super) fn send(self, r: Result<Created, StoreError>) {
        match self {
            CreateReply::Wait(reply) => {
                let _ = reply.send(r);
            }
            CreateReply::Then(done) => done(r),
        }
    }
}

impl Request {
    /// Whether somebody is blocked until this request's batch commits.
    fn awaited(&self) -> bool {
        match self {
            Request::Append(a) => a.reply.is_some(),
            Request::CreateSession { reply, .. } => matches!(reply, CreateReply::Wait(_)),
            Request::SetStatus { .. } | Request::Flush(_) => true,
            Request::Release(_) => false,
            #[cfg(test)]
            Request::Stop => true,
        }
    }
}

/// What became of one request (before the commit).
enum Outcome {
    Appended(Result<(), String>),
    Created(Result<Created, StoreError>),
    Status(Result<(), StoreError>),
    Flushed,
}

/// How many sessions' chain tails the writer remembers between batches
/// (those of live sinks; forgotten on release, all of them past this).
const KNOWN_TAILS: usize = 65_536;

/// A session's log as the transaction has it so far.
#[derive(Clone)]
struct Tail {
    next: u64,
    last: String,
}

/// Runs the writer until every sender is gone (the store and its sinks).
pub(super) fn run(
    mut conn: Connection,
    shared: Arc<Shared>,
    requests: Receiver<Request>,
    kick: Kick,
) {
    // The committed tail of each session a live sink writes: only this
    // thread writes the file (the store's lock), so what it committed is
    // what the file holds, and the chain check needs no read.
    let mut known: HashMap<String, Tail> = HashMap::new();
    while let Ok(first) = requests.recv() {
        let mut batch = vec![first];
        drain(&requests, &mut batch);
        let until = Instant::now() + GATHER;
        while batch.len() < MAX_BATCH && !batch.iter().any(Request::awaited) {
            let left = until.saturating_duration_since(Instant::now());
            match requests.recv_timeout(left) {
                Ok(r) => {
                    batch.push(r);
                    drain(&requests, &mut batch);
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        #[cfg(test)]
        if batch.iter().any(|r| matches!(r, Request::Stop)) {
            return;
        }
        write_batch(&mut conn, &shared, &mut known, batch);
        kick.committed();
    }
}

/// Moves what is queued into `batch`, up to [`MAX_BATCH`].
fn drain(requests: &Receiver<Request>, batch: &mut Vec<Request>) {
    while batch.len() < MAX_BATCH {
        match requests.try_recv() {
            Ok(r) => batch.push(r),
            Err(_) => break,
        }
    }
}

/// Writes `batch` in one transaction, then answers and announces it.
fn write_batch(
    conn: &mut Connection,
    shared: &Shared,
    known: &mut HashMap<String, Tail>,
    batch: Vec<Request>,
) {
    let started = Instant::now();
    let result = apply(conn, shared, known, &batch);
    let took = started.elapsed();
    let outcomes = match result {
        Ok((outcomes, tails)) => {
            if known.len() + tails.len() > KNOWN_TAILS {
                known.clear();
            }
            for (session, tail) in tails {
                known.insert(session, tail);
            }
            outcomes
        }
        Err(e) => {
            // SQLite may have rolled back more than this batch believes.
            known.clear();
            let why = format!("the store {} could not commit: {e}", shared.path.display());
            return fail_all(batch, &why);
        }
    };
    // Announced first: once an append returns, its notice is out.
    let mut events = 0;
    for (req, outcome) in batch.iter().zip(&outcomes) {
        if let (Request::Append(a), Outcome::Appended(Ok(()))) = (req, outcome) {
            events += 1;
            // No receiver is not an error: nobody is following.
            let _ = shared.commits.send(Committed {
                session: a.session.clone(),
                seq: a.seq,
                line: Arc::from(a.line.as_str()),
            });
        }
    }
    for (req, outcome) in batch.into_iter().zip(outcomes) {
        match (req, outcome) {
            (Request::Append(a), Outcome::Appended(r)) => answer_append(a.reply, &a.failed, r),
            (Request::CreateSession { reply, .. }, Outcome::Created(r)) => reply.send(r),
            (Request::SetStatus { reply, .. }, Outcome::Status(r)) => {
                let _ = reply.send(r);
            }
            (Request::Flush(reply), Outcome::Flushed) => {
                let _ = reply.send(());
            }
            // After the commit that holds the sink's last events.
            (Request::Release(claim), _) => {
                known.remove(&claim.session);
                drop(claim);
            }
            // `apply` answers each request with its own kind of outcome.
            _ => {}
        }
    }
    let observer = shared
        .observer
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(observe) = observer.as_ref() {
        // A panicking observer must not take the writer down with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| observe(took, events)));
    }
}

/// Answers every request of a batch that did not commit with `why`.
fn fail_all(batch: Vec<Request>, why: &str) {
    for req in batch {
        match req {
            Request::Append(a) => answer_append(a.reply, &a.failed, Err(why.to_string())),
            Request::CreateSession { reply, .. } => {
                reply.send(Err(StoreError::Io(std::io::Error::other(why))));
            }
            Request::Release(claim) => drop(claim),
            Request::SetStatus { reply, .. } => {
                let _ = reply.send(Err(StoreError::Io(std::io::Error::other(why))));
            }
            Request::Flush(reply) => {
                let _ = reply.send(());
            }
            #[cfg(test)]
            Request::Stop => {}
        }
    }
}

/// Tells an append's sink its outcome: the waiter of a `Commit` event, the
/// failure slot of a `Buffer` one (read by the sink's next append).
fn answer_append(
    reply: Option<Reply<Result<(), String>>>,
    failed: &Mutex<Option<String>>,
    r: Result<(), String>,
) {
    match reply {
        Some(reply) => {
            let _ = reply.send(r);
        }
        None => {
            if let Err(why) = r {
                let mut slot = failed.lock().unwrap_or_else(PoisonError::into_inner);
                slot.get_or_insert(why);
            }
        }
    }
}

/// Runs `batch` in one transaction and commits it; with each request's
/// outcome, the tails of the sessions it touched. `Err`: the transaction
/// failed as a whole (nothing of it is committed).
fn apply(
    conn: &mut Connection,
    shared: &Shared,
    known: &HashMap<String, Tail>,
    batch: &[Request],
) -> rusqlite::Result<(Vec<Outcome>, HashMap<String, Tail>)> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut tails: HashMap<String, Tail> = HashMap::new();
    let mut outcomes = Vec::with_capacity(batch.len());
    for req in batch {
        let outcome = match req {
            Request::Append(a) => Outcome::Appended(append(&tx, known, &mut tails, a)?),
            Request::CreateSession { new, request, .. } => {
                Outcome::Created(create_session(&tx, shared, new, request)?)
            }
            Request::SetStatus {
                id,
                status,
                output,
                calls,
                at_ms,
                ..
            } => Outcome::Status(set_status(
                &tx,
                id,
                *status,
                output.as_deref(),
                *calls,
                *at_ms,
            )?),
            Request::Flush(_) | Request::Release(_) => Outcome::Flushed,
            #[cfg(test)]
            Request::Stop => Outcome::Flushed,
        };
        outcomes.push(outcome);
    }
    tx.commit()?;
    Ok((outcomes, tails))
}

/// Inserts one event if it continues the session's chain as stored.
/// `Ok(Err(why))`: it does not, and nothing was written.
fn append(
    tx: &Connection,
    known: &HashMap<String, Tail>,
    tails: &mut HashMap<String, Tail>,
    a: &Append,
) -> rusqlite::Result<Result<(), String>> {
    if let (false, Some(tail)) = (tails.contains_key(&a.session), known.get(&a.session)) {
        tails.insert(a.session.clone(), tail.clone());
    }
    if !tails.contains_key(&a.session) {
        let stored: Option<(i64, String)> = tx
            .prepare_cached(
                "SELECT seq, hash FROM events WHERE session = ?1 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row([&a.session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let tail = match stored {
            Some((seq, hash)) => Tail {
                next: u64::try_from(seq).unwrap_or(0).saturating_add(1),
                last: hash,
            },
            None => Tail {
                next: 0,
                last: ZERO_HASH.to_string(),
            },
        };
        tails.insert(a.session.clone(), tail);
    }
    let Some(tail) = tails.get_mut(&a.session) else {
        return Ok(Err(format!("session {}: no chain state", a.session)));
    };
    if a.seq != tail.next || a.prev != tail.last {
        return Ok(Err(format!(
            "the log of session {} was extended by another writer (it holds {} events; this one's event has seq {}); nothing more is written by this one",
            a.session, tail.next, a.seq
        )));
    }
    let inserted = tx
        .prepare_cached(
            "INSERT INTO events (session, seq, hash, prev, line) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![a.session, to_i64(a.seq), a.hash, a.prev, a.line]);
    match inserted {
        Ok(_) => {}
        Err(e) if is_constraint(&e) => {
            return Ok(Err(format!(
                "the log of session {} was extended by another writer (it already holds an event with seq {}: {e}); nothing more is written by this one",
                a.session, a.seq
            )))
        }
        Err(e) => return Err(e),
    }
    tail.next += 1;
    tail.last.clone_from(&a.hash);
    Ok(Ok(()))
}

/// Records a new session, or finds the tenant's session with the same
/// idempotency key (the UNIQUE constraint decides, inside the transaction).
fn create_session(
    tx: &Connection,
    shared: &Shared,
    new: &NewSession,
    request: &str,
) -> rusqlite::Result<Result<Created, StoreError>> {
    let inserted = tx
        .prepare_cached(
            "INSERT INTO sessions (id, tenant, profile, status, request, idempotency_key, \
             created_ms, updated_ms, output, calls, events) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, NULL, 0, \
                     (SELECT count(*) FROM events WHERE session = ?1)) \
             ON CONFLICT (tenant, idempotency_key) DO NOTHING",
        )?
        .execute(params![
            new.id,
            new.tenant,
            new.profile,
            SessionStatus::Running.as_str(),
            request,
            new.idempotency_key,
            new.created_ms,
        ]);
    match inserted {
        Ok(1) => return Ok(Ok(Created::New)),
        Ok(_) => {}
        Err(e) if is_constraint(&e) => {
            return Ok(Err(StoreError::Conflict(format!(
                "session {} already exists; a new session needs a new id",
                new.id
            ))))
        }
        Err(e) => return Err(e),
    }
    let sql =
        format!("SELECT {RECORD_COLUMNS} FROM sessions WHERE tenant = ?1 AND idempotency_key = ?2");
    let raw: Option<RawRecord> = tx
        .prepare_cached(&sql)?
        .query_row(params![new.tenant, new.idempotency_key], RawRecord::read)
        .optional()?;
    Ok(match raw {
        Some(raw) => record_of(raw)
            .map(Created::Existing)
            .map_err(|e| shared.error("a damaged session record", e)),
        None => Err(StoreError::Conflict(format!(
            "session {} was not recorded and no session has its idempotency key",
            new.id
        ))),
    })
}

/// Sets a session's status, output (when given) and call count.
fn set_status(
    tx: &Connection,
    id: &str,
    status: SessionStatus,
    output: Option<&str>,
    calls: i64,
    at_ms: i64,
) -> rusqlite::Result<Result<(), StoreError>> {
    // A final status is final: a late update (a status change racing the
    // session's end) must not move it back.
    let changed = tx
        .prepare_cached(
            "UPDATE sessions SET status = ?2, output = coalesce(?3, output), calls = ?4, \
             updated_ms = ?5 WHERE id = ?1 AND status NOT IN ('ended', 'failed', 'cancelled')",
        )?
        .execute(params![id, status.as_str(), output, calls, at_ms])?;
    if changed > 0 {
        return Ok(Ok(()));
    }
    let held: Option<String> = tx
        .prepare_cached("SELECT status FROM sessions WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    Ok(Err(match held {
        None => StoreError::NotFound(id.to_string()),
        Some(held) => StoreError::Conflict(format!(
            "session {id} is already over ({held}); its status stays"
        )),
    }))
}

/// Whether `e` is a constraint violation (a statement's own failure; the
/// transaction goes on).
fn is_constraint(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation)
}

/// `n` as SQLite's integer (saturating: counts never get there).
pub(super) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
