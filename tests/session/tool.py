#!/usr/bin/env python3
"""Test tool for tests/session_cli.rs.

Reads its whole input (the argument JSON). If $LT_RECORD names a file, appends
one JSON line to it: {"input": <the argument JSON text>, "key": <the value of
$LT_IDEMPOTENCY_KEY, or null>}. A test sees from that file which tools really
ran (its absence: the tool never ran), with which argument and key.

Then sleeps argv[2] seconds, if given, and prints argv[1] (a JSON text;
nothing if absent) on stdout. The record is written before the sleep, so a
tool stopped by a timeout still shows it started.
"""
import json
import os
import sys
import time

data = sys.stdin.read()
record = os.environ.get("LT_RECORD")
if record:
    with open(record, "a") as f:
        entry = {"input": data.strip(), "key": os.environ.get("LT_IDEMPOTENCY_KEY")}
        f.write(json.dumps(entry) + "\n")
        f.flush()
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))
if len(sys.argv) > 1:
    print(sys.argv[1])
