"""post_message: {channel: String, text: String} -{Network}-> {ts: String}

Posts a message to a chat channel. This example's chat server is a stand-in:
the message's timestamp id is derived from the message itself (so runs are
repeatable), and the message is appended, as one JSON line, to the file named
by the environment variable LT_OUTBOX if it is set (the tests read it);
otherwise it goes nowhere.

Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
(an unknown channel, an empty or over-long text) is exit status 1 with a
one-line reason on stderr.
"""

import hashlib
import json
import os
import sys

CHANNELS = {"#incidents", "#payments-oncall"}
MAX_CHARS = 4000


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def main():
    try:
        msg = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the argument is not JSON: {e}")
    if not isinstance(msg, dict) or not isinstance(msg.get("channel"), str) \
            or not isinstance(msg.get("text"), str):
        fail("the argument must be {channel: String, text: String}")
    if msg["channel"] not in CHANNELS:
        fail(f"no channel {json.dumps(msg['channel'])}")
    if not msg["text"].strip():
        fail("the message is empty")
    if len(msg["text"]) > MAX_CHARS:
        fail(f"the message has {len(msg['text'])} characters, more than {MAX_CHARS}")
    digest = int(hashlib.sha256(msg["text"].encode()).hexdigest()[:12], 16)
    ts = f"1717406{digest % 1000:03d}.{digest % 1000000:06d}"
    outbox = os.environ.get("LT_OUTBOX")
    if outbox:
        with open(outbox, "a", encoding="utf-8") as f:
            f.write(json.dumps({"ts": ts, **msg}) + "\n")
    json.dump({"ts": ts}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
