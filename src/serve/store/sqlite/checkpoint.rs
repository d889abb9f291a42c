//! The checkpointer: copies the write-ahead log back into the database
//! file on a thread of its own, so the writer's commits seldom do it.
//!
//! ```text
//! writer: COMMIT ─▶ kick (a channel of one: kicks coalesce)
//! checkpointer: kick ─▶ at most every PERIOD ─▶ PRAGMA wal_checkpoint(PASSIVE)
//! ```
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses
//! `wal_autocheckpoint` pages, on the writer's connection: that commit
//! then also writes and fsyncs the database file while every session
//! waiting for it waits longer. A PASSIVE checkpoint on another connection
//! runs beside the writer (it takes no write lock; SQLite, "Write-Ahead
//! Logging" §Checkpointing). The writer keeps a large automatic threshold
//! (AUTO_PAGES) as the bound should this thread fall behind.

use rusqlite::Connection;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// Checkpoints run at most this often. A page that commits rewrite (the
/// last page of each table and index) is copied once per checkpoint, not
/// once per commit: at 50 ms the checkpointer took about three times the
/// CPU per session it takes at 250 ms; the WAL stays a few MiB under load.
const PERIOD: Duration = Duration::from_millis(250);

/// The writer connection's `wal_autocheckpoint` (pages of 4 KiB: 32 MiB):
/// reached only when the checkpointer falls behind.
pub const AUTO_PAGES: i64 = 8192;

/// Tells the checkpointer that something was committed.
pub struct Kick(SyncSender<()>);

impl Kick {
    /// After a commit: never blocks (a pending kick covers this one).
    pub fn committed(&self) {
        match self.0.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) | Err(TrySendError::Disconnected(())) => {}
        }
    }
}

/// A kick and the receiver [`run`] waits on.
pub fn channel() -> (Kick, Receiver<()>) {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    (Kick(tx), rx)
}

/// Checkpoints `conn`'s database after kicks until the [`Kick`] is gone.
/// A failed checkpoint is left to the next one (and to the writer's
/// automatic checkpoint): nothing committed depends on it.
pub fn run(conn: Connection, kicks: Receiver<()>) {
    let mut last = Instant::now();
    while kicks.recv().is_ok() {
        let wait = PERIOD.saturating_sub(last.elapsed());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        last = Instant::now();
    }
}
