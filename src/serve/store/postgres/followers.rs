//! Which sessions a stream on this worker follows while another worker
//! writes them: the `followers` table (schema version 5), so that a batch
//! sends its `lt_events` notice only when someone elsewhere reads it.
//!
//! ```text
//! hub.watch(id) ─▶ follow(id, true): not held here (its writer is another
//!     worker's) and not followed yet ─▶ INSERT INTO followers (id, me)
//! hub.release(id) with no stream left here ─▶ follow(id, false) ─▶ DELETE
//! the writer's batch (writer.rs): pg_notify('lt_events', the batch's
//!     sessions that have a follower row), else no notice at all
//! the lease thread, on (re)connecting: DELETE the rows of workers whose
//!     lease connection is gone (a worker killed mid-stream)
//! ```
//!
//! Before version 5 every batch of every worker notified every worker
//! (N workers: N² notices, each a wake-up of a lease thread and of
//! PostgreSQL's backends); a stream following a session of its own
//! worker needs none (the writer tells its streams in-process).
//!
//! Polling stays the fallback: a stream re-reads at least once a second.
//! A batch whose notice check ran just before a follower row committed
//! sends none; the stream's first read (after its row committed) or its
//! next poll sees that batch's events.

use super::PostgresStore;
use postgres::types::Type;
use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// The sessions this worker registered as followed (a row each).
#[derive(Default)]
pub(super) struct Following(Mutex<HashSet<String>>);

impl Following {
    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The statement the lease thread runs on (re)connecting: drops the rows
/// of workers whose lease connection is gone.
pub(super) const FORGET_THE_GONE: &str = "DELETE FROM followers f \
     WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a \
                       WHERE a.application_name = 'lt-worker-' || f.worker)";

/// The notice of a batch (writer.rs): the transaction's id, and one
/// `pg_notify('lt_events', …)` per 200 of `$1`'s sessions that have a
/// follower row (none when no stream elsewhere follows them).
pub(super) const NOTIFY_FOLLOWED: &str = "SELECT txid_current(), \
     (SELECT count(pg_notify('lt_events', c.list)) FROM \
        (SELECT string_agg(f.session, ',') AS list \
         FROM (SELECT d.session, (row_number() OVER () - 1) / 200 AS chunk \
               FROM (SELECT DISTINCT session FROM followers \
                     WHERE session = ANY($1::text[])) d) f \
         GROUP BY f.chunk) c)";

impl PostgresStore {
    /// Registers (`on`) or drops this worker's follower row of session
    /// `id`. Nothing for a session this worker writes (its streams are
    /// told in-process), nor twice for the same session. A failure is
    /// logged: the stream still polls.
    pub(super) fn follow_session(&self, id: &str, on: bool) {
        let changed = match on {
            true => {
                !self.shared.leases().contains_key(id) && self.following.set().insert(id.into())
            }
            false => self.following.set().remove(id),
        };
        if !changed {
            return;
        }
        let (session, worker) = (id.to_string(), self.worker.id.clone());
        let done = self
            .readers
            .read("cannot record a stream's session", move |c| {
                let sql = match on {
                    true => {
                        "INSERT INTO followers (session, worker) VALUES ($1, $2) \
                     ON CONFLICT DO NOTHING"
                    }
                    false => "DELETE FROM followers WHERE session = $1 AND worker = $2",
                };
                c.query_typed(sql, &[(&session, Type::TEXT), (&worker, Type::TEXT)])
                    .map(|_| ())
            });
        if let Err(e) = done {
            eprintln!("lt serve: session {id}: {e}; its stream here polls the store instead");
        }
    }
}
