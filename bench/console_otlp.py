#!/usr/bin/env python3
"""The console's sessions page with 10,000 sessions, and what OTLP export
adds to `lt run` (issue 27). Figures go to docs/performance.md.

(a) **The sessions page.** A fresh SQLite store gets 10,000 ended sessions
    of tenant acme, written into the store directly (10 events each: a
    `session_started`, three calls of `proposed` + `decided` + `completed`
    ... enough for the tool filter to read). Half call `lookup_account`,
    one calls `rare_tool`. Then `lt serve` (examples/serve's tenants) is
    started on it, the script logs in as a browser does, and times each
    page over one kept-alive connection (the server's answer time as the
    client sees it, page read whole): `/`, the next page, a status filter
    that matches nothing, the profile filter, the tool filters (many, one,
    none: the last reads every session's events) and a time range.

(b) **OTLP on `lt run`.** The 1,000-call benchmark of docs/performance.md
    ((b): `traverse` over `range 0 1000` calling a `fixed` executor), as a
    whole process, without and with `--otlp-endpoint` (a local receiver in
    this script answering 200), and with `--log FILE` with and without
    OTLP; runs alternate, medians reported, of the wall time and of the
    CPU time (user + system) the process used: on a loaded machine the
    wall time is mostly waiting for a core.

    python3 bench/console_otlp.py --lt target/release/lt            # both
    python3 bench/console_otlp.py --lt target/release/lt --only a   # or b
"""

import argparse
import http.client
import http.server
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "acme-dev-key"
SESSIONS = 10_000


