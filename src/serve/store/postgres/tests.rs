//! Tests of the PostgreSQL store against a real server
//! (`LT_TEST_POSTGRES_URL`; each test on a database of its own): the
//! log's round trip, the chain the database enforces, fencing by the
//! lease's epoch, migrations, the sessions table, errors without the password.
//! Unset, each test prints that it is skipped (and fails under CI=true).

use super::super::{Created, ListQuery, NewSession, ServerStore, SessionStatus};
use super::schema::CHAIN_BROKEN;
use super::scratch::{fresh_database, test_server};
use super::{PostgresStore, SCHEMA_VERSION};
use crate::log::{
    verify, Decision, EventBody, EventSink, EventStore, ReopenError, StoreError, ZERO_HASH,
};
use serde_json::json;

/// A fresh database's URL, or `None` (skipped).
pub(super) fn database(test: &str) -> Option<String> {
    let server = test_server(test)?;
    Some(fresh_database(&server, test).unwrap_or_else(|e| panic!("{test}: {e}")))
}

pub(super) fn open(url: &str) -> PostgresStore {
    match PostgresStore::open(url) {
        Ok(s) => s.with_clock(|| "2026-11-29T21:04:05.123Z".to_string()),
        Err(e) => panic!("cannot open {url}: {e}"),
    }
}

pub(super) fn id(n: u32) -> String {
    format!("{n:032x}")
}

pub(super) fn started() -> EventBody {
    EventBody::SessionStarted {
        lt_version: "0.1.0".into(),
        program: "exec tool ping 1".into(),
        program_hash: ZERO_HASH.into(),
        profile: json!({"name": "default"}),
        registry_hash: ZERO_HASH.into(),
        limits: json!({"max_calls": 10}),
    }
}

/// `proposed` and `decided` (buffered), `scheduled` and `completed`.
pub(super) fn call(n: u32) -> Vec<EventBody> {
    let call_id = format!("n5[n3:{n}]");
    vec![
        EventBody::Proposed {
            call_id: call_id.clone(),
            tool: "ping".into(),
            argument: json!(n),
        },
        EventBody::Decided {
            call_id: call_id.clone(),
            decision: Decision::Allow,
            rule: "policy".into(),
            reason: "every rule passed".into(),
        },
        EventBody::Scheduled {
            call_id: call_id.clone(),
            tool: "ping".into(),
            venue: "server".into(),
            idempotency_key: format!("k:{call_id}"),
        },
        EventBody::Completed {
            call_id,
            output: json!(n),
            result: json!({"Ok": n}),
        },
    ]
}

pub(super) fn ended() -> EventBody {
    EventBody::SessionEnded {
        status: "ok".into(),
        value: Some(json!(1)),
        r#type: Some("Int".into()),
        error: None,
        calls: 2,
        steps: 9,
    }
}

pub(super) fn append_all(sink: &mut dyn EventSink, bodies: Vec<EventBody>) {
    for body in bodies {
        sink.append(body).expect("append");
    }
}

pub(super) fn jsonl(store: &PostgresStore, s: &str) -> String {
    let mut text = store.events_after(s, None).expect("lines").join("\n");
    text.push('\n');
    text
}

fn new_session(n: u32, tenant: &str, ms: i64, key: Option<&str>) -> NewSession {
    NewSession {
        id: id(n),
        tenant: tenant.into(),
        profile: "default".into(),
        request: json!({"program": "1"}),
        idempotency_key: key.map(str::to_string),
        created_ms: ms,
    }
}

#[test]
fn a_log_round_trips_verifies_and_reopens_where_it_stopped() {
    let Some(url) = database("pg_round_trip") else {
        return;
    };
    let store = open(&url);
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    append_all(&mut *sink, vec![started()]);
    append_all(&mut *sink, call(0));
    drop(sink);
    let e = store.create(&s).err().expect("a taken id");
    assert!(matches!(e, StoreError::Conflict(_)), "{e}");
    let reopened = store.reopen(&s).expect("reopen");
    assert_eq!(reopened.events.len(), 5);
    let mut sink = reopened.sink;
    append_all(&mut *sink, call(1));
    sink.append(ended()).expect("end");
    drop(sink);
    store.flush();
    let text = jsonl(&store, &s);
    let report = verify(&text);
    assert!(report.ok && report.events == 10, "{report}\n{text}");
    assert!(matches!(
        store.reopen(&s).err(),
        Some(StoreError::Reopen(ReopenError::Ended))
    ));
    assert!(matches!(
        store.load(&id(9)).err(),
        Some(StoreError::NotFound(_))
    ));
    assert_eq!(store.events_after(&s, Some(7)).expect("tail").len(), 2);
}

