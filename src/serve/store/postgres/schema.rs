//! The PostgreSQL schema: versioned migrations that `lt serve` runs
//! itself, and the chain check the database enforces on every insert.
//!
//! ```text
//! lt_schema (version)                    one row: the version applied
//! sessions  (id PK, tenant, profile, status, request, idempotency_key,
//!            created_ms, updated_ms, output, calls,
//!            UNIQUE (tenant, idempotency_key))   + the SQLite store's indexes
//! events    (session, seq, hash, prev, line, PRIMARY KEY (session, seq))
//!   trigger lt_events_chain BEFORE INSERT: seq 0 has prev = 64 zeros; seq n
//!   has prev = the hash of the stored (session, n-1), else SQLSTATE LT001
//! version 2 (leases, ../leases.rs):
//! leases    (session PK, owner, epoch, expires)   one row per session
//! events.epoch                             the lease epoch it was written under
//!   the trigger also reads the session's lease (FOR KEY SHARE) and refuses
//!   an event whose epoch is not the lease's: SQLSTATE LT002 (fenced)
//! mailbox   (id, session, kind, body)      deliveries to another worker
//! version 3:
//! session_tools (session, tool, PRIMARY KEY (session, tool))
//!   index (tool, session)                  list_sessions?tool=
//!   trigger lt_events_tools AFTER INSERT ON events: a `proposed` event's
//!   tool, in the event's transaction; backfilled by the migration
//! version 4 (the checks once per statement, not once per row):
//!   the row triggers lt_events_chain and lt_events_tools become statement
//!   triggers AFTER INSERT with the statement's rows as a transition table
//!   (lt_new): lt_events_checked raises LT001 when a row does not continue
//!   the chain (the statement's own row of seq n-1, else the stored one)
//!   and LT002 when the lease of a session it writes is at another epoch
//!   (each session's lease row read FOR KEY SHARE once per statement);
//!   lt_events_tools indexes the statement's `proposed` tools in one INSERT
//! version 5 (less of the database's CPU per session):
//!   trigger lt_events_tools dropped: the writer indexes a `proposed`
//!   event's tool itself, in the statement that inserts the event
//!   (bulk.rs, `Append::tool`), as the SQLite store does since its
//!   version 3; no JSON is parsed in the database
//!   index sessions_unfinished (created_ms, id) WHERE the status is not
//!   final: the claim reads unfinished sessions by index only
//!   followers (session, worker, PRIMARY KEY (session, worker)): the
//!   sessions a stream on another worker follows; a batch sends its
//!   `lt_events` notice only for those (followers.rs)
//! version 6 (a session's final update is HOT):
//!   indexes sessions_by_tenant_status, sessions_by_status and
//!   sessions_unfinished dropped: no index of `sessions` holds a column
//!   a status update sets (status, output, calls, updated_ms), so
//!   PostgreSQL updates the row in place on its page (a heap-only
//!   tuple: no new index entry); fillfactor 50 leaves the page room
//! unfinished (session PK, created_ms)      index (created_ms, session)
//!   the sessions whose status is not final: inserted with the session
//!   and deleted by the update that makes its status final, in the same
//!   statements (rows.rs); the claim, `unfinished()` and a list by an
//!   open status read it; the migration fills it from `sessions`
//! stopped (session PK, tenant, status, created_ms)
//!   index (tenant, status, created_ms DESC, session DESC)
//!   the sessions that failed or were cancelled, inserted by the update
//!   that sets that status: a list by one of them reads it; a list of the
//!   ended ones (most sessions) reads the tenant's index and filters
//! ```
//!
//! Why version 4: a row trigger in PL/pgSQL ran three queries per event
//! (the chain, the lease, the tools); a batch of a hundred events paid it
//! a hundred times, the writer's INSERT was most of PostgreSQL's CPU per
//! session (docs/performance.md). The guarantees are the same: the
//! statement that breaks the chain or is fenced fails whole, before its
//! transaction can commit.
//!
//! Why version 6: the update that ended a session changed `status`, which
//! three indexes held (one in its predicate), so PostgreSQL wrote a new
//! entry in each of the table's six indexes, twice per session with the
//! insert; a HOT update writes none, and the `unfinished` row costs one
//! insert and one delete of a narrow row (docs/performance.md, run 6).
//! An ended session costs no row of `stopped`; a failed or cancelled one
//! (rare) one insert.
//!
//! Invariant: a database whose version is newer than [`SCHEMA_VERSION`]
//! is refused and never written; a schema that holds `sessions` or
//! `events` but no `lt_schema` is another program's, and is refused.
//! Migrations run in one transaction under an advisory lock, so two
//! servers starting together migrate once.

