//! The database file: opening a connection (WAL, `synchronous=FULL`, a
//! busy timeout) and the schema, created on first open and versioned by
//! `PRAGMA user_version`.
//!
//! ```text
//! sessions (id PK, tenant, profile, status, request, idempotency_key,
//!           created_ms, updated_ms, output, calls, events (unused: see
//!           RECORD_COLUMNS; dropped in version 4),
//!           UNIQUE (tenant, idempotency_key))
//!   index (tenant, created_ms DESC, id DESC)           list_sessions
//!   index (tenant, status, created_ms DESC, id DESC)   list_sessions?status=
//!   index (status, created_ms, id)                     unfinished
//! events   (session, seq, hash, prev, line, PRIMARY KEY (session, seq))
//! version 2:
//! session_tools (session, tool, PRIMARY KEY (session, tool))
//!   index (tool, session)                            list_sessions?tool=
//!   trigger events_tools AFTER INSERT ON events: a `proposed` event's
//!   tool, in the same transaction as the event; backfilled by the
//!   migration from the events already stored
//! version 3:
//! requests (id PK, request) WITHOUT ROWID      the request, out of the row
//!   sessions.request dropped (moved here by the migration): a running
//!   session's row is rewritten with each status change, and without the
//!   program in it the rows of the sessions in flight fill a few pages,
//!   not dozens, so a group commit writes fewer pages to the WAL
//!   trigger events_tools dropped: the writer inserts a `proposed`
//!   event's tool into session_tools itself, from the event it appends
//!   (the trigger scanned every line it inserted for "proposed")
//! version 4:
//! events   (session, seq, line, PRIMARY KEY (session, seq))
//!   the `hash` and `prev` columns dropped: each line holds both (the
//!   writer reads a session's last hash from its last line, once per
//!   session it has not written since it started); a fifth of an event's
//!   row, written to the WAL, copied by the checkpoint
//!   sessions.events dropped (unused since version 1: RECORD_COLUMNS)
//! ```
//!
//! Invariant: a file whose `user_version` is newer than [`SCHEMA_VERSION`]
//! is refused, never written; a file with version 0 gets the schema only
//! when it holds no table (an empty or new file), so another program's
//! database is not taken over; a file whose `user_version` is not the
//! version its tables have (changed by hand) is refused, never migrated.

use super::super::{SessionRecord, SessionStatus};
use rusqlite::{Connection, OpenFlags, Row, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 4;

/// How long a statement waits for another connection's lock before
/// failing with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema of version 1 (run in one transaction).
const SCHEMA_V1: &str = "
CREATE TABLE sessions (
    id              TEXT PRIMARY KEY NOT NULL,
    tenant          TEXT NOT NULL,
    profile         TEXT NOT NULL,
    status          TEXT NOT NULL,
    request         TEXT NOT NULL,
    idempotency_key TEXT,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    output          TEXT,
    calls           INTEGER NOT NULL DEFAULT 0,
    events          INTEGER NOT NULL DEFAULT 0,
    UNIQUE (tenant, idempotency_key)
);
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_ms DESC, id DESC);
CREATE INDEX sessions_by_tenant_status ON sessions (tenant, status, created_ms DESC, id DESC);
CREATE INDEX sessions_by_status ON sessions (status, created_ms, id);
CREATE TABLE events (
    session TEXT NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    hash    TEXT NOT NULL,
    prev    TEXT NOT NULL,
    line    TEXT NOT NULL,
    PRIMARY KEY (session, seq)
);
";

/// Which tool an event line calls: the `tool` of a `proposed` event. The
/// text search first spares parsing most lines; `json_valid` keeps a line
/// that is not JSON from failing its insert.
macro_rules! proposed_tool {
    ($line:literal) => {
        concat!(
            "instr(",
            $line,
            ", 'proposed') > 0 AND json_valid(",
            $line,
            ") ",
            "AND json_extract(",
            $line,
            ", '$.kind') = 'proposed' ",
            "AND json_type(",
            $line,
            ", '$.tool') = 'text'"
        )
    };
}

