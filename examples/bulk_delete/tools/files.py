"""The file store's tools, one script: `python3 tools/files.py TOOL`.

  list_files:  {prefix: String} -{Read}-> {paths: List String}
  delete_file: {path: String, approval: !Approval} -{Delete}-> {deleted: String}

The store is data/files.json (a list of paths) and is never changed: a
delete answers as if it had deleted the file, so the example folder stays as
it is. delete_file receives the approval token lt's control plane minted for
exactly this call (the field `approval`) and refuses a call without one.

Protocol: the argument is JSON on stdin, the result JSON on stdout; a failure
is exit status 1 with a one-line reason on stderr.
"""

import json
import os
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

tool = sys.argv[1] if len(sys.argv) > 1 else ""
arg = json.load(sys.stdin)
with open(os.path.join(EXAMPLE_DIR, "data", "files.json")) as f:
    files = json.load(f)
if tool == "list_files":
    json.dump({"paths": [p for p in files if p.startswith(arg["prefix"])]}, sys.stdout)
elif tool == "delete_file":
    if not str(arg.get("approval", "")).startswith("apv-"):
        sys.stderr.write("refusing to delete %s without an approval\n" % arg.get("path"))
        sys.exit(1)
    if arg["path"] not in files:
        sys.stderr.write("no file %s\n" % arg["path"])
        sys.exit(1)
    json.dump({"deleted": arg["path"]}, sys.stdout)
else:
    sys.stderr.write("unknown tool %r\n" % tool)
    sys.exit(1)
