//! Tests of the PostgreSQL store's index of the tools each session
//! proposed (`session_tools`, schema version 3) against a real server
//! (`LT_TEST_POSTGRES_URL`, skipped when unset): `?tool=` answers as the
//! scan of every session's events it replaced did, and a database at
//! schema version 2 is migrated (the index backfilled) and then kept by
//! new events, which the writer indexes itself (schema version 5).

use super::super::tools_fixture::{check_listed, events, id, listed, write_mixed, TOOLS};
use super::super::{Created, NewSession, ServerStore};
use super::scratch::{fresh_database, test_server};
use super::{PostgresStore, SCHEMA_VERSION};
use crate::log::EventStore;
use serde_json::json;

/// A fresh database's URL, or `None` (skipped).
fn database(test: &str) -> Option<String> {
    let server = test_server(test)?;
    Some(fresh_database(&server, test).unwrap_or_else(|e| panic!("{test}: {e}")))
}

fn open(url: &str) -> PostgresStore {
    match PostgresStore::open(url) {
        Ok(s) => s.with_clock(|| "2026-11-29T21:04:05.123Z".to_string()),
        Err(e) => panic!("cannot open {url}: {e}"),
    }
}

/// The ids the scan of every session's events (schema version 2's
/// filter) gives for `tenant` and `tool`.
fn scanned(c: &mut postgres::Client, tenant: &str, tool: &str) -> Vec<String> {
    c.query(
        "SELECT id FROM sessions WHERE tenant = $1 AND EXISTS (SELECT 1 FROM events e \
         WHERE e.session = sessions.id AND strpos(e.line, $2) > 0 \
         AND (e.line::jsonb ->> 'kind') = 'proposed' \
         AND (e.line::jsonb ->> 'tool') = $2) ORDER BY created_ms DESC, id DESC",
        &[&tenant, &tool],
    )
    .expect("scan")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn check_against_the_scan(store: &PostgresStore, url: &str) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    for tenant in ["acme", "globex"] {
        for tool in TOOLS {
            assert_eq!(
                listed(store, tenant, tool),
                scanned(&mut c, tenant, tool),
                "{tenant} {tool:?}"
            );
        }
    }
    check_listed(store);
}

#[test]
fn pg_the_tool_filter_answers_as_the_scan_of_the_events_did() {
    let Some(url) = database("pg_tools_scan") else {
        return;
    };
    let store = open(&url);
    write_mixed(&store);
    check_against_the_scan(&store, &url);
    // A line that is not JSON is stored, not refused by the index's trigger.
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    c.execute(
        "INSERT INTO events (session, seq, hash, prev, line) \
         VALUES ('x', 0, 'h', repeat('0', 64), '{\"kind\":\"proposed\",')",
        &[],
    )
    .expect("a line that is not JSON");
}

#[test]
fn pg_a_version_2_database_is_migrated_and_its_tools_indexed() {
    let Some(url) = database("pg_tools_v2") else {
        return;
    };
    let store = open(&url);
    write_mixed(&store);
    drop(store);
    // Back to schema version 2 as an older lt left it: no index.
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    c.batch_execute(
        "DROP TABLE unfinished;
         DROP TABLE stopped;
         DROP TABLE followers;
         DROP FUNCTION lt_proposed_tool(text);
         DROP TABLE session_tools;
         UPDATE lt_schema SET version = 2;",
    )
    .expect("back to version 2");
    let store = open(&url);
    let v: i32 = c
        .query_one("SELECT version FROM lt_schema", &[])
        .expect("row")
        .get(0);
    assert_eq!(v, SCHEMA_VERSION);
    check_against_the_scan(&store, &url);
    // A session written after the migration is indexed too.
    let new = NewSession {
        id: id(9),
        tenant: "acme".into(),
        profile: "support".into(),
        request: json!({"program": "1"}),
        idempotency_key: None,
        created_ms: 2000,
    };
    assert_eq!(store.create_session(&new).expect("create"), Created::New);
    let mut sink = store.create(&id(9)).expect("create log");
    for body in events(&["late_tool"], &json!(0), false) {
        sink.append(body).expect("append");
    }
    drop(sink);
    store.flush();
    assert_eq!(listed(&store, "acme", "late_tool"), [id(9)]);
    check_against_the_scan(&store, &url);
}
