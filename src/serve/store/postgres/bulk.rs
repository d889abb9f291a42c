//! A batch's events in one statement: the group commit's fast path.
//!
//! ```text
//! INSERT INTO events SELECT … FROM unnest(sessions[], seqs[], hashes[],
//!        prevs[], lines[]) WITH ORDINALITY ORDER BY n
//!        ON CONFLICT (session, seq) DO NOTHING RETURNING session, seq
//!   ok:    an event not returned had its seq taken: refused (or the same
//!          event, stored already: appended)
//!   LT001, LT002: the transaction is aborted; the writer rolls it back and
//!          runs the batch again appending one event at a time (writer.rs),
//!          which refuses exactly the events that break the chain or are
//!          fenced (written under a lease epoch no longer held)
//! ```
//!
//! No savepoint around it: SAVEPOINT and RELEASE were two round trips of
//! every batch, for a case (a broken chain, a fenced worker) that is rare.
//!
//! One statement instead of one per event: the writer's round trips to
//! the server, not the server's work, bounded the PostgreSQL store's
//! throughput (docs/performance.md). The statement trigger (schema.rs,
//! version 4) checks every row once the statement inserted them all: a
//! session's consecutive events in one batch chain onto each other (the
//! row of seq n-1 in the statement's own rows), the first onto the stored
//! log, and each session's lease is read once for all its rows.

use super::super::queue::{to_i64, Append};
use super::prepared::Prepared;
use super::schema::{CHAIN_BROKEN, FENCED};
use postgres::Transaction;
use std::collections::HashSet;

/// What the one statement did.
pub(super) enum Bulk {
    /// Committed to the savepoint: the `(session, seq)` of each event
    /// inserted (an event missing had its seq taken already).
    Inserted(HashSet<(String, i64)>),
    /// An event broke the chain or was fenced: nothing was inserted, and
    /// the transaction is aborted.
    ChainBroken,
}

/// The events of a batch, in the batch's order.
const INSERT: &str = "INSERT INTO events (session, seq, hash, prev, line, epoch) \
     SELECT s, q, h, p, l, e \
     FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[]) \
          WITH ORDINALITY AS t(s, q, h, p, l, e, n) \
     ORDER BY n \
     ON CONFLICT (session, seq) DO NOTHING \
     RETURNING session, seq";

/// Inserts `appends` (in order) in one statement.
pub(super) fn insert(
    tx: &mut Transaction<'_>,
    prepared: &mut Prepared,
    appends: &[&Append],
) -> Result<Bulk, postgres::Error> {
    let sessions: Vec<&str> = appends.iter().map(|a| a.session.as_str()).collect();
    let seqs: Vec<i64> = appends.iter().map(|a| to_i64(a.seq)).collect();
    let hashes: Vec<&str> = appends.iter().map(|a| a.hash.as_str()).collect();
    let prevs: Vec<&str> = appends.iter().map(|a| a.prev.as_str()).collect();
    let lines: Vec<&str> = appends.iter().map(|a| a.line.as_str()).collect();
    let epochs: Vec<i64> = appends.iter().map(|a| a.epoch).collect();
    let rows = prepared.get(tx, INSERT).and_then(|statement| {
        tx.query(
            &statement,
            &[&sessions, &seqs, &hashes, &prevs, &lines, &epochs],
        )
    });
    match rows {
        Ok(rows) => rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, postgres::Error>>()
            .map(Bulk::Inserted),
        Err(e) if matches!(e.code().map(|c| c.code()), Some(CHAIN_BROKEN | FENCED)) => {
            Ok(Bulk::ChainBroken)
        }
        Err(e) => Err(e),
    }
}
