//! Durability off the writer's path: the writer commits a batch without
//! waiting for the disk, and the answering thread makes the batches it
//! holds durable with one `fsync` before anything of them is answered or
//! announced; a read returns only once every transaction it could have
//! seen is durable.
//!
//! ```text
//! writer:    number = begin_batch() ─▶ BEGIN … COMMIT (written, not synced)
//!            ─▶ hand the batch to the answering thread, take the next one
//! answering: the batches waiting (k..=n) ─▶ Sync::sync (one fsync) ─▶
//!            synced_through(n) ─▶ answer and announce them
//! a reader:  read ─▶ wait_read(): until synced ≥ the batches numbered
//!            when the read ended (a batch is numbered before it commits)
//! ```
//!
//! SQLite with `synchronous=NORMAL` in WAL mode writes a commit's frames
//! without an `fsync` and stays consistent after a crash, but may lose the
//! last transactions after a power loss (SQLite, "Write-Ahead Logging" and
//! `PRAGMA synchronous`); the `fsync` here closes that gap before anybody
//! is told. The writer's next batch runs while the disk syncs the last
//! one: group commit with the sync pipelined, as PostgreSQL's WAL writer
//! and MySQL's binary-log group commit do.
//!
//! Invariant: nothing of batch `k` is answered, announced or returned by a
//! read before a sync that began after batch `k` committed succeeded. A
//! failed sync is final ([`Durability::failed`]): what is on the disk is
//! unknown (Linux may have dropped the pages that failed, so a later sync
//! could succeed without them), so every later batch and read fails too.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Makes what the database wrote so far durable (one call: one `fsync`).
pub trait Sync: Send {
    /// Errors: the file cannot be opened or synced.
    fn sync(&mut self) -> io::Result<()>;
}

/// The batches numbered, the batches durable, and a failure that ends
/// both.
#[derive(Default)]
pub struct Durability {
    /// Batches numbered so far (the last one's number).
    numbered: AtomicU64,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Every batch up to this number is durable.
    synced: u64,
    /// Why a sync failed (final).
    failed: Option<String>,
}

impl Durability {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Numbers the next batch; the writer calls it before the batch's
    /// transaction commits.
    pub fn begin_batch(&self) -> u64 {
        self.numbered.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Every batch up to `number` is durable.
    pub fn synced_through(&self, number: u64) {
        let mut st = self.state();
        st.synced = st.synced.max(number);
        drop(st);
        self.changed.notify_all();
    }

    /// A sync failed with `why`: nothing from now on is durable.
    pub fn fail(&self, why: String) {
        let mut st = self.state();
        st.failed.get_or_insert(why);
        drop(st);
        self.changed.notify_all();
    }

    /// Why a sync failed, if one did.
    pub fn failed(&self) -> Option<String> {
        self.state().failed.clone()
    }

    /// After a read: waits until every batch numbered by now is durable
    /// (at most a commit and a sync away). Errors: a sync failed.
    pub fn wait_read(&self) -> Result<(), String> {
        let target = self.numbered.load(Ordering::SeqCst);
        let mut st = self.state();
        loop {
            if let Some(why) = &st.failed {
                return Err(why.clone());
            }
            if st.synced >= target {
                return Ok(());
            }
            st = self
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// An SQLite database's write-ahead log (`FILE-wal`), synced with
/// `fdatasync` through a descriptor of its own (a sync is of the file, not
/// of the descriptor). Reopened when the file was replaced; the directory
/// is synced once after the log is first opened, so its entry is durable.
pub struct WalFile {
    path: PathBuf,
    open: Option<(File, u64)>,
}

impl WalFile {
    /// The write-ahead log of the database at `db`.
    pub fn of(db: &std::path::Path) -> WalFile {
        let mut name = db.as_os_str().to_owned();
        name.push("-wal");
        WalFile {
            path: PathBuf::from(name),
            open: None,
        }
    }
}

impl Sync for WalFile {
    fn sync(&mut self) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let ino = match std::fs::metadata(&self.path) {
            Ok(m) => m.ino(),
            // No log (nothing written yet, or every connection closed and
            // SQLite checkpointed it into the database, synced): nothing
            // of it to sync.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if self.open.as_ref().map(|(_, i)| *i) != Some(ino) {
            let file = File::open(&self.path)?;
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                File::open(dir)?.sync_all()?;
            }
            self.open = Some((file, ino));
        }
        match &self.open {
            Some((file, _)) => file.sync_data(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_read_waits_for_the_batches_numbered_before_it_ended() {
        let d = Arc::new(Durability::default());
        // Nothing numbered: nothing to wait for.
        assert_eq!(d.wait_read(), Ok(()));
        let first = d.begin_batch();
        let second = d.begin_batch();
        let reader = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || d.wait_read())
        };
        d.synced_through(first);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!reader.is_finished(), "batch 2 is not durable yet");
        d.synced_through(second);
        assert_eq!(reader.join().expect("reader"), Ok(()));
    }

    #[test]
    fn a_failed_sync_fails_every_waiting_and_later_read() {
        let d = Arc::new(Durability::default());
        d.begin_batch();
        let reader = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || d.wait_read())
        };
        d.fail("fsync: EIO".into());
        assert_eq!(reader.join().expect("reader"), Err("fsync: EIO".into()));
        // Final: a later success does not undo it.
        d.synced_through(5);
        assert_eq!(d.wait_read(), Err("fsync: EIO".into()));
        assert_eq!(d.failed().as_deref(), Some("fsync: EIO"));
    }

    #[test]
    fn a_wal_file_that_does_not_exist_has_nothing_to_sync() {
        let dir = std::env::temp_dir().join(format!("lt-durable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let db = dir.join("x.db");
        let mut wal = WalFile::of(&db);
        assert!(wal.sync().is_ok());
        std::fs::write(dir.join("x.db-wal"), b"frames").expect("write");
        assert!(wal.sync().is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
