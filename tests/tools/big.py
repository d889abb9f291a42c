#!/usr/bin/env python3
"""Prints 100 MB (more than the output limit)."""
import sys

chunk = b"x" * (1024 * 1024)
for _ in range(100):
    sys.stdout.buffer.write(chunk)
