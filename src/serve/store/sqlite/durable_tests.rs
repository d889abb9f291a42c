//! What the store holds back until its WAL is synced (`../durable.rs`): a
//! committed event is neither answered nor read before the sync returns,
//! and a failed sync fails every write and read after it.

use super::super::durable::Sync;
use super::super::ServerStore;
use super::tests::{call, fixed, id, started, TempDir};
use super::SqliteStore;
use crate::log::{EventSink, EventStore};
use rusqlite::Connection;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A sync that returns only once the test opens its gate; counts syncs.
#[derive(Clone, Default)]
struct Gate {
    open: Arc<(Mutex<bool>, Condvar)>,
    syncs: Arc<AtomicUsize>,
}

impl Gate {
    fn open(&self) {
        *self.open.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.open.1.notify_all();
    }
}

impl Sync for Gate {
    fn sync(&mut self) -> io::Result<()> {
        let mut open = self.open.0.lock().unwrap_or_else(PoisonError::into_inner);
        while !*open {
            open = self
                .open
                .1
                .wait(open)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Events of session `s` in the file, read past the store.
fn stored(path: &std::path::Path, s: &str) -> i64 {
    let conn = Connection::open(path).expect("open");
    conn.query_row("SELECT count(*) FROM events WHERE session = ?1", [s], |r| {
        r.get(0)
    })
    .expect("count")
}

#[test]
fn a_committed_event_is_neither_answered_nor_read_before_the_wal_is_synced() {
    let dir = TempDir::new("durable-gate");
    let gate = Gate::default();
    let store = Arc::new(
        SqliteStore::open_with_sync(&dir.db(), Box::new(gate.clone()))
            .expect("open")
            .with_clock(fixed),
    );
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    let mut events = call(0);
    // `session_started`, `proposed` and `decided` are buffered: nobody waits.
    sink.append(started()).expect("started");
    sink.append(events.remove(0)).expect("proposed");
    sink.append(events.remove(0)).expect("decided");
    // `scheduled` is a commit point: its append waits for the sync.
    let scheduled = events.remove(0);
    let appender = std::thread::spawn(move || sink.append(scheduled).map(|()| sink));
    // The writer committed the four events (SQLite holds them)...
    let since = Instant::now();
    while stored(&dir.db(), &s) < 4 {
        assert!(since.elapsed() < Duration::from_secs(20), "never committed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // ...but neither the append nor a read of them returns before the sync.
    let reader = {
        let (store, s) = (Arc::clone(&store), s.clone());
        std::thread::spawn(move || store.events_after(&s, None))
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !appender.is_finished(),
        "answered before the WAL was synced"
    );
    assert!(!reader.is_finished(), "read before the WAL was synced");
    assert_eq!(gate.syncs.load(Ordering::SeqCst), 0);
    gate.open();
    let sink = appender.join().expect("appender").expect("scheduled");
    let lines = reader.join().expect("reader").expect("read");
    assert_eq!(lines.len(), 4);
    assert!(gate.syncs.load(Ordering::SeqCst) >= 1);
    drop(sink);
}

/// A sync that fails, as `fsync` does with `EIO`.
struct Failing;

impl Sync for Failing {
    fn sync(&mut self) -> io::Result<()> {
        Err(io::Error::other("EIO (a test's failing disk)"))
    }
}

#[test]
fn a_failed_sync_fails_the_append_and_every_write_and_read_after_it() {
    let dir = TempDir::new("durable-failed");
    let store = SqliteStore::open_with_sync(&dir.db(), Box::new(Failing))
        .expect("open")
        .with_clock(fixed);
    let s = id(2);
    let mut sink = store.create(&s).expect("create");
    sink.append(started()).expect("buffered");
    let mut events = call(0);
    sink.append(events.remove(0)).expect("buffered");
    sink.append(events.remove(0)).expect("buffered");
    let err = sink
        .append(events.remove(0))
        .expect_err("scheduled: not durable");
    assert!(
        err.to_string().contains("could not make its log durable")
            && err.to_string().contains("EIO"),
        "{err}"
    );
    drop(sink);
    // Final: every read fails too, and so does opening another session's
    // log (it reads the store first).
    let read = store.events_after(&s, None).expect_err("read");
    assert!(read.to_string().contains("durable"), "{read}");
    let other = store.create(&id(3)).map(|_| ()).expect_err("create");
    assert!(other.to_string().contains("durable"), "{other}");
}
