//! What a database store, its sinks and its writer thread share: the
//! sessions this process writes and has lost, the leases it holds, the
//! commit notices, and the store's name for errors (`queue.rs` runs the
//! writer; `claim.rs`, `sink.rs` and the stores read this).

use super::{CommitObserver, Committed};
use crate::log::StoreError;
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use tokio::sync::broadcast;

/// How many commit notices a subscriber may fall behind before it sees
/// `Lagged`.
pub const COMMIT_CHANNEL: usize = 4096;

/// What a store, its sinks and its writer thread share.
pub struct Shared {
    /// The store as errors name it (a file, a URL without its password).
    pub name: String,
    /// The sessions a live sink of this process is appending to.
    pub writing: Mutex<HashSet<String>>,
    /// Where commits are announced.
    pub commits: broadcast::Sender<Committed>,
    /// Told of each commit.
    pub observer: Mutex<Option<CommitObserver>>,
    /// Sinks alive (each holds a sender of the writer's queue).
    pub sinks: AtomicUsize,
    /// The sessions whose lease this worker holds, with the lease's epoch
    /// (PostgreSQL with leases; empty otherwise): a sink writes its events
    /// under the epoch it found here, and a fenced append removes its
    /// session.
    pub leases: Mutex<HashMap<String, i64>>,
    /// Sessions whose lease this worker lost (taken over, or a write
    /// fenced): their status is not this worker's to set any more.
    pub lost: Mutex<HashSet<String>>,
    /// Damaged session records already named on stderr (`damage.rs`).
    pub damaged: Mutex<HashSet<String>>,
    /// Until when (this process's clock) every lease held here is known
    /// to be valid: the start of the last lease round that succeeded plus
    /// the lease's length (`None`: no round has succeeded, or no leases).
    /// A sink buffers an idempotent call's `scheduled` only before then
    /// (`sink.rs`): a worker paused past its lease starts no call.
    pub held_until: Mutex<Option<Instant>>,
}

impl Shared {
    /// The shared state of the store called `name`.
    pub fn new(name: String) -> Shared {
        let (commits, _) = broadcast::channel(COMMIT_CHANNEL);
        Shared {
            name,
            writing: Mutex::new(HashSet::new()),
            commits,
            observer: Mutex::new(None),
            sinks: AtomicUsize::new(0),
            leases: Mutex::new(HashMap::new()),
            lost: Mutex::new(HashSet::new()),
            damaged: Mutex::new(HashSet::new()),
            held_until: Mutex::new(None),
        }
    }

    /// Every lease held here is valid until `until` ([`Shared::held_until`]).
    pub fn renewed(&self, until: Instant) {
        *self
            .held_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(until);
    }

    /// Whether this worker still holds `session`'s lease at `epoch` and
    /// the leases are known valid now ([`Shared::held_until`]).
    pub fn holds_now(&self, session: &str, epoch: i64) -> bool {
        let until = *self
            .held_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.epoch_of(session) == epoch && until.is_some_and(|t| Instant::now() < t)
    }

    /// The sessions this worker lost ([`Shared::lost`]).
    pub fn lost(&self) -> MutexGuard<'_, HashSet<String>> {
        self.lost.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Session `id` is no longer this worker's (`epoch`: the lease it held,
    /// forgotten only if it is still that one).
    pub fn lose(&self, id: &str, epoch: i64) -> bool {
        let mut leases = self.leases();
        if leases.get(id) != Some(&epoch) {
            return false;
        }
        leases.remove(id);
        self.lost().insert(id.to_string());
        true
    }

    /// The held leases ([`Shared::leases`]).
    pub fn leases(&self) -> MutexGuard<'_, HashMap<String, i64>> {
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The epoch of the lease held on `session` (0: none, no leases).
    pub fn epoch_of(&self, session: &str) -> i64 {
        self.leases().get(session).copied().unwrap_or(0)
    }

    pub fn writing(&self) -> MutexGuard<'_, HashSet<String>> {
        self.writing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A store error about this database: `what` and the database's message.
    pub fn error(&self, what: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::Io(io::Error::other(format!(
            "the store {}: {what}: {e}",
            self.name
        )))
    }

    /// The error of a write when the writer thread is gone.
    pub fn writer_gone(&self) -> String {
        format!(
            "the store {} cannot be written: its writer thread has stopped",
            self.name
        )
    }
}
