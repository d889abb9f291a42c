#!/usr/bin/env python3
"""Writes 1 MiB to stderr before reading stdin (a deadlock if the caller
does not read stderr while writing stdin), then reports the input's size
and exits with the status given as argv[1]."""
import json
import sys

sys.stderr.write("first line\n" + "e" * (1024 * 1024) + "\nlast line\n")
sys.stderr.flush()
data = sys.stdin.read()
print(json.dumps({"len": len(data)}))
sys.exit(int(sys.argv[1]))
