//! Tests of schema version 4 against a real server (`LT_TEST_POSTGRES_URL`,
//! skipped when unset): the chain and the lease's fence checked once per
//! statement refuse exactly what the row triggers of version 3 refused (a
//! statement that breaks the chain anywhere or writes a session under a
//! lease epoch it no longer has fails whole), each session's lease stays
//! locked against a claim until the commit, a version 3 database is
//! migrated; and a batch's new sessions and statuses, one statement each,
//! answer as one statement per request would; a new session's log over one
//! stored past `lt serve` is refused by the database.

use super::super::shared::Shared;
use super::super::{Created, NewSession, ServerStore, SessionStatus};
use super::prepared::Prepared;
use super::rows::{create_sessions, set_statuses, Create, Status};
use super::schema::{migrate_to, CHAIN_BROKEN, FENCED};
use super::tests::{database, id};
use super::{PostgresStore, Worker, SCHEMA_VERSION};
use crate::log::{StoreError, ZERO_HASH};
use postgres::{Client, NoTls};
use serde_json::json;

/// Inserts `rows` (session, seq, hash, prev, epoch) in one statement: the
/// SQLSTATE of its refusal, or `None` (inserted).
fn insert(c: &mut Client, rows: &[(&str, i64, &str, &str, i64)]) -> Option<String> {
    let values: Vec<String> = rows
        .iter()
        .map(|(s, q, h, p, e)| format!("('{s}', {q}, '{h}', '{p}', '{{}}', {e})"))
        .collect();
    let sql = format!(
        "INSERT INTO events (session, seq, hash, prev, line, epoch) VALUES {}",
        values.join(", ")
    );
    c.batch_execute(&sql)
        .err()
        .map(|e| e.code().map_or(e.to_string(), |c| c.code().to_string()))
}

fn count(c: &mut Client, session: &str) -> i64 {
    c.query_one(
        "SELECT count(*) FROM events WHERE session = $1",
        &[&session],
    )
    .expect("count")
    .get(0)
}

/// A database migrated by `lt serve`, two sessions' leases at epoch 1.
fn with_leases(test: &str) -> Option<(String, Client)> {
    let url = database(test)?;
    drop(PostgresStore::open(&url).expect("open"));
    let mut c = Client::connect(&url, NoTls).expect("connect");
    c.batch_execute(
        "INSERT INTO leases (session, owner, epoch) VALUES ('a', 'w', 1), ('b', 'w', 1)",
    )
    .expect("leases");
    Some((url, c))
}

#[test]
fn pg_a_statement_that_breaks_the_chain_anywhere_is_refused_whole() {
    let Some((_, mut c)) = with_leases("pg_v4_chain") else {
        return;
    };
    // Consecutive events of one statement chain onto each other.
    assert_eq!(
        insert(
            &mut c,
            &[
                ("a", 0, "h0", ZERO_HASH, 1),
                ("a", 1, "h1", "h0", 1),
                ("b", 0, "g0", ZERO_HASH, 1)
            ]
        ),
        None
    );
    let broken = Some(CHAIN_BROKEN.to_string());
    // The second of two rows does not continue the first.
    assert_eq!(
        insert(
            &mut c,
            &[("a", 2, "h2", "h1", 1), ("a", 3, "h3", "nope", 1)]
        ),
        broken
    );
    // The first row does not continue the stored log.
    assert_eq!(
        insert(
            &mut c,
            &[("a", 2, "h2", "nope", 1), ("a", 3, "h3", "h2", 1)]
        ),
        broken
    );
    // A gap, a seq 0 that is not after 64 zeros, a first event past 0.
    assert_eq!(insert(&mut c, &[("a", 3, "h3", "h1", 1)]), broken);
    assert_eq!(insert(&mut c, &[("c", 0, "x", "h1", 1)]), broken);
    assert_eq!(insert(&mut c, &[("d", 1, "x", ZERO_HASH, 1)]), broken);
    // A good session's rows beside a broken one's: none of them is stored.
    assert_eq!(
        insert(
            &mut c,
            &[("b", 1, "g1", "g0", 1), ("a", 2, "h2", "nope", 1)]
        ),
        broken
    );
    assert_eq!((count(&mut c, "a"), count(&mut c, "b")), (2, 1));
    // The statement continues the stored log.
    assert_eq!(
        insert(&mut c, &[("a", 2, "h2", "h1", 1), ("b", 1, "g1", "g0", 1)]),
        None
    );
    assert_eq!((count(&mut c, "a"), count(&mut c, "b")), (3, 2));
}

