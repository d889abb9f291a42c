//! Tests of the SQLite store on real files in the temp folder: the log's
//! round trip and chain, one writer per session, the sessions table,
//! durability, group commit, the schema version, a dead writer.

use super::super::queue::Request;
use super::super::{
    Committed, Created, ListQuery, NewSession, ServerStore, SessionRecord, SessionStatus,
};
use super::{SqliteStore, SCHEMA_VERSION};
use crate::log::{
    verify, Decision, EventBody, EventSink, EventStore, MemoryLog, MemoryStore, ReopenError,
    StoreError, ZERO_HASH,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A folder of its own under the temp folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("lt-sqlite-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    /// The database file (its folder is created by the store).
    fn db(&self) -> PathBuf {
        self.0.join("data").join("lt.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(path: &Path) -> SqliteStore {
    match SqliteStore::open(path) {
        Ok(s) => s.with_clock(fixed),
        Err(e) => panic!("cannot open {}: {e}", path.display()),
    }
}

fn fixed() -> String {
    "2026-11-29T21:04:05.123Z".to_string()
}

fn id(n: u32) -> String {
    format!("{n:032x}")
}

fn started() -> EventBody {
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
fn call(n: u32) -> Vec<EventBody> {
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

fn ended() -> EventBody {
    EventBody::SessionEnded {
        status: "ok".into(),
        value: Some(json!(1)),
        r#type: Some("Int".into()),
        error: None,
        calls: 2,
        steps: 9,
    }
}

fn bodies() -> Vec<EventBody> {
    let mut b = vec![started()];
    b.extend(call(0));
    b.extend(call(1));
    b.push(ended());
    b
}

fn append_all(sink: &mut dyn EventSink, bodies: Vec<EventBody>) {
    for body in bodies {
        sink.append(body).expect("append");
    }
}

fn jsonl(store: &SqliteStore, id: &str) -> String {
    let lines = store.events_after(id, None).expect("events_after");
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn new_session(n: u32, tenant: &str, created_ms: i64, key: Option<&str>) -> NewSession {
    NewSession {
        id: id(n),
        tenant: tenant.into(),
        profile: "support".into(),
        request: json!({"program": format!("exec tool ping {n}")}),
        idempotency_key: key.map(str::to_string),
        created_ms,
    }
}

fn conflict<T>(r: Result<T, StoreError>) -> String {
    match r {
        Err(StoreError::Conflict(why)) => why,
        Err(e) => panic!("expected a conflict, got {e:?}"),
        Ok(_) => panic!("expected a conflict, got Ok"),
    }
}

#[test]
fn a_log_round_trips_as_the_library_writes_it() {
    let dir = TempDir::new("round-trip");
    let store = open(&dir.db());
    let mut commits = store.subscribe();
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    append_all(&mut sink, bodies());
    drop(sink);
    store.flush();

    let mut reference = MemoryLog::new(&s).expect("log").with_clock(fixed);
    append_all(&mut reference, bodies());
    let text = jsonl(&store, &s);
    assert_eq!(text, reference.to_jsonl());
    let report = verify(&text);
    assert!(report.ok && report.events == 10, "{report}");

    let loaded = store.load(&s).expect("load");
    assert!(loaded.report.ok && loaded.report.problem.is_none());
    assert_eq!(loaded.events, reference.events());
    // The same bodies as a MemoryStore holds them.
    let memory = MemoryStore::new();
    append_all(&mut memory.create(&s).expect("create"), bodies());
    let theirs: Vec<_> = memory.events(&s).into_iter().map(|e| e.body).collect();
    let ours: Vec<_> = loaded.events.into_iter().map(|e| e.body).collect();
    assert_eq!(ours, theirs);

    let after = store.events_after(&s, Some(6)).expect("after");
    assert_eq!(after, text.lines().skip(7).collect::<Vec<_>>());
    assert!(store.events_after(&s, Some(9)).expect("after").is_empty());
    // Every event was announced once, in order, after its commit.
    let mut seen = Vec::new();
    while let Ok(c) = commits.try_recv() {
        seen.push(c);
    }
    // Each notice carries its line, exactly as stored.
    let expected: Vec<_> = text
        .lines()
        .zip(0..10)
        .map(|(line, seq)| Committed {
            session: s.clone(),
            seq,
            line: Arc::from(line),
        })
        .collect();
    assert_eq!(seen, expected);
    assert!(matches!(store.load(&id(2)), Err(StoreError::NotFound(_))));
    assert!(matches!(
        store.events_after(&id(2), None),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn create_refuses_a_session_with_a_writer_or_events() {
    let dir = TempDir::new("create");
    let store = open(&dir.db());
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    let why = conflict(store.create(&s));
    assert!(why.contains("already has a log"), "{why}");
    sink.append(started()).expect("append");
    drop(sink);
    conflict(store.create(&s));
    assert!(matches!(store.create("not-an-id"), Err(StoreError::Io(_))));
    // A session created and dropped without events is free again.
    drop(store.create(&id(2)).expect("create"));
    drop(store.create(&id(2)).expect("create again"));
}

#[test]
fn reopen_waits_for_the_writer_and_continues_the_chain() {
    let dir = TempDir::new("reopen");
    let store = open(&dir.db());
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    let mut first = vec![started()];
    first.extend(call(0).into_iter().take(3));
    append_all(&mut sink, first);
    let why = conflict(store.reopen(&s));
    assert!(why.contains("being written"), "{why}");
    drop(sink);

    let reopened = store.reopen(&s).expect("reopen");
    assert_eq!(reopened.events.len(), 4);
    assert_eq!(reopened.dropped_bytes, 0);
    conflict(store.reopen(&s));
    let mut sink = reopened.sink;
    sink.append(EventBody::SessionResumed {
        lt_version: "0.1.0".into(),
        registry_hash: ZERO_HASH.into(),
        dropped_bytes: 0,
    })
    .expect("append");
    append_all(&mut sink, vec![call(0).remove(3), ended()]);
    drop(sink);
    store.flush();
    let text = jsonl(&store, &s);
    let report = verify(&text);
    assert!(report.ok && report.events == 7, "{report}");
    let record = store.load(&s).expect("load");
    assert_eq!(record.events[4].prev, record.events[3].hash);

    match store.reopen(&s) {
        Err(StoreError::Reopen(ReopenError::Ended)) => {}
        other => panic!("expected Ended, got {:?}", other.err()),
    }
    assert!(matches!(store.reopen(&id(9)), Err(StoreError::NotFound(_))));
    // Recorded, but no event yet: nothing to resume.
    let created = store.create_session(&new_session(3, "acme", 1, None));
    assert_eq!(created.expect("create"), Created::New);
    match store.reopen(&id(3)) {
        Err(StoreError::Reopen(ReopenError::Empty)) => {}
        other => panic!("expected Empty, got {:?}", other.err()),
    }
}

#[test]
fn reopen_refuses_a_log_that_does_not_verify() {
    let dir = TempDir::new("tampered");
    let store = open(&dir.db());
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    let mut b = vec![started()];
    b.extend(call(0));
    append_all(&mut sink, b);
    drop(sink);
    store.flush();
    let conn = rusqlite::Connection::open(dir.db()).expect("open");
    conn.execute(
        "UPDATE events SET line = replace(line, '\"tool\":\"ping\"', '\"tool\":\"pong\"') WHERE seq = 1",
        [],
    )
    .expect("edit");
    let loaded = store.load(&s).expect("load");
    let problem = loaded.report.problem.expect("a problem");
    assert_eq!(problem.line, 2);
    assert_eq!(loaded.events.len(), 1);
    match store.reopen(&s) {
        Err(StoreError::Reopen(ReopenError::Problem(p))) => assert_eq!(p.line, 2),
        other => panic!("expected a problem, got {:?}", other.err()),
    }
}

#[test]
fn a_stale_sink_cannot_extend_the_chain() {
    let dir = TempDir::new("stale");
    // Two stores on one file: each knows only its own sinks, so the
    // chain in the data is what stops the stale writer.
    let a = open(&dir.db());
    let b = SqliteStore::open_unlocked(&dir.db()).expect("open");
    let s = id(1);
    let mut stale = a.create(&s).expect("create");
    append_all(&mut stale, vec![started()]);
    // `session_started` is buffered: committed before `b` looks.
    a.flush();
    let mut fresh = b.reopen(&s).expect("reopen").sink;
    append_all(&mut fresh, call(0));

    // A buffered event is not waited for; the next committed one fails,
    // and nothing of either is written.
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
fn an_idempotency_key_returns_the_existing_session() {
    let dir = TempDir::new("idempotent");
    let store = Arc::new(open(&dir.db()));
    let first = new_session(1, "acme", 10, Some("k1"));
    assert_eq!(store.create_session(&first).expect("create"), Created::New);
    let Created::Existing(existing) = store
        .create_session(&new_session(2, "acme", 20, Some("k1")))
        .expect("create")
    else {
        panic!("the key was used: the first session comes back");
    };
    assert_eq!(
        (existing.id.as_str(), existing.created_ms),
        (id(1).as_str(), 10)
    );
    assert_eq!(existing.request, first.request);
    assert!(store.session("acme", &id(2)).expect("read").is_none());
    // Another tenant's key space; no key at all.
    let other = store.create_session(&new_session(3, "globex", 30, Some("k1")));
    assert_eq!(other.expect("create"), Created::New);
    for n in [4, 5] {
        let c = store.create_session(&new_session(n, "acme", 40, None));
        assert_eq!(c.expect("create"), Created::New);
    }
    // The same id twice is refused.
    conflict(store.create_session(&new_session(4, "acme", 50, None)));

    // Racing creators with one key: one session.
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                store.create_session(&new_session(100 + n, "acme", 60, Some("race")))
            })
        })
        .collect();
    let results: Vec<Created> = threads
        .into_iter()
        .map(|t| t.join().expect("thread").expect("create"))
        .collect();
    let new = results.iter().filter(|c| **c == Created::New).count();
    assert_eq!(new, 1, "{results:?}");
}

/// Records `n` sessions of `tenant`, two per millisecond.
fn record_many(store: &SqliteStore, tenant: &str, from: u32, n: u32) {
    for k in from..from + n {
        let c = store.create_session(&new_session(k, tenant, 1000 + i64::from(k / 2), None));
        assert_eq!(c.expect("create"), Created::New);
    }
}

fn ids(records: &[SessionRecord]) -> Vec<String> {
    records.iter().map(|r| r.id.clone()).collect()
}

fn query(tenant: &str, status: Option<SessionStatus>, limit: usize) -> ListQuery {
    ListQuery {
        tenant: tenant.into(),
        status,
        limit,
        ..ListQuery::default()
    }
}

#[test]
fn a_tenant_sees_only_its_sessions() {
    let dir = TempDir::new("tenants");
    let store = open(&dir.db());
    record_many(&store, "acme", 0, 3);
    record_many(&store, "globex", 10, 2);
    assert!(store.session("acme", &id(0)).expect("read").is_some());
    assert!(store.session("globex", &id(0)).expect("read").is_none());
    let acme = store
        .list_sessions(&query("acme", None, 100))
        .expect("list");
    assert_eq!(ids(&acme), [id(2), id(1), id(0)]);
    let globex = store
        .list_sessions(&query("globex", None, 100))
        .expect("list");
    assert_eq!(ids(&globex), [id(11), id(10)]);
    assert!(store
        .list_sessions(&query("initech", None, 100))
        .expect("list")
        .is_empty());
}

#[test]
fn filters_by_profile_tool_and_time_within_the_tenant() {
    let dir = TempDir::new("filters");
    let store = open(&dir.db());
    // acme: 0 (support, calls ping, t=1000), 1 (audit, t=2000), 2 (support,
    // t=3000); globex: 10 (support, calls ping, t=2500).
    for (n, tenant, profile, ms) in [
        (0, "acme", "support", 1000),
        (1, "acme", "audit", 2000),
        (2, "acme", "support", 3000),
        (10, "globex", "support", 2500),
    ] {
        let mut s = new_session(n, tenant, ms, None);
        s.profile = profile.into();
        assert_eq!(store.create_session(&s).expect("create"), Created::New);
    }
    for n in [0, 10] {
        let mut sink = store.create(&id(n)).expect("create log");
        append_all(&mut sink, bodies());
    }
    let mut sink = store.create(&id(2)).expect("create log");
    append_all(&mut sink, vec![started(), ended()]);
    drop(sink);
    store.flush();
    let list = |q: ListQuery| ids(&store.list_sessions(&q).expect("list"));
    let acme = |f: &dyn Fn(&mut ListQuery)| {
        let mut q = query("acme", None, 100);
        f(&mut q);
        list(q)
    };
    assert_eq!(
        acme(&|q| q.profile = Some("support".into())),
        [id(2), id(0)]
    );
    assert_eq!(acme(&|q| q.tool = Some("ping".into())), [id(0)]);
    assert!(acme(&|q| q.tool = Some("pin".into())).is_empty());
    assert_eq!(acme(&|q| q.since_ms = Some(2000)), [id(2), id(1)]);
    assert_eq!(acme(&|q| q.until_ms = Some(2000)), [id(0)]);
    assert_eq!(
        acme(&|q| {
            q.since_ms = Some(1000);
            q.until_ms = Some(3000);
            q.profile = Some("support".into());
        }),
        [id(0)]
    );
    // globex's session calls ping under support at 2500: never acme's.
    assert_eq!(
        acme(&|q| {
            q.tool = Some("ping".into());
            q.since_ms = Some(2000);
        }),
        Vec::<String>::new()
    );
    let mut g = query("globex", None, 100);
    g.tool = Some("ping".into());
    assert_eq!(list(g), [id(10)]);
}

#[test]
fn pages_go_newest_first_with_the_cursor() {
    let dir = TempDir::new("paging");
    let store = open(&dir.db());
    record_many(&store, "acme", 0, 11);
    store
        .set_status(&id(4), SessionStatus::Ended, Some(&json!({"ok": true})), 2)
        .expect("status");
    let mut all = Vec::new();
    let mut q = query("acme", None, 3);
    // Bounded: a cursor that does not move on must fail, not hang.
    for _ in 0..10 {
        let page = store.list_sessions(&q).expect("list");
        assert!(page.len() <= 3);
        let Some(last) = page.last() else { break };
        q.before = Some((last.created_ms, last.id.clone()));
        all.extend(ids(&page));
    }
    let expected: Vec<String> = (0..11).rev().map(id).collect();
    assert_eq!(all, expected);
    let ended = store
        .list_sessions(&query("acme", Some(SessionStatus::Ended), 10))
        .expect("list");
    assert_eq!(ids(&ended), [id(4)]);
    assert_eq!(ended[0].output, Some(json!({"ok": true})));
    assert_eq!(ended[0].calls, 2);
    let mut q = query("acme", Some(SessionStatus::Running), 10);
    q.before = Some((1003, id(7)));
    let running = store.list_sessions(&q).expect("list");
    assert_eq!(ids(&running), [id(6), id(5), id(3), id(2), id(1), id(0)]);
}

#[test]
fn unfinished_sessions_come_oldest_first_with_their_counts() {
    let dir = TempDir::new("unfinished");
    let store = open(&dir.db());
    for (n, tenant, ms) in [
        (1, "acme", 30),
        (2, "globex", 10),
        (3, "acme", 20),
        (4, "acme", 5),
    ] {
        let c = store.create_session(&new_session(n, tenant, ms, None));
        assert_eq!(c.expect("create"), Created::New);
    }
    store
        .set_status(&id(1), SessionStatus::WaitingClient, None, 1)
        .expect("status");
    store
        .set_status(&id(3), SessionStatus::Cancelled, Some(&json!({})), 0)
        .expect("status");
    store
        .set_status(&id(4), SessionStatus::Failed, Some(&json!({})), 0)
        .expect("status");
    let why = store.set_status(&id(9), SessionStatus::Ended, None, 0);
    assert!(matches!(why, Err(StoreError::NotFound(_))), "{why:?}");
    // Over is over: a late status change does not move it back.
    let why = store.set_status(&id(3), SessionStatus::Running, None, 5);
    assert!(matches!(why, Err(StoreError::Conflict(_))), "{why:?}");

    let open_ones = store.unfinished().expect("unfinished");
    assert_eq!(ids(&open_ones), [id(2), id(1)]);
    assert_eq!(open_ones[1].status, SessionStatus::WaitingClient);
    assert_eq!(open_ones[1].calls, 1);
    assert!(open_ones[1].updated_ms >= open_ones[1].created_ms);

    let mut sink = store.create(&id(2)).expect("create");
    let mut b = vec![started()];
    b.extend(call(0).into_iter().take(3));
    append_all(&mut sink, b);
    let record = store
        .session("globex", &id(2))
        .expect("read")
        .expect("there");
    assert_eq!(record.events, 4);
}

/// Copies the database files as a crash would leave them (the writer
/// still holding them open, nothing closed or checkpointed).
fn crash_copy(from: &Path, to: &TempDir) -> PathBuf {
    std::fs::create_dir_all(&to.0).expect("mkdir");
    let db = to.0.join("copy.db");
    for suffix in ["", "-wal"] {
        let src = PathBuf::from(format!("{}{suffix}", from.display()));
        if src.exists() {
            std::fs::copy(&src, format!("{}{suffix}", db.display())).expect("copy");
        }
    }
    db
}

#[test]
fn committed_events_survive_a_crash_and_a_restart() {
    let dir = TempDir::new("durable");
    let copy = TempDir::new("durable-copy");
    let store = open(&dir.db());
    let s = id(1);
    let mut sink = store.create(&s).expect("create");
    // A buffered event, then a committed one: both are on record when the
    // second append returns.
    let mut b = vec![started()];
    b.extend(call(0).into_iter().take(3));
    append_all(&mut sink, b);
    let crashed = crash_copy(&dir.db(), &copy);
    {
        let after = open(&crashed);
        let text = jsonl(&after, &s);
        let report = verify(&text);
        assert!(report.ok && report.events == 4, "{report}\n{text}");
    }
    // A buffered event last: committed after its sink goes, before the
    // session is free for its next writer (`flush` waits for that).
    sink.append(call(1).remove(0)).expect("buffered");
    drop(sink);
    store.flush();
    assert_eq!(store.load(&s).expect("load").events.len(), 5);
    drop(store);
    let store = open(&dir.db());
    let loaded = store.load(&s).expect("load");
    assert!(loaded.report.ok);
    assert_eq!(loaded.events.len(), 5);
    assert_eq!(loaded.events[4].body.kind(), "proposed");
}

#[test]
fn concurrent_sessions_share_commits() {
    let dir = TempDir::new("group");
    let store = Arc::new(open(&dir.db()));
    let commits = Arc::new(Mutex::new((0usize, 0usize)));
    {
        let commits = Arc::clone(&commits);
        store.observe_commits(Box::new(move |_, events| {
            let mut c = commits
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if events > 0 {
                c.0 += 1;
                c.1 += events;
            }
        }));
    }
    let sessions = 16u32;
    let per = 12u32;
    let threads: Vec<_> = (0..sessions)
        .map(|n| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut sink = store.create(&id(n)).expect("create");
                sink.append(started()).expect("append");
                for k in 0..per - 1 {
                    // `scheduled`: committed before append returns.
                    sink.append(call(k).remove(2)).expect("append");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    // The observer is told after the waiters are answered: wait for it.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (transactions, events) = loop {
        let seen = *commits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.1 >= (sessions * per) as usize || std::time::Instant::now() > until {
            break seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(events, (sessions * per) as usize);
    assert!(
        transactions < events,
        "{transactions} transactions for {events} events"
    );
    for n in 0..sessions {
        let report = verify(&jsonl(&store, &id(n)));
        assert!(report.ok && report.events == per as usize, "{report}");
    }
}

#[test]
fn one_process_writes_a_store_file() {
    let dir = TempDir::new("lock");
    let first = open(&dir.db());
    let e = SqliteStore::open(&dir.db()).err().expect("refused");
    assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("in use by another process")
            && text.contains(&format!("pid {}", std::process::id())),
        "{text}"
    );
    // The lock goes with the first store's writer.
    drop(first);
    drop(open(&dir.db()));
}

#[test]
fn a_newer_schema_or_another_programs_database_is_refused() {
    let dir = TempDir::new("schema");
    drop(open(&dir.db()));
    let conn = rusqlite::Connection::open(dir.db()).expect("open");
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .expect("version");
    drop(conn);
    let e = SqliteStore::open(&dir.db()).err().expect("refused");
    let text = e.to_string();
    assert!(
        text.contains(&format!("schema version is {}", SCHEMA_VERSION + 1))
            && text.contains("lt.db"),
        "{text}"
    );

    let foreign = dir.0.join("foreign.db");
    let conn = rusqlite::Connection::open(&foreign).expect("open");
    conn.execute_batch("CREATE TABLE notes (body TEXT)")
        .expect("table");
    drop(conn);
    let e = SqliteStore::open(&foreign).err().expect("refused");
    assert!(e.to_string().contains("another program's database"), "{e}");
}

#[test]
fn a_dead_writer_fails_writes_instead_of_hanging() {
    let dir = TempDir::new("dead");
    let store = open(&dir.db());
    let mut sink = store.create(&id(1)).expect("create");
    sink.append(started()).expect("append");
    store.flush();
    assert!(store.health().is_ok());
    let requests = store.requests.as_ref().expect("queue");
    requests.send(Request::Stop).expect("stop");
    while !store.writer.as_ref().is_some_and(|w| w.is_finished()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let e = sink.append(call(0).remove(2)).expect_err("dead");
    assert!(e.to_string().contains("writer thread has stopped"), "{e}");
    let e = store.create_session(&new_session(2, "acme", 1, None));
    assert!(matches!(e, Err(StoreError::Io(_))), "{e:?}");
    assert!(store.health().is_err());
    // Reads still answer.
    assert_eq!(store.load(&id(1)).expect("load").events.len(), 1);
}

#[test]
fn a_damaged_row_is_left_out_of_lists_and_resumes_and_refused_alone() {
    let dir = TempDir::new("damaged");
    let store = open(&dir.db());
    for n in 1..=3 {
        store
            .create_session(&new_session(n, "acme", 1_000 + i64::from(n), None))
            .expect("create");
    }
    // Session 2 loses its request (a file edited by hand).
    let conn = rusqlite::Connection::open(dir.db()).expect("open");
    conn.execute("DELETE FROM requests WHERE id = ?1", [id(2)])
        .expect("delete");
    assert_eq!(
        ids(&store
            .list_sessions(&query("acme", None, 100))
            .expect("list")),
        [id(3), id(1)]
    );
    assert_eq!(
        ids(&store.unfinished().expect("unfinished")),
        [id(1), id(3)]
    );
    let e = store.session("acme", &id(2)).expect_err("a damaged record");
    assert!(e.to_string().contains("has no recorded request"), "{e}");
    assert_eq!(
        store.session("acme", &id(1)).expect("read").map(|r| r.id),
        Some(id(1))
    );
}

/// `call(n)`'s `scheduled`, of `tool`.
fn scheduled(n: u32, tool: &str) -> EventBody {
    EventBody::Scheduled {
        call_id: format!("n5[n3:{n}]"),
        tool: tool.into(),
        venue: "server".into(),
        idempotency_key: format!("k:{n}"),
    }
}

#[test]
fn the_scheduled_of_an_idempotent_tool_does_not_wait_for_its_commit() {
    let dir = TempDir::new("idempotent");
    let store = Arc::new(open(&dir.db()));
    // A gate the writer's commit observer waits at once armed: every
    // commit after that is answered only when the gate opens.
    let gate = Arc::new((Mutex::new((false, false)), std::sync::Condvar::new()));
    {
        let gate = Arc::clone(&gate);
        store.observe_commits(Box::new(move |_, _| {
            let (lock, cv) = &*gate;
            let mut g = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            while g.0 && !g.1 {
                g = cv
                    .wait(g)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }));
    }
    let set = |armed: bool, open: bool| {
        let (lock, cv) = &*gate;
        *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = (armed, open);
        cv.notify_all();
    };
    let s = id(7);
    let mut sink = store.create(&s).expect("create");
    sink.idempotent_tools(&["ping".to_string()].into_iter().collect());
    sink.append(started()).expect("append");
    // Committed and answered; the writer then stops at the gate.
    set(true, false);
    sink.append(scheduled(0, "charge")).expect("append");
    let (done, finished) = std::sync::mpsc::channel();
    let appender = std::thread::spawn(move || {
        // An idempotent tool's `scheduled`: buffered, so the append
        // returns while no commit is answered.
        let r = sink.append(scheduled(1, "ping"));
        let _ = done.send(("ping", r.is_ok()));
        // Any other tool's waits for its commit.
        let r = sink.append(scheduled(2, "charge"));
        let _ = done.send(("charge", r.is_ok()));
        sink
    });
    let first = finished.recv_timeout(Duration::from_secs(20));
    assert_eq!(
        first.ok(),
        Some(("ping", true)),
        "the idempotent tool's scheduled waited for a commit"
    );
    assert!(
        finished.recv_timeout(Duration::from_millis(300)).is_err(),
        "the scheduled of a tool that is not idempotent returned before its commit was answered"
    );
    set(false, true);
    let second = finished.recv_timeout(Duration::from_secs(20));
    assert_eq!(second.ok(), Some(("charge", true)));
    drop(appender.join().expect("appender"));
    store.flush();
    let text = jsonl(&store, &s);
    let report = verify(&text);
    assert!(report.ok && report.events == 4, "{report}\n{text}");
}
