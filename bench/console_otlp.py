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
    whole process, without and with `--otlp-endpoint`, and with `--log FILE`
    with and without OTLP; runs alternate, medians reported, of the wall
    time and of the CPU time (user + system) the process used: on a loaded
    machine the wall time is mostly waiting for a core. Two receivers (or
    one, `--receiver`): a thread of this script (Python's http.server, a
    thread per connection), and `benches/otlp_receiver.rs` in a process of
    its own (compiled, one thread, decoding each request with prost, as a
    collector would; built with cargo unless `--receiver-bin` names it).
    Each receiver's count of execute_tool spans is checked against the runs
    posted to it. `--base OLD_LT` runs a second binary, alternating with
    `--lt` in every round (before/after on a noisy machine).

    python3 bench/console_otlp.py --lt target/release/lt            # both
    python3 bench/console_otlp.py --lt target/release/lt --only a   # or b
    python3 bench/console_otlp.py --only b --lt NEW --base OLD --receiver compiled
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
    """The Python receiver: a thread of this process (a thread per
    connection). It answers in one write, as a collector does: answering in
    two (headers, then body) without TCP_NODELAY makes a kept connection's
    next request wait for the sender's delayed ACK (40 ms)."""
    protocol_version = "HTTP/1.1"
    spans = 0
    requests = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        # One per execute_tool span, in OTLP/JSON and in protobuf alike.
        Receiver.spans += body.count(b"gen_ai.tool.call.id")
        Receiver.requests += 1
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 2\r\n\r\n{}")

    def log_message(self, *args):
        pass


def receiver_binary():
    """Builds the compiled receiver (benches/otlp_receiver.rs); its path."""
    cmd = ["cargo", "build", "--release", "--bench", "otlp_receiver",
           "--message-format=json-render-diagnostics"]
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    found = None
    for line in p.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "otlp_receiver":
            found = msg["executable"]
    if p.wait() != 0 or not found:
        sys.exit(f"building the receiver failed (exit {p.returncode})")
    return found


class Compiled:
    """The compiled receiver (benches/otlp_receiver.rs) in a process of its
    own: it decodes each request with prost and counts its spans (with
    `read_only`, it counts them by their encoded name without decoding: a
    stand-in for a collector on another host)."""

    def __init__(self, path, read_only=False):
        flags = ["--read-only"] if read_only else []
        self.p = subprocess.Popen([path, "--listen", "127.0.0.1:0", *flags],
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            sys.exit(f"the receiver did not start: {line!r}")
        self.base = m.group(1)
        self.url = self.base + "/v1/traces"

    def counts(self):
        addr = self.base[len("http://"):]
        c = http.client.HTTPConnection(addr, timeout=10)
        c.request("GET", "/count")
        return json.loads(c.getresponse().read())

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=10)