/// Migration `i` takes the schema from version `i + 1` to `i + 2`.
const MIGRATIONS: [&str; 3] = [
    concat!(
        "CREATE TABLE session_tools (
    session TEXT NOT NULL,
    tool    TEXT NOT NULL,
    PRIMARY KEY (session, tool)
) WITHOUT ROWID;
CREATE INDEX session_tools_by_tool ON session_tools (tool, session);
CREATE TRIGGER events_tools AFTER INSERT ON events WHEN ",
        proposed_tool!("NEW.line"),
        " BEGIN
    INSERT OR IGNORE INTO session_tools (session, tool)
        VALUES (NEW.session, json_extract(NEW.line, '$.tool'));
END;
INSERT OR IGNORE INTO session_tools (session, tool)
    SELECT session, json_extract(line, '$.tool') FROM events WHERE ",
        proposed_tool!("line"),
        ";"
    ),
    "
CREATE TABLE requests (
    id      TEXT PRIMARY KEY NOT NULL,
    request TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO requests (id, request) SELECT id, request FROM sessions;
ALTER TABLE sessions DROP COLUMN request;
DROP TRIGGER events_tools;
",
    "
CREATE TABLE events_v4 (
    session TEXT NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    line    TEXT NOT NULL,
    PRIMARY KEY (session, seq)
);
INSERT INTO events_v4 (session, seq, line) SELECT session, seq, line FROM events;
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;
ALTER TABLE sessions DROP COLUMN events;
",
];

/// Why the file could not be opened as a store.
#[derive(Debug)]
pub enum OpenError {
    /// SQLite failed (the file cannot be opened, read, or written).
    Sqlite(rusqlite::Error),
    /// A newer `lt` wrote the file.
    Newer(i64),
    /// The file is another program's database.
    Foreign,
    /// `user_version` says `recorded`, but the tables are those of
    /// version `tables` (the version was changed by hand).
    Mismatch { recorded: i64, tables: i64 },
    /// The file cannot be put in WAL mode (the journal mode it got).
    NotWal(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Sqlite(e) => write!(f, "{e}"),
            OpenError::Newer(v) => write!(
                f,
                "its schema version is {v}, and this lt knows versions up to {SCHEMA_VERSION}: a newer lt wrote it; use that one"
            ),
            OpenError::Mismatch { recorded, tables } => write!(
                f,
                "its PRAGMA user_version is {recorded}, but its tables are those of schema version {tables} (the version was changed by hand): lt neither migrates nor writes it; back the file up, then set the version back (sqlite3 FILE 'PRAGMA user_version = {tables}') and start again"
            ),
            OpenError::Foreign => f.write_str(
                "it holds tables but no lt schema version: it is another program's database",
            ),
            OpenError::NotWal(mode) => write!(
                f,
                "it cannot use write-ahead logging (journal mode {mode}); put it on a local file system"
            ),
        }
    }
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        OpenError::Sqlite(e)
    }
}

/// What a connection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The writer thread's: creates the file when it is missing.
    Writer,
    /// A reader's: `query_only`, so no read path can write by mistake.
    Reader,
    /// The checkpointer's (`checkpoint.rs`): copies the WAL into the file.
    Checkpointer,
}

/// Opens a connection to the store at `path` with the busy timeout; the
/// writer's puts the file in WAL mode (checked) with `synchronous=FULL` (a
/// commit is fsynced before it returns).
pub fn connect(path: &Path, role: Role) -> Result<Connection, OpenError> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if role == Role::Writer {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    match role {
        // WAL is a property of the file: set once, by the writer.
        Role::Writer => {
            let mode: String =
                conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(OpenError::NotWal(mode));
            }
            conn.pragma_update(None, "synchronous", "FULL")?;
            conn.pragma_update(None, "wal_autocheckpoint", super::checkpoint::AUTO_PAGES)?;
            // SQLite's default cache (2 MiB) holds the pages a group commit
            // touches; a larger one cost each commit a walk of its whole
            // page hash (`pcache1TruncateUnsafe`: a tenth of the writer's
            // time with 32 MiB).
            conn.pragma_update(None, "cache_size", -2048)?;
        }
        Role::Reader => conn.pragma_update(None, "query_only", true)?,
        Role::Checkpointer => conn.pragma_update(None, "synchronous", "FULL")?,
    }
    Ok(conn)
}