#[test]
fn pg_a_statement_written_under_a_lost_epoch_is_fenced_and_a_claim_waits_for_the_commit() {
    let Some((url, mut c)) = with_leases("pg_v4_fence") else {
        return;
    };
    let fenced = Some(FENCED.to_string());
    // One session under the wrong epoch fences the whole statement.
    assert_eq!(
        insert(
            &mut c,
            &[("a", 0, "h0", ZERO_HASH, 1), ("b", 0, "g0", ZERO_HASH, 2)]
        ),
        fenced
    );
    assert_eq!((count(&mut c, "a"), count(&mut c, "b")), (0, 0));
    // A session without a lease row is not fenced (a log of `lt run`).
    assert_eq!(insert(&mut c, &[("free", 0, "f0", ZERO_HASH, 0)]), None);
    // Until the commit, the writer's transaction holds the lease of each
    // session it wrote: the lease thread's claim (FOR UPDATE SKIP LOCKED)
    // passes it by; the other session's is free.
    let mut tx = c.transaction().expect("begin");
    tx.batch_execute(
        "INSERT INTO events (session, seq, hash, prev, line, epoch) \
         VALUES ('a', 0, 'h0', repeat('0', 64), '{}', 1), ('a', 1, 'h1', 'h0', '{}', 1)",
    )
    .expect("insert");
    let mut other = Client::connect(&url, NoTls).expect("connect");
    let claimable = |other: &mut Client| -> Vec<String> {
        let mut claim = other.transaction().expect("begin");
        let rows = claim
            .query(
                "SELECT session FROM leases ORDER BY session FOR UPDATE SKIP LOCKED",
                &[],
            )
            .expect("claim")
            .iter()
            .map(|r| r.get(0))
            .collect();
        claim.rollback().expect("rollback");
        rows
    };
    assert_eq!(claimable(&mut other), ["b"]);
    tx.commit().expect("commit");
    assert_eq!(claimable(&mut other), ["a", "b"]);
}

#[test]
fn pg_a_version_3_database_is_migrated_to_the_statement_checks() {
    let Some(url) = database("pg_v3_to_v4") else {
        return;
    };
    let mut c = Client::connect(&url, NoTls).expect("connect");
    migrate_to(&mut c, "test", 3).expect("version 3");
    // Written under version 3's row triggers.
    c.batch_execute("INSERT INTO leases (session, owner, epoch) VALUES ('a', 'w', 1)")
        .expect("lease");
    assert_eq!(
        insert(
            &mut c,
            &[("a", 0, "h0", ZERO_HASH, 1), ("a", 1, "h1", "h0", 1)]
        ),
        None
    );
    let rows: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events'::regclass \
             AND NOT tgisinternal AND tgtype & 1 = 1",
            &[],
        )
        .expect("triggers")
        .get(0);
    assert_eq!(rows, 2, "version 3: two row triggers");
    let store = PostgresStore::open(&url).expect("open");
    let (version, row_triggers, statement_triggers): (i32, i64, i64) = {
        let v = c
            .query_one("SELECT version FROM lt_schema", &[])
            .expect("version");
        let t = c
            .query_one(
                "SELECT count(*) FILTER (WHERE tgtype & 1 = 1), count(*) FILTER (WHERE tgtype & 1 = 0) \
                 FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal",
                &[],
            )
            .expect("triggers");
        (v.get(0), t.get(0), t.get(1))
    };
    assert_eq!(
        (version, row_triggers, statement_triggers),
        (SCHEMA_VERSION, 0, 1)
    );
    // The chain goes on from the rows written before; it is still checked.
    // The tools of new events are the writer's to index since version 5
    // (bulk.rs): an INSERT of another program's is not indexed.
    assert_eq!(
        insert(&mut c, &[("a", 2, "h2", "nope", 1)]),
        Some(CHAIN_BROKEN.to_string())
    );
    assert_eq!(
        insert(&mut c, &[("a", 2, "h2", "h1", 2)]),
        Some(FENCED.to_string())
    );
    c.execute(
        "INSERT INTO events (session, seq, hash, prev, line, epoch) VALUES ('a', 2, 'h2', 'h1', $1, 1)",
        &[&json!({"kind": "proposed", "tool": "refund"}).to_string()],
    )
    .expect("continues");
    let tools: Vec<String> = c
        .query("SELECT tool FROM session_tools WHERE session = 'a'", &[])
        .expect("tools")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tools.is_empty(), "{tools:?}");
    drop(store);
}

fn status(id: &str, status: SessionStatus, epoch: Option<i64>) -> Status<'_> {
    Status {
        id,
        status,
        output: None,
        calls: 1,
        at_ms: 5,
        epoch,
    }
}

fn new_session(n: u32, key: Option<&str>) -> NewSession {
    NewSession {
        id: id(n),
        tenant: "acme".into(),
        profile: "p".into(),
        request: json!({"program": "1"}),
        idempotency_key: key.map(str::to_string),
        created_ms: i64::from(n),
    }
}

