#!/usr/bin/env python3
"""Reads its input and prints nothing: a tool returning Unit."""
import sys

sys.stdin.read()
