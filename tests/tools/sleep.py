#!/usr/bin/env python3
"""Writes its pid to the file named by argv[1], then sleeps 30 s."""
import os
import sys
import time

with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(30)
print("{}")
