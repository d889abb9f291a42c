//! A batch's events in one statement: the group commit's fast path.
//!
//! ```text
//! WITH ins AS (INSERT INTO events SELECT … FROM unnest(sessions[], seqs[],
//!        hashes[], prevs[], lines[]) WITH ORDINALITY ORDER BY n
//!        ON CONFLICT (session, seq) DO NOTHING RETURNING session, seq),
//!      tools AS (INSERT INTO session_tools the (session, tool) of each
//!        `proposed` event ins inserted, from unnest(…) of those alone)
//! SELECT session, seq FROM ins
//!   ok:    an event not returned had its seq taken: refused (or the same
//!          event, stored already: appended)
//!   LT001, LT002: the transaction is aborted; the writer rolls it back and
//!          runs the batch again appending one event at a time (writer.rs),
//!          which refuses exactly the events that break the chain or are
//!          fenced (written under a lease epoch no longer held)
//! ```
//!
//! The tools' index (`?tool=`) is written here, from `Append::tool` (the
//! sink knows the event it appends): no trigger parses a line as JSON
//! (schema version 5). Only the rows inserted are indexed: an event
//! refused because its seq was taken adds no tool to the session.
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

/// The events of a batch, in the batch's order, and the tools of its
/// `proposed` events ($7, $8, $9: their session, seq and tool).
const INSERT: &str = "WITH ins AS (\
       INSERT INTO events (session, seq, hash, prev, line, epoch) \
       SELECT s, q, h, p, l, e \
       FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[]) \
            WITH ORDINALITY AS t(s, q, h, p, l, e, n) \
       ORDER BY n \
       ON CONFLICT (session, seq) DO NOTHING \
       RETURNING session, seq), \
     tools AS (\
       INSERT INTO session_tools (session, tool) \
       SELECT DISTINCT ins.session, u.tool \
       FROM ins JOIN unnest($7::text[], $8::bigint[], $9::text[]) AS u(s, q, tool) \
            ON u.s = ins.session AND u.q = ins.seq \
       ON CONFLICT DO NOTHING) \
     SELECT session, seq FROM ins";

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
    let proposed: Vec<(&str, i64, &str)> = appends
        .iter()
        .filter_map(|a| Some((a.session.as_str(), to_i64(a.seq), a.tool.as_deref()?)))
        .collect();
    let tool_sessions: Vec<&str> = proposed.iter().map(|p| p.0).collect();
    let tool_seqs: Vec<i64> = proposed.iter().map(|p| p.1).collect();
    let tools: Vec<&str> = proposed.iter().map(|p| p.2).collect();
    let rows = prepared.get(tx, INSERT).and_then(|statement| {
        tx.query(
            &statement,
            &[
                &sessions,
                &seqs,
                &hashes,
                &prevs,
                &lines,
                &epochs,
                &tool_sessions,
                &tool_seqs,
                &tools,
            ],
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
