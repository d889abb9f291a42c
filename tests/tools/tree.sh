#!/bin/sh
# A tool that leaves processes behind, for the process-group tests of
# tests/executors.rs. $1: a file to write "SHELL_PID CHILD_PID" to (the
# shell's pid is also the tool's process group id); $2: what to do.
#   hang      start `sleep 100` and wait for it
#   fork      read stdin, start a background child that keeps stdout and
#             stderr open, print "forked" and exit 0
#   detached  the same with a background child that closes them
#   flood     start a background `sleep 100`, then print without end
record() { echo "$$ $1" > "$PIDS.tmp" && mv "$PIDS.tmp" "$PIDS"; }
PIDS=$1
case "$2" in
  hang) sleep 100 & record $!; wait $! ;;
  fork) cat >/dev/null; ( sleep 30 ) & record $!; echo '"forked"' ;;
  detached) cat >/dev/null; sleep 30 </dev/null >/dev/null 2>&1 & record $!; echo '"detached"' ;;
  flood) sleep 100 & record $!; yes '"y"' ;;
  *) echo "unknown mode $2" >&2; exit 2 ;;
esac
