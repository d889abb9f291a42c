//! Tests of schema version 6 against a real server (`LT_TEST_POSTGRES_URL`,
//! skipped when unset): a session's status update is a HOT update (no
//! index of `sessions` holds a column it sets), the `unfinished` table
//! holds exactly the sessions whose status is not final and `stopped`
//! the failed and cancelled ones through the writer's statements, the
//! lists by status and `unfinished()` answer from them, and a version 5
//! database with sessions is migrated.

use super::super::{ListQuery, NewSession, ServerStore, SessionStatus};
use super::schema::migrate_to;
use super::tests::{database, id, open};
use super::{PostgresStore, SCHEMA_VERSION};
use postgres::{Client, NoTls};
use serde_json::json;

/// The columns a status update sets (rows.rs, `SET_STATUS`).
const UPDATED: [&str; 4] = ["status", "output", "calls", "updated_ms"];

fn new_session(n: u32) -> NewSession {
    NewSession {
        id: id(n),
        tenant: "acme".into(),
        profile: "p".into(),
        request: json!({"program": "1"}),
        idempotency_key: None,
        created_ms: i64::from(n),
    }
}

fn list(store: &impl ServerStore, status: Option<SessionStatus>) -> Vec<String> {
    let q = ListQuery {
        tenant: "acme".into(),
        status,
        profile: None,
        tool: None,
        since_ms: None,
        until_ms: None,
        limit: 100,
        before: None,
    };
    let records = store.list_sessions(&q).expect("list");
    records.into_iter().map(|r| r.id).collect()
}

