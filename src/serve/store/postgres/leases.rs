//! Leases: which worker runs which session when many `lt serve` processes
//! share one database. One thread per worker, on a connection of its own
//! named `lt-worker-<id>` (so other workers see in `pg_stat_activity`
//! whether it is alive), does every lease write of this worker.
//!
//! ```text
//! every round (lease_renew_ms, or at once on a NOTIFY lt_mailbox; a NOTIFY
//! lt_events, sent only for sessions a stream here follows (followers.rs),
//! only wakes the event streams here):
//!   renew:  UPDATE leases SET expires = now + lease
//!           WHERE (session, epoch) is one this worker holds AND owner = me
//!           ── a held session not renewed was taken over: lost(id)
//!   let go: sessions ended or abandoned here: owner NULL, expires -infinity
//!           (abandoned ones are taken over at once by another worker)
//!   claim:  UPDATE leases SET owner = me, epoch = epoch + 1, expires = now + lease
//!           FROM (SELECT … `unfinished` sessions whose lease expired, or whose
//!                 owner's lease connection is gone … FOR UPDATE OF l SKIP LOCKED)
//!           ── claimed(records): the hub resumes them from the log
//!   mailbox: SELECT … FROM mailbox WHERE session is held ORDER BY id
//!           ── delivered(…): outcomes, approvals, cancels posted to another worker
//!           ── DELETE the ones taken; the others (a session claimed but not
//!              started here yet) stay for the next round, never dropped
//! ```
//!
//! Invariant: the database, not this thread's timing, keeps a session to
//! one writer. A claim bumps the epoch under `FOR UPDATE`; the events
//! trigger reads the lease `FOR KEY SHARE` and refuses (LT002) an event of
//! an older epoch, and `set_status` checks the epoch the same way. A paused
//! worker whose lease was taken over is fenced at its next write, whatever
//! its clock says.

use super::super::{Delivery, LeaseHooks, OVERDUE};
use super::schema::{record_of, RECORD_COLUMNS};
use super::url::Target;
use super::Worker;
use crate::serve::store::shared::Shared;
use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the hub asks of the lease thread.
pub(super) enum LetGo {
    /// The session ended here: stop renewing its lease.
    Ended(String),
    /// The session was abandoned here (shutdown, lost waits): hand its
    /// lease back so another worker takes it at once.
    Abandoned(String),
}

/// The lease thread's state.
pub(super) struct Leases {
    pub target: Target,
    pub worker: Worker,
    pub renew: Duration,
    pub shared: Arc<Shared>,
    pub hooks: LeaseHooks,
    pub let_go: Receiver<LetGo>,
    /// Told how many sessions the first round claimed (then `None`).
    pub first: Option<SyncSender<usize>>,
    /// When each mailbox row left waiting was first read (by its id).
    pub waiting_since: HashMap<i64, Instant>,
}

/// The final statuses, as SQL.
const FINAL: &str = "('ended', 'failed', 'cancelled')";

impl Leases {
    /// Runs rounds until the store is dropped (the `let_go` channel closes).
    pub(super) fn run(mut self) {
        let target = self.target.named(&format!("lt-worker-{}", self.worker.id));
        let mut client: Option<Client> = None;
        let mut complained = false;
        loop {
            let started = Instant::now();
            if client.as_ref().is_none_or(Client::is_closed) {
                client = match target.connect() {
                    Ok(mut c) => match c
                        .batch_execute("LISTEN lt_mailbox; LISTEN lt_events")
                        .and_then(|()| c.batch_execute(super::followers::FORGET_THE_GONE))
                    {
                        Ok(()) => Some(c),
                        Err(e) => {
                            self.complain(&mut complained, &target.scrub(&e));
                            None
                        }
                    },
                    Err(e) => {
                        self.complain(&mut complained, &e.message);
                        None
                    }
                };
            }
            let Some(c) = client.as_mut() else {
                if let Some(first) = self.first.take() {
                    let _ = first.send(0);
                }
                // Unreachable: what was let go expires on its own.
                if self.take_let_go().is_none() {
                    return;
                }
                std::thread::sleep(self.renew);
                continue;
            };
            let round = self.round(c);
            if let Some(first) = self.first.take() {
                let _ = first.send(match &round {
                    Ok(Some(n)) => *n,
                    _ => 0,
                });
            }
            match round.map(|claimed| claimed.is_some()) {
                Ok(true) => {
                    // Renewed after `started`: each lease held (and each
                    // claimed or created since) lasts past this.
                    let lease =
                        Duration::from_millis(u64::try_from(self.worker.lease_ms).unwrap_or(0));
                    self.shared.renewed(started + lease);
                    if complained {
                        eprintln!(
                            "lt serve: worker {}: the store answers again",
                            self.worker.id
                        );
                        complained = false;
                    }
                }
                Ok(false) => return,
                Err(e) => {
                    self.complain(&mut complained, &target.scrub(&e));
                    if super::url::is_lost(&e) || c.is_closed() {
                        client = None;
                    }
                }
            }
            let Some(c) = client.as_mut() else { continue };
            self.wait(c, started);
        }
    }

