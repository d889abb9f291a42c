#!/bin/sh
# Seeds fuzz/corpus/<target>/ for every target with the repository's programs:
# tests/ui/**/*.lt and examples/**/*.lt. Files are named by content hash
# (as libFuzzer names corpus entries), so re-running is idempotent.
# Usage: fuzz/seed.sh            (from anywhere)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
targets="lex parse check run"
for t in $targets; do mkdir -p "$here/corpus/$t"; done
n=0
find "$root/tests/ui" "$root/examples" -type f -name '*.lt' | sort | while read -r f; do
  h=$(sha1sum "$f" | cut -c1-40)
  for t in $targets; do cp "$f" "$here/corpus/$t/$h"; done
done
for t in $targets; do
  echo "$t: $(ls "$here/corpus/$t" | wc -l) inputs"
done
