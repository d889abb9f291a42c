#!/usr/bin/env python3
"""Test tool for tests/run_cli.rs.

Reads its whole input. If $LT_LOG names a file, appends the input (one line)
to it, so a test can see which calls were made, in which order, with which
argument JSON (and, by the file's absence, that none was made).

Then prints argv[1] (a JSON text; nothing if absent) on stdout. argv[2], if
given, is a line for stderr and argv[3] the exit status.
"""
import os
import sys

data = sys.stdin.read()
log = os.environ.get("LT_LOG")
if log:
    with open(log, "a") as f:
        f.write(data.strip() + "\n")
if len(sys.argv) > 1:
    print(sys.argv[1])
if len(sys.argv) > 2:
    print(sys.argv[2], file=sys.stderr)
sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
