"""issue_refund: {account_id: String, amount: Int} -{Write}-> {tx_id: String}

Inserts one row into `refunds` and returns its transaction id (tx_000001, …).
Fails (exit 1) if the account does not exist, has no charge to refund, or the
amount is not positive or exceeds what is left of the last charge (so the same
charge is never refunded twice, even across runs)."""

import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def issue_refund(conn, arg):
    account_id = db.field(arg, "account_id", str)
    amount = db.field(arg, "amount", int)
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT last_charge_cents FROM accounts WHERE id = ?", (account_id,)
        ).fetchone()
        if row is None:
            raise db.ToolError(f"no account with id {account_id}")
        last_charge = row[0]
        if last_charge <= 0:
            raise db.ToolError(f"account {account_id} has no charge to refund")
        if amount <= 0:
            raise db.ToolError(f"the amount must be positive, got {amount}")
        (refunded,) = conn.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM refunds WHERE account_id = ?",
            (account_id,),
        ).fetchone()
        left = last_charge - refunded
        if left <= 0:
            raise db.ToolError(
                f"the last charge on {account_id} ({last_charge} cents) has already been refunded"
            )
        if amount > left:
            raise db.ToolError(
                f"amount {amount} exceeds the {left} cents left to refund of the last charge "
                f"({last_charge} cents, {refunded} already refunded) on {account_id}"
            )
        cur = conn.execute(
            "INSERT INTO refunds (account_id, amount_cents) VALUES (?, ?)", (account_id, amount)
        )
        tx_id = f"tx_{cur.lastrowid:06d}"
        conn.execute("UPDATE refunds SET tx_id = ? WHERE id = ?", (tx_id, cur.lastrowid))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return {"tx_id": tx_id}


if __name__ == "__main__":
    db.run(issue_refund)
