"""Shared helper for the batch_refunds tools: the database and the tool protocol.

The database is the file named by the environment variable LT_EXAMPLE_DB if it
is set, else example.db in the example's folder (found from this file's own
location, so the tools work from any working directory). It is created with
its schema and seed data on first use, in one transaction; later opens leave
it as it is. Delete example.db to start again.

Protocol (lt's subprocess executors): the call's argument arrives as JSON on
stdin, the result is printed as JSON on stdout, and a failure is exit status 1
with a one-line reason on stderr.
"""

import json
import os
import sqlite3
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS accounts (
    id                TEXT PRIMARY KEY,
    email             TEXT NOT NULL,
    last_charge_cents INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refund_requests (
    id           TEXT PRIMARY KEY,
    seq          INTEGER NOT NULL UNIQUE,
    account_id   TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS refunds (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tx_id           TEXT UNIQUE,
    request_id      TEXT NOT NULL REFERENCES refund_requests(id),
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    amount_cents    INTEGER NOT NULL,
    -- lt's idempotency key of the call that made the refund (LT_IDEMPOTENCY_KEY)
    idempotency_key TEXT UNIQUE
);
CREATE TABLE IF NOT EXISTS batch_log (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    status TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""

SEED_ACCOUNTS = [
    # (id, email, last_charge_cents)
    ("cust_1001", "ada@example.com", 1500),
    ("cust_1002", "grace@example.com", 2500),
    ("cust_1004", "alan@example.com", 800),
    ("cust_1005", "barbara@example.com", 3200),
]

SEED_REQUESTS = [
    # (id, seq, account_id, amount_cents, status): processed in seq order.
    # req_003 names an account that does not exist, so its refund fails.
    ("req_001", 1, "cust_1001", 1500, "pending"),
    ("req_002", 2, "cust_1002", 2500, "pending"),
    ("req_003", 3, "cust_9999", 1000, "pending"),
    ("req_004", 4, "cust_1004", 800, "pending"),
    ("req_005", 5, "cust_1005", 3200, "pending"),
]


class ToolError(Exception):
    """A failure the tool reports: exit status 1, the message on stderr."""


def db_path():
    return os.environ.get("LT_EXAMPLE_DB") or os.path.join(EXAMPLE_DIR, "example.db")


def connect():
    """Opens the database (autocommit mode: transactions are explicit),
    creating the schema and the seed data if they are not there yet."""
    conn = sqlite3.connect(db_path(), timeout=10, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("BEGIN IMMEDIATE")
    try:
        # executescript would commit the open transaction: run the statements one by one.
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        seeded = conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone()
        if seeded is None:
            conn.executemany("INSERT INTO accounts VALUES (?, ?, ?)", SEED_ACCOUNTS)
            conn.executemany("INSERT INTO refund_requests VALUES (?, ?, ?, ?, ?)", SEED_REQUESTS)
            conn.execute("INSERT INTO meta VALUES ('seeded', '1')")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return conn


def run(tool):
    """Runs one call: reads the JSON argument from stdin, calls tool(conn, arg),
    prints the JSON result. A ToolError (or anything unexpected) becomes exit
    status 1 with a one-line reason on stderr."""
    try:
        try:
            arg = json.load(sys.stdin)
        except ValueError as e:
            raise ToolError(f"the argument is not JSON: {e}")
        conn = connect()
        try:
            result = tool(conn, arg)
        finally:
            conn.close()
    except ToolError as e:
        fail(str(e))
    except Exception as e:  # a bug or a database problem: still one line, still exit 1
        fail(f"internal error: {type(e).__name__}: {e}")
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


def fail(message):
    sys.stderr.write(" ".join(str(message).split()) + "\n")
    sys.exit(1)


def field(arg, name, kind):
    """arg[name], checked to be of type kind (str or int)."""
    if not isinstance(arg, dict) or name not in arg:
        raise ToolError(f"the argument has no field '{name}'")
    value = arg[name]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ToolError(f"field '{name}' must be an integer")
    if kind is str and not isinstance(value, str):
        raise ToolError(f"field '{name}' must be a string")
    return value
