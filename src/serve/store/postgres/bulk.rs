//! A batch's events in one statement: the group commit's fast path.
//!
//! ```text
//! WITH ins AS (INSERT INTO events SELECT … FROM unnest(sessions[], seqs[],
//!        hashes[], prevs[], lines[], epochs[]) WITH ORDINALITY ORDER BY n)
//! INSERT INTO session_tools SELECT DISTINCT … FROM unnest(the `proposed`
//!        events' sessions[], tools[]) ON CONFLICT DO NOTHING
//!   ok:    every event inserted, and the tools of the proposed ones
//!   LT001, LT002, 23505 (a seq taken already): the transaction is
//!          aborted; the writer rolls it back and runs the batch again
//!          appending one event at a time (writer.rs), which refuses exactly
//!          the events that break the chain, are fenced (written under a
//!          lease epoch no longer held) or whose seq is taken (or counts one
//!          stored already with the same hash as appended)
//! ```
//!
//! The tools' index (`?tool=`) is written here, from `Append::tool` (the
//! sink knows the event it appends): no trigger parses a line as JSON
//! (schema version 5). The two inserts are one statement: both or neither.
//!
//! No `ON CONFLICT` on the events: its speculative insertion (a probe of
//! the primary key before each row, then the row confirmed) was paid on
//! every row of every batch, for a case (a seq taken: another writer, a
//! batch run again) that is rare and now takes the slow path.
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

/// What the one statement did.
pub(super) enum Bulk {
    /// Every event was inserted (to be committed with the transaction).
    Inserted,
    /// An event broke the chain, was fenced or found its seq taken:
    /// nothing was inserted, and the transaction is aborted.
    ChainBroken,
}

/// The events of a batch, in the batch's order, and the tools of its
/// `proposed` events ($7, $8: their session and tool).
const INSERT: &str = "WITH ins AS (\
       INSERT INTO events (session, seq, hash, prev, line, epoch) \
       SELECT s, q, h, p, l, e \
       FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[]) \
            WITH ORDINALITY AS t(s, q, h, p, l, e, n) \
       ORDER BY n) \
     INSERT INTO session_tools (session, tool) \
     SELECT DISTINCT u.s, u.tool FROM unnest($7::text[], $8::text[]) AS u(s, tool) \
     ON CONFLICT DO NOTHING";

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
    let (tool_sessions, tools): (Vec<&str>, Vec<&str>) = appends
        .iter()
        .filter_map(|a| Some((a.session.as_str(), a.tool.as_deref()?)))
        .unzip();
    let done = prepared.get(tx, INSERT).and_then(|statement| {
        tx.execute(
            &statement,
            &[
                &sessions,
                &seqs,
                &hashes,
                &prevs,
                &lines,
                &epochs,
                &tool_sessions,
                &tools,
            ],
        )
    });
    match done {
        Ok(_) => Ok(Bulk::Inserted),
        Err(e)
            if matches!(
                e.code().map(|c| c.code()),
                Some(CHAIN_BROKEN | FENCED | TAKEN)
            ) =>
        {
            Ok(Bulk::ChainBroken)
        }
        Err(e) => Err(e),
    }
}

/// The SQLSTATE of a unique violation: an event's `(session, seq)` is
/// stored already.
const TAKEN: &str = "23505";
