//! The PostgreSQL side of the writer thread (`../queue.rs` runs the loop
//! and group commit): one transaction per batch on the writer's own
//! connection, the chain checked by the database.
//!
//! ```text
//! BEGIN
//!   each create_session: INSERT … ON CONFLICT DO NOTHING with, in the same
//!                        statement, a new session's lease row (this worker,
//!                        epoch 1); else the tenant's session of that
//!                        idempotency key
//!   each set_status: one statement: the lease's epoch (FOR KEY SHARE) must be
//!                    the one this worker holds, and UPDATE … WHERE status is
//!                    not final
//!   the events: one INSERT of them all (bulk.rs); when one breaks the chain,
//!     ROLLBACK, and the batch again, its events one at a time (a savepoint each):
//!     INSERT … SELECT … WHERE <prev is the stored hash of seq-1>
//!     ON CONFLICT (session, seq) DO NOTHING      0 rows: refused
//! COMMIT (durable: the server's synchronous_commit)
//! ```
//!
//! The conditional insert is the trigger's check (`schema.rs`) made
//! per-request: a refused event writes nothing and fails only its own
//! request, where an exception would abort the whole transaction. Another
//! process appending to the same log commits first or waits on the
//! primary key; either way one of the two is refused.
//!
//! A lost connection: the batch runs again on a new connection (up to
//! `ATTEMPTS` times). Lost before the commit was sent, nothing of it
//! committed. Lost during the commit, it may have committed: the new
//! connection asks the server what became of the transaction
//! (`txid_status` of the id the batch read before committing). Committed:
//! the batch's outcomes stand, as if the answer had arrived. Aborted: the
//! batch runs again. An event whose `(session, seq)` is already stored with
//! the same hash counts as appended (the same event, written once); another
//! hash there is a conflict, or the lease's fence.

use super::super::queue::{
    extended_by_another, to_i64, Append, Outcome, Request, Shared, Transact,
};
use super::super::{Created, NewSession, SessionStatus};
use super::bulk::{self, Bulk};
use super::schema::{record_of, FENCED, RECORD_COLUMNS};
use super::url::Target;
use crate::log::{StoreError, ZERO_HASH};
use postgres::{Client, Transaction};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The writer's connection (`None` after it was lost).
pub(super) struct PgWriter {
    pub client: Option<Client>,
    pub target: Target,
    /// This worker's id and lease length (new sessions' lease rows).
    pub worker: super::Worker,
    pub shared: Arc<Shared>,
}

/// A batch's failure: the database's error (without the password).
pub(super) struct BatchError(String);

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How many times a batch runs when its connection is lost.
const ATTEMPTS: u32 = 4;

/// How long a transaction cut during its commit may stay `in progress`
/// (its old backend still ending it) before the batch fails as unknown.
const SETTLE: Duration = Duration::from_secs(10);

impl Transact for PgWriter {
    type Error = BatchError;

    fn apply(&mut self, batch: &[Request]) -> Result<Vec<Outcome>, BatchError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let shared = Arc::clone(&self.shared);
            let worker = self.worker.clone();
            let client = self.connected()?;
            let ran = match apply(client, &shared, &worker, batch, Events::AllInOne) {
                Ok(None) => apply(client, &shared, &worker, batch, Events::OneAtATime),
                ran => ran,
            };
            let failed = match ran {
                Ok(Some(outcomes)) => return Ok(outcomes),
                Ok(None) => {
                    return Err(BatchError(
                        "the batch's events could not be written one at a time".into(),
                    ))
                }
                Err(failed) => failed,
            };
            let lost = super::url::is_lost(&failed.error) || client.is_closed();
            if !lost || attempt >= ATTEMPTS {
                return Err(BatchError(self.target.scrub(&failed.error)));
            }
            self.client = None;
            if let Some((xid, outcomes)) = failed.in_commit {
                match self.settled(xid)? {
                    Settled::Committed => return Ok(outcomes),
                    Settled::Aborted => {}
                    Settled::Unknown => {
                        return Err(BatchError(format!(
                            "{} (the connection was lost during the commit, and whether it committed is still unknown after {} s)",
                            self.target.scrub(&failed.error),
                            SETTLE.as_secs()
                        )))
                    }
                }
            }
        }
    }
}

/// What became of a transaction whose commit lost its connection.
enum Settled {
    Committed,
    Aborted,
    Unknown,
}

