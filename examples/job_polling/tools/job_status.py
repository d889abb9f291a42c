"""job_status: {job_id: String, attempt: Int} -{Read}-> {state: "queued" | "running" | "done" | "failed", progress: Int}

The status of a batch export job, like a typical "poll until done" API. The
jobs are in data/jobs.json: each says after how many polls it is done (or
that it fails). The answer depends only on the job and the attempt number the
caller sends (0 for the first poll), so the tool keeps no state between calls.

Protocol: the argument is JSON on stdin, the result JSON on stdout; an
unknown job is exit status 1 with a one-line reason on stderr.
"""

import json
import os
import sys

EXAMPLE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

arg = json.load(sys.stdin)
with open(os.path.join(EXAMPLE_DIR, "data", "jobs.json")) as f:
    jobs = json.load(f)
job = jobs.get(arg.get("job_id"))
if job is None:
    sys.stderr.write("no job %r\n" % arg.get("job_id"))
    sys.exit(1)
attempt = int(arg.get("attempt", 0))
ready = job["done_after"]
if job.get("fails"):
    state = "failed" if attempt + 1 >= ready else "running"
elif attempt + 1 >= ready:
    state = "done"
else:
    state = "queued" if attempt == 0 else "running"
progress = min(100, (attempt + 1) * 100 // ready)
json.dump({"state": state, "progress": progress}, sys.stdout)