use super::url::OpenError;
use postgres::error::SqlState;
use postgres::Client;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = 6;

/// The SQLSTATE the chain trigger raises.
pub const CHAIN_BROKEN: &str = "LT001";

/// The SQLSTATE the chain trigger raises for an event written under a
/// lease epoch that is not the session's current one (a fenced worker).
pub const FENCED: &str = "LT002";

/// The key of the advisory lock migrations take (`lt` in ASCII).
const MIGRATION_LOCK: i64 = 0x6c74_0001;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; 6] = [
    r#"
CREATE TABLE sessions (
    id              text PRIMARY KEY,
    tenant          text NOT NULL,
    profile         text NOT NULL,
    status          text NOT NULL,
    request         text NOT NULL,
    idempotency_key text,
    created_ms      bigint NOT NULL,
    updated_ms      bigint NOT NULL,
    output          text,
    calls           bigint NOT NULL DEFAULT 0,
    UNIQUE (tenant, idempotency_key)
);
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_ms DESC, id DESC);
CREATE INDEX sessions_by_tenant_status ON sessions (tenant, status, created_ms DESC, id DESC);
CREATE INDEX sessions_by_status ON sessions (status, created_ms, id);
CREATE TABLE events (
    session text NOT NULL,
    seq     bigint NOT NULL CHECK (seq >= 0),
    hash    text NOT NULL,
    prev    text NOT NULL,
    line    text NOT NULL,
    PRIMARY KEY (session, seq)
);
CREATE FUNCTION lt_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq = 0 THEN
        IF NEW.prev <> repeat('0', 64) THEN
            RAISE EXCEPTION 'session %: event 0 must have prev = 64 zeros', NEW.session
                USING ERRCODE = 'LT001';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM events e
                      WHERE e.session = NEW.session AND e.seq = NEW.seq - 1
                        AND e.hash = NEW.prev) THEN
        RAISE EXCEPTION 'session %: event % does not continue the stored chain', NEW.session, NEW.seq
            USING ERRCODE = 'LT001';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER lt_events_chain BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION lt_events_chain();
"#,
    r#"
CREATE TABLE leases (
    session text PRIMARY KEY,
    owner   text,
    epoch   bigint NOT NULL DEFAULT 0,
    expires timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX leases_by_expiry ON leases (expires);
INSERT INTO leases (session) SELECT id FROM sessions;
ALTER TABLE events ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
CREATE TABLE mailbox (
    id      bigserial PRIMARY KEY,
    session text NOT NULL,
    kind    text NOT NULL,
    body    text NOT NULL
);
CREATE INDEX mailbox_by_session ON mailbox (session, id);
CREATE OR REPLACE FUNCTION lt_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held bigint;
BEGIN
    IF NEW.seq = 0 THEN
        IF NEW.prev <> repeat('0', 64) THEN
            RAISE EXCEPTION 'session %: event 0 must have prev = 64 zeros', NEW.session
                USING ERRCODE = 'LT001';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM events e
                      WHERE e.session = NEW.session AND e.seq = NEW.seq - 1
                        AND e.hash = NEW.prev) THEN
        RAISE EXCEPTION 'session %: event % does not continue the stored chain', NEW.session, NEW.seq
            USING ERRCODE = 'LT001';
    END IF;
    -- Fencing: a claim takes the lease row FOR UPDATE, so an append waits
    -- for it and then reads the new epoch.
    SELECT l.epoch INTO held FROM leases l WHERE l.session = NEW.session FOR KEY SHARE;
    IF FOUND AND held <> NEW.epoch THEN
        RAISE EXCEPTION 'session %: event % was written under lease epoch %, and the lease is at epoch %',
            NEW.session, NEW.seq, NEW.epoch, held
            USING ERRCODE = 'LT002';
    END IF;
    RETURN NEW;
END
$$;
"#,
    r#"