#[test]
fn the_database_refuses_an_event_that_does_not_continue_the_chain() {
    let Some(url) = database("pg_chain") else {
        return;
    };
    let store = open(&url);
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    append_all(&mut *sink, vec![started()]);
    append_all(&mut *sink, call(0));
    drop(sink);
    store.flush();
    // Written straight to the table, past the store: the trigger refuses.
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let insert =
        "INSERT INTO events (session, seq, hash, prev, line) VALUES ($1, $2, 'h', $3, '{}')";
    // (A seq already taken is the primary key's to refuse, below.)
    let other = id(2);
    for (session, seq, prev) in [
        (&s, 5_i64, "not-the-last-hash"),
        (&other, 0, "not-zeros"),
        (&s, 9, ZERO_HASH),
    ] {
        let e = c
            .execute(insert, &[session, &seq, &prev])
            .expect_err("refused");
        assert_eq!(e.code().map(|c| c.code()), Some(CHAIN_BROKEN), "{e}");
    }
    // A second event with a taken seq: the primary key.
    let last: String = c
        .query_one(
            "SELECT hash FROM events WHERE session = $1 AND seq = 3",
            &[&s],
        )
        .expect("row")
        .get(0);
    let e = c.execute(insert, &[&s, &4_i64, &last]).expect_err("taken");
    assert_eq!(
        e.code().map(|c| c.code()),
        Some(postgres::error::SqlState::UNIQUE_VIOLATION.code())
    );
    let report = verify(&jsonl(&store, &s));
    assert!(report.ok && report.events == 5, "{report}");
}

#[test]
fn a_stale_writer_of_another_process_cannot_extend_the_chain() {
    let Some(url) = database("pg_stale") else {
        return;
    };
    // Two stores on one database (as two processes): each knows only its
    // own sinks, so the database's check is what stops the stale one.
    let a = open(&url);
    let b = PostgresStore::open(&url).expect("open");
    let s = id(1);
    let mut stale = a.create(&s).expect("create");
    append_all(&mut *stale, vec![started()]);
    a.flush();
    let mut fresh = b.reopen(&s).expect("reopen").sink;
    append_all(&mut *fresh, call(0));

    stale.append(call(1).remove(0)).expect("buffered");
    let e = stale.append(call(1).remove(2)).expect_err("stale");
    assert!(e.to_string().contains("extended by another writer"), "{e}");
    let again = stale.append(ended()).expect_err("still stale");
    assert!(
        again.to_string().contains("earlier append failed"),
        "{again}"
    );
    drop(stale);
    fresh.append(ended()).expect("fresh goes on");
    drop(fresh);
    b.flush();
    let text = jsonl(&a, &s);
    let report = verify(&text);
    assert!(report.ok && report.events == 6, "{report}\n{text}");
    assert!(!text.contains("n5[n3:1]"), "{text}");
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let Some(url) = database("pg_newer") else {
        return;
    };
    drop(open(&url));
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    c.execute(
        "UPDATE lt_schema SET version = $1",
        &[&(SCHEMA_VERSION + 1)],
    )
    .expect("bump");
    let e = PostgresStore::open(&url).err().expect("refused");
    assert!(e.message.contains("a newer lt migrated it"), "{e}");
    let v: i32 = c
        .query_one("SELECT version FROM lt_schema", &[])
        .expect("row")
        .get(0);
    assert_eq!(v, SCHEMA_VERSION + 1);
    // A version lowered by hand (or its row deleted) under tables of a
    // later one: refused, saying so, with the database's words; nothing
    // changed.
    for (edit, recorded) in [
        ("UPDATE lt_schema SET version = 2", 2),
        ("UPDATE lt_schema SET version = -3", -3),
        ("DELETE FROM lt_schema", 0),
    ] {
        c.batch_execute(edit).expect("edit");
        let e = PostgresStore::open(&url).err().expect("refused");
        let says = format!(
            "its lt_schema records version {recorded}, but its tables already hold what version"
        );
        assert!(e.message.contains(&says), "{edit}: {e}");
        assert!(e.message.contains("already exists"), "{edit}: {e}");
        assert!(
            e.hint
                .as_deref()
                .is_some_and(|h| h.contains("UPDATE lt_schema SET version")),
            "{edit}: {e:?}"
        );
        let rows: Vec<i32> = c
            .query("SELECT version FROM lt_schema", &[])
            .expect("rows")
            .iter()
            .map(|r| r.get(0))
            .collect();
        let left = if recorded == 0 {
            vec![]
        } else {
            vec![recorded]
        };
        assert_eq!(rows, left, "{edit}: left as it was");
    }
    // Another program's tables: refused too.
    let Some(other) = database("pg_foreign") else {
        return;
    };
    let mut c = postgres::Client::connect(&other, postgres::NoTls).expect("connect");
    c.batch_execute("CREATE TABLE events (x int)")
        .expect("table");
    let e = PostgresStore::open(&other).err().expect("refused");
    assert!(e.message.contains("another program's database"), "{e}");
}

