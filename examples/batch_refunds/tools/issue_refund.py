"""issue_refund: {request_id: String, account_id: String, amount: Int}
                 -{Write}-> {request_id: String, tx_id: String}

Carries out one pending refund request: inserts a row into `refunds` (tx ids
tx_000001, …) and marks the request 'refunded', in one transaction. Fails
(exit 1) and changes nothing if the request is not pending or does not match
the argument, the account does not exist, or the amount exceeds what is left
of the account's last charge.

Idempotent: lt passes each call's idempotency key in LT_IDEMPOTENCY_KEY (the
session id and the call's identity). A refund records the key; a call with a
key already recorded changes nothing and answers what the first call
answered. So tools.toml declares the tool `idempotent = true`, and `lt resume`
may run again a call whose outcome a crash lost."""

import os
import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def issue_refund(conn, arg):
    request_id = db.field(arg, "request_id", str)
    account_id = db.field(arg, "account_id", str)
    amount = db.field(arg, "amount", int)
    key = os.environ.get("LT_IDEMPOTENCY_KEY") or None
    conn.execute("BEGIN IMMEDIATE")
    try:
        if key is not None:
            done = conn.execute(
                "SELECT request_id, tx_id FROM refunds WHERE idempotency_key = ?", (key,)
            ).fetchone()
            if done is not None:
                conn.execute("COMMIT")
                return {"request_id": done[0], "tx_id": done[1]}
        request = conn.execute(
            "SELECT account_id, amount_cents, status FROM refund_requests WHERE id = ?",
            (request_id,),
        ).fetchone()
        if request is None:
            raise db.ToolError(f"no refund request {request_id}")
        if request[2] != "pending":
            raise db.ToolError(f"request {request_id} is not pending (status: {request[2]})")
        if (request[0], request[1]) != (account_id, amount):
            raise db.ToolError(
                f"request {request_id} is for {request[1]} cents to {request[0]},"
                f" not {amount} cents to {account_id}"
            )
        account = conn.execute(
            "SELECT last_charge_cents FROM accounts WHERE id = ?", (account_id,)
        ).fetchone()
        if account is None:
            raise db.ToolError(f"request {request_id}: no account with id {account_id}")
        if amount <= 0:
            raise db.ToolError(f"request {request_id}: the amount must be positive, got {amount}")
        (refunded,) = conn.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM refunds WHERE account_id = ?",
            (account_id,),
        ).fetchone()
        left = account[0] - refunded
        if amount > left:
            raise db.ToolError(
                f"request {request_id}: amount {amount} exceeds the {left} cents left to refund"
                f" on {account_id}"
            )
        cur = conn.execute(
            "INSERT INTO refunds (request_id, account_id, amount_cents, idempotency_key)"
            " VALUES (?, ?, ?, ?)",
            (request_id, account_id, amount, key),
        )
        tx_id = f"tx_{cur.lastrowid:06d}"
        conn.execute("UPDATE refunds SET tx_id = ? WHERE id = ?", (tx_id, cur.lastrowid))
        conn.execute("UPDATE refund_requests SET status = 'refunded' WHERE id = ?", (request_id,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return {"request_id": request_id, "tx_id": tx_id}


if __name__ == "__main__":
    db.run(issue_refund)
