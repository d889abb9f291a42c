//! The PostgreSQL side of the writer thread (`../queue.rs` runs the loop
//! and group commit): one transaction per batch on the writer's own
//! connection, the chain checked by the database.
//!
//! ```text
//! BEGIN
//!   each create_session: INSERT … ON CONFLICT DO NOTHING, then the
//!                        tenant's session of that idempotency key
//!   each set_status: UPDATE … WHERE status is not final
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
use super::schema::{record_of, RECORD_COLUMNS};
use super::url::Target;
use crate::log::{StoreError, ZERO_HASH};
use postgres::{Client, Transaction};
use std::collections::HashSet;
use std::sync::Arc;

/// The writer's connection (`None` after it was lost).
pub(super) struct PgWriter {
    pub client: Option<Client>,
    /// Whether the connection holds the server's lock (taken again on a
    /// new connection).
    pub exclusive: bool,
    pub target: Target,
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
            let client = self.connected()?;
            let (sent_commit, e) = match apply(client, &shared, batch) {
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
    /// The live connection, made anew (with the server's lock) when there
    /// is none or it was lost.
    fn connected(&mut self) -> Result<&mut Client, BatchError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let mut fresh = self
                .target
                .connect()
                .map_err(|e| BatchError(e.to_string()))?;
            // The server's lock went with the old connection.
            if self.exclusive {
                super::lock_server(&mut fresh, &self.target)
                    .map_err(|e| BatchError(e.to_string()))?;
            }
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
                create_session(&mut tx, shared, new, request).map_err(before)?,
            )),
            Request::SetStatus {
                id,
                status,
                output,
                calls,
                at_ms,
                ..
            } => Some(Outcome::Status(
                set_status(&mut tx, id, *status, output.as_deref(), *calls, *at_ms)
                    .map_err(before)?,
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
                        false => refused(&mut tx, a).map_err(before)?,
                    },
                );
            }
        }
        // One at a time: exactly the events that break the chain fail.
        Bulk::ChainBroken => {
            for a in &appends {
                appended.push(append(&mut tx, a).map_err(before)?);
            }
        }
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

/// Inserts one event if it continues the session's chain as stored.
/// `Ok(Err(why))`: it does not, and nothing was written.
fn append(tx: &mut Transaction<'_>, a: &Append) -> Result<Result<(), String>, postgres::Error> {
    let seq = to_i64(a.seq);
    let inserted = tx.execute(
        "INSERT INTO events (session, seq, hash, prev, line) \
         SELECT $1::text, $2::bigint, $3::text, $4::text, $5::text \
         WHERE CASE WHEN $2::bigint = 0 THEN $4::text = $6::text \
               ELSE EXISTS (SELECT 1 FROM events e \
                            WHERE e.session = $1 AND e.seq = $2 - 1 AND e.hash = $4) END \
         ON CONFLICT (session, seq) DO NOTHING",
        &[&a.session, &seq, &a.hash, &a.prev, &a.line, &ZERO_HASH],
    )?;
    if inserted == 1 {
        return Ok(Ok(()));
    }
    refused(tx, a)
}

/// The refusal of `a`, which the log did not take.
fn refused(tx: &mut Transaction<'_>, a: &Append) -> Result<Result<(), String>, postgres::Error> {
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
fn create_session(
    tx: &mut Transaction<'_>,
    shared: &Shared,
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
