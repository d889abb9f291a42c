"""send_reply: {to: String, body: String} -{Write}-> Unit

"Sends" the reply by inserting one row into `replies`; prints null. Fails
(exit 1) if the address is not an email address or the body is empty."""

import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def send_reply(conn, arg):
    to = db.field(arg, "to", str)
    body = db.field(arg, "body", str)
    if "@" not in to:
        raise db.ToolError(f"'{to}' is not an email address")
    if not body.strip():
        raise db.ToolError("the reply body is empty")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO replies (recipient, body) VALUES (?, ?)", (to, body))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return None


if __name__ == "__main__":
    db.run(send_reply)
