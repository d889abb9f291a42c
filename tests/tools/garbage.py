#!/usr/bin/env python3
"""Exits 0 but prints something that is not JSON."""
import sys

sys.stdin.read()
print("warning: deprecated", file=sys.stderr)
print("this is not json")
