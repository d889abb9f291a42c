//! The PostgreSQL side of the writer thread (`../queue.rs` runs the loop
//! and group commit): one transaction per batch on the writer's own
//! connection, the chain checked by the database.
//!
//! ```text
//! BEGIN
//!   the create_sessions: one INSERT of them all with, in the same statement,
//!                        the new sessions' lease rows (this worker, epoch 1);
//!                        else the tenant's session of that idempotency key
//!                        (rows.rs)
//!   the set_statuses: one statement: the leases' epochs (FOR KEY SHARE) must
//!                     be the ones this worker holds, and UPDATE … WHERE the
//!                     status is not final (rows.rs)
//!   the events: one INSERT of them all, with their tools (bulk.rs); when one
//!     breaks the chain, is fenced or finds its seq taken,
//!     ROLLBACK, and the batch again, its events one at a time (a savepoint each):
//!     INSERT … SELECT … WHERE <prev is the stored hash of seq-1>
//!     ON CONFLICT (session, seq) DO NOTHING      0 rows: refused
//! COMMIT (durable: the server's synchronous_commit)
//! ```
//!
//! The statements that run in every batch are prepared once per connection
//! (prepared.rs): one round trip each, no parsing.
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

use super::super::queue::{extended_by_another, to_i64, Append, Outcome, Request, Transact};
use super::super::shared::Shared;
use super::super::Created;
use super::bulk::{self, Bulk};
use super::prepared::Prepared;
use super::rows::{self, fenced, Create, Status};
use super::schema::FENCED;
use super::url::Target;
use crate::log::{StoreError, ZERO_HASH};
use postgres::{Client, Transaction};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The writer's connection (`None` after it was lost).
pub(super) struct PgWriter {
    pub client: Option<Client>,
    pub target: Target,
    /// This worker's id and lease length (new sessions' lease rows).
    pub worker: super::Worker,
    pub shared: Arc<Shared>,
    /// The statements prepared on `client`.
    pub prepared: Prepared,
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
            let (client, prepared) = self.connected()?;
            let mut conn = Conn { client, prepared };
            let ran = match apply(&mut conn, &shared, &worker, batch, Events::AllInOne) {
                Ok(None) => apply(&mut conn, &shared, &worker, batch, Events::OneAtATime),
                ran => ran,
            };
            let client = conn.client;
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
            let (client, _) = self.connected()?;
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

    /// The live connection and its prepared statements, made anew when
    /// there is none or it was lost.
    fn connected(&mut self) -> Result<(&mut Client, &mut Prepared), BatchError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            self.prepared.clear();
            let mut fresh = self
                .target
                .connect()
                .map_err(|e| BatchError(e.to_string()))?;
            by_key(&mut fresh).map_err(|e| BatchError(self.target.scrub(&e)))?;
            self.client = Some(fresh);
        }
        match self.client.as_mut() {
            Some(client) => Ok((client, &mut self.prepared)),
            None => Err(BatchError("no connection".into())),
        }
    }
}

/// Makes `client` plan by index: every statement of the writer finds its
/// rows by key (a batch's few sessions); planned on a table without
/// statistics yet (a new database) and kept prepared, a sequential scan
/// would cost more and more as the table grows.
pub(super) fn by_key(client: &mut Client) -> Result<(), postgres::Error> {
    client.batch_execute("SET enable_seqscan = off")
}