#[test]
fn sessions_are_recorded_listed_and_keyed_as_in_sqlite() {
    let Some(url) = database("pg_sessions") else {
        return;
    };
    let store = open(&url);
    assert_eq!(
        store
            .create_session(&new_session(1, "acme", 10, Some("k")))
            .expect("new"),
        Created::New
    );
    match store
        .create_session(&new_session(2, "acme", 11, Some("k")))
        .expect("existing")
    {
        Created::Existing(r) => assert_eq!(r.id, id(1)),
        other => panic!("{other:?}"),
    }
    // Another tenant may use the same key.
    let created = store.create_session(&new_session(3, "globex", 12, Some("k")));
    assert_eq!(created.expect("new"), Created::New);
    let e = store.create_session(&new_session(1, "acme", 13, None));
    assert!(matches!(e, Err(StoreError::Conflict(_))), "{e:?}");
    store
        .create_session(&new_session(4, "acme", 14, None))
        .expect("new");
    store
        .set_status(&id(1), SessionStatus::Ended, Some(&json!({"value": 1})), 2)
        .expect("ended");
    let e = store.set_status(&id(1), SessionStatus::Running, None, 3);
    assert!(matches!(e, Err(StoreError::Conflict(_))), "{e:?}");
    assert!(matches!(
        store.set_status(&id(7), SessionStatus::Running, None, 0),
        Err(StoreError::NotFound(_))
    ));
    let r = store.session("acme", &id(1)).expect("read").expect("found");
    assert_eq!(r.status, SessionStatus::Ended);
    assert_eq!(r.output, Some(json!({"value": 1})));
    assert_eq!(r.calls, 2);
    assert!(store.session("globex", &id(1)).expect("read").is_none());
    let page = store
        .list_sessions(&ListQuery {
            tenant: "acme".into(),
            status: None,
            limit: 1,
            ..ListQuery::default()
        })
        .expect("list");
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, id(4));
    let next = store
        .list_sessions(&ListQuery {
            tenant: "acme".into(),
            status: None,
            limit: 10,
            before: Some((page[0].created_ms, page[0].id.clone())),
            ..ListQuery::default()
        })
        .expect("list");
    assert_eq!(
        next.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        [id(1)]
    );
    let open_ones: Vec<String> = store
        .unfinished()
        .expect("unfinished")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(open_ones, [id(3), id(4)]);
    assert!(store.health().is_ok());
}

#[test]
fn the_list_filters_as_in_sqlite() {
    let Some(url) = database("pg_filters") else {
        return;
    };
    let store = open(&url);
    for (n, tenant, profile, ms) in [
        (0, "acme", "support", 1000),
        (1, "acme", "audit", 2000),
        (2, "globex", "support", 1500),
    ] {
        let mut s = new_session(n, tenant, ms, None);
        s.profile = profile.into();
        assert_eq!(store.create_session(&s).expect("create"), Created::New);
    }
    for n in [0, 2] {
        let mut b = vec![started()];
        b.extend(call(0));
        b.push(ended());
        append_all(&mut store.create(&id(n)).expect("log"), b);
    }
    store.flush();
    let list = |f: &dyn Fn(&mut ListQuery)| -> Vec<String> {
        let mut q = ListQuery {
            tenant: "acme".into(),
            limit: 10,
            ..ListQuery::default()
        };
        f(&mut q);
        let rows = store.list_sessions(&q).expect("list");
        rows.into_iter().map(|r| r.id).collect()
    };
    // call() proposes `ping`.
    assert_eq!(list(&|q| q.tool = Some("ping".into())), [id(0)]);
    assert!(list(&|q| q.tool = Some("none_such".into())).is_empty());
    assert_eq!(list(&|q| q.profile = Some("audit".into())), [id(1)]);
    assert_eq!(list(&|q| q.since_ms = Some(1500)), [id(1)]);
    assert_eq!(list(&|q| q.until_ms = Some(1500)), [id(0)]);
}

#[test]
fn a_wrong_password_is_refused_with_a_hint_and_without_the_password() {
    let Some(server) = test_server("pg_password") else {
        return;
    };
    // cluster.sh makes the role `lt_password_test` log in with a password
    // (scram-sha-256); every other role is trusted.
    let mut c = postgres::Client::connect(&server, postgres::NoTls).expect("connect");
    c.batch_execute(
        "DO $$ BEGIN
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lt_password_test') THEN
             CREATE ROLE lt_password_test LOGIN PASSWORD 'the-right-one';
           END IF;
         END $$",
    )
    .expect("role");
    let url = super::scratch::with_database(&server, "postgres").replacen(
        "://lt@",
        "://lt_password_test:Wr0ng-Pa55word@",
        1,
    );
    assert!(url.contains("Wr0ng-Pa55word"), "{url}");
    let e = PostgresStore::open(&url).err().expect("refused");
    let text = e.to_string();
    assert!(!text.contains("Wr0ng-Pa55word"), "{text}");
    assert!(text.contains("password"), "{text}");
    assert!(!e.usage);
    assert!(
        e.hint
            .as_deref()
            .unwrap_or("")
            .contains("user and the password"),
        "{text}"
    );
}

