"""pending_refunds: Unit -{Read}-> List {request_id: String, account_id: String, amount: Int}

Lists the rows of `refund_requests` whose status is 'pending', in seq order."""

import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def pending_refunds(conn, arg):
    if arg not in (None, {}):
        raise db.ToolError("the argument must be unit (null)")
    rows = conn.execute(
        "SELECT id, account_id, amount_cents FROM refund_requests"
        " WHERE status = 'pending' ORDER BY seq"
    ).fetchall()
    return [{"request_id": r[0], "account_id": r[1], "amount": r[2]} for r in rows]


if __name__ == "__main__":
    db.run(pending_refunds)