/// The writer's connection and the statements prepared on it.
struct Conn<'a> {
    client: &'a mut Client,
    prepared: &'a mut Prepared,
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
    conn: &mut Conn<'_>,
    shared: &Shared,
    worker: &super::Worker,
    batch: &[Request],
    events: Events,
) -> Result<Option<Vec<Outcome>>, Failed> {
    let before = |error| Failed {
        error,
        in_commit: None,
    };
    let prepared = &mut *conn.prepared;
    let mut tx = conn.client.transaction().map_err(before)?;
    // The sessions' rows first, in one statement each (rows.rs; their
    // outcomes are final); then every event of the batch in one statement
    // (bulk.rs).
    let mut appends: Vec<&Append> = Vec::new();
    let mut creates: Vec<Create<'_>> = Vec::new();
    let mut statuses: Vec<Status<'_>> = Vec::new();
    for req in batch {
        match req {
            Request::Append(a) => appends.push(a),
            Request::CreateSession { new, request, .. } => creates.push(Create { new, request }),
            Request::SetStatus {
                id,
                status,
                output,
                calls,
                at_ms,
                epoch,
                ..
            } => statuses.push(Status {
                id,
                status: *status,
                output: output.as_deref(),
                calls: *calls,
                at_ms: *at_ms,
                epoch: *epoch,
            }),
            Request::Flush(_) | Request::Release(_) => {}
            #[cfg(test)]
            Request::Stop => {}
        }
    }
    let created =
        rows::create_sessions(&mut tx, prepared, shared, worker, &creates).map_err(before)?;
    let set = rows::set_statuses(&mut tx, prepared, shared, &statuses).map_err(before)?;
    let mut appended = Vec::with_capacity(appends.len());
    let bulk = match (appends.is_empty(), events) {
        (true, _) => Bulk::Inserted,
        (false, Events::AllInOne) => bulk::insert(&mut tx, prepared, &appends).map_err(before)?,
        (false, Events::OneAtATime) => Bulk::ChainBroken,
    };
    match bulk {
        Bulk::Inserted => appended.extend(appends.iter().map(|_| Ok(()))),
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
        false => notify_events(&mut tx, prepared, &appends),
    }
    .and_then(|row| row.try_get::<_, i64>(0))
    .map_err(before)?;
    let outcomes = outcomes(batch, shared, appended, created, set);
    match tx.commit() {
        Ok(()) => Ok(Some(outcomes)),
        Err(error) => Err(Failed {
            error,
            in_commit: Some((xid, outcomes)),
        }),
    }
}

/// The batch's outcomes in its order, from those of its appends, its
/// new sessions and its statuses (each in the batch's order).
fn outcomes(
    batch: &[Request],
    shared: &Shared,
    appended: Vec<Result<(), String>>,
    created: Vec<Result<Created, StoreError>>,
    set: Vec<Result<(), StoreError>>,
) -> Vec<Outcome> {
    let (mut appended, mut created, mut set) =
        (appended.into_iter(), created.into_iter(), set.into_iter());
    let missing = "the request's outcome went missing";
    batch
        .iter()
        .map(|req| match req {
            Request::Append(_) => {
                Outcome::Appended(appended.next().unwrap_or_else(|| Err(missing.into())))
            }
            Request::CreateSession { .. } => Outcome::Created(
                created
                    .next()
                    .unwrap_or_else(|| Err(shared.error("a new session", missing))),
            ),
            Request::SetStatus { .. } => Outcome::Status(
                set.next()
                    .unwrap_or_else(|| Err(shared.error("a status update", missing))),
            ),
            Request::Flush(_) | Request::Release(_) => Outcome::Flushed,
            #[cfg(test)]
            Request::Stop => Outcome::Flushed,
        })
        .collect()
}

/// Tells the workers whose streams follow a session this batch extends
/// (`LISTEN lt_events`, leases.rs; the `followers` rows, followers.rs) to
/// read it now: no notice when nobody elsewhere follows them. Sent with
/// the commit (PostgreSQL delivers a notice only if it commits). The row
/// holds the transaction's id (`txid_current()`, read in the same round
/// trip; see the module note).
fn notify_events(
    tx: &mut Transaction<'_>,
    prepared: &mut Prepared,
    appends: &[&Append],
) -> Result<postgres::Row, postgres::Error> {
    let mut sessions: Vec<&str> = appends.iter().map(|a| a.session.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    let statement = prepared.get(tx, super::followers::NOTIFY_FOLLOWED)?;
    tx.query_one(&statement, &[&sessions])
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
            if n == 1 {
                // The tools' index, with the event (bulk.rs does the same).
                if let Some(tool) = &a.tool {
                    sp.execute(
                        "INSERT INTO session_tools (session, tool) VALUES ($1, $2) \
                         ON CONFLICT DO NOTHING",
                        &[&a.session, tool],
                    )?;
                }
            }
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
