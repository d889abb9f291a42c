"""The travel agency's tools, one script: `python3 tools/travel.py TOOL`.

  book_flight:   {trip: String, flight: String} -{Write}-> {booking_id: String}
  cancel_flight: {booking_id: String} -{Write}-> {cancelled: Bool}
  book_hotel:    {trip: String, hotel: String, nights: Int} -{Write}-> {reservation_id: String}
  cancel_hotel:  {reservation_id: String} -{Write}-> {cancelled: Bool}

Bookings are derived from the arguments (no state is kept, so the example
folder stays as it is); a hotel listed in data/full_hotels.json is full and
book_hotel fails (exit status 1, a one-line reason on stderr), as does a
cancellation of an id the tools never hand out.

Protocol: the argument is JSON on stdin, the result JSON on stdout.
"""

import hashlib
import json
import os
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def ref(prefix, *parts):
    return prefix + "-" + hashlib.sha256("/".join(parts).encode()).hexdigest()[:8].upper()


tool = sys.argv[1] if len(sys.argv) > 1 else ""
arg = json.load(sys.stdin)
if tool == "book_flight":
    json.dump({"booking_id": ref("FL", arg["trip"], arg["flight"])}, sys.stdout)
elif tool == "book_hotel":
    with open(os.path.join(EXAMPLE_DIR, "data", "full_hotels.json")) as f:
        full = json.load(f)
    if arg["hotel"] in full:
        fail("%s has no room for %d nights" % (arg["hotel"], arg["nights"]))
    json.dump({"reservation_id": ref("HT", arg["trip"], arg["hotel"])}, sys.stdout)
elif tool in ("cancel_flight", "cancel_hotel"):
    key = "booking_id" if tool == "cancel_flight" else "reservation_id"
    if not str(arg.get(key, "")).startswith(("FL-", "HT-")):
        fail("no booking %r" % arg.get(key))
    json.dump({"cancelled": True}, sys.stdout)
else:
    fail("unknown tool %r" % tool)