def workload_b(lts, runs, receivers, receiver_bin, read_only=False):
    """`lt run` of the 1,000 calls for each binary of `lts` (label, path),
    all variants and binaries alternating in each round."""
    tmp = tempfile.mkdtemp(prefix="lt-otlp-bench-")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    urls = {}
    if "python" in receivers:
        urls["python"] = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    compiled = None
    if "compiled" in receivers:
        compiled = Compiled(receiver_bin or receiver_binary(), read_only)
        urls["compiled"] = compiled.url
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
        variants = {"no log, no OTLP": ([], None)}
        for r, url in urls.items():
            variants[f"no log, --otlp-endpoint ({r})"] = (["--otlp-endpoint", url], r)
        variants["--log, no OTLP"] = (["--log", log, "--force"], None)
        for r, url in urls.items():
            variants[f"--log, --otlp-endpoint ({r})"] = (
                ["--log", log, "--force", "--otlp-endpoint", url], r)
        for r, url in urls.items():
            variants[f"--otlp-endpoint --otlp-payloads ({r})"] = (
                ["--otlp-endpoint", url, "--otlp-payloads"], r)
        keys = [(label, name) for label, _ in lts for name in variants]
        times = {k: [] for k in keys}
        cpu = {k: [] for k in keys}
        sent = {r: 0 for r in urls}
        for _ in range(runs):
            for name, (extra, r) in variants.items():
                for label, lt in lts:
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    t = time.perf_counter()
                    p = subprocess.run([lt, "run", prog, "--executors", tools, *extra],
                                       capture_output=True, text=True)
                    times[(label, name)].append((time.perf_counter() - t) * 1000)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu[(label, name)].append((after.ru_utime - before.ru_utime
                                               + after.ru_stime - before.ru_stime) * 1000)
                    assert p.returncode == 0 and p.stdout.strip() == "1000", (label, name, p)
                    if r:
                        sent[r] += 1000
        print(f"(b) lt run, 1,000 calls to a fixed executor, whole process, {runs} rounds, "
              f"variants and binaries alternating in each round; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if "python" in urls:
            print(f"    python receiver (a thread of this process): {Receiver.spans} execute_tool "
                  f"spans in {Receiver.requests} requests (expected {sent['python']})")
            assert Receiver.spans == sent["python"], (Receiver.spans, sent["python"])
        if compiled:
            c = compiled.counts()
            how = "counted undecoded (--read-only)" if read_only else f"of {c['spans']} decoded"
            print(f"    compiled receiver (benches/otlp_receiver.rs, its own process): "
                  f"{c['execute_tool']} execute_tool spans {how}, in "
                  f"{c['requests']} requests, {c['bytes']} bytes (expected {sent['compiled']})")
            assert c["execute_tool"] == sent["compiled"] and c["undecodable"] == 0, c
        for label, lt in lts:
            base = statistics.median(times[(label, "no log, no OTLP")])
            logged = statistics.median(times[(label, "--log, no OTLP")])
            cbase = statistics.median(cpu[(label, "no log, no OTLP")])
            clogged = statistics.median(cpu[(label, "--log, no OTLP")])
            print(f"  {label}: {lt}")
            print(f"    {'variant':44} {'wall ms':>8} {'min':>7} {'vs base':>8} "
                  f"{'CPU ms':>7} {'vs base':>8}   (medians; base: the same log, no OTLP)")
            for name in variants:
                ts, cs = times[(label, name)], cpu[(label, name)]
                m, c = statistics.median(ts), statistics.median(cs)
                b, cb = (logged, clogged) if name.startswith("--log") else (base, cbase)
                print(f"    {name:44} {m:8.2f} {min(ts):7.2f} {(m / b - 1) * 100:+7.1f}% "
                      f"{c:7.2f} {(c / cb - 1) * 100:+7.1f}%")
        return {k: statistics.median(v) for k, v in times.items()}
    finally:
        server.shutdown()
        if compiled:
            compiled.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lt", default=os.path.join(REPO, "target", "release", "lt"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--only", choices=["a", "b"])
    ap.add_argument("--base", help="(b): another lt binary, run alternating with --lt (before/after)")
    ap.add_argument("--receiver", choices=["python", "compiled", "both"], default="both",
                    help="(b): the OTLP receiver(s) posted to (default both)")
    ap.add_argument("--receiver-bin", help="(b): the built otlp_receiver (else cargo builds it)")
    ap.add_argument("--read-only", action="store_true",
                    help="(b): the compiled receiver counts spans without decoding them "
                         "(a collector on another host: its decoding off these two cores)")
    args = ap.parse_args()
    if not os.path.exists(args.lt):
        sys.exit(f"{args.lt} does not exist: cargo build --release, or --lt PATH")
    if args.only in (None, "a"):
        workload_a(args.lt, args.runs)
    if args.only in (None, "b"):
        lts = [("lt", args.lt)] if not args.base else [("base", args.base), ("new", args.lt)]
        receivers = ["python", "compiled"] if args.receiver == "both" else [args.receiver]
        workload_b(lts, args.runs, receivers, args.receiver_bin, args.read_only)


if __name__ == "__main__":
    main()
