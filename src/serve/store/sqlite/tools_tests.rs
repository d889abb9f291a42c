//! Tests of the SQLite store's index of the tools each session proposed
//! (`session_tools`, schema version 2): `?tool=` answers as the scan of
//! every session's events it replaced did, and a file written by schema
//! version 1 is migrated (the index backfilled; version 3's requests
//! moved out of the session rows) and then kept by new events.

use super::super::tools_fixture::{check_listed, id, listed, write_mixed, TOOLS};
use super::super::{ListQuery, ServerStore};
use super::schema::SCHEMA_V1_FOR_TESTS;
use super::{SqliteStore, SCHEMA_VERSION};
use crate::log::{EventBody, EventStore};
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A folder of its own under the temp folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("lt-sqlite-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(path: &Path) -> SqliteStore {
    match SqliteStore::open(path) {
        Ok(s) => s.with_clock(|| "2026-11-29T21:04:05.123Z".to_string()),
        Err(e) => panic!("cannot open {}: {e}", path.display()),
    }
}

/// The ids the scan of every session's events (schema version 1's
/// filter) gives for `tenant` and `tool`.
fn scanned(conn: &Connection, tenant: &str, tool: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT id FROM sessions WHERE tenant = ?1 AND EXISTS (SELECT 1 FROM events e \
             WHERE e.session = sessions.id AND instr(e.line, ?2) > 0 \
             AND json_extract(e.line, '$.kind') = 'proposed' \
             AND json_extract(e.line, '$.tool') = ?2) ORDER BY created_ms DESC, id DESC",
        )
        .expect("prepare");
    let rows = stmt
        .query_map([tenant, tool], |r| r.get::<_, String>(0))
        .expect("query");
    rows.map(|r| r.expect("row")).collect()
}

/// Every session of `tenant` (up to 1000).
fn all_of(tenant: &str) -> ListQuery {
    ListQuery {
        tenant: tenant.into(),
        limit: 1000,
        ..ListQuery::default()
    }
}

fn check_against_the_scan(store: &SqliteStore, path: &Path) {
    let conn = Connection::open(path).expect("open");
    for tenant in ["acme", "globex"] {
        for tool in TOOLS {
            assert_eq!(
                listed(store, tenant, tool),
                scanned(&conn, tenant, tool),
                "{tenant} {tool:?}"
            );
        }
    }
    check_listed(store);
}

#[test]
fn the_tool_filter_answers_as_the_scan_of_the_events_did() {
    let dir = TempDir::new("scan");
    let path = dir.0.join("lt.db");
    let store = open(&path);
    write_mixed(&store);
    check_against_the_scan(&store, &path);
}

#[test]
fn a_version_1_file_is_migrated_and_its_tools_indexed() {
    let dir = TempDir::new("v1");
    // The sessions and events, written by this lt into another file...
    let source = dir.0.join("source.db");
    let store = open(&source);
    write_mixed(&store);
    let before = store.list_sessions(&all_of("acme")).expect("list");
    assert!(!before.is_empty());
    drop(store);
    // ...copied into a file of schema version 1, as an older lt left it.
    let path = dir.0.join("lt.db");
    {
        let conn = Connection::open(&path).expect("create");
        conn.execute_batch(SCHEMA_V1_FOR_TESTS).expect("schema 1");
        conn.pragma_update(None, "user_version", 1)
            .expect("version");
        conn.execute("ATTACH ?1 AS src", [source.display().to_string()])
            .expect("attach");
        conn.execute_batch(
            "INSERT INTO sessions (id, tenant, profile, status, request, idempotency_key, \
                                   created_ms, updated_ms, output, calls, events) \
                 SELECT s.id, s.tenant, s.profile, s.status, r.request, s.idempotency_key, \
                        s.created_ms, s.updated_ms, s.output, s.calls, 0 \
                 FROM src.sessions s JOIN src.requests r ON r.id = s.id;
             INSERT INTO events (session, seq, hash, prev, line) \
                 SELECT session, seq, json_extract(line, '$.hash'), \
                        json_extract(line, '$.prev'), line \
                 FROM src.events;",
        )
        .expect("copy");
    }
    let store = open(&path);
    let conn = Connection::open(&path).expect("open");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    check_against_the_scan(&store, &path);
    // Every record, its request included, reads as it was written.
    assert_eq!(store.list_sessions(&all_of("acme")).expect("list"), before);
    // The columns a `WHERE` on `pragma_table_info(table)` selects.
    let columns = |table: &str, filter: &str| -> i64 {
        let sql = format!("SELECT count(*) FROM pragma_table_info('{table}') WHERE {filter}");
        conn.query_row(&sql, [], |r| r.get(0)).expect("columns")
    };
    assert_eq!(
        columns("sessions", "name = 'request'"),
        0,
        "the request left the session rows"
    );
    assert_eq!(
        columns("events", "name IN ('hash', 'prev')"),
        0,
        "each line holds its hash and prev (schema 4)"
    );
    // An event written after the migration is indexed too.
    let mut sink = store.reopen(&id(6)).expect("reopen").sink;
    sink.append(EventBody::Proposed {
        call_id: "n9".into(),
        tool: "late_tool".into(),
        argument: json!(0),
    })
    .expect("append");
    drop(sink);
    store.flush();
    assert_eq!(listed(&store, "acme", "late_tool"), [id(6)]);
    check_against_the_scan(&store, &path);
}
