//! The SQLite side of the writer thread (`../queue.rs` runs the loop and
//! group commit): one `BEGIN IMMEDIATE` transaction per batch, the chain
//! check against the tails the writer remembers, the session rows.
//!
//! ```text
//! BEGIN IMMEDIATE
//!   each append: chain check (seq = stored next, prev = stored last hash) ─▶ INSERT
//!                (session, seq, line: the line holds its hash and prev)
//!                (a `proposed` event: its tool INSERT OR IGNOREd into session_tools)
//!   each create_session: INSERT … ON CONFLICT (tenant, idempotency_key) DO NOTHING,
//!                        then its request INSERTed into `requests`
//!   each set_status: UPDATE
//! COMMIT (fsynced: synchronous=FULL) ─▶ kick the checkpointer (checkpoint.rs)
//! ```
//!
//! A request's own failure (a broken chain, a taken id) fails that request
//! alone and writes nothing for it: every other SQLite error fails the
//! whole batch (SQLite may have rolled the transaction back).

use super::super::queue::{extended_by_another, to_i64, Append, Outcome, Request, Transact};
use super::super::{Created, NewSession, SessionStatus};
use super::checkpoint::Kick;
use super::schema::{record_of, RawRecord, RECORD_COLUMNS};
use super::Shared;
use crate::log::{StoreError, ZERO_HASH};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};
use std::collections::HashMap;
use std::sync::Arc;

/// How many sessions' chain tails the writer remembers between batches
/// (those of live sinks; forgotten on release, all of them past this).
const KNOWN_TAILS: usize = 65_536;

/// A session's log as the transaction has it so far.
#[derive(Clone)]
struct Tail {
    next: u64,
    last: String,
}

/// The writer's connection and what it remembers between batches.
pub(super) struct SqliteWriter {
    pub conn: Connection,
    pub shared: Arc<Shared>,
    pub kick: Kick,
    /// The committed tail of each session a live sink writes: only this
    /// thread writes the file (the store's lock), so what it committed is
    /// what the file holds, and the chain check needs no read.
    known: HashMap<String, Tail>,
}

impl SqliteWriter {
    pub fn new(conn: Connection, shared: Arc<Shared>, kick: Kick) -> SqliteWriter {
        SqliteWriter {
            conn,
            shared,
            kick,
            known: HashMap::new(),
        }
    }
}

impl Transact for SqliteWriter {
    type Error = rusqlite::Error;

    fn apply(&mut self, batch: &[Request]) -> rusqlite::Result<Vec<Outcome>> {
        match apply(&mut self.conn, &self.shared, &self.known, batch) {
            Ok((outcomes, tails)) => {
                if self.known.len() + tails.len() > KNOWN_TAILS {
                    self.known.clear();
                }
                self.known.extend(tails);
                Ok(outcomes)
            }
            Err(e) => {
                // SQLite may have rolled back more than this batch believes.
                self.known.clear();
                Err(e)
            }
        }
    }

    fn released(&mut self, session: &str) {
        self.known.remove(session);
    }

    fn after_batch(&mut self) {
        self.kick.committed();
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
        // The last line's own hash (schema 4 keeps no column of it); a
        // line that is not JSON gives none, and no append continues it.
        let stored: Option<(i64, Option<String>)> = tx
            .prepare_cached(
                "SELECT seq, CASE WHEN json_valid(line) THEN json_extract(line, '$.hash') END \
                 FROM events WHERE session = ?1 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row([&a.session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let tail = match stored {
            Some((seq, hash)) => Tail {
                next: u64::try_from(seq).unwrap_or(0).saturating_add(1),
                last: hash.unwrap_or_default(),
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
        return Ok(Err(extended_by_another(&a.session, tail.next, a.seq)));
    }
    let inserted = tx
        .prepare_cached("INSERT INTO events (session, seq, line) VALUES (?1, ?2, ?3)")?
        .execute(params![a.session, to_i64(a.seq), a.line]);
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
    if let Some(tool) = &a.tool {
        // The index of the tools each session proposed (`?tool=`), in the
        // event's transaction.
        tx.prepare_cached("INSERT OR IGNORE INTO session_tools (session, tool) VALUES (?1, ?2)")?
            .execute(params![a.session, tool])?;
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
            "INSERT INTO sessions (id, tenant, profile, status, idempotency_key, \
             created_ms, updated_ms, output, calls) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, NULL, 0) \
             ON CONFLICT (tenant, idempotency_key) DO NOTHING",
        )?
        .execute(params![
            new.id,
            new.tenant,
            new.profile,
            SessionStatus::Running.as_str(),
            new.idempotency_key,
            new.created_ms,
        ]);
    match inserted {
        Ok(1) => {
            // In the same transaction: a session is never without it (a
            // stray row of the same id, in a damaged file, is replaced).
            tx.prepare_cached("INSERT OR REPLACE INTO requests (id, request) VALUES (?1, ?2)")?
                .execute(params![new.id, request])?;
            return Ok(Ok(Created::New));
        }
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
            .map_err(|e| shared.damaged(e)),
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
