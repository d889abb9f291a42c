"""Shared helper for the revenue_report tools: the database and the tool protocol.

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
CREATE TABLE IF NOT EXISTS orders (
    id           TEXT PRIMARY KEY,
    customer     TEXT NOT NULL,
    placed_on    TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT NOT NULL
);
"""

SEED_ORDERS = [
    # (id, customer, placed_on, amount_cents, status)
    # April: not part of the May report.
    ("ord_0401", "cust_1001", "2024-04-12", 99999, "paid"),
    ("ord_0402", "cust_1003", "2024-04-20", 2500, "paid"),
    ("ord_0403", "cust_1004", "2024-04-28", 1200, "refunded"),
    # May: 20 orders, 15 paid, 4 refunded, 1 pending.
    ("ord_0501", "cust_1001", "2024-05-01", 4999, "paid"),
    ("ord_0502", "cust_1002", "2024-05-02", 1250, "paid"),
    ("ord_0503", "cust_1003", "2024-05-03", 8900, "refunded"),
    ("ord_0504", "cust_1004", "2024-05-04", 2300, "paid"),
    ("ord_0505", "cust_1005", "2024-05-06", 15000, "paid"),
    ("ord_0506", "cust_1001", "2024-05-07", 799, "paid"),
    ("ord_0507", "cust_1006", "2024-05-09", 3450, "paid"),
    ("ord_0508", "cust_1007", "2024-05-10", 25000, "refunded"),
    ("ord_0509", "cust_1002", "2024-05-12", 1999, "paid"),
    ("ord_0510", "cust_1008", "2024-05-13", 6400, "paid"),
    ("ord_0511", "cust_1003", "2024-05-15", 500, "paid"),
    ("ord_0512", "cust_1009", "2024-05-16", 12000, "paid"),
    ("ord_0513", "cust_1004", "2024-05-18", 4200, "refunded"),
    ("ord_0514", "cust_1010", "2024-05-19", 999, "paid"),
    ("ord_0515", "cust_1005", "2024-05-21", 7350, "paid"),
    ("ord_0516", "cust_1011", "2024-05-22", 18500, "pending"),
    ("ord_0517", "cust_1006", "2024-05-24", 2650, "paid"),
    ("ord_0518", "cust_1012", "2024-05-26", 1100, "refunded"),
    ("ord_0519", "cust_1001", "2024-05-28", 5600, "paid"),
    ("ord_0520", "cust_1007", "2024-05-30", 3300, "paid"),
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
            conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", SEED_ORDERS)
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