CREATE TABLE session_tools (
    session text NOT NULL,
    tool    text NOT NULL,
    PRIMARY KEY (session, tool)
);
CREATE INDEX session_tools_by_tool ON session_tools (tool, session);
-- The tool of a `proposed` event line, else NULL (a line that is not
-- JSON included: its insert must not fail here).
CREATE FUNCTION lt_proposed_tool(line text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    doc jsonb;
BEGIN
    IF strpos(line, 'proposed') = 0 THEN
        RETURN NULL;
    END IF;
    BEGIN
        doc := line::jsonb;
    EXCEPTION WHEN others THEN
        RETURN NULL;
    END;
    IF jsonb_typeof(doc) <> 'object' OR doc ->> 'kind' IS DISTINCT FROM 'proposed'
       OR jsonb_typeof(doc -> 'tool') IS DISTINCT FROM 'string' THEN
        RETURN NULL;
    END IF;
    RETURN doc ->> 'tool';
END
$$;
CREATE FUNCTION lt_events_tools() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tool text := lt_proposed_tool(NEW.line);
BEGIN
    IF tool IS NOT NULL THEN
        INSERT INTO session_tools (session, tool) VALUES (NEW.session, tool)
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER lt_events_tools AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION lt_events_tools();
INSERT INTO session_tools (session, tool)
    SELECT DISTINCT session, tool
    FROM (SELECT session, lt_proposed_tool(line) AS tool FROM events
          WHERE strpos(line, 'proposed') > 0) AS proposed
    WHERE tool IS NOT NULL
    ON CONFLICT DO NOTHING;
"#,
    r#"
-- Version 4: the events' checks once per statement (transition tables)
-- instead of once per row: the chain, the lease's fence, the tools' index.
DROP TRIGGER IF EXISTS lt_events_chain ON events;
DROP FUNCTION IF EXISTS lt_events_chain();
DROP TRIGGER IF EXISTS lt_events_tools ON events;
DROP TRIGGER IF EXISTS lt_events_checked ON events;
-- SET enable_seqscan: every query here looks rows up by key, a few per
-- statement; planned once per connection on a new table (no statistics
-- yet) a sequential scan would be kept while the table grows.
CREATE OR REPLACE FUNCTION lt_events_checked() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off AS $$
DECLARE
    bad record;
BEGIN
    -- The chain: seq 0 continues 64 zeros; seq n the hash of n-1, the
    -- statement's own row when it holds n-1 (lag), else the stored one.
    SELECT w.session, w.seq INTO bad
    FROM (SELECT n.session, n.seq, n.prev,
                 lag(n.seq) OVER s AS pseq, lag(n.hash) OVER s AS phash
          FROM lt_new n WINDOW s AS (PARTITION BY n.session ORDER BY n.seq)) w
    WHERE CASE WHEN w.seq = 0 THEN w.prev <> repeat('0', 64)
               WHEN w.pseq = w.seq - 1 THEN w.phash <> w.prev
               ELSE NOT EXISTS (SELECT 1 FROM events e
                                WHERE e.session = w.session AND e.seq = w.seq - 1
                                  AND e.hash = w.prev) END
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'session %: event % does not continue the stored chain', bad.session, bad.seq
            USING ERRCODE = 'LT001';
    END IF;
    -- Fencing: each session's lease row once, FOR KEY SHARE until the
    -- commit (a claim takes it FOR UPDATE: it waits for this transaction,
    -- or this lock waits for the claim and reads the new epoch).
    FOR bad IN
        SELECT l.session, n.epoch AS wrote, l.epoch AS held
        FROM leases l
        JOIN (SELECT DISTINCT t.session, t.epoch FROM lt_new t) n ON n.session = l.session
        WHERE l.session = ANY (ARRAY(SELECT DISTINCT t.session FROM lt_new t))
        ORDER BY l.session
        FOR KEY SHARE OF l
    LOOP
        IF bad.held <> bad.wrote THEN
            RAISE EXCEPTION 'session %: events were written under lease epoch %, and the lease is at epoch %',
                bad.session, bad.wrote, bad.held
                USING ERRCODE = 'LT002';
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER lt_events_checked AFTER INSERT ON events
    REFERENCING NEW TABLE AS lt_new
    FOR EACH STATEMENT EXECUTE FUNCTION lt_events_checked();
CREATE OR REPLACE FUNCTION lt_events_tools() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO session_tools (session, tool)
        SELECT DISTINCT p.session, p.tool
        FROM (SELECT n.session, lt_proposed_tool(n.line) AS tool FROM lt_new n
              WHERE strpos(n.line, 'proposed') > 0) AS p
        WHERE p.tool IS NOT NULL
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER lt_events_tools AFTER INSERT ON events
    REFERENCING NEW TABLE AS lt_new
    FOR EACH STATEMENT EXECUTE FUNCTION lt_events_tools();
"#,
    r#"
-- Version 5: the tools' index written by the writer with the events
-- (bulk.rs), not parsed from each `proposed` line by a trigger.
DROP TRIGGER IF EXISTS lt_events_tools ON events;
DROP FUNCTION IF EXISTS lt_events_tools();
-- The claim's unfinished sessions, by index only.
CREATE INDEX sessions_unfinished ON sessions (created_ms, id)
    WHERE status NOT IN ('ended', 'failed', 'cancelled');
-- The sessions a stream on another worker than their writer's follows.
CREATE TABLE followers (
    session text NOT NULL,
    worker  text NOT NULL,
    PRIMARY KEY (session, worker)
);
"#,
    r#"
-- Version 6: a status update touches no index of `sessions` (a HOT
-- update); the unfinished sessions listed by a table of their own.
DROP INDEX IF EXISTS sessions_by_tenant_status;
DROP INDEX IF EXISTS sessions_by_status;
DROP INDEX IF EXISTS sessions_unfinished;
-- Half of each page left free for the new versions: the sessions a batch
-- created together often end together, every row of a page updated by
-- one statement (at fillfactor 70 about half the updates found no room).
ALTER TABLE sessions SET (fillfactor = 50);
CREATE TABLE unfinished (
    session    text PRIMARY KEY,
    created_ms bigint NOT NULL
);
CREATE INDEX unfinished_by_age ON unfinished (created_ms, session);
INSERT INTO unfinished (session, created_ms)
    SELECT id, created_ms FROM sessions
    WHERE status NOT IN ('ended', 'failed', 'cancelled');
-- The sessions that failed or were cancelled (rare), for a list by those
-- statuses; a list of the ended ones reads the tenant's index and filters.
CREATE TABLE stopped (
    session    text PRIMARY KEY,
    tenant     text NOT NULL,
    status     text NOT NULL,
    created_ms bigint NOT NULL
);
CREATE INDEX stopped_by_tenant ON stopped (tenant, status, created_ms DESC, session DESC);
INSERT INTO stopped (session, tenant, status, created_ms)
    SELECT id, tenant, status, created_ms FROM sessions
    WHERE status IN ('failed', 'cancelled');
"#,
];

