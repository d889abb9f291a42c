"""list_page: {cursor: Option String, limit: Int} -{Read}-> {items: List {id: String, subject: String, priority: Int}, next_cursor: Option String}

One page of the open support tickets, oldest first, like a typical REST API:
the first page is asked for with no cursor (the field is absent, or null), each
page answers with the opaque cursor of the next one, and the last page answers
`"next_cursor": null`.

The tickets are read from data/tickets.json in the example's folder, or from
the file named by the environment variable LT_TICKETS_FILE (the tests use it to
list more tickets than the program's page bound). Each ticket also carries
`queue`, which the program does not declare: lt drops the extra field.

Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
(bad cursor, bad limit) is exit status 1 with a one-line reason on stderr.
"""

import base64
import json
import os
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def encode_cursor(offset):
    raw = json.dumps({"offset": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor):
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        offset = json.loads(base64.urlsafe_b64decode(padded.encode()))["offset"]
    except Exception:
        fail(f"invalid cursor {json.dumps(cursor)}")
    if not isinstance(offset, int) or offset < 0:
        fail(f"invalid cursor {json.dumps(cursor)}")
    return offset


def main():
    try:
        arg = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    if not isinstance(arg, dict):
        fail("the argument must be an object {cursor?, limit}")
    limit = arg.get("limit")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        fail(f"limit must be an integer from 1 to 100, got {json.dumps(limit)}")
    cursor = arg.get("cursor")  # absent or null: the first page
    offset = 0 if cursor is None else decode_cursor(cursor)

    path = os.environ.get("LT_TICKETS_FILE") or os.path.join(EXAMPLE_DIR, "data", "tickets.json")
    with open(path, encoding="utf-8") as f:
        tickets = json.load(f)
    if offset > len(tickets):
        fail(f"cursor points past the end of the listing ({offset} > {len(tickets)})")

    items = tickets[offset:offset + limit]
    following = offset + len(items)
    next_cursor = encode_cursor(following) if following < len(tickets) else None
    json.dump({"items": items, "next_cursor": next_cursor}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
