"""Concurrency benchmark for `gather` / `fan_out` (issue 7).

Starts a local HTTP tool that answers every POST after 100 ms (a threading
server, so calls can overlap), then runs, with the release `lt` binary:

* `fan_out` of 10 calls   (concurrent, profile max_concurrency = 10)
* `gather` of 10 calls    (concurrent)
* `traverse` of 10 calls  (sequential, for comparison)

and prints the median wall time of each over REPS runs, in ms:
`<case> <median ms>`. Ten 100 ms calls should take about 100 ms (plus lt's
start-up) concurrently, and about 1 s in sequence.

Usage: python3 bench/gather.py [path/to/lt] [reps]
"""
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LT = sys.argv[1] if len(sys.argv) > 1 else "target/release/lt"
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


class Slow(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(0.1)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')

    def log_message(self, *args):
        pass


# A listen backlog of 5 (the default) would drop some of ten simultaneous
# connections, and the client's SYN retry adds a second.
http.server.ThreadingHTTPServer.request_queue_size = 128
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]

TOOL = "tool ping: {i: Int} -{Read}-> {ok: Bool};\n"
GATHER_FIELDS = ", ".join(f"c{i} = exec tool ping {{i = {i}}}" for i in range(10))
CASES = {
    "fan_out_10": TOOL
    + "let rs = fan_out (fn i => exec tool ping {i = i}) (range 0 10) in\n"
    + "match traverse (fn r => r) rs { Ok(xs) => length xs, Err(e) => 0 }\n",
    "gather_10": TOOL
    + f"let r = gather {{ {GATHER_FIELDS} }} in\n"
    + " + ".join(f"match r.c{i} {{ Ok(x) => 1, Err(e) => 0 }}" for i in range(10))
    + "\n",
    "traverse_10": TOOL
    + "match traverse (fn i => exec tool ping {i = i}) (range 0 10) { Ok(xs) => length xs, Err(e) => 0 }\n",
}

with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "tools.toml"), "w") as f:
        f.write(f'[tools.ping]\nhttp = {{ url = "http://127.0.0.1:{port}/" }}\neffects = ["Read"]\n')
        f.write("[profile]\nmax_concurrency = 10\n")
    for name, program in CASES.items():
        path = os.path.join(d, name + ".lt")
        with open(path, "w") as f:
            f.write(program)
        times = []
        for _ in range(REPS):
            t = time.perf_counter()
            out = subprocess.run(
                [LT, "run", path, "--executors", os.path.join(d, "tools.toml")],
                capture_output=True, text=True)
            times.append((time.perf_counter() - t) * 1000)
            if out.returncode != 0:
                sys.exit(f"{name}: lt failed: {out.stderr}")
        print(name, round(statistics.median(times), 1))
