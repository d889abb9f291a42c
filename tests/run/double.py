#!/usr/bin/env python3
"""Test tool for tests/run_cli.rs: reads an integer, answers twice it.

Appends the input to $LT_LOG when set. A negative input fails: exit status 4
with `negative: N` on stderr.
"""
import json
import os
import sys

data = sys.stdin.read()
log = os.environ.get("LT_LOG")
if log:
    with open(log, "a") as f:
        f.write(data.strip() + "\n")
n = json.loads(data)
if n < 0:
    print(f"negative: {n}", file=sys.stderr)
    sys.exit(4)
print(json.dumps(n * 2))
