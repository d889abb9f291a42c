//! A batch's rows of the sessions table in one statement each: every
//! session it records (with its lease) and every status it sets.
//!
//! ```text
//! create_sessions: INSERT INTO sessions … SELECT … FROM unnest(…) ORDER BY n
//!                  ON CONFLICT DO NOTHING, and the inserted ones' lease rows
//!                  (this worker, epoch 1) and `unfinished` rows in the
//!                  same statement
//!   not inserted: the tenant's session of that idempotency key (Existing),
//!                 else the id is taken (Conflict); a statement each, rare
//! set_statuses:    the lease rows of the sessions held under an epoch, FOR KEY
//!                  SHARE; UPDATE sessions … FROM unnest(…) where the status is
//!                  not final and the lease is at the epoch held (a HOT
//!                  update: no index holds what it sets, schema.rs version
//!                  6); the `unfinished` rows of those it made final
//!                  deleted, a `stopped` row for a failed or cancelled
//!                  one inserted; per request:
//!                  the lease's epoch, whether it changed, the status before
//!   a batch setting one session's status twice: one statement per run of
//!   requests with distinct sessions, in order
//! ```
//!
//! One statement for the batch instead of one per session: each statement
//! is a round trip and an executor start in PostgreSQL's backend, and a
//! batch at 64 clients records and ends several sessions. The outcomes are
//! those of the statements one per request in the batch's order: the first
//! of two requests with one id (or one tenant's idempotency key) records
//! it; the new sessions are recorded before the batch's statuses are set.

use super::super::shared::Shared;
use super::super::{Created, NewSession, SessionStatus};
use super::prepared::Prepared;
use super::schema::{record_of, RECORD_COLUMNS};
use super::Worker;
use crate::log::StoreError;
use postgres::Transaction;
use std::collections::HashSet;

/// A session the batch records: what was asked, and its request as JSON.
pub(super) struct Create<'a> {
    pub new: &'a NewSession,
    pub request: &'a str,
}

/// A status the batch sets.
pub(super) struct Status<'a> {
    pub id: &'a str,
    pub status: SessionStatus,
    pub output: Option<&'a str>,
    pub calls: i64,
    pub at_ms: i64,
    /// The lease epoch this worker holds the session under (`None`: no
    /// lease, nothing to check).
    pub epoch: Option<i64>,
}

/// The sessions and their lease rows, in one statement.
const CREATE: &str = "WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], \
        $4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY \
        AS t(id, tenant, profile, request, key, created, n)), \
     s AS (INSERT INTO sessions (id, tenant, profile, status, request, idempotency_key, \
                                 created_ms, updated_ms, output, calls) \
           SELECT id, tenant, profile, $7::text, request, key, created, created, NULL, 0 \
           FROM i ORDER BY n \
           ON CONFLICT DO NOTHING RETURNING id, created_ms), \
     l AS (INSERT INTO leases (session, owner, epoch, expires) \
           SELECT id, $8::text, 1, clock_timestamp() + $9::bigint * interval '1 millisecond' \
           FROM s ON CONFLICT (session) DO NOTHING), \
     o AS (INSERT INTO unfinished (session, created_ms) SELECT id, created_ms FROM s) \
     SELECT id FROM s";

/// The statuses with their fences, in one statement. A final status is
/// final: a late update must not move it back. The last column reads the
/// row as before the update (one snapshot).
const SET_STATUS: &str = "WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], \
        $4::bigint[], $5::bigint[], $6::bigint[]) WITH ORDINALITY \
        AS t(id, status, output, calls, at_ms, epoch, n)), \
     l AS (SELECT l.session, l.epoch, coalesce(l.owner, '') AS owner \
           FROM leases l JOIN i ON l.session = i.id WHERE i.epoch IS NOT NULL \
           ORDER BY l.session FOR KEY SHARE OF l), \
     u AS (UPDATE sessions s SET status = i.status, output = coalesce(i.output, s.output), \
                  calls = i.calls, updated_ms = i.at_ms \
           FROM i WHERE s.id = i.id AND s.status NOT IN ('ended', 'failed', 'cancelled') \
             AND NOT EXISTS (SELECT 1 FROM l WHERE l.session = i.id AND l.epoch <> i.epoch) \
           RETURNING s.id, s.status, s.tenant, s.created_ms), \
     f AS (DELETE FROM unfinished f USING u \
           WHERE f.session = u.id AND u.status IN ('ended', 'failed', 'cancelled')), \
     x AS (INSERT INTO stopped (session, tenant, status, created_ms) \
           SELECT u.id, u.tenant, u.status, u.created_ms FROM u \
           WHERE u.status IN ('failed', 'cancelled')) \
     SELECT l.epoch, l.owner, EXISTS (SELECT 1 FROM u WHERE u.id = i.id), \
            (SELECT s.status FROM sessions s WHERE s.id = i.id) \
     FROM i LEFT JOIN l ON l.session = i.id ORDER BY i.n";