#[test]
fn a_lost_connection_is_made_again_and_nothing_is_lost() {
    let Some(url) = database("pg_reconnect") else {
        return;
    };
    let store = open(&url);
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    append_all(&mut *sink, vec![started()]);
    append_all(&mut *sink, call(0));
    // Committed first: this is a lost idle connection, not one cut during
    // a commit (call(0) ends with a buffered event the writer commits later).
    store.flush();
    // Every connection of the store, writer and readers, cut by the server.
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let cut: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .expect("terminate")
        .get(0);
    assert!(cut >= 2, "{cut} connections cut");
    // The next write and the next read go through on new connections.
    append_all(&mut *sink, call(1));
    sink.append(ended()).expect("end");
    drop(sink);
    store.flush();
    let report = verify(&jsonl(&store, &s));
    assert!(report.ok && report.events == 10, "{report}");
    assert!(store.health().is_ok());
}

#[test]
fn concurrent_sessions_share_commits_and_their_events_one_statement() {
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::{Duration, Instant};
    let Some(url) = database("pg_group") else {
        return;
    };
    let store = Arc::new(open(&url));
    let commits = Arc::new(Mutex::new((0usize, 0usize)));
    {
        let commits = Arc::clone(&commits);
        store.observe_commits(Box::new(move |_, events| {
            let mut c = commits.lock().unwrap_or_else(PoisonError::into_inner);
            if events > 0 {
                c.0 += 1;
                c.1 += events;
            }
        }));
    }
    let (sessions, per) = (16u32, 12u32);
    let threads: Vec<_> = (0..sessions)
        .map(|n| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut sink = store.create(&id(n)).expect("create");
                sink.append(started()).expect("append");
                for k in 0..per - 1 {
                    // `proposed` (buffered) and `scheduled` (committed before
                    // append returns): two events of one session per batch.
                    let mut c = call(k);
                    sink.append(c.remove(0)).expect("append");
                    sink.append(c.remove(1)).expect("append");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let total = (sessions * (1 + 2 * (per - 1))) as usize;
    let until = Instant::now() + Duration::from_secs(10);
    let (transactions, events) = loop {
        let seen = *commits.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.1 >= total || Instant::now() > until {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(events, total);
    assert!(
        transactions < events,
        "{transactions} transactions for {events} events"
    );
    for n in 0..sessions {
        let report = verify(&jsonl(&store, &id(n)));
        assert!(
            report.ok && report.events == 1 + 2 * (per as usize - 1),
            "{report}"
        );
    }
}

#[test]
fn a_worker_whose_lease_was_taken_over_is_fenced_by_the_database() {
    let Some(url) = database("pg_fenced") else {
        return;
    };
    // Worker A records a session (its lease, epoch 1) and writes to it.
    let a = open(&url);
    let s = id(7);
    let new = NewSession {
        id: s.clone(),
        tenant: "acme".into(),
        profile: "p".into(),
        request: json!({"program": "1"}),
        idempotency_key: None,
        created_ms: 1,
    };
    assert_eq!(a.create_session(&new).expect("create"), Created::New);
    assert!(a.holds(&s));
    let mut sink = a.create(&s).expect("sink");
    append_all(&mut *sink, vec![started()]);
    // Committed under epoch 1 before the claim (a buffered event would
    // otherwise race the claim below).
    a.flush();
    // Another worker claims it (as the lease thread's claim does).
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    admin
        .execute(
            "UPDATE leases SET owner = 'other', epoch = epoch + 1 WHERE session = $1",
            &[&s],
        )
        .expect("claim");
    // A's next commit is refused by the database, and it no longer holds it.
    sink.append(call(0).remove(0)).expect("buffered");
    sink.append(call(0).remove(1)).expect("buffered");
    let e = sink.append(call(0).remove(2)).expect_err("fenced");
    assert!(e.to_string().contains("lease is now at epoch 2"), "{e}");
    assert!(!a.holds(&s));
    drop(sink);
    let e = a
        .set_status(&s, SessionStatus::Failed, Some(&json!({})), 0)
        .expect_err("fenced too");
    assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
    let rows: i64 = admin
        .query_one("SELECT count(*) FROM events WHERE session = $1", &[&s])
        .expect("count")
        .get(0);
    assert_eq!(rows, 1, "only the event written under the lease");
}
