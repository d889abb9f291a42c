#!/usr/bin/env python3
"""Reads its input, complains on stderr and exits with status 3."""
import sys

sys.stdin.read()
print("card declined", file=sys.stderr)
sys.exit(3)