/// Checks the schema version of `conn`'s database, creating the schema in
/// a new (empty) file and migrating an older one; the version found
/// before. Errors: a newer version, another program's database, SQLite.
pub fn migrate(conn: &mut Connection) -> Result<i64, OpenError> {
    // IMMEDIATE: two servers opening a new file at once create it once.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(OpenError::Newer(version));
    }
    // The version the tables have, which a migration starts from: a
    // version lowered by hand would re-run migrations already applied.
    let tables = tables_version(&tx)?;
    match tables {
        Some(t) if t != version => {
            return Err(OpenError::Mismatch {
                recorded: version,
                tables: t,
            })
        }
        _ => {}
    }
    if version == SCHEMA_VERSION {
        return Ok(version);
    }
    if version == 0 {
        let tables: i64 = tx.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
            [],
            |r| r.get(0),
        )?;
        if tables > 0 {
            return Err(OpenError::Foreign);
        }
        tx.execute_batch(SCHEMA_V1)?;
    }
    for migration in MIGRATIONS.iter().skip((version.max(1) - 1) as usize) {
        tx.execute_batch(migration)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(version)
}

/// The schema version `conn`'s tables have, read from the tables and
/// columns each migration adds or drops (`None`: no `sessions` and
/// `events` tables, so not an lt store).
fn tables_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    let table = |name: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    let column = |table: &str, column: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
            [table, column],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    if !table("sessions")? || !table("events")? {
        return Ok(None);
    }
    Ok(Some(if !table("session_tools")? {
        1
    } else if !table("requests")? {
        2
    } else if column("events", "hash")? {
        3
    } else {
        4
    }))
}

/// The schema of version 1, for the tests of the migration.
#[cfg(test)]
pub const SCHEMA_V1_FOR_TESTS: &str = SCHEMA_V1;

/// The columns of a session record, in [`RawRecord::read`]'s order.
///
/// The request is read from `requests` (schema version 3). The event
/// count is read from `events` (its last `seq` + 1: seqs run
/// from 0 without a gap): a `sessions` column updated with every group
/// commit rewrote the row of every running session each time (version 1
/// had one, written only when the row was made; version 4 drops it).
pub const RECORD_COLUMNS: &str = "id, tenant, profile, status, \
     (SELECT r.request FROM requests r WHERE r.id = sessions.id), idempotency_key, \
     created_ms, updated_ms, output, calls, \
     COALESCE((SELECT max(e.seq) + 1 FROM events e WHERE e.session = sessions.id), 0)";

/// A session row as SQLite holds it.
pub struct RawRecord {
    id: String,
    tenant: String,
    profile: String,
    status: String,
    /// `None`: no `requests` row (a damaged file).
    request: Option<String>,
    idempotency_key: Option<String>,
    created_ms: i64,
    updated_ms: i64,
    output: Option<String>,
    calls: i64,
    events: i64,
}

impl RawRecord {
    /// Its place in a list (`created_ms`, `id`): a page's cursor.
    pub fn key(&self) -> (i64, String) {
        (self.created_ms, self.id.clone())
    }

    /// Reads the [`RECORD_COLUMNS`] of `row`.
    pub fn read(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
        Ok(RawRecord {
            id: row.get(0)?,
            tenant: row.get(1)?,
            profile: row.get(2)?,
            status: row.get(3)?,
            request: row.get(4)?,
            idempotency_key: row.get(5)?,
            created_ms: row.get(6)?,
            updated_ms: row.get(7)?,
            output: row.get(8)?,
            calls: row.get(9)?,
            events: row.get(10)?,
        })
    }
}

/// The record of a row. Errors: a status or JSON text the store does not
/// write (the file was edited).
pub fn record_of(raw: RawRecord) -> Result<SessionRecord, String> {
    let status = SessionStatus::parse(&raw.status)
        .ok_or_else(|| format!("session {} has an unknown status `{}`", raw.id, raw.status))?;
    let json = |text: &str, what: &str| {
        // At any depth, as the log and the executors read JSON: a value
        // nested past serde_json's default 128 levels is a session's.
        crate::runtime::deep_json::parse_str(text, false)
            .map_err(|e| format!("session {}: its {what} is not JSON: {e}", raw.id))
    };
    let request = json(
        raw.request
            .as_deref()
            .ok_or_else(|| format!("session {} has no recorded request", raw.id))?,
        "request",
    )?;
    let output = raw
        .output
        .as_deref()
        .map(|o| json(o, "output"))
        .transpose()?;
    Ok(SessionRecord {
        status,
        request,
        output,
        calls: u64::try_from(raw.calls).unwrap_or(0),
        events: u64::try_from(raw.events).unwrap_or(0),
        id: raw.id,
        tenant: raw.tenant,
        profile: raw.profile,
        idempotency_key: raw.idempotency_key,
        created_ms: raw.created_ms,
        updated_ms: raw.updated_ms,
    })
}
