"""list_orders: String -{Read}-> List {id: String, customer: String, amount_cents: Int, status: String}

Lists the orders placed in one month (the argument, "YYYY-MM"), oldest first.
Each object also carries placed_on, which the program's declaration does not
mention: lt drops fields a tool returns beyond the declared ones. Fails (exit 1)
if the argument is not a month."""

import json
import re
import sys

sys.dont_write_bytecode = True  # keep the examples folder free of __pycache__
import db


def list_orders(conn, month):
    if not isinstance(month, str) or not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise db.ToolError(f"the argument must be a month such as \"2024-05\", got {json.dumps(month)}")
    rows = conn.execute(
        "SELECT id, customer, placed_on, amount_cents, status FROM orders"
        " WHERE substr(placed_on, 1, 7) = ? ORDER BY placed_on, id",
        (month,),
    ).fetchall()
    return [
        {"id": r[0], "customer": r[1], "placed_on": r[2], "amount_cents": r[3], "status": r[4]}
        for r in rows
    ]


if __name__ == "__main__":
    db.run(list_orders)
