"""log_batch: {status: String, detail: String} -{Write}-> Unit

Appends one row to `batch_log` (status 'complete' or 'stopped'); prints null."""

import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def log_batch(conn, arg):
    status = db.field(arg, "status", str)
    detail = db.field(arg, "detail", str)
    if status not in ("complete", "stopped"):
        raise db.ToolError(f"unknown batch status '{status}' (expected complete or stopped)")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO batch_log (status, detail) VALUES (?, ?)", (status, detail))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return None


if __name__ == "__main__":
    db.run(log_batch)
