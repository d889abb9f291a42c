#!/usr/bin/env python3
"""Echo tool: returns its JSON input wrapped, with what it saw of its world."""
import json
import os
import sys

arg = json.load(sys.stdin)
json.dump(
    {
        "got": arg,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": os.environ.get("LT_TEST_VAR"),
        "has_path": "PATH" in os.environ,
    },
    sys.stdout,
)