/// Brings the schema of `client`'s database (its current schema) to
/// [`SCHEMA_VERSION`]; the version found before. Errors: newer, another
/// program's tables, the database failed.
pub fn migrate(client: &mut Client, name: &str) -> Result<i32, OpenError> {
    migrate_to(client, name, SCHEMA_VERSION)
}

/// [`migrate`] up to version `to` only (tests: a database as an older lt
/// left it). A database already past `to` is left as it is.
pub(super) fn migrate_to(client: &mut Client, name: &str, to: i32) -> Result<i32, OpenError> {
    let failed = |e: postgres::Error| OpenError {
        message: format!(
            "the store {name}: cannot create or check its schema: {}",
            super::url::full_text(&e)
        ),
        hint: Some("the user needs CREATE on the database's schema".into()),
        usage: false,
    };
    let mut tx = client.transaction().map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(failed)?;
    let tables: Vec<String> = tx
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() \
               AND table_name IN ('lt_schema', 'sessions', 'events')",
            &[],
        )
        .map_err(failed)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let version: i32 = if tables.iter().any(|t| t == "lt_schema") {
        tx.query_opt("SELECT max(version) FROM lt_schema", &[])
            .map_err(failed)?
            .and_then(|r| r.get::<_, Option<i32>>(0))
            .unwrap_or(0)
    } else if !tables.is_empty() {
        return Err(OpenError {
            message: format!(
                "the store {name} holds tables `{}` but no lt schema version: it is another program's database",
                tables.join("`, `")
            ),
            hint: Some("give lt serve a database (or schema) of its own".into()),
            usage: false,
        });
    } else {
        tx.batch_execute("CREATE TABLE lt_schema (version integer NOT NULL)")
            .map_err(failed)?;
        0
    };
    if version > SCHEMA_VERSION {
        return Err(OpenError {
            message: format!(
                "the store {name} has schema version {version}, and this lt knows versions up to {SCHEMA_VERSION}: a newer lt migrated it"
            ),
            hint: Some("run the newer lt serve against it; nothing was changed".into()),
            usage: false,
        });
    }
    let to = to.clamp(0, SCHEMA_VERSION);
    for (n, migration) in MIGRATIONS
        .iter()
        .enumerate()
        .take(to as usize)
        .skip(version.max(0) as usize)
    {
        tx.batch_execute(migration)
            .map_err(|e| migration_failed(name, version, n + 1, &e))?;
    }
    if version < to {
        tx.execute("DELETE FROM lt_schema", &[]).map_err(failed)?;
        tx.execute("INSERT INTO lt_schema (version) VALUES ($1)", &[&to])
            .map_err(failed)?;
    }
    tx.commit().map_err(failed)?;
    Ok(version)
}

