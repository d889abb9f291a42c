//! The hub's side of many workers on one database (PostgreSQL leases):
//! starting to claim sessions, a lease lost, an outcome, approval or
//! cancel forwarded from another worker, and letting a session go.
//!
//! ```text
//! start_resuming ─▶ store.lease(hooks) ─▶ the store's lease thread:
//!     claimed(records) ─▶ resume_one each    lost(id) ─▶ lost: abandon a waiting session
//!     delivered(d) ─▶ Live (report / answer / cancel), or false: kept in the
//!                     mailbox until the session runs here and asked for it
//!     committed(id) ─▶ streams here wake
//! forward(id, kind, body) ─▶ store.deliver (api.rs, a session not running here)
//! let_go(id) ─▶ not finished here, never retried: another worker resumes it
//! ```

use super::hub::Hub;
use super::store::{Delivery, LeaseHooks, SessionStatus};
use crate::log::StoreError;
use serde_json::Value as Json;
use std::sync::Arc;

impl Hub {
    /// Stops running session `id` here without recording its end: it is
    /// another worker's now (`why`). Logged once; never retried.
    pub(super) fn let_go(&self, id: &str, why: &str) {
        eprintln!("lt serve: session {id}: let go: {why}; another worker resumes it from its log");
        self.store.let_go(id, false);
        self.unregister(id);
        self.followers.ended(id, None);
    }

    /// Starts resuming sessions: with leases (a shared store), this worker
    /// claims runnable sessions from now on (returns how many its first
    /// round took); without, every unfinished session is resumed now (how
    /// many).
    pub fn start_resuming(self: &Arc<Self>) -> Result<usize, StoreError> {
        let hub = Arc::downgrade(self);
        let (room, claimed, lost, delivered, committed) =
            (hub.clone(), hub.clone(), hub.clone(), hub.clone(), hub);
        let hooks = LeaseHooks {
            room: Box::new(move || {
                room.upgrade().map_or(0, |h| match h.accepting() {
                    true => h.max_sessions.saturating_sub(h.live_map().len()),
                    false => 0,
                })
            }),
            claimed: Box::new(move |records| {
                let Some(h) = claimed.upgrade() else { return };
                for rec in records {
                    let id = rec.id.clone();
                    let hub = Arc::clone(&h);
                    if let Err(e) = h.spawn(move || hub.resume_one(rec)) {
                        eprintln!("lt serve: session {id}: cannot start its thread: {e}");
                        h.store.let_go(&id, true);
                    }
                }
            }),
            lost: Box::new(move |id, why| {
                if let Some(h) = lost.upgrade() {
                    h.lost(id, why);
                }
            }),
            delivered: Box::new(move |d| match delivered.upgrade() {
                Some(h) => h.delivered(d),
                None => false,
            }),
            committed: Box::new(move |id| {
                if let Some(h) = committed.upgrade() {
                    h.bump(Some(id));
                }
            }),
        };
        if let Some(claimed) = self.store.lease(hooks) {
            return Ok(claimed);
        }
        self.resume_unfinished()
    }

    /// Session `id`'s lease was taken over: a session waiting on the API
    /// (which appends nothing until answered) is abandoned now; a running
    /// one is stopped by the database at its next write.
    fn lost(&self, id: &str, why: &str) {
        eprintln!("lt serve: session {id}: {why}; this worker stops running it");
        let live = self.live_map().get(id).cloned();
        if let Some(l) = live {
            if matches!(
                l.status(),
                SessionStatus::WaitingClient | SessionStatus::WaitingApproval
            ) {
                l.cancel
                    .abandon("the session's lease was taken over by another worker");
            }
        }
    }

    /// A client outcome, approval or cancel posted to another worker for a
    /// session this worker holds. `false`: not yet (the session was claimed
    /// but does not run here yet, or has not asked for it yet, as when it
    /// is resuming): it stays in the mailbox for the next round, until it
    /// is overdue (`store::OVERDUE`): then an id the session does not know
    /// is refused, as the worker running it refuses one posted to it.
    fn delivered(&self, d: &Delivery) -> bool {
        let Some(live) = self.live_map().get(&d.session).cloned() else {
            return false;
        };
        let text = |k: &str| {
            d.body
                .get(k)
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string()
        };
        let refused = match d.kind.as_str() {
            "cancel" => {
                live.cancel.cancel("cancelled through the API");
                None
            }
            // Not asked for yet (the session may be resuming): kept, until
            // overdue; then refused as an unknown id, and logged.
            "outcome" if !d.overdue && !live.knows_call(&text("call_id")) => return false,
            "approval" if !d.overdue && !live.knows_approval(&text("approval_id")) => return false,
            "outcome" => live.report(&text("call_id"), &text("line")).err(),
            "approval" => live
                .answer(
                    &text("approval_id"),
                    crate::control::approver::ApprovalAnswer {
                        granted: d.body.get("granted").and_then(Json::as_bool) == Some(true),
                        by: "api".into(),
                        reason: text("reason"),
                    },
                )
                .err(),
            other => {
                eprintln!(
                    "lt serve: session {}: unknown forwarded kind {other}",
                    d.session
                );
                None
            }
        };
        if let Some(r) = refused {
            let msg = match r {
                super::live::Refusal::Unknown(m)
                | super::live::Refusal::Repeated(m)
                | super::live::Refusal::Gone(m) => m,
            };
            eprintln!(
                "lt serve: session {}: forwarded {} refused: {msg}",
                d.session, d.kind
            );
        }
        true
    }

    /// Posts `kind`/`body` for session `id`, which runs on another worker.
    /// `Ok(false)`: the store cannot (one server).
    pub fn forward(&self, id: &str, kind: &str, body: &Json) -> Result<bool, StoreError> {
        self.store.deliver(id, kind, body)
    }
}