impl PgWriter {
    /// Asks a new connection what became of transaction `xid` (waiting
    /// while its old backend is still ending it).
    fn settled(&mut self, xid: i64) -> Result<Settled, BatchError> {
        let since = Instant::now();
        loop {
            let target = self.target.clone();
            let client = self.connected()?;
            let status = client
                .query_one("SELECT txid_status($1)", &[&xid])
                .map_err(|e| BatchError(target.scrub(&e)))?;
            let status: Option<String> = status.get(0);
            match status.as_deref() {
                Some("committed") => return Ok(Settled::Committed),
                Some("aborted") => return Ok(Settled::Aborted),
                // `None`: too old to know (never a batch a moment old).
                None => return Ok(Settled::Unknown),
                Some(_) if since.elapsed() >= SETTLE => return Ok(Settled::Unknown),
                Some(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// The live connection, made anew when there is none or it was lost.
    fn connected(&mut self) -> Result<&mut Client, BatchError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let fresh = self
                .target
                .connect()
                .map_err(|e| BatchError(e.to_string()))?;
            self.client = Some(fresh);
        }
        self.client
            .as_mut()
            .ok_or_else(|| BatchError("no connection".into()))
    }
}

/// A batch that did not commit (or may have).
struct Failed {
    error: postgres::Error,
    /// Failed in the commit itself: the transaction's id, and the outcomes
    /// that stand if it committed after all.
    in_commit: Option<(i64, Vec<Outcome>)>,
}

/// How a batch's events are inserted.
#[derive(Clone, Copy, PartialEq)]
enum Events {
    /// In one statement (bulk.rs): an event that breaks the chain aborts
    /// the transaction.
    AllInOne,
    /// One statement each, under a savepoint: exactly the events that
    /// break the chain are refused.
    OneAtATime,
}

/// Runs `batch` in one transaction and commits it. `Ok(None)`: an event
/// of `Events::AllInOne` broke the chain; rolled back, nothing written.
fn apply(
    client: &mut Client,
    shared: &Shared,
    worker: &super::Worker,
    batch: &[Request],
    events: Events,
) -> Result<Option<Vec<Outcome>>, Failed> {
    let before = |error| Failed {
        error,
        in_commit: None,
    };
    let mut tx = client.transaction().map_err(before)?;
    // The sessions' rows first, in order (their outcomes are final); then
    // every event of the batch in one statement (bulk.rs).
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(batch.len());
    let mut appends: Vec<&Append> = Vec::new();
    for req in batch {
        let outcome = match req {
            Request::Append(a) => {
                appends.push(a);
                None
            }
            Request::CreateSession { new, request, .. } => Some(Outcome::Created(
                create_session(&mut tx, shared, worker, new, request).map_err(before)?,
            )),
            Request::SetStatus {
                id,
                status,
                output,
                calls,
                at_ms,
                epoch,
                ..
            } => Some(Outcome::Status(
                set_status(
                    &mut tx,
                    shared,
                    id,
                    *epoch,
                    (*status, output.as_deref(), *calls, *at_ms),
                )
                .map_err(before)?,
            )),
            Request::Flush(_) | Request::Release(_) => Some(Outcome::Flushed),
            #[cfg(test)]
            Request::Stop => Some(Outcome::Flushed),
        };
        outcomes.push(outcome);
    }
    let mut appended = Vec::with_capacity(appends.len());
    let bulk = match (appends.is_empty(), events) {
        (true, _) => Bulk::Inserted(HashSet::new()),
        (false, Events::AllInOne) => bulk::insert(&mut tx, &appends).map_err(before)?,
        (false, Events::OneAtATime) => Bulk::ChainBroken,
    };
    match bulk {
        Bulk::Inserted(inserted) => {
            for a in &appends {
                appended.push(
                    match inserted.contains(&(a.session.clone(), to_i64(a.seq))) {
                        true => Ok(()),
                        false => refused(&mut tx, shared, a).map_err(before)?,
                    },
                );
            }
        }
        Bulk::ChainBroken if events == Events::AllInOne => {
            tx.rollback().map_err(before)?;
            return Ok(None);
        }
        // One at a time: exactly the events that break the chain fail.
        Bulk::ChainBroken => {
            for a in &appends {
                appended.push(append(&mut tx, shared, a).map_err(before)?);
            }
        }
    }
    let xid = match appends.is_empty() {
        true => tx.query_one("SELECT txid_current()", &[]),
        false => notify_events(&mut tx, &appends),
    }
    .and_then(|row| row.try_get::<_, i64>(0))
    .map_err(before)?;
    let mut appended = appended.into_iter();
    let outcomes = outcomes
        .into_iter()
        .map(|o| match o {
            Some(o) => o,
            None => Outcome::Appended(
                appended
                    .next()
                    .unwrap_or_else(|| Err("the event's outcome went missing".into())),
            ),
        })
        .collect();
    match tx.commit() {
        Ok(()) => Ok(Some(outcomes)),
        Err(error) => Err(Failed {
            error,
            in_commit: Some((xid, outcomes)),
        }),
    }
}

/// Tells the other workers (`LISTEN lt_events`, leases.rs) which
/// sessions' logs this batch extends, so that their streams read them now;
/// sent with the commit (PostgreSQL delivers a notice only if it commits).
/// The row holds the transaction's id (`txid_current()`, read in the same
/// round trip; see the module note).
fn notify_events(
    tx: &mut Transaction<'_>,
    appends: &[&Append],
) -> Result<postgres::Row, postgres::Error> {
    let mut sessions: Vec<&str> = appends.iter().map(|a| a.session.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    // A notice's payload holds under 8000 bytes.
    let mut chunks = sessions.chunks(200);
    let first = chunks.next().unwrap_or_default().join(",");
    let row = tx.query_one(
        "SELECT txid_current(), pg_notify('lt_events', $1)",
        &[&first],
    )?;
    for chunk in chunks {
        tx.execute("SELECT pg_notify('lt_events', $1)", &[&chunk.join(",")])?;
    }
    Ok(row)
}

/// Inserts one event if it continues the session's chain as stored and
/// is written under the session's lease epoch. `Ok(Err(why))`: it is not,
/// and nothing was written.
fn append(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    a: &Append,
) -> Result<Result<(), String>, postgres::Error> {
    let seq = to_i64(a.seq);
    let mut sp = tx.savepoint("lt_one")?;
    let inserted = sp.execute(
        "INSERT INTO events (session, seq, hash, prev, line, epoch) \
         SELECT $1::text, $2::bigint, $3::text, $4::text, $5::text, $7::bigint \
         WHERE CASE WHEN $2::bigint = 0 THEN $4::text = $6::text \
               ELSE EXISTS (SELECT 1 FROM events e \
                            WHERE e.session = $1 AND e.seq = $2 - 1 AND e.hash = $4) END \
         ON CONFLICT (session, seq) DO NOTHING",
        &[
            &a.session, &seq, &a.hash, &a.prev, &a.line, &ZERO_HASH, &a.epoch,
        ],
    );
    match inserted {
        Ok(n) => {
            sp.commit()?;
            if n == 1 {
                return Ok(Ok(()));
            }
        }
        Err(e) if e.code().map(|c| c.code()) == Some(FENCED) => {
            sp.rollback()?;
        }
        Err(e) => return Err(e),
    }
    refused(tx, shared, a)
}

/// The refusal of a write to `session` under `epoch` when the lease is
/// at another epoch (`None`: it is not; no lease row, or the same one).
/// The session is no longer held by this worker.
fn fence(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    session: &str,
    epoch: i64,
) -> Result<Option<String>, postgres::Error> {
    let held = tx.query_opt(
        "SELECT epoch, coalesce(owner, '') FROM leases WHERE session = $1 FOR KEY SHARE",
        &[&session],
    )?;
    let Some(row) = held else { return Ok(None) };
    Ok(fenced(shared, session, epoch, row.get(0), row.get(1)))
}

/// The refusal of a write under `epoch` when the lease is at `now`
/// (`None`: the same epoch); the session is lost to this worker.
fn fenced(shared: &Shared, session: &str, epoch: i64, now: i64, owner: String) -> Option<String> {
    if now == epoch {
        return None;
    }
    shared.lose(session, epoch);
    Some(format!(
        "the database refused a write to session {session}: this worker held its lease at epoch {epoch}, and the lease is now at epoch {now} (worker {owner}); the session is no longer this worker's"
    ))
}

/// The refusal of `a`, which the log did not take.
fn refused(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    a: &Append,
) -> Result<Result<(), String>, postgres::Error> {
    if let Some(why) = fence(tx, shared, &a.session, a.epoch)? {
        return Ok(Err(why));
    }
    // The same event stored already (a batch run again): appended once.
    let stored = tx.query_opt(
        "SELECT hash FROM events WHERE session = $1 AND seq = $2",
        &[&a.session, &to_i64(a.seq)],
    )?;
    if stored.is_some_and(|row| row.get::<_, String>(0) == a.hash) {
        return Ok(Ok(()));
    }
    let held: i64 = tx
        .query_one(
            "SELECT COALESCE(max(seq) + 1, 0) FROM events WHERE session = $1",
            &[&a.session],
        )?
        .get(0);
    Ok(Err(extended_by_another(
        &a.session,
        u64::try_from(held).unwrap_or(0),
        a.seq,
    )))
}

/// Records a new session, or finds the tenant's session with the same
/// idempotency key (the UNIQUE constraint decides, inside the transaction).
/// A new session's lease is this worker's, at epoch 1.
fn create_session(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    worker: &super::Worker,
    new: &NewSession,
    request: &str,
) -> Result<Result<Created, StoreError>, postgres::Error> {
    // The session and its lease in one statement (one round trip).
    let inserted: i64 = tx
        .query_one(
            "WITH s AS (INSERT INTO sessions (id, tenant, profile, status, request, \
                        idempotency_key, created_ms, updated_ms, output, calls) \
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $7, NULL, 0) \
                        ON CONFLICT DO NOTHING RETURNING id), \
             l AS (INSERT INTO leases (session, owner, epoch, expires) \
                   SELECT id, $8, 1, clock_timestamp() + $9::bigint * interval '1 millisecond' \
                   FROM s ON CONFLICT (session) DO NOTHING) \
             SELECT count(*) FROM s",
            &[
                &new.id,
                &new.tenant,
                &new.profile,
                &SessionStatus::Running.as_str(),
                &request,
                &new.idempotency_key,
                &new.created_ms,
                &worker.id,
                &worker.lease_ms,
            ],
        )?
        .try_get(0)?;
    if inserted == 1 {
        return Ok(Ok(Created::New));
    }
    let existing = match &new.idempotency_key {
        Some(key) => tx.query_opt(
            &format!(
                "SELECT {RECORD_COLUMNS} FROM sessions WHERE tenant = $1 AND idempotency_key = $2"
            ),
            &[&new.tenant, key],
        )?,
        None => None,
    };
    Ok(match existing {
        Some(row) => record_of(&row)
            .map(Created::Existing)
            .map_err(|e| shared.error("a damaged session record", e)),
        None => Err(StoreError::Conflict(format!(
            "session {} already exists; a new session needs a new id",
            new.id
        ))),
    })
}

/// Sets a session's status, output (when given) and call count, in one
/// statement with its fence: with `epoch` (a lease held), the lease row is
/// read `FOR KEY SHARE` and the update refused when the lease moved on.
fn set_status(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    id: &str,
    epoch: Option<i64>,
    (status, output, calls, at_ms): (SessionStatus, Option<&str>, i64, i64),
) -> Result<Result<(), StoreError>, postgres::Error> {
    // A final status is final: a late update must not move it back. The
    // last SELECT sees the row as before the update (one snapshot).
    let row = tx.query_one(
        "WITH l AS (SELECT epoch, coalesce(owner, '') AS owner FROM leases \
                    WHERE session = $1 AND $6::bigint IS NOT NULL FOR KEY SHARE), \
         u AS (UPDATE sessions SET status = $2, output = coalesce($3, output), calls = $4, \
               updated_ms = $5 WHERE id = $1 AND status NOT IN ('ended', 'failed', 'cancelled') \
               AND NOT EXISTS (SELECT 1 FROM l WHERE l.epoch <> $6) RETURNING 1) \
         SELECT (SELECT epoch FROM l), (SELECT owner FROM l), (SELECT count(*) FROM u), \
                (SELECT status FROM sessions WHERE id = $1)",
        &[&id, &status.as_str(), &output, &calls, &at_ms, &epoch],
    )?;
    let (now, owner, changed, was): (Option<i64>, Option<String>, i64, Option<String>) = (
        row.try_get(0)?,
        row.try_get(1)?,
        row.try_get(2)?,
        row.try_get(3)?,
    );
    if let (Some(epoch), Some(now)) = (epoch, now) {
        if let Some(why) = fenced(shared, id, epoch, now, owner.unwrap_or_default()) {
            return Ok(Err(StoreError::Conflict(why)));
        }
    }
    Ok(match (changed, was) {
        (1.., _) => Ok(()),
        (_, None) => Err(StoreError::NotFound(id.to_string())),
        (_, Some(was)) => Err(StoreError::Conflict(format!(
            "session {id} is already over ({was}); its status stays"
        ))),
    })
}
