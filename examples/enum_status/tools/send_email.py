"""send_email: {to: String, subject: String, body: String} -{Email}-> {message_id: String}

Sends one email. This example's mail server is a stand-in: the message id is
derived from the message itself (so runs are repeatable), and the message is
appended, as one JSON line, to the file named by the environment variable
LT_OUTBOX if it is set (the tests read it); otherwise it goes nowhere.

Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
(a malformed address, an empty subject) is exit status 1 with a one-line
reason on stderr.
"""

import hashlib
import json
import os
import re
import sys


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def main():
    try:
        msg = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    if not isinstance(msg, dict) or not all(isinstance(msg.get(k), str) for k in ("to", "subject", "body")):
        fail("the argument must be {to: String, subject: String, body: String}")
    if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", msg["to"]):
        fail(f"not an email address: {json.dumps(msg['to'])}")
    if not msg["subject"].strip():
        fail("the subject is empty")
    canonical = json.dumps([msg["to"], msg["subject"], msg["body"]]).encode()
    message_id = "msg-" + hashlib.sha256(canonical).hexdigest()[:10]
    outbox = os.environ.get("LT_OUTBOX")
    if outbox:
        with open(outbox, "a", encoding="utf-8") as f:
            f.write(json.dumps({"message_id": message_id, **msg}) + "\n")
    json.dump({"message_id": message_id}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
