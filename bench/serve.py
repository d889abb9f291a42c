#!/usr/bin/env python3
"""`lt serve` under load, beside durable-execution peers (issue 23).

A session is 3 sequential tool calls, each durably recorded before the next
one runs, and its latency runs from submission to the final result:

* **lt**: `lt serve` (release build) on a fresh SQLite store; a tenant with
  3 tools backed by `fixed` executors and a program that calls them in
  sequence, matching each result (Ok/Err), and returns the last `tx_id`.
  The client is `benches/serve_load.rs` (Rust, one thread): POST
  /v1/sessions, then the session's Server-Sent Events to `event: output`.
* **lt, one request** (`lt-wait`): the same server, each session one
  `POST /v1/sessions` with `Prefer: wait=60`, answered with the ended
  session's value: the request/response Restate's ingress gives.
* **SQLite floor**: 3 commits per session, each fsynced (WAL,
  synchronous=FULL), one connection per client thread, no group commit:
  what durability costs at least without batching (bench/serve_peers/).
* **DBOS Transact** (Python, its SQLite system database, DBOS's defaults):
  a workflow of 3 steps, called by client threads in the same process.
* **Restate** (restate-server from npm, a Python service under hypercorn):
  a handler of 3 `ctx.run` steps, called through the ingress by serve_load.

Each engine runs 16 and 64 concurrent clients for 15 s, then one session at
a time (p50/p99 over 300 after 20 warm-up sessions). CPU is read from
/proc for the server processes and the client over each timed window.

    python3 bench/serve.py                   # everything (~3 minutes after the builds)
    python3 bench/serve.py --quick           # 3 s windows, 50 sequential sessions
    python3 bench/serve.py --only lt         # lt alone (also: lt-pg, floor, dbos, restate; comma-separated)
    python3 bench/serve.py --only lt,lt-otlp # lt without and with --otlp-endpoint (a receiver here)
    python3 bench/serve.py --only lt-wait    # lt, a session per request (Prefer: wait)
    python3 bench/serve.py --json out.json   # also write every record
    python3 bench/serve.py --no-build        # use the binaries already built
    python3 bench/serve.py --wait-quiet 600  # before each run, wait (≤ 600 s) for other builds to end

The peers install on first use into target/bench-peers/ (a venv from PyPI,
restate-server from npm; versions pinned below, the latest if a pin fails).
A peer that cannot be installed or started is reported as missing and the
others still run. Any failed session fails the run (exit 1).
"""
import argparse
import hashlib
import http.server as http_server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
PEERS = ROOT / "target" / "bench-peers"
WORK = TARGET / "bench-serve"
SCRIPTS = ROOT / "bench" / "serve_peers"

# The versions of ../shared/peers/durable/ (the reference figures).
PIP_PINS = {"dbos": ["dbos==3.4.0"], "restate": ["restate-sdk==1.3.0", "hypercorn==0.18.0"]}
PIP_LATEST = {"dbos": ["dbos"], "restate": ["restate-sdk", "hypercorn"]}
NPM_RESTATE = "@restatedev/restate-server@1.7.12"

KEY = "bench-key"
TOOLS_LT = """\
tool step1: {session: String} -{Write}-> {tx_id: String};
tool step2: {session: String, previous: String} -{Write}-> {tx_id: String};
tool step3: {session: String, previous: String} -{Write}-> {tx_id: String};
"""
PROGRAM = TOOLS_LT + """
match exec tool step1 {session = "s"} {
  Ok(a) =>
    match exec tool step2 {session = "s", previous = a.tx_id} {
      Ok(b) =>
        match exec tool step3 {session = "s", previous = b.tx_id} {
          Ok(c) => c.tx_id,
          Err(e) => "step3 failed"
        },
      Err(e) => "step2 failed"
    },
  Err(e) => "step1 failed"
}
"""
EXPECTED = "t3"
TOOLS_TOML = """\
[tools.step1]
fixed = { ok = { tx_id = "t1" } }

[tools.step2]
fixed = { ok = { tx_id = "t2" } }

[tools.step3]
fixed = { ok = { tx_id = "t3" } }
"""