fn unfinished_rows(c: &mut Client) -> Vec<String> {
    c.query("SELECT session FROM unfinished ORDER BY session", &[])
        .expect("unfinished")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The rows of `stopped`: (session, status).
fn stopped_rows(c: &mut Client) -> Vec<(String, String)> {
    c.query("SELECT session, status FROM stopped ORDER BY session", &[])
        .expect("stopped")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// The indexes of `sessions` that hold (as a key, an expression or in
/// their predicate) a column a status update sets.
fn indexes_on_updated_columns(c: &mut Client) -> Vec<String> {
    c.query(
        "SELECT DISTINCT i.indexrelid::regclass::text FROM pg_index i \
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum > 0 \
         WHERE i.indrelid = 'sessions'::regclass AND a.attname = ANY ($1) \
           AND (a.attnum = ANY (i.indkey::smallint[]) \
                OR pg_get_expr(i.indpred, i.indrelid) LIKE '%' || a.attname || '%' \
                OR pg_get_expr(i.indexprs, i.indrelid) LIKE '%' || a.attname || '%') \
         ORDER BY 1",
        &[&UPDATED.to_vec()],
    )
    .expect("indexes")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[test]
fn pg_a_status_update_is_hot_and_keeps_the_unfinished_sessions() {
    let Some(url) = database("pg_v6_hot") else {
        return;
    };
    let store = open(&url);
    for n in 1..=3 {
        store.create_session(&new_session(n)).expect("create");
    }
    let mut c = Client::connect(&url, NoTls).expect("connect");
    assert_eq!(unfinished_rows(&mut c), [id(1), id(2), id(3)]);
    store
        .set_status(&id(2), SessionStatus::WaitingClient, None, 0)
        .expect("waiting");
    store
        .set_status(&id(1), SessionStatus::Ended, Some(&json!({"ok": 1})), 2)
        .expect("ended");
    store
        .set_status(&id(3), SessionStatus::Failed, None, 1)
        .expect("failed");
    // A final status is final, and its row is gone from `unfinished`.
    assert!(store
        .set_status(&id(3), SessionStatus::Running, None, 1)
        .is_err());
    assert_eq!(unfinished_rows(&mut c), [id(2)]);
    assert_eq!(stopped_rows(&mut c), [(id(3), "failed".to_string())]);
    assert_eq!(list(&store, Some(SessionStatus::WaitingClient)), [id(2)]);
    assert_eq!(
        list(&store, Some(SessionStatus::Running)),
        Vec::<String>::new()
    );
    assert_eq!(list(&store, Some(SessionStatus::Ended)), [id(1)]);
    assert_eq!(list(&store, Some(SessionStatus::Failed)), [id(3)]);
    assert_eq!(
        list(&store, Some(SessionStatus::Cancelled)),
        Vec::<String>::new()
    );
    assert_eq!(list(&store, None), [id(3), id(2), id(1)]);
    let open_ones = unfinished_ids(&store);
    assert_eq!(open_ones, [id(2)]);
    // No index holds what a status update sets: the update is HOT, as
    // this transaction's own statistics count it.
    assert_eq!(indexes_on_updated_columns(&mut c), Vec::<String>::new());
    let mut tx = c.transaction().expect("begin");
    tx.execute(
        "UPDATE sessions SET status = 'ended', output = '{}', calls = 3, updated_ms = 9 \
         WHERE id = $1",
        &[&id(2)],
    )
    .expect("update");
    let (updated, hot): (i64, i64) = {
        let row = tx
            .query_one(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables \
                 WHERE relname = 'sessions'",
                &[],
            )
            .expect("stats");
        (row.get(0), row.get(1))
    };
    assert_eq!((updated, hot), (1, 1));
    tx.rollback().expect("rollback");
}

#[test]
fn pg_a_version_5_database_is_migrated_with_its_unfinished_sessions() {
    let Some(url) = database("pg_v5_to_v6") else {
        return;
    };
    let mut c = Client::connect(&url, NoTls).expect("connect");
    migrate_to(&mut c, "test", 5).expect("version 5");
    // Sessions as version 5 stored them: two open, two over.
    let rows = [
        (1, "ended"),
        (2, "running"),
        (3, "failed"),
        (4, "waiting_approval"),
    ];
    for (n, status) in rows {
        c.execute(
            "INSERT INTO sessions (id, tenant, profile, status, request, created_ms, updated_ms) \
             VALUES ($1, 'acme', 'p', $2, '{\"program\": \"1\"}', $3, $3)",
            &[&id(n), &status, &i64::from(n)],
        )
        .expect("session");
        c.execute("INSERT INTO leases (session) VALUES ($1)", &[&id(n)])
            .expect("lease");
    }
    assert_eq!(
        indexes_on_updated_columns(&mut c),
        [
            "sessions_by_status",
            "sessions_by_tenant_status",
            "sessions_unfinished"
        ]
    );
    let store = open(&url);
    let version: i32 = c
        .query_one("SELECT version FROM lt_schema", &[])
        .expect("version")
        .get(0);
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(indexes_on_updated_columns(&mut c), Vec::<String>::new());
    assert_eq!(unfinished_rows(&mut c), [id(2), id(4)]);
    assert_eq!(stopped_rows(&mut c), [(id(3), "failed".to_string())]);
    let open_ones = unfinished_ids(&store);
    assert_eq!(open_ones, [id(2), id(4)]);
    assert_eq!(list(&store, Some(SessionStatus::Running)), [id(2)]);
    assert_eq!(list(&store, Some(SessionStatus::Ended)), [id(1)]);
    assert_eq!(list(&store, Some(SessionStatus::Failed)), [id(3)]);
    // A migrated open session ends as a new one does.
    store
        .set_status(&id(4), SessionStatus::Cancelled, None, 0)
        .expect("cancel");
    assert_eq!(unfinished_rows(&mut c), [id(2)]);
    assert_eq!(
        stopped_rows(&mut c),
        [
            (id(3), "failed".to_string()),
            (id(4), "cancelled".to_string())
        ]
    );
    assert_eq!(list(&store, Some(SessionStatus::Cancelled)), [id(4)]);
    let fillfactor: Vec<String> = c
        .query_one(
            "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'sessions'::regclass",
            &[],
        )
        .expect("options")
        .get(0);
    assert_eq!(fillfactor, ["fillfactor=50"]);
}

/// The ids of the store's unfinished sessions, as `unfinished()` gives them.
fn unfinished_ids(store: &PostgresStore) -> Vec<String> {
    store
        .unfinished()
        .expect("unfinished")
        .into_iter()
        .map(|r| r.id)
        .collect()
}
