"""lookup_account: String -{Read}-> {id, email, subscription_tier, last_charge_cents}

Reads one row of `accounts`. Fails (exit 1) if there is no such account."""

import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def lookup_account(conn, customer_id):
    if not isinstance(customer_id, str):
        raise db.ToolError("the argument must be a customer id (a string)")
    row = conn.execute(
        "SELECT id, email, subscription_tier, last_charge_cents FROM accounts WHERE id = ?",
        (customer_id,),
    ).fetchone()
    if row is None:
        raise db.ToolError(f"no account with id {customer_id}")
    return {
        "id": row[0],
        "email": row[1],
        "subscription_tier": row[2],
        "last_charge_cents": row[3],
    }


if __name__ == "__main__":
    db.run(lookup_account)