def say(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- machine

def machine():
    """The load average and the other builds running (they change the
    figures several-fold: fsync latency collapses under their I/O)."""
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    comms = subprocess.run(["ps", "-eo", "comm="], capture_output=True, text=True).stdout.split()
    builds = sum(1 for c in comms if c in ("rustc", "cargo", "clippy-driver", "cc1", "cc1plus", "ld", "lld", "rust-lld", "mold"))
    return {"load": load, "build_procs": builds}


QUIET = {"seconds": 0.0}


def wait_quiet():
    """With --wait-quiet S: waits up to S seconds for 5 s in a row with no
    other build running; the machine's state, as `machine()`."""
    limit = time.time() + QUIET["seconds"]
    calm_since = None
    while time.time() < limit:
        if machine()["build_procs"]:
            calm_since = None
        elif calm_since is None:
            calm_since = time.time()
        elif time.time() - calm_since >= 5:
            break
        time.sleep(1)
    return machine()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_of(pid):
    """User + system seconds of a process, from /proc/PID/stat."""
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def http(method, url, body=None, headers=None, timeout=10):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def wait_http(url, proc, seconds=30, method="GET", body=None, headers=None, ok=(200,)):
    """Polls `url` until it answers one of `ok`; None, or why not."""
    deadline = time.time() + seconds
    last = "no answer"
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            return f"the process exited with {proc.returncode}"
        try:
            status, _ = http(method, url, body, headers, timeout=5)
            if status in ok:
                return None
            last = f"status {status}"
        except urllib.error.HTTPError as e:
            last = f"status {e.code}: {e.read()[:200]!r}"
        except OSError as e:
            last = str(e)
        time.sleep(0.1)
    return f"{url} did not answer in {seconds} s ({last})"


def stop(proc, grace=10):
    """SIGTERM, then SIGKILL after `grace` seconds; only our own child."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- building

def build(no_build):
    """The release `lt` and the serve_load binary."""
    if no_build:
        lt = TARGET / "release" / "lt"
        loads = sorted((p for p in (TARGET / "release" / "deps").glob("serve_load-*")
                        if p.is_file() and os.access(p, os.X_OK) and p.suffix == ""),
                       key=lambda p: p.stat().st_mtime)
        if not lt.exists() or not loads:
            sys.exit("--no-build: target/release/lt or the serve_load binary is missing; run without --no-build")
        return str(lt), str(loads[-1])
    cmd = ["cargo", "build", "--release", "--bin", "lt", "--bench", "serve_load",
           "--message-format=json-render-diagnostics"]
    say("building: " + " ".join(cmd))
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    found = {}
    for line in p.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            found[msg["target"]["name"]] = msg["executable"]
    if p.wait() != 0 or "lt" not in found or "serve_load" not in found:
        sys.exit(f"the build failed (exit {p.returncode}); found {sorted(found)}")
    return found["lt"], found["serve_load"]


# ---------------------------------------------------------------- running

def run_load(load_bin, args, seconds):
    """Runs serve_load; its JSON record, or a record with `failed`."""
    try:
        p = subprocess.run([load_bin, *map(str, args)], capture_output=True, text=True,
                           timeout=seconds * 4 + 180)
    except subprocess.TimeoutExpired:
        return {"failed": "serve_load did not finish in time"}
    rec = {}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            rec = json.loads(line)
            break
    if p.returncode != 0:
        rec["failed"] = (p.stderr.strip() or f"exit {p.returncode}")[-800:]
    return rec


def run_script(python, script, args, seconds):
    try:
        p = subprocess.run([python, str(SCRIPTS / script), *map(str, args)], capture_output=True,
                           text=True, timeout=seconds * 4 + 180)
    except subprocess.TimeoutExpired:
        return {"failed": f"{script} did not finish in time"}
    rec = {}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            rec = json.loads(line)
            break
    if p.returncode != 0 or not rec:
        rec["failed"] = (p.stderr.strip() or f"exit {p.returncode}")[-800:]
    elif rec.get("errors"):
        rec["failed"] = f"{rec['errors']} sessions failed: {rec.get('first_errors')}"
    return rec


def measured(engine, rec, before):
    rec.update(engine=engine, machine_before=before, machine_after=machine())
    shown = rec.get("failed") or (
        f"{rec.get('sessions_per_s')} sessions/s, p50 {rec.get('p50_ms')} ms, "
        f"p99 {rec.get('p99_ms')} ms ({rec.get('sessions')} sessions)")
    say(f"  {engine}, {'one at a time' if rec.get('mode') == 'sequential' else str(rec.get('clients')) + ' clients'}: "
        f"{shown}  [load {before['load']} → {rec['machine_after']['load']}"
        f"{', OTHER BUILDS RUNNING: ' + str(before['build_procs']) if before['build_procs'] else ''}]")
    return rec


def plan(opts):
    """(clients or None for one at a time) per run."""
    return [*opts.clients, None]


def fresh_pg_database(server_url):
    """A new database on the PostgreSQL server `server_url` names (psql of the
    distribution's packages): its URL, or (None, why)."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))
    psql = shutil.which("psql") or (str(bins[-1]) if bins else None)
    if not psql:
        return None, "psql not found (apt-get install -y postgresql-client)"
    name = f"lt_bench_{os.getpid()}_{int(time.time())}"
    p = subprocess.run([psql, server_url, "-Atc", f"CREATE DATABASE {name}"], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    base, _, query = server_url.partition("?")
    head = base[:base.index("/", base.index("://") + 3)] if "/" in base[base.index("://") + 3:] else base
    return f"{head}/{name}" + (f"?{query}" if query else ""), None


class OtlpReceiver(http_server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that reads each request and answers 200."""
    protocol_version = "HTTP/1.1"
    requests = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        OtlpReceiver.requests += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def start_otlp_receiver():
    """A receiver on a free port, on threads of this process; its URL."""
    server = http_server.ThreadingHTTPServer(("127.0.0.1", 0), OtlpReceiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1/traces"


def lt_folder(name, idempotent=False):
    """A fresh folder under WORK with the benchmark's serve.toml, tools and
    program (the same for every lt run). `idempotent`: the three tools
    declared `idempotent = true`, the guarantee of a DBOS step (at least
    once): lt serve then starts each call without waiting for its
    `scheduled` to commit (docs/api.md, Durability)."""
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "tools.lt").write_text(TOOLS_LT)
    tools = TOOLS_TOML.replace(" }\n", " }\nidempotent = true\n") if idempotent else TOOLS_TOML
    (d / "tools.toml").write_text(tools)
    (d / "program.lt").write_text(PROGRAM)
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    (d / "serve.toml").write_text(
        f'[tenants.bench]\nkeys = ["sha256:{digest}"]\ndeclarations = "tools.lt"\n'
        f'executors = "tools.toml"\n\n[tenants.bench.profiles.bench]\n')
    return d


def bench_lt(opts, lt, load_bin, engine="lt"):
    say(NAMES[engine])
    d = lt_folder(engine, opts.idempotent)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(d / "server.log", "w")
    store = f"sqlite:{d / 'lt.db'}"
    if engine == "lt-pg":
        server_url = os.environ.get("LT_BENCH_POSTGRES_URL") or os.environ.get("LT_TEST_POSTGRES_URL")
        if not server_url:
            return [{"engine": engine, "missing": "set LT_BENCH_POSTGRES_URL (or LT_TEST_POSTGRES_URL: "
                                                  "tests/fixtures/postgres/cluster.sh start)"}]
        store, why = fresh_pg_database(server_url)
        if why:
            return [{"engine": engine, "missing": f"cannot create a database: {why}"}]
    otlp = []
    if engine == "lt-otlp":
        otlp = ["--otlp-endpoint", start_otlp_receiver()]
    server = subprocess.Popen([lt, "serve", "--config", str(d / "serve.toml"), "--listen", f"127.0.0.1:{port}",
                               "--store", store] + otlp, stdout=log, stderr=subprocess.STDOUT)
    records = []
    try:
        why = wait_http(f"{url}/healthz", server)
        if why:
            return [{"engine": engine, "missing": f"lt serve did not start: {why}; see {d / 'server.log'}"}]
        why = smoke_lt(url)
        if why:
            return [{"engine": engine, "missing": f"a first session failed: {why}; see {d / 'server.log'}"}]
        common = ["--url", url, "--key", KEY, "--program", d / "program.lt", "--profile", "bench",
                  "--expect", json.dumps(EXPECTED), "--pid", server.pid]
        if engine == "lt-wait":
            common.append("--wait")
        for clients in plan(opts):
            before = wait_quiet()
            if clients is None:
                rec = run_load(load_bin, common + ["--sequential", "--runs", opts.runs, "--warmup", opts.warmup],
                               opts.seconds)
            else:
                rec = run_load(load_bin, common + ["--clients", clients, "--seconds", opts.seconds], opts.seconds)
            rec["server_pids"] = 1
            records.append(measured(engine, rec, before))
            if server.poll() is not None:
                records.append({"engine": engine, "failed": f"lt serve exited with {server.returncode}"})
                break
    finally:
        stop(server)
        log.close()
    if engine == "lt-otlp":
        say(f"  the OTLP receiver got {OtlpReceiver.requests} requests")
    return records


def smoke_lt(url):
    """One session by hand: created, streamed to its output, then ended."""
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    try:
        body = json.dumps({"program": PROGRAM, "profile": "bench"}).encode()
        status, raw = http("POST", f"{url}/v1/sessions", body, auth)
        sid = json.loads(raw)["id"]
        _, events = http("GET", f"{url}/v1/sessions/{sid}/events", None, auth, timeout=30)
        if b"event: output" not in events:
            return f"the events of {sid} have no output: {events[-300:]!r}"
        _, raw = http("GET", f"{url}/v1/sessions/{sid}", None, auth)
        view = json.loads(raw)
        if view.get("status") != "ended" or view.get("value") != EXPECTED:
            return f"session {sid}: {view}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read()[:300]!r}"
    except (OSError, ValueError, KeyError) as e:
        return repr(e)
    return None


def bench_floor(opts):
    say("SQLite floor")
    d = WORK / "floor"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    records = []
    for clients in plan(opts):
        before = wait_quiet()
        args = [d / "floor.db"] + (["sequential", opts.runs] if clients is None
                                   else ["concurrent", clients, opts.seconds])
        records.append(measured("floor", run_script(sys.executable, "sqlite_floor.py", args, opts.seconds), before))
    return records


def bench_dbos(opts):
    say("DBOS Transact")
    python, why = venv_with("dbos", "dbos")
    if why:
        return [{"engine": "dbos", "missing": why}]
    d = WORK / "dbos"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    records = []
    for clients in plan(opts):
        before = wait_quiet()
        args = [d / "dbos.sqlite"] + (["sequential", opts.runs] if clients is None
                                      else ["concurrent", clients, opts.seconds])
        records.append(measured("dbos", run_script(python, "dbos_workflow.py", args, opts.seconds), before))
    return records


def bench_restate(opts, load_bin):
    say("Restate")
    python, why = venv_with("restate", "restate, hypercorn")
    if why:
        return [{"engine": "restate", "missing": why}]
    server_bin, why = restate_server()
    if why:
        return [{"engine": "restate", "missing": why}]
    d = WORK / "restate"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    ingress, admin, node, svc = free_port(), free_port(), free_port(), free_port()
    env = dict(os.environ,
               RESTATE_INGRESS__BIND_ADDRESS=f"127.0.0.1:{ingress}",
               RESTATE_ADMIN__BIND_ADDRESS=f"127.0.0.1:{admin}",
               RESTATE_BIND_ADDRESS=f"127.0.0.1:{node}",
               RESTATE_ADVERTISED_ADDRESS=f"http://127.0.0.1:{node}/",
               RESTATE_LOG_FILTER="warn")
    server_log = open(d / "server.log", "w")
    service_log = open(d / "service.log", "w")
    server = subprocess.Popen([server_bin, "--no-logo", "--listen-mode", "tcp", "--base-dir", str(d / "data")], cwd=d, env=env,
                              stdout=server_log, stderr=subprocess.STDOUT)
    service = subprocess.Popen([python, str(SCRIPTS / "restate_service.py"), str(svc)], cwd=d,
                               stdout=service_log, stderr=subprocess.STDOUT)
    records = []
    try:
        why = wait_http(f"http://127.0.0.1:{admin}/health", server, 60)
        if why:
            return [{"engine": "restate", "missing": f"restate-server did not start: {why}; see {d / 'server.log'}"}]
        why = wait_http(f"http://127.0.0.1:{admin}/deployments", server, 60, "POST",
                        json.dumps({"uri": f"http://127.0.0.1:{svc}", "force": True}).encode(),
                        {"Content-Type": "application/json"}, ok=(200, 201))
        if why or service.poll() is not None:
            return [{"engine": "restate", "missing": f"the service did not register: {why}; see {d}"}]
        call = f"http://127.0.0.1:{ingress}/Bench/session"
        why = wait_http(call, server, 60, "POST", b"1", {"Content-Type": "application/json"})
        if why:
            return [{"engine": "restate", "missing": f"a first call failed: {why}; see {d}"}]
        common = ["--call", call, "--body", "1", "--expect", json.dumps("t3-1"),
                  "--pid", server.pid, "--pid", service.pid]
        for clients in plan(opts):
            before = wait_quiet()
            if clients is None:
                rec = run_load(load_bin, common + ["--sequential", "--runs", opts.runs, "--warmup", opts.warmup],
                               opts.seconds)
            else:
                rec = run_load(load_bin, common + ["--clients", clients, "--seconds", opts.seconds], opts.seconds)
            rec["server_pids"] = 2
            rec["restate"] = restate_versions(server_bin, python)
            records.append(measured("restate", rec, before))
    finally:
        stop(server, 5)
        stop(service, 3)  # hypercorn waits on restate's open HTTP/2 connections: killed after 3 s
        server_log.close()
        service_log.close()
    return records


# ---------------------------------------------------------------- installing

def venv_with(peer, modules):
    """The venv's python with `modules` importable; (python, None) or
    (None, why not)."""
    venv = PEERS / "venv"
    python = venv / "bin" / "python"
    check = [str(python), "-c", f"import {modules}"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python), None
    PEERS.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        p = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if p.returncode != 0:
            return None, f"cannot make a venv: {p.stderr.strip()[-300:]}"
    for packages in (PIP_PINS[peer], PIP_LATEST[peer]):
        say(f"  installing {' '.join(packages)} into {venv}")
        p = subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], capture_output=True, text=True)
        if p.returncode == 0 and subprocess.run(check, capture_output=True).returncode == 0:
            return str(python), None
        why = p.stderr.strip()[-300:]
    return None, f"pip install {' '.join(PIP_LATEST[peer])} failed: {why}"


def restate_versions(server_bin, python):
    server = subprocess.run([server_bin, "--version"], capture_output=True, text=True).stdout.split()
    sdk = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('restate-sdk'))"],
                         capture_output=True, text=True).stdout.strip()
    return f"server {server[-1] if server else '?'}, restate-sdk {sdk or '?'}"


def restate_server():
    """The restate-server binary the npm package ships; (path, None) or
    (None, why not)."""
    prefix = PEERS / "restate-npm"
    binary = prefix / "node_modules" / "@restatedev" / "restate-server-linux-x64" / "bin" / "restate-server"
    if binary.exists():
        return str(binary), None
    if os.uname().machine != "x86_64":
        return None, f"the npm package ships no restate-server for {os.uname().machine} here"
    if shutil.which("npm") is None:
        return None, "npm is not installed (apt-get install npm)"
    prefix.mkdir(parents=True, exist_ok=True)
    if not (prefix / "package.json").exists():
        (prefix / "package.json").write_text('{"name": "lt-bench-peers", "private": true}\n')
    for spec in (NPM_RESTATE, NPM_RESTATE.rsplit("@", 1)[0]):
        say(f"  installing {spec} into {prefix}")
        p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", spec], cwd=prefix,
                           capture_output=True, text=True)
        if p.returncode == 0 and binary.exists():
            return str(binary), None
    return None, f"npm install {NPM_RESTATE} did not give {binary}: {p.stderr.strip()[-300:]}"


# ---------------------------------------------------------------- report

NAMES = {"lt": "lt serve (SQLite)", "lt-wait": "lt serve (SQLite), one request (Prefer: wait)", "lt-otlp": "lt serve (SQLite), --otlp-endpoint", "lt-pg": "lt serve (PostgreSQL)", "floor": "SQLite floor, 3 fsyncs", "dbos": "DBOS / SQLite",
         "restate": "Restate + Python SDK"}


def cores(rec, key):
    v, s = rec.get(key), rec.get("seconds")
    return f"{v / s:.2f}" if v is not None and s else "–"


def table(records):
    rows = [("engine", "clients", "sessions/s", "p50 ms", "p99 ms", "server CPU", "client CPU", "sessions", "load")]
    for r in records:
        name = NAMES.get(r["engine"], r["engine"])
        if "missing" in r:
            rows.append((name, "–", "missing: " + r["missing"][:120], "", "", "", "", "", ""))
            continue
        if "sessions" not in r:
            rows.append((name, "–", "FAILED: " + r.get("failed", "?")[:120], "", "", "", "", "", ""))
            continue
        clients = "1 at a time" if r.get("mode") == "sequential" else str(r["clients"])
        if "cpu_s" in r:  # embedded: one process is client and engine
            server, client = cores(r, "cpu_s") + " (with client)", "–"
        else:
            server, client = cores(r, "server_cpu_s"), cores(r, "client_cpu_s")
        rows.append((name, clients, f"{r['sessions_per_s']:,.1f}", f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}",
                     server, client, str(r["sessions"]) + (" FAILED" if r.get("failed") else ""),
                     r["machine_before"]["load"].split()[0] + "→" + r["machine_after"]["load"].split()[0]
                     + (" BUILD" if r["machine_before"]["build_procs"] else "")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def find(records, engine, clients):
    for r in records:
        if r.get("engine") == engine and "sessions" in r and not r.get("failed"):
            if (clients is None and r.get("mode") == "sequential") or (
                    clients is not None and r.get("mode") == "concurrent" and r.get("clients") == clients):
                return r
    return None


def verdicts(records, opts):
    lines = []
    top = max(opts.clients)
    for mine in ("lt", "lt-wait"):
        lt_top, lt_seq = find(records, mine, top), find(records, mine, None)
        if not lt_top and not lt_seq:
            continue
        for peer in ("restate", "dbos", "floor"):
            p = find(records, peer, top)
            if lt_top and p and p["sessions_per_s"]:
                ratio = lt_top["sessions_per_s"] / p["sessions_per_s"]
                target = "  (target ≥ 10×: " + ("met" if ratio >= 10 else "NOT met") + ")" if peer == "restate" else ""
                lines.append(f"{mine} / {NAMES[peer]}, sessions/s at {top} clients: {ratio:.1f}×{target}")
            elif peer == "restate":
                lines.append(f"{mine} / Restate at {top} clients: n/a (a figure is missing)")
        if lt_seq:
            p50 = lt_seq["p50_ms"]
            lines.append(f"{mine} one at a time: p50 {p50:.2f} ms, p99 {lt_seq['p99_ms']:.2f} ms  "
                         f"(target p50 < 2 ms: {'met' if p50 < 2 else 'NOT met'})")
    return "\n".join(lines)


def versions(records, lt):
    parts = []
    if lt:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        parts.append(f"lt {rev.stdout.strip() or '?'}")
    for r in records:
        if r.get("sqlite") and not any(p.startswith("SQLite") for p in parts):
            parts.append(f"SQLite {r['sqlite']} (Python's, for the floor)")
        if r.get("dbos") and not any(p.startswith("DBOS") for p in parts):
            parts.append(f"DBOS {r['dbos']}")
        if r.get("restate") and not any(p.startswith("Restate") for p in parts):
            parts.append(f"Restate {r['restate']}")
    return ", ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 s windows and 50 sequential sessions: a smoke run")
    ap.add_argument("--only", default="lt,lt-wait,floor,dbos,restate", help="engines, comma-separated")
    ap.add_argument("--clients", default="16,64", help="concurrent clients per run, comma-separated")
    ap.add_argument("--seconds", type=float, help="each concurrent window (default 15; --quick 3)")
    ap.add_argument("--runs", type=int, help="sequential sessions measured (default 300; --quick 50)")
    ap.add_argument("--warmup", type=int, help="sequential warm-up sessions (default 20; --quick 5)")
    ap.add_argument("--no-build", action="store_true", help="use target/release/lt and the built serve_load")
    ap.add_argument("--json", help="write every record to this file")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before each timed run, wait up to S seconds for other builds to end")
    ap.add_argument("--idempotent", action="store_true",
                    help="lt's three tools declared idempotent = true: at least once, as DBOS's steps "
                         "(each call then starts without waiting for its scheduled event to commit)")
    opts = ap.parse_args()
    # SIGTERM (and SIGINT, which a background job ignores) stop the run
    # through the `finally` blocks, which stop the servers it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    opts.clients = [int(c) for c in opts.clients.split(",")]
    opts.seconds = opts.seconds or (3.0 if opts.quick else 15.0)
    opts.runs = opts.runs or (50 if opts.quick else 300)
    opts.warmup = opts.warmup if opts.warmup is not None else (5 if opts.quick else 20)
    QUIET["seconds"] = opts.wait_quiet
    engines = [e.strip() for e in opts.only.split(",") if e.strip()]
    unknown = set(engines) - set(NAMES)
    if unknown:
        sys.exit(f"--only: unknown engine(s) {', '.join(sorted(unknown))}; known: {', '.join(NAMES)}")

    need_load = bool({"lt", "lt-wait", "lt-otlp", "lt-pg", "restate"} & set(engines))
    lt, load_bin = build(opts.no_build) if need_load else (None, None)
    WORK.mkdir(parents=True, exist_ok=True)
    start = machine()
    say(f"machine: {os.cpu_count()} cores, load {start['load']}"
        + (f"; WARNING: {start['build_procs']} build processes are running, the figures will be low"
           if start["build_procs"] else ""))
    records = []
    for engine in engines:
        if engine in ("lt", "lt-wait", "lt-otlp", "lt-pg"):
            records += bench_lt(opts, lt, load_bin, engine)
        elif engine == "floor":
            records += bench_floor(opts)
        elif engine == "dbos":
            records += bench_dbos(opts)
        elif engine == "restate":
            records += bench_restate(opts, load_bin)

    print()
    print(f"lt serve under load: sessions of 3 durable steps; {opts.seconds:g} s windows, "
          f"one at a time over {opts.runs} sessions; {os.cpu_count()} cores shared by client and server")
    print()
    print(table(records))
    print()
    print("CPU in cores (CPU seconds / wall seconds) over each timed window; the floor and DBOS run the")
    print("client threads inside the engine's process. lt's client is serve_load (one Rust thread).")
    print()
    print(verdicts(records, opts))
    print()
    print("versions: " + versions(records, lt))
    if opts.json:
        Path(opts.json).write_text("".join(json.dumps(r) + "\n" for r in records))
    failed = [r for r in records if r.get("failed")]
    if failed:
        say(f"FAILED: {len(failed)} runs had errors: " + "; ".join(f"{r['engine']}: {r['failed'][:200]}" for r in failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
