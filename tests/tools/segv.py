#!/usr/bin/env python3
"""Crashes: kills itself with SIGSEGV after a word on stderr."""
import os
import signal
import sys

print("about to crash", file=sys.stderr, flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
