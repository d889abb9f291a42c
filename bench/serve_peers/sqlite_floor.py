"""The floor: a session is 3 SQLite commits, one per step, each fsynced
(WAL, synchronous=FULL), one connection per client thread, no group commit.
Nothing is faster and still durable step by step without batching commits.

  python3 sqlite_floor.py DB_PATH sequential RUNS
  python3 sqlite_floor.py DB_PATH concurrent CLIENTS SECONDS

Prints one JSON object (driver.py).
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402

path, mode = sys.argv[1], sys.argv[2]


def connect():
    c = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=FULL")
    c.execute("PRAGMA busy_timeout=60000")
    return c


first = connect()
first.execute("CREATE TABLE IF NOT EXISTS steps(session TEXT, step INT, output TEXT, PRIMARY KEY(session, step))")
run = str(os.getpid())


def session(i, conn=first):
    for step in (1, 2, 3):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO steps VALUES(?, ?, ?)", (f"{run}-{i}", step, json.dumps({"tx_id": f"t{step}"})))
        conn.execute("COMMIT")


if mode == "sequential":
    result = driver.sequential(session, int(sys.argv[3]))
else:
    result = driver.concurrent(session, int(sys.argv[3]), float(sys.argv[4]), make_client=connect)
result["sqlite"] = sqlite3.sqlite_version
driver.emit(result)