def start_serve(lt, folder, store):
    """`lt serve` on a free port; returns (process, host:port)."""
    p = subprocess.Popen(
        [lt, "serve", "--config", os.path.join(folder, "serve.toml"), "--store",
         f"sqlite:{store}", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = p.stderr.readline()
        m = re.search(r"listening on http://(\S+)", line)
        if m:
            threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
            return p, m.group(1)
        if not line and p.poll() is not None:
            break
    sys.exit(f"lt serve did not start (exit {p.poll()})")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def fill(store):
    """10,000 ended sessions of acme, newest last, with their events."""
    db = sqlite3.connect(store)
    t0 = int(time.time() * 1000) - SESSIONS * 1000
    sessions, events = [], []
    for n in range(SESSIONS):
        sid = f"{n:032x}"
        created = t0 + n * 1000
        profile = "support" if n % 2 == 0 else "audit"
        sessions.append((sid, "acme", profile, "ended", json.dumps({"program": "1"}), None,
                         created, created + 5, json.dumps({"ok": True, "value": n}), 3, 10))
        tools = ["lookup_account" if n % 2 == 0 else "issue_refund", "send_reply",
                 "rare_tool" if n == SESSIONS // 2 else "send_reply"]
        lines = [{"kind": "session_started"}]
        for i, tool in enumerate(tools):
            cid = f"n{i}"
            lines += [{"kind": "proposed", "call_id": cid, "tool": tool, "argument": {"id": n}},
                      {"kind": "decided", "call_id": cid, "decision": "allow", "rule": "allow",
                       "reason": "listed"},
                      {"kind": "completed", "call_id": cid, "result": {"Ok": {"x": 1}}}]
        for seq, body in enumerate(lines):
            line = json.dumps({"v": 1, "session": sid, "seq": seq,
                               "ts": "2026-12-06T00:00:00.000Z", **body,
                               "prev": "0" * 64, "hash": f"{seq:064x}"})
            events.append((sid, seq, f"{seq:064x}", "0" * 64, line))
    # Schema 3: the request in `requests`, out of the session's row.
    db.executemany("INSERT INTO sessions (id, tenant, profile, status, idempotency_key, "
                   "created_ms, updated_ms, output, calls, events) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   [s[:4] + s[5:] for s in sessions])
    db.executemany("INSERT INTO requests (id, request) VALUES (?,?)", [(s[0], s[4]) for s in sessions])
    db.executemany("INSERT INTO events (session, seq, hash, prev, line) VALUES (?,?,?,?,?)", events)
    # ...and each proposed tool in `session_tools`, as lt's writer does with the event.
    db.executemany("INSERT OR IGNORE INTO session_tools (session, tool) VALUES (?,?)",
                   [(e[0], json.loads(e[4])["tool"]) for e in events if '"proposed"' in e[4]])
    db.commit()
    db.close()
    return t0


def login(addr):
    c = http.client.HTTPConnection(addr, timeout=30)
    c.request("GET", "/login")
    r = c.getresponse()
    body = r.read().decode()
    pre = re.search(r"lt_login_csrf=([0-9a-f]+)", r.getheader("set-cookie")).group(1)
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', body).group(1)
    form = urllib.parse.urlencode({"csrf": token, "key": KEY})
    c.request("POST", "/login", body=form, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Cookie": f"lt_login_csrf={pre}"})
    r = c.getresponse()
    r.read()
    cookie = [v for k, v in r.getheaders() if k.lower() == "set-cookie" and v.startswith("lt_console=")]
    return c, cookie[0].split(";")[0]


def page_times(c, cookie, path, runs):
    times, rows = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        c.request("GET", path, headers={"Cookie": cookie})
        r = c.getresponse()
        body = r.read().decode()
        times.append((time.perf_counter() - t) * 1000)
        assert r.status == 200, (path, r.status, body[:300])
        rows = body.count('class="session-link"')
    return times, rows


def workload_a(lt, runs):
    tmp = tempfile.mkdtemp(prefix="lt-console-bench-")
    try:
        folder = os.path.join(tmp, "serve")
        shutil.copytree(os.path.join(REPO, "examples", "serve"), folder)
        with open(os.path.join(folder, "serve.toml"), "a") as f:
            f.write('\n[tenants.acme.profiles.audit]\nallow = ["lookup_account"]\n')
        store = os.path.join(tmp, "lt.db")
        p, _ = start_serve(lt, folder, store)
        stop(p)
        t0 = fill(store)
        p, addr = start_serve(lt, folder, store)
        try:
            c, cookie = login(addr)
            _, _ = page_times(c, cookie, "/", 3)  # warm up
            c.request("GET", "/", headers={"Cookie": cookie})
            first = c.getresponse().read().decode()
            older = re.search(r'id="older" href="([^"]+)"', first).group(1).replace("&amp;", "&")
            mid = t0 + SESSIONS // 2 * 1000
            cases = [
                ("/ (first page)", "/"),
                ("next page", older),
                ("?status=failed (none)", "/?status=failed"),
                ("?profile=audit (half)", "/?profile=audit"),
                ("?tool=lookup_account (half)", "/?tool=lookup_account"),
                ("?tool=rare_tool (one)", "/?tool=rare_tool"),
                ("?tool=none_such (none)", "/?tool=none_such"),
                ("?since&until (100 s in the middle)", f"/?since={mid}&until={mid + 100_000}"),
            ]
            print(f"(a) sessions page, {SESSIONS} sessions of one tenant ({lt}), {runs} runs each")
            print(f"    {'page':40} {'rows':>5} {'median ms':>10} {'min':>7} {'max':>7}")
            out = {}
            for name, path in cases:
                ts, rows = page_times(c, cookie, path, runs)
                out[name] = statistics.median(ts)
                print(f"    {name:40} {rows:5} {statistics.median(ts):10.2f} {min(ts):7.2f} {max(ts):7.2f}")
            return out
        finally:
            stop(p)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    spans = 0
    requests = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        # One per execute_tool span, in OTLP/JSON and in protobuf alike.
        Receiver.spans += body.count(b"gen_ai.tool.call.id")
        Receiver.requests += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def workload_b(lt, runs):
    tmp = tempfile.mkdtemp(prefix="lt-otlp-bench-")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    try:
        prog = os.path.join(tmp, "calls.lt")
        tools = os.path.join(tmp, "tools.toml")
        with open(prog, "w") as f:
            f.write("tool lookup: {id: Int, name: String} -{Read}-> {id: Int, name: String, balance: Int};\n"
                    "match traverse (fn i: Int => exec tool lookup {id = i, name = \"cust\"}) (range 0 1000) "
                    "{ Ok(rs) => fold (fn acc: Int => fn r: {id: Int, name: String, balance: Int} => "
                    "acc + r.balance) 0 rs, Err(e) => 0 }\n")
        with open(tools, "w") as f:
            f.write('[tools.lookup]\nfixed = { ok = { id = 7, name = "cust", balance = 1 } }\n')
        log = os.path.join(tmp, "run.jsonl")
        variants = {
            "no log, no OTLP": [],
            "no log, --otlp-endpoint": ["--otlp-endpoint", url],
            "--log, no OTLP": ["--log", log, "--force"],
            "--log, --otlp-endpoint": ["--log", log, "--force", "--otlp-endpoint", url],
            "--otlp-endpoint --otlp-payloads": ["--otlp-endpoint", url, "--otlp-payloads"],
        }
        times = {k: [] for k in variants}
        cpu = {k: [] for k in variants}
        for _ in range(runs):
            for name, extra in variants.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                r = subprocess.run([lt, "run", prog, "--executors", tools, *extra],
                                   capture_output=True, text=True)
                times[name].append((time.perf_counter() - t) * 1000)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append((after.ru_utime - before.ru_utime
                                  + after.ru_stime - before.ru_stime) * 1000)
                assert r.returncode == 0 and r.stdout.strip() == "1000", (name, r)
        base = statistics.median(times["no log, no OTLP"])
        logged = statistics.median(times["--log, no OTLP"])
        print(f"(b) lt run, 1,000 calls to a fixed executor, whole process ({lt}), {runs} runs each; "
              f"{Receiver.spans} execute_tool spans received in {Receiver.requests} requests")
        print(f"    {'variant':36} {'median ms':>10} {'min':>7}  vs no log / vs --log  "
              f"{'CPU ms':>7} (user + system, median)")
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"    {name:36} {m:10.2f} {min(ts):7.2f}  {m / base:5.2f} / {m / logged:5.2f}"
                  f"         {statistics.median(cpu[name]):7.2f}")
        return {k: statistics.median(v) for k, v in times.items()}
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lt", default=os.path.join(REPO, "target", "release", "lt"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--only", choices=["a", "b"])
    args = ap.parse_args()
    if not os.path.exists(args.lt):
        sys.exit(f"{args.lt} does not exist: cargo build --release, or --lt PATH")
    if args.only in (None, "a"):
        workload_a(args.lt, args.runs)
    if args.only in (None, "b"):
        workload_b(args.lt, args.runs)


if __name__ == "__main__":
    main()