#[test]
fn pg_a_batch_of_new_sessions_and_statuses_answers_as_one_statement_each_would() {
    let Some(url) = database("pg_v4_rows") else {
        return;
    };
    drop(PostgresStore::open(&url).expect("open"));
    let mut c = Client::connect(&url, NoTls).expect("connect");
    let shared = Shared::new("test".into());
    let worker = Worker {
        id: "w1".into(),
        lease_ms: 60_000,
    };
    let mut prepared = Prepared::default();
    let news = [
        new_session(1, None),
        new_session(1, None),
        new_session(2, Some("k")),
        new_session(3, Some("k")),
        new_session(4, None),
    ];
    let creates: Vec<Create<'_>> = news
        .iter()
        .map(|new| Create {
            new,
            request: "{\"program\": \"1\"}",
        })
        .collect();
    let mut tx = c.transaction().expect("begin");
    let created =
        create_sessions(&mut tx, &mut prepared, &shared, &worker, &creates).expect("create");
    assert!(matches!(created[0], Ok(Created::New)), "{:?}", created[0]);
    assert!(
        matches!(&created[1], Err(StoreError::Conflict(m)) if m.contains("already exists")),
        "{:?}",
        created[1]
    );
    assert!(matches!(created[2], Ok(Created::New)), "{:?}", created[2]);
    assert!(
        matches!(&created[3], Ok(Created::Existing(r)) if r.id == id(2)),
        "{:?}",
        created[3]
    );
    assert!(matches!(created[4], Ok(Created::New)), "{:?}", created[4]);
    let (a, b, d) = (id(1), id(2), id(4));
    let (a, b, d) = (a.as_str(), b.as_str(), d.as_str());
    let statuses = [
        status(a, SessionStatus::WaitingClient, Some(1)),
        status(a, SessionStatus::Ended, Some(1)),
        status(b, SessionStatus::Ended, Some(2)),
        status(a, SessionStatus::Running, Some(1)),
        status("missing", SessionStatus::Ended, None),
        status(d, SessionStatus::Failed, None),
    ];
    let set = set_statuses(&mut tx, &mut prepared, &shared, &statuses).expect("set");
    assert!(set[0].is_ok() && set[1].is_ok(), "{set:?}");
    assert!(
        matches!(&set[2], Err(StoreError::Conflict(m)) if m.contains("lease is now at epoch 1")),
        "{:?}",
        set[2]
    );
    assert!(
        matches!(&set[3], Err(StoreError::Conflict(m)) if m.contains("already over (ended)")),
        "{:?}",
        set[3]
    );
    assert!(
        matches!(&set[4], Err(StoreError::NotFound(_))),
        "{:?}",
        set[4]
    );
    assert!(set[5].is_ok(), "{:?}", set[5]);
    tx.commit().expect("commit");
    let rows: Vec<(String, String, String)> = c
        .query(
            "SELECT s.id, s.status, coalesce(l.owner, '') FROM sessions s JOIN leases l ON l.session = s.id ORDER BY s.id",
            &[],
        )
        .expect("rows")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let want = |id: &str, status: &str| (id.to_string(), status.to_string(), "w1".to_string());
    assert_eq!(
        rows,
        [want(a, "ended"), want(b, "running"), want(d, "failed")]
    );
}

#[test]
fn pg_a_new_sessions_log_over_one_stored_past_lt_serve_is_refused_at_its_first_commit() {
    use super::tests::{call, ended, started};
    let Some(url) = database("pg_v4_orphan") else {
        return;
    };
    let store = PostgresStore::open(&url).expect("open");
    let s = id(5);
    assert_eq!(
        store.create_session(&new_session(5, None)).expect("create"),
        Created::New
    );
    // A log of the same id written straight to the table, under the lease.
    let mut c = Client::connect(&url, NoTls).expect("connect");
    assert_eq!(
        insert(&mut c, &[(s.as_str(), 0, "orphan", ZERO_HASH, 1)]),
        None
    );
    // The sink opens without a read (`create_minted`: the session is this
    // process's new one); its event 0 is refused by the database, and
    // nothing is added.
    let mut sink = store.create_minted(&s).expect("sink");
    let mut failed = Vec::new();
    for body in [vec![started()], call(0), vec![ended()]].concat() {
        if let Err(e) = sink.append(body) {
            failed.push(e.to_string());
        }
    }
    drop(sink);
    store.flush();
    assert!(
        failed
            .first()
            .is_some_and(|e| e.contains("extended by another writer")),
        "{failed:?}"
    );
    assert_eq!(count(&mut c, &s), 1);
}
