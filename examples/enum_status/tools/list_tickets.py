"""list_tickets: String -{Read}-> List {id: String, status: "open" | "pending" | "closed",
                                       customer_email: String, subject: String, days_idle: Int}

The tickets of one support queue (the argument; only "tier1" exists), read from
data/tickets.json in the example's folder, or from the file named by the
environment variable LT_TICKETS_FILE. lt checks each `status` against the
declared enum: a ticket with any other status makes the whole call an Err.

Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
is exit status 1 with a one-line reason on stderr.
"""

import json
import os
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def main():
    try:
        queue = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    if queue != "tier1":
        fail(f"no queue {json.dumps(queue)} (the queues: \"tier1\")")
    path = os.environ.get("LT_TICKETS_FILE") or os.path.join(EXAMPLE_DIR, "data", "tickets.json")
    with open(path, encoding="utf-8") as f:
        tickets = json.load(f)
    json.dump(tickets, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
