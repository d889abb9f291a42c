//! Connections cut by the server in the middle of the writer's commit
//! (`pg_terminate_backend` of the writer's backend while it runs
//! `COMMIT`): the batch is run again on a new connection, or counted as
//! committed when it was, and the session's sink never sees the cut.
//!
//! A deferred constraint trigger (this test's database only) makes each
//! commit that inserts events sleep inside `COMMIT`, so the cut lands
//! there and nowhere else.

use super::super::ServerStore;
use super::tests::{append_all, call, database, ended, id, jsonl, open, started};
use crate::log::{verify, EventStore};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Makes every commit that inserted events sleep `seconds` in `COMMIT`.
fn slow_commits(url: &str, seconds: f64) {
    let mut admin = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    admin
        .batch_execute(&format!(
            "CREATE FUNCTION lt_test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep({seconds}); RETURN NULL; END $$; \
             CREATE CONSTRAINT TRIGGER lt_test_slow AFTER INSERT ON events \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lt_test_slow_commit();"
        ))
        .expect("slow commits");
}

/// Cuts the first backend of `url`'s database found running `COMMIT`
/// (polling until `stop`); true when it cut one.
fn cut_a_commit(url: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        let until = Instant::now() + Duration::from_secs(20);
        while !stop.load(Ordering::SeqCst) && Instant::now() < until {
            let cut: i64 = admin
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid() \
                     AND state = 'active' AND query = 'COMMIT'",
                    &[],
                )
                .expect("terminate")
                .get(0);
            if cut > 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    })
}

#[test]
fn a_connection_cut_during_the_commit_is_run_again_and_nothing_is_lost() {
    let Some(url) = database("pg_cut_commit") else {
        return;
    };
    let store = open(&url);
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    append_all(&mut *sink, vec![started()]);
    store.flush();
    slow_commits(&url, 0.3);
    let stop = Arc::new(AtomicBool::new(false));
    let cutter = cut_a_commit(url.clone(), Arc::clone(&stop));
    // `scheduled` waits for its commit: the one the cutter cuts.
    append_all(&mut *sink, call(0));
    stop.store(true, Ordering::SeqCst);
    assert!(cutter.join().expect("cutter"), "no commit was cut");
    append_all(&mut *sink, call(1));
    sink.append(ended()).expect("end");
    drop(sink);
    store.flush();
    let report = verify(&jsonl(&store, &s));
    assert!(report.ok && report.events == 10, "{report}");
}