    /// Waits for the next round: until `renew` after `started`, or a
    /// mailbox notice. An `lt_events` notice (sent with a batch that
    /// extends a session a stream here follows) only wakes the streams
    /// here: a round per batch was
    /// PostgreSQL's second busiest backend under load (its claim and
    /// mailbox queries read the sessions table).
    fn wait(&self, c: &mut Client, started: Instant) {
        let mut notices = c.notifications();
        loop {
            let left = self.renew.saturating_sub(started.elapsed());
            if left.is_zero() {
                return;
            }
            let next = notices.timeout_iter(left).next();
            match next {
                Ok(Some(n)) => {
                    self.notice(&n);
                    if n.channel() == "lt_mailbox" {
                        // The rest of a burst, without waiting.
                        let mut pending = notices.iter();
                        while let Ok(Some(n)) = pending.next() {
                            self.notice(&n);
                        }
                        return;
                    }
                }
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// A notice: another worker committed events of these sessions (a
    /// stream here may follow them), or posted to the mailbox (read at
    /// the round that follows).
    fn notice(&self, n: &postgres::Notification) {
        if n.channel() == "lt_events" {
            for session in n.payload().split(',').filter(|s| !s.is_empty()) {
                (self.hooks.committed)(session);
            }
        }
    }

    /// Logs a store failure once until it answers again.
    fn complain(&self, complained: &mut bool, why: &str) {
        if !*complained {
            eprintln!(
                "lt serve: worker {}: cannot renew or claim leases: {why}; retrying every {} ms",
                self.worker.id,
                self.renew.as_millis()
            );
            *complained = true;
        }
    }

    /// Takes what the hub let go: forgotten here; the abandoned ones with
    /// the epoch held (to hand back). `None`: the store was dropped.
    fn take_let_go(&mut self) -> Option<Vec<(String, i64)>> {
        let mut abandoned = Vec::new();
        loop {
            match self.let_go.try_recv() {
                Ok(LetGo::Ended(id)) => {
                    self.shared.leases().remove(&id);
                    self.shared.lost().remove(&id);
                }
                Ok(LetGo::Abandoned(id)) => {
                    self.shared.lost().remove(&id);
                    if let Some(epoch) = self.shared.leases().remove(&id) {
                        abandoned.push((id, epoch));
                    }
                }
                Err(TryRecvError::Empty) => return Some(abandoned),
                Err(TryRecvError::Disconnected) => return None,
            }
        }
    }

    /// One round: let go, renew, claim, read the mailbox: how many
    /// sessions it claimed. `Ok(None)`: the store was dropped.
    fn round(&mut self, c: &mut Client) -> Result<Option<usize>, postgres::Error> {
        let Some(abandoned) = self.take_let_go() else {
            return Ok(None);
        };
        for (id, epoch) in &abandoned {
            c.execute(
                "UPDATE leases SET owner = NULL, expires = '-infinity' \
                 WHERE session = $1 AND epoch = $2 AND owner = $3",
                &[id, epoch, &self.worker.id],
            )?;
        }
        self.renew_held(c)?;
        let claimed = self.claim(c)?;
        self.read_mailbox(c)?;
        Ok(Some(claimed))
    }

    /// Renews every held lease; a session whose lease moved on is lost.
    fn renew_held(&mut self, c: &mut Client) -> Result<(), postgres::Error> {
        let held: HashMap<String, i64> = self.shared.leases().clone();
        if held.is_empty() {
            return Ok(());
        }
        let (ids, epochs): (Vec<&str>, Vec<i64>) =
            held.iter().map(|(s, e)| (s.as_str(), *e)).unzip();
        // Renewed where this worker still holds the epoch; the rest whose
        // row exists moved on (a row not committed yet, a new session's,
        // is neither).
        let moved: Vec<String> = c
            .query(
                "WITH h AS (SELECT * FROM unnest($3::text[], $4::bigint[]) AS h(s, e)), \
                 r AS (UPDATE leases l \
                       SET expires = clock_timestamp() + $2::bigint * interval '1 millisecond' \
                       FROM h WHERE l.session = h.s AND l.epoch = h.e AND l.owner = $1 \
                       RETURNING l.session) \
                 SELECT l.session FROM leases l JOIN h ON l.session = h.s \
                 WHERE l.session NOT IN (SELECT session FROM r)",
                &[&self.worker.id, &self.worker.lease_ms, &ids, &epochs],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for id in moved {
            let Some(&epoch) = held.get(&id) else {
                continue;
            };
            // Let go or claimed again meanwhile: not this lease.
            if !self.shared.lose(&id, epoch) {
                continue;
            }
            let why = format!("its lease (epoch {epoch}) was taken over by another worker");
            (self.hooks.lost)(&id, &why);
        }
        Ok(())
    }

    /// Claims runnable sessions, as many as the hub has room for: how many.
    fn claim(&mut self, c: &mut Client) -> Result<usize, postgres::Error> {
        let room = (self.hooks.room)();
        if room == 0 {
            return Ok(0);
        }
        let limit = i64::try_from(room.min(64)).unwrap_or(64);
        // The unfinished sessions by their table (schema.rs, version 6):
        // oldest first, by index, never reading `sessions`.
        let sql =
            "WITH c AS (SELECT l.session FROM leases l JOIN unfinished s ON s.session = l.session \
               WHERE (l.expires < clock_timestamp() \
                      OR (l.owner IS NOT NULL AND l.owner <> $1 \
                          AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a \
                                          WHERE a.application_name = 'lt-worker-' || l.owner))) \
               ORDER BY s.created_ms, s.session LIMIT $3 \
               FOR UPDATE OF l SKIP LOCKED) \
             UPDATE leases l SET owner = $1, epoch = l.epoch + 1, \
               expires = clock_timestamp() + $2::bigint * interval '1 millisecond' \
             FROM c WHERE l.session = c.session RETURNING l.session, l.epoch";
        let claimed: Vec<(String, i64)> = c
            .query(sql, &[&self.worker.id, &self.worker.lease_ms, &limit])?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        if claimed.is_empty() {
            return Ok(0);
        }
        let ids: Vec<&str> = claimed.iter().map(|(s, _)| s.as_str()).collect();
        {
            let mut leases = self.shared.leases();
            let mut lost = self.shared.lost();
            for (id, epoch) in &claimed {
                leases.insert(id.clone(), *epoch);
                lost.remove(id);
            }
        }
        let rows = c.query(
            &format!(
                "SELECT {RECORD_COLUMNS} FROM sessions WHERE id = ANY($1) ORDER BY created_ms, id"
            ),
            &[&ids],
        )?;
        let records = self.shared.readable(rows.iter().map(record_of));
        (self.hooks.claimed)(records);
        Ok(claimed.len())
    }

    /// Hands the hub the deliveries for held sessions, in the order they
    /// were posted, and deletes those it took; a session's deliveries for a
    /// call or approval after one it left wait with it (their order kept),
    /// and one left past [`OVERDUE`] is handed on as overdue (refused as an
    /// unknown id). Then drops those of ended sessions.
    fn read_mailbox(&mut self, c: &mut Client) -> Result<(), postgres::Error> {
        let held: Vec<String> = self.shared.leases().keys().cloned().collect();
        if !held.is_empty() {
            let rows = c.query(
                "SELECT session, kind, body, id FROM mailbox WHERE session = ANY($1) ORDER BY id",
                &[&held],
            )?;
            let mut taken: Vec<i64> = Vec::new();
            // What waits: a delivery waits behind an earlier one of the
            // same session for the same call or approval (their order
            // kept), not behind another id's (one that never comes would
            // hold every later one back).
            let mut waiting: HashSet<(String, String)> = HashSet::new();
            let now = Instant::now();
            for r in &rows {
                let (session, kind, id): (String, String, i64) = (r.get(0), r.get(1), r.get(3));
                let body: String = r.get(2);
                let Ok(body) = serde_json::from_str::<serde_json::Value>(&body) else {
                    // Not JSON (never written by deliver): nothing to do with it.
                    taken.push(id);
                    continue;
                };
                let of = ["call_id", "approval_id"]
                    .iter()
                    .find_map(|k| body.get(*k).and_then(serde_json::Value::as_str))
                    .unwrap_or("")
                    .to_string();
                let key = (session.clone(), format!("{kind}:{of}"));
                if waiting.contains(&key) {
                    continue;
                }
                let since = *self.waiting_since.entry(id).or_insert(now);
                let d = Delivery {
                    session,
                    kind,
                    body,
                    overdue: now.duration_since(since) >= OVERDUE,
                };
                match (self.hooks.delivered)(&d) {
                    true => taken.push(id),
                    false => {
                        waiting.insert(key);
                    }
                }
            }
            for id in &taken {
                self.waiting_since.remove(id);
            }
            let read: HashSet<i64> = rows.iter().map(|r| r.get::<_, i64>(3)).collect();
            self.waiting_since.retain(|id, _| read.contains(id));
            if !taken.is_empty() {
                c.execute("DELETE FROM mailbox WHERE id = ANY($1)", &[&taken])?;
            }
        }
        c.execute(
            &format!(
                "DELETE FROM mailbox m USING sessions s WHERE s.id = m.session AND s.status IN {FINAL}"
            ),
            &[],
        )?;
        Ok(())
    }
}
