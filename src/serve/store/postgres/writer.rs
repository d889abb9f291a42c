//! The PostgreSQL side of the writer thread (`../queue.rs` runs the loop
//! and group commit): one transaction per batch on the writer's own
//! connection, the chain checked by the database.
//!
//! ```text
//! BEGIN
//!   each create_session: INSERT … ON CONFLICT DO NOTHING, then the
//!                        tenant's session of that idempotency key; a new one
//!                        gets its lease row (this worker, epoch 1)
//!   each set_status: the lease's epoch (FOR KEY SHARE) must be the one this
//!                    worker holds, then UPDATE … WHERE status is not final
//!   the events: one INSERT of them all (bulk.rs); when one breaks the chain,
//!     one at a time: INSERT … SELECT … WHERE <prev is the stored hash of seq-1>
//!                    ON CONFLICT (session, seq) DO NOTHING      0 rows: refused
//! COMMIT (durable: the server's synchronous_commit)
//! ```
//!
//! The conditional insert is the trigger's check (`schema.rs`) made
//! per-request: a refused event writes nothing and fails only its own
//! request, where an exception would abort the whole transaction. Another
//! process appending to the same log commits first or waits on the
//! primary key; either way one of the two is refused.
//!
//! A lost connection: the batch runs once more on a new connection when
//! it was lost before the commit was sent (nothing of it committed); lost
//! during the commit, the batch fails (it may or may not have committed),
//! and the next batch connects again.

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

impl Transact for PgWriter {
    type Error = BatchError;

    fn apply(&mut self, batch: &[Request]) -> Result<Vec<Outcome>, BatchError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let shared = Arc::clone(&self.shared);
            let worker = self.worker.clone();
            let client = self.connected()?;
            let (sent_commit, e) = match apply(client, &shared, &worker, batch) {
                Ok(outcomes) => return Ok(outcomes),
                Err(failed) => failed,
            };
            let lost = super::url::is_lost(&e) || client.is_closed();
            if lost {
                self.client = None;
            }
            if !lost || sent_commit || attempt > 1 {
                return Err(BatchError(self.target.scrub(&e)));
            }
        }
    }
}

impl PgWriter {
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

/// Runs `batch` in one transaction and commits it. `Err((sent_commit, e))`:
/// whether it failed in the commit itself (then it may have committed).
fn apply(
    client: &mut Client,
    shared: &Shared,
    worker: &super::Worker,
    batch: &[Request],
) -> Result<Vec<Outcome>, (bool, postgres::Error)> {
    let before = |e| (false, e);
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
                match fenced_status(&mut tx, shared, id, *epoch).map_err(before)? {
                    Some(refused) => Err(refused),
                    None => set_status(&mut tx, id, *status, output.as_deref(), *calls, *at_ms)
                        .map_err(before)?,
                },
            )),
            Request::Flush(_) | Request::Release(_) => Some(Outcome::Flushed),
            #[cfg(test)]
            Request::Stop => Some(Outcome::Flushed),
        };
        outcomes.push(outcome);
    }
    let mut appended = Vec::with_capacity(appends.len());
    let bulk = match appends.is_empty() {
        true => Bulk::Inserted(HashSet::new()),
        false => bulk::insert(&mut tx, &appends).map_err(before)?,
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
        // One at a time: exactly the events that break the chain fail.
        Bulk::ChainBroken => {
            for a in &appends {
                appended.push(append(&mut tx, shared, a).map_err(before)?);
            }
        }
    }
    if !appends.is_empty() {
        notify_events(&mut tx, &appends).map_err(before)?;
    }
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
    tx.commit().map_err(|e| (true, e))?;
    Ok(outcomes)
}

/// Tells the other workers (`LISTEN lt_events`, leases.rs) which
/// sessions' logs this batch extends, so that their streams read them now;
/// sent with the commit (PostgreSQL delivers a notice only if it commits).
fn notify_events(tx: &mut Transaction<'_>, appends: &[&Append]) -> Result<(), postgres::Error> {
    let mut sessions: Vec<&str> = appends.iter().map(|a| a.session.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    // A notice's payload holds under 8000 bytes.
    for chunk in sessions.chunks(200) {
        tx.execute("SELECT pg_notify('lt_events', $1)", &[&chunk.join(",")])?;
    }
    Ok(())
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
    let (now, owner): (i64, String) = (row.get(0), row.get(1));
    if now == epoch {
        return Ok(None);
    }
    shared.lose(session, epoch);
    Ok(Some(format!(
        "the database refused a write to session {session}: this worker held its lease at epoch {epoch}, and the lease is now at epoch {now} (worker {owner}); the session is no longer this worker's"
    )))
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

/// The refusal of a status change by a worker that no longer holds the
/// session's lease at `epoch` (`None`: no lease to check, or it holds it).
fn fenced_status(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    id: &str,
    epoch: Option<i64>,
) -> Result<Option<StoreError>, postgres::Error> {
    let Some(epoch) = epoch else { return Ok(None) };
    Ok(fence(tx, shared, id, epoch)?.map(StoreError::Conflict))
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
    let inserted = tx.execute(
        "INSERT INTO sessions (id, tenant, profile, status, request, idempotency_key, \
         created_ms, updated_ms, output, calls) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7, NULL, 0) ON CONFLICT DO NOTHING",
        &[
            &new.id,
            &new.tenant,
            &new.profile,
            &SessionStatus::Running.as_str(),
            &request,
            &new.idempotency_key,
            &new.created_ms,
        ],
    )?;
    if inserted == 1 {
        tx.execute(
            "INSERT INTO leases (session, owner, epoch, expires) \
             VALUES ($1, $2, 1, clock_timestamp() + $3::bigint * interval '1 millisecond') \
             ON CONFLICT (session) DO NOTHING",
            &[&new.id, &worker.id, &worker.lease_ms],
        )?;
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

/// Sets a session's status, output (when given) and call count.
fn set_status(
    tx: &mut Transaction<'_>,
    id: &str,
    status: SessionStatus,
    output: Option<&str>,
    calls: i64,
    at_ms: i64,
) -> Result<Result<(), StoreError>, postgres::Error> {
    // A final status is final: a late update must not move it back.
    let changed = tx.execute(
        "UPDATE sessions SET status = $2, output = coalesce($3, output), calls = $4, \
         updated_ms = $5 WHERE id = $1 AND status NOT IN ('ended', 'failed', 'cancelled')",
        &[&id, &status.as_str(), &output, &calls, &at_ms],
    )?;
    if changed > 0 {
        return Ok(Ok(()));
    }
    let held = tx.query_opt("SELECT status FROM sessions WHERE id = $1", &[&id])?;
    Ok(Err(match held {
        None => StoreError::NotFound(id.to_string()),
        Some(row) => StoreError::Conflict(format!(
            "session {id} is already over ({}); its status stays",
            row.get::<_, String>(0)
        )),
    }))
}