/// Records `creates` (in order); a new session's lease is this worker's,
/// at epoch 1. One outcome per create.
pub(super) fn create_sessions(
    tx: &mut Transaction<'_>,
    prepared: &mut Prepared,
    shared: &Shared,
    worker: &Worker,
    creates: &[Create<'_>],
) -> Result<Vec<Result<Created, StoreError>>, postgres::Error> {
    if creates.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = creates.iter().map(|c| c.new.id.as_str()).collect();
    let tenants: Vec<&str> = creates.iter().map(|c| c.new.tenant.as_str()).collect();
    let profiles: Vec<&str> = creates.iter().map(|c| c.new.profile.as_str()).collect();
    let requests: Vec<&str> = creates.iter().map(|c| c.request).collect();
    let keys: Vec<Option<&str>> = creates
        .iter()
        .map(|c| c.new.idempotency_key.as_deref())
        .collect();
    let created: Vec<i64> = creates.iter().map(|c| c.new.created_ms).collect();
    let statement = prepared.get(tx, CREATE)?;
    let inserted: HashSet<String> = tx
        .query(
            &statement,
            &[
                &ids,
                &tenants,
                &profiles,
                &requests,
                &keys,
                &created,
                &SessionStatus::Running.as_str(),
                &worker.id,
                &worker.lease_ms,
            ],
        )?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    // The first request of an id inserted it; a second one finds it taken.
    let mut recorded: HashSet<&str> = HashSet::new();
    let mut outcomes = Vec::with_capacity(creates.len());
    for c in creates {
        let id = c.new.id.as_str();
        outcomes.push(match inserted.contains(id) && recorded.insert(id) {
            true => Ok(Created::New),
            false => existing(tx, shared, c.new)?,
        });
    }
    Ok(outcomes)
}

/// The tenant's session with `new`'s idempotency key (a session the
/// UNIQUE constraint kept from being recorded twice), else the id taken.
fn existing(
    tx: &mut Transaction<'_>,
    shared: &Shared,
    new: &NewSession,
) -> Result<Result<Created, StoreError>, postgres::Error> {
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
            .map_err(|e| shared.damaged(e)),
        None => Err(StoreError::Conflict(format!(
            "session {} already exists; a new session needs a new id",
            new.id
        ))),
    })
}

/// Sets `statuses` (in order), each with its fence: with an epoch (a
/// lease held), refused when the lease moved on. One outcome per status.
pub(super) fn set_statuses(
    tx: &mut Transaction<'_>,
    prepared: &mut Prepared,
    shared: &Shared,
    statuses: &[Status<'_>],
) -> Result<Vec<Result<(), StoreError>>, postgres::Error> {
    let mut outcomes = Vec::with_capacity(statuses.len());
    let mut rest = statuses;
    while !rest.is_empty() {
        // The longest run of requests with distinct sessions.
        let mut seen: HashSet<&str> = HashSet::new();
        let run = rest.iter().take_while(|s| seen.insert(s.id)).count();
        let (now, later) = rest.split_at(run);
        outcomes.extend(set_run(tx, prepared, shared, now)?);
        rest = later;
    }
    Ok(outcomes)
}

/// [`set_statuses`] of requests with distinct sessions, in one statement.
fn set_run(
    tx: &mut Transaction<'_>,
    prepared: &mut Prepared,
    shared: &Shared,
    run: &[Status<'_>],
) -> Result<Vec<Result<(), StoreError>>, postgres::Error> {
    let ids: Vec<&str> = run.iter().map(|s| s.id).collect();
    let statuses: Vec<&str> = run.iter().map(|s| s.status.as_str()).collect();
    let outputs: Vec<Option<&str>> = run.iter().map(|s| s.output).collect();
    let calls: Vec<i64> = run.iter().map(|s| s.calls).collect();
    let at: Vec<i64> = run.iter().map(|s| s.at_ms).collect();
    let epochs: Vec<Option<i64>> = run.iter().map(|s| s.epoch).collect();
    let statement = prepared.get(tx, SET_STATUS)?;
    let rows = tx.query(
        &statement,
        &[&ids, &statuses, &outputs, &calls, &at, &epochs],
    )?;
    let mut outcomes = Vec::with_capacity(run.len());
    for (s, row) in run.iter().zip(&rows) {
        let (now, owner, changed, was): (Option<i64>, Option<String>, bool, Option<String>) = (
            row.try_get(0)?,
            row.try_get(1)?,
            row.try_get(2)?,
            row.try_get(3)?,
        );
        outcomes.push(status_outcome(shared, s, now, owner, changed, was));
    }
    // A row missing (never: one per request) fails its request alone.
    while outcomes.len() < run.len() {
        outcomes.push(Err(shared.error(
            "a status update",
            "the database answered fewer rows than requests",
        )));
    }
    Ok(outcomes)
}

/// What became of status `s`: the lease at epoch `now` (of `owner`),
/// `changed`, the status it had before (`None`: no such session).
fn status_outcome(
    shared: &Shared,
    s: &Status<'_>,
    now: Option<i64>,
    owner: Option<String>,
    changed: bool,
    was: Option<String>,
) -> Result<(), StoreError> {
    if let (Some(epoch), Some(now)) = (s.epoch, now) {
        if let Some(why) = fenced(shared, s.id, epoch, now, owner.unwrap_or_default()) {
            return Err(StoreError::Conflict(why));
        }
    }
    match (changed, was) {
        (true, _) => Ok(()),
        (false, None) => Err(StoreError::NotFound(s.id.to_string())),
        (false, Some(was)) => Err(StoreError::Conflict(format!(
            "session {} is already over ({was}); its status stays",
            s.id
        ))),
    }
}

/// The refusal of a write under `epoch` when the lease is at `now`
/// (`None`: the same epoch); the session is lost to this worker.
pub(super) fn fenced(
    shared: &Shared,
    session: &str,
    epoch: i64,
    now: i64,
    owner: String,
) -> Option<String> {
    if now == epoch {
        return None;
    }
    shared.lose(session, epoch);
    Some(format!(
        "the database refused a write to session {session}: this worker held its lease at epoch {epoch}, and the lease is now at epoch {now} (worker {owner}); the session is no longer this worker's"
    ))
}