/// The error of migration `to` (from version `recorded`): the database's
/// own words, and, when it found the objects that migration creates
/// already there, what that means: the recorded version was lowered by
/// hand (or the row deleted) after a later migration. Nothing of the
/// transaction stays.
fn migration_failed(name: &str, recorded: i32, to: usize, e: &postgres::Error) -> OpenError {
    let text = super::url::full_text(e);
    let duplicate = [
        SqlState::DUPLICATE_TABLE,
        SqlState::DUPLICATE_COLUMN,
        SqlState::DUPLICATE_OBJECT,
        SqlState::DUPLICATE_FUNCTION,
    ];
    if e.code().is_some_and(|c| duplicate.contains(c)) {
        return OpenError {
            message: format!(
                "the store {name}: its lt_schema records version {recorded}, but its tables already hold what version {to} adds ({text}): the version was changed by hand; lt neither migrates nor writes it, and nothing was changed"
            ),
            hint: Some(format!(
                "back the database up, then set the version back to the one its tables are at (UPDATE lt_schema SET version = N; this lt's is {SCHEMA_VERSION}) and start again"
            )),
            usage: false,
        };
    }
    OpenError {
        message: format!(
            "the store {name}: cannot migrate its schema from version {recorded} to {to}: {text}; nothing was changed"
        ),
        hint: Some("the user needs CREATE on the database's schema".into()),
        usage: false,
    }
}

/// The columns of a session record, in [`record_of`]'s order (the event
/// count from `events`, as the SQLite store reads it).
pub const RECORD_COLUMNS: &str = "id, tenant, profile, status, request, idempotency_key, \
     created_ms, updated_ms, output, calls, \
     COALESCE((SELECT max(e.seq) + 1 FROM events e WHERE e.session = sessions.id), 0)";

/// A row's place in a list (`created_ms`, `id`: a page's cursor), if
/// those two columns read.
pub fn list_key(row: &postgres::Row) -> Option<(i64, String)> {
    Some((row.try_get(6).ok()?, row.try_get(0).ok()?))
}

/// The record of a row of [`RECORD_COLUMNS`]. Errors: a column of
/// another type, a status or JSON text the store does not write (the
/// table was edited).
pub fn record_of(row: &postgres::Row) -> Result<super::super::SessionRecord, String> {
    use super::super::{SessionRecord, SessionStatus};
    let id: String = row.try_get(0).map_err(|e| e.to_string())?;
    let col = |e: postgres::Error| format!("session {id}: {e}");
    let status: String = row.try_get(3).map_err(col)?;
    let status = SessionStatus::parse(&status)
        .ok_or_else(|| format!("session {id} has an unknown status `{status}`"))?;
    let json = |text: &str, what: &str| {
        // At any depth, as the log and the executors read JSON.
        crate::runtime::deep_json::parse_str(text, false)
            .map_err(|e| format!("session {id}: its {what} is not JSON: {e}"))
    };
    let request = json(row.try_get(4).map_err(col)?, "request")?;
    let output = row
        .try_get::<_, Option<&str>>(8)
        .map_err(col)?
        .map(|o| json(o, "output"))
        .transpose()?;
    let calls: i64 = row.try_get(9).map_err(col)?;
    let events: i64 = row.try_get(10).map_err(col)?;
    Ok(SessionRecord {
        status,
        request,
        output,
        calls: u64::try_from(calls).unwrap_or(0),
        events: u64::try_from(events).unwrap_or(0),
        tenant: row.try_get(1).map_err(col)?,
        profile: row.try_get(2).map_err(col)?,
        idempotency_key: row.try_get(5).map_err(col)?,
        created_ms: row.try_get(6).map_err(col)?,
        updated_ms: row.try_get(7).map_err(col)?,
        id,
    })
}
