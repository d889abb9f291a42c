"""Side-by-side performance harness: lt, CPython and pydantic's Monty.

Usage (from the repository root; see docs/performance.md):

    python3 bench/compare.py                 # default: about 1-2 minutes
    python3 bench/compare.py --runs 15       # more repetitions per figure
    python3 bench/compare.py --only a,c      # some workloads only (a b c d e)
    python3 bench/compare.py --no-monty      # skip Monty even if installed
    python3 bench/compare.py --no-inproc     # skip building/running bench/inproc
    python3 bench/compare.py --json out.json # also write the figures as JSON

Workloads (each figure is the median of N runs; `min` beside it in the JSON):

 (a) a trivial program as a whole process: `lt run trivial.lt` (`1 + 1`),
     `python3 -c "1 + 1"` (the real interpreter, sys.executable, not a
     pyenv shim), `monty -c "1 + 1"` (Monty's CLI binary).
 (b) 1,000 tool calls, a record in and a record out, through an in-process
     host. lt: bench/inproc (links the lt library) runs one program,
     `traverse` over `range 0 1000` calling the tool, against a host that
     answers from memory; the figure is per call, net of the same traverse
     without calls. Also: a `fixed` executor through the real executor host,
     and `lt run` with a `fixed` executor minus the start-up of (a).
     CPython: a Python function called with a dict, returning a dict.
     Monty: its Python package (a session on a `monty` worker process),
     the tool an external function; per call, net of the same loop without
     calls.
 (c) 1,000,000 Ints: map/filter (`length (filter … (map … xs))` vs
     `len([y for y in [x * 3 for x in xs] if y % 2 == 0])`) and a sum
     (`fold (+) 0 xs` and stdlib `sum xs` vs `sum(xs)`). lt in-process (IR
     compile + run, `range 0 1000000` included; `range` alone reported);
     CPython in-process, list built beforehand; Monty: one snippet in a
     session whose `xs` was built by an earlier snippet, net of an empty
     snippet.
 (d) parse + check of a generated 500-line lt program (bench/gen_program.py),
     in-process (`lt::types::check_source`), with its phases; and `lt check`
     as a whole process.
 (e) ten 100 ms tool calls through `gather`: bench/gather.py (a local HTTP
     tool answering after 100 ms; whole `lt run` process). CPython: ten
     threads POSTing to the same kind of server.

Targets (from the issue) are printed beside each figure.
"""
import argparse
import functools
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import gen_program  # noqa: E402

# Peer figures seen on this kind of machine (medians, noisy), from the issue.
PEERS = {
    "a": "Monty CLI 2.1 ms, CPython 28 ms",
    "b": "Monty in-process (Rust) 2.8 us; Monty Python package 25-120 us",
    "c_mf": "CPython 24 ms, Monty 107 ms",
    "c_sum": "CPython 4 ms, Monty 35 ms",
    "d": "Monty type check of ~500 lines 13 ms (warm)",
}


def median_min(samples):
    return statistics.median(samples), min(samples)


def time_process(cmd, runs, cwd=None, check=True):
    """Median and min wall time (ms) of running `cmd` to completion."""
    times = []
    for i in range(runs + 1):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
        dt = (time.perf_counter() - t) * 1000
        if check and out.returncode != 0:
            raise RuntimeError(f"{cmd} failed ({out.returncode}): {out.stderr[:500]}")
        if i:  # the first run warms the page cache
            times.append(dt)
    return median_min(times)


def time_fn(f, runs):
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    return median_min(times)


# ---------------------------------------------------------------- set-up


def find_lt(path):
    if os.path.exists(path):
        return path
    print(f"{path} missing: cargo build --release (may wait for another build's lock)")
    subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)
    return path


def build_inproc():
    """Builds bench/inproc (in target/bench-inproc); its path, or None."""
    manifest = os.path.join(BENCH, "inproc", "Cargo.toml")
    lock = os.path.join(BENCH, "inproc", "Cargo.lock")
    if not os.path.exists(lock):
        shutil.copy(os.path.join(ROOT, "Cargo.lock"), lock)
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target", "bench-inproc"))
    print("building bench/inproc (cargo build --release; the first build takes a few minutes) ...",
          flush=True)
    r = subprocess.run(["cargo", "build", "--release", "--manifest-path", manifest],
                       env=env, capture_output=True, text=True)
    exe = os.path.join(ROOT, "target", "bench-inproc", "release", "lt-bench-inproc")
    if r.returncode != 0:
        print("bench/inproc did not build; in-process lt figures skipped:\n" + r.stderr[-2000:])
        return None
    return exe


def find_monty(disabled):
    if disabled:
        return None, "skipped (--no-monty)"
    try:
        import pydantic_monty  # noqa: F401
        from pydantic_monty._binary import find_monty_binary
    except Exception as e:  # not installed, or broken
        return None, f"not installed ({type(e).__name__}: {e}); `pip install pydantic-monty` to include it"
    try:
        binary = find_monty_binary()
    except Exception:
        binary = shutil.which("monty")
    version = getattr(pydantic_monty, "__version__", "?")
    return binary, f"pydantic-monty {version}, CLI {binary}"


# ------------------------------------------------------------- workloads

R = {}  # figure name -> (median, min, unit)


def put(name, mm, unit):
    R[name] = (mm[0], mm[1], unit)


def inproc_figures(exe, runs, program, parts):
    out = subprocess.run([exe, str(runs), program] + parts, capture_output=True, text=True)
    if out.returncode != 0:
        print("bench/inproc failed:", out.stderr[-2000:])
        return
    for line in out.stdout.splitlines():
        key, value, unit = line.split()
        R["lt_" + key] = (float(value), float(value), unit)


def workload_a(lt, monty, runs, tmp):
    path = os.path.join(tmp, "trivial.lt")
    with open(path, "w") as f:
        f.write("1 + 1\n")
    runs = max(runs * 4, 21)
    put("lt_a_run", time_process([lt, "run", path], runs), "ms")
    put("lt_a_check", time_process([lt, "check", path], runs), "ms")
    put("lt_a_version", time_process([lt, "--version"], runs), "ms")
    put("true_process", time_process(["/bin/true"], runs), "ms")
    put("py_a", time_process([sys.executable, "-c", "1 + 1"], runs), "ms")
    put("py_a_S", time_process([sys.executable, "-S", "-c", "1 + 1"], runs), "ms")
    if monty:
        put("monty_a", time_process([monty, "-c", "1 + 1"], runs), "ms")


def workload_b_process(lt, runs, tmp):
    """`lt run` with a fixed executor: 1,000 calls, whole process."""
    prog = os.path.join(tmp, "calls.lt")
    tools = os.path.join(tmp, "tools.toml")
    with open(prog, "w") as f:
        f.write("tool lookup: {id: Int, name: String} -{Read}-> {id: Int, name: String, balance: Int};\n"
                "match traverse (fn i: Int => exec tool lookup {id = i, name = \"cust\"}) (range 0 1000) "
                "{ Ok(rs) => fold (fn acc: Int => fn r: {id: Int, name: String, balance: Int} => "
                "acc + r.balance) 0 rs, Err(e) => 0 }\n")
    with open(tools, "w") as f:
        f.write('[tools.lookup]\nfixed = { ok = { id = 7, name = "cust", balance = 1 } }\n')
    put("lt_b_process", time_process([lt, "run", prog, "--executors", tools], max(runs * 2, 11)), "ms")


def workload_b_python(runs):
    def lookup(arg):
        return {"id": arg["id"], "name": arg["name"], "balance": 1}

    def calls():
        total = 0
        for i in range(1000):
            total += lookup({"id": i, "name": "cust"})["balance"]
        return total

    def base():
        total = 0
        for i in range(1000):
            total += {"id": i, "name": "cust", "balance": 1}["balance"]
        return total

    c = time_fn(calls, runs * 20)
    b = time_fn(base, runs * 20)
    put("py_b_gross", (c[0], c[1]), "us/call")  # ms per 1,000 = us per call
    put("py_b_net", (c[0] - b[0], c[1] - b[1]), "us/call")


def monty_session():
    import pydantic_monty as pm
    pool = pm.Monty(min_processes=1, max_processes=1)
    pool.__enter__()
    session = pool.checkout(limits={"max_suspensions": 100_000_000})
    session.__enter__()
    return pool, session


def workload_b_monty(runs):
    pool, s = monty_session()
    try:
        def lookup(arg):
            return {"id": arg["id"], "name": arg["name"], "balance": 1}

        with_calls = ("total = 0\nfor i in range(1000):\n"
                      "    total += lookup({'id': i, 'name': 'cust'})['balance']\ntotal\n")
        without = ("total = 0\nfor i in range(1000):\n"
                   "    total += {'id': i, 'name': 'cust', 'balance': 1}['balance']\ntotal\n")
        c = time_fn(lambda: s.feed_run(with_calls, external_lookup={"lookup": lookup}), runs)
        b = time_fn(lambda: s.feed_run(without, external_lookup={"lookup": lookup}), runs)
        put("monty_b_gross", c, "us/call")
        put("monty_b_net", (c[0] - b[0], c[1] - b[1]), "us/call")
    finally:
        s.__exit__(None, None, None)
        pool.__exit__(None, None, None)


MF_PY = "len([y for y in [x * 3 for x in xs] if y % 2 == 0])"
SUM_PY = "sum(xs)"


def workload_c_python(runs):
    xs = list(range(1_000_000))
    put("py_c_mf", time_fn(lambda: len([y for y in [x * 3 for x in xs] if y % 2 == 0]), runs), "ms")
    put("py_c_sum", time_fn(lambda: sum(xs), runs), "ms")
    # The like-for-like peer of lt's `fold (fn acc => fn x => acc + x) 0 xs`:
    # a fold calling a two-argument lambda per element.
    put("py_c_reduce", time_fn(lambda: functools.reduce(lambda a, x: a + x, xs, 0), runs), "ms")
    put("py_c_list", time_fn(lambda: list(range(1_000_000)), runs), "ms")


def workload_c_monty(runs):
    pool, s = monty_session()
    try:
        s.feed_run("xs = list(range(1000000))")
        empty = time_fn(lambda: s.feed_run("0"), runs * 4)
        for key, code in [("monty_c_mf", MF_PY), ("monty_c_sum", SUM_PY),
                          ("monty_c_list", "len(list(range(1000000)))")]:
            t = time_fn(lambda: s.feed_run(code), runs)
            put(key, (t[0] - empty[0], t[1] - empty[1]), "ms")
        put("monty_feed_empty", empty, "ms")
    finally:
        s.__exit__(None, None, None)
        pool.__exit__(None, None, None)


def workload_d_process(lt, runs, program):
    put("lt_d_process", time_process([lt, "check", program], max(runs * 2, 11)), "ms")


def workload_e(lt, runs):
    out = subprocess.run([sys.executable, os.path.join(BENCH, "gather.py"), lt, str(runs)],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        print("bench/gather.py failed:", out.stderr[-1000:])
    for line in out.stdout.splitlines():
        name, ms = line.split()
        R["lt_e_" + name] = (float(ms), float(ms), "ms")

    # CPython: ten threads POSTing to a server that answers after 100 ms.
    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(0.1)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"ok": true}')

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.request_queue_size = 128
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"

    def call(i):
        req = urllib.request.Request(url, data=json.dumps({"i": i}).encode(),
                                     headers={"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req))

    def gather():
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(10) as ex:
            return list(ex.map(call, range(10)))

    put("py_e_gather", time_fn(gather, runs), "ms")
    server.shutdown()


# ---------------------------------------------------------------- report


STAT = [0]  # 0: medians, 1: minimums


def fig(name, digits=2):
    if name not in R:
        return "n/a"
    v = R[name][STAT[0]]
    return f"{v:.{digits}f}"


def ratio(a, b):
    if a not in R or b not in R or R[b][0] <= 0:
        return "n/a"
    return f"{R[a][STAT[0]] / R[b][STAT[0]]:.2f}"


def verdict(name, limit):
    if name not in R:
        return "n/a"
    return "met" if R[name][STAT[0]] <= limit else "NOT met"


def report(monty_note):
    rows = [
        # label, lt, CPython, Monty, unit, target, verdict
        ("(a) trivial program, whole process: lt run", "lt_a_run", "py_a", "monty_a", "ms",
         "< 2 ms", verdict("lt_a_run", 2.0), PEERS["a"]),
        ("(a)   lt check / lt --version / /bin/true", "lt_a_check", "py_a_S", None, "ms",
         "", f"version {fig('lt_a_version')}, true {fig('true_process')}; CPython column: python3 -S", ""),
        ("(a)   in-process check+lower+run of `1 + 1`", "lt_trivial_inproc", None, None, "us",
         "", "", ""),
        ("(b) tool call, in-process host, net", "lt_calls_inproc_net", "py_b_net", "monty_b_net",
         "us/call", "< 1 us", verdict("lt_calls_inproc_net", 1.0), PEERS["b"]),
        ("(b)   in-process host, gross (run / 1000)", "lt_calls_inproc_gross", "py_b_gross",
         "monty_b_gross", "us/call", "", "", ""),
        ("(b)   fixed executor (tokio), net", "lt_calls_fixed_net", None, None, "us/call", "", "", ""),
        ("(b)   lt run + fixed executor, whole process", "lt_b_process", None, None, "ms",
         "", f"minus (a): {R['lt_b_process'][STAT[0]] - R['lt_a_run'][STAT[0]]:.2f} us per call"
         if "lt_b_process" in R and "lt_a_run" in R else "", ""),
        ("(c) 1M map/filter (incl. range in lt)", "lt_compute_map_filter", "py_c_mf", "monty_c_mf",
         "ms", "<= CPython", verdict_ratio("lt_compute_map_filter", "py_c_mf"), PEERS["c_mf"]),
        ("(c) 1M fold (+) sum (incl. range in lt)", "lt_compute_fold_sum", "py_c_sum", "monty_c_sum",
         "ms", "<= CPython", verdict_ratio("lt_compute_fold_sum", "py_c_sum"), PEERS["c_sum"]),
        ("(c)   stdlib `sum` (incl. range)", "lt_compute_stdlib_sum", "py_c_sum", "monty_c_sum",
         "ms", "", "", ""),
        ("(c)   fold vs functools.reduce(lambda)", "lt_compute_fold_sum", "py_c_reduce",
         None, "ms", "", "", ""),
        ("(c)   range 0 1000000 alone / list(range())", "lt_compute_range", "py_c_list",
         "monty_c_list", "ms", "", "", ""),
        ("(c)   map alone (incl. range)", "lt_compute_map", None, None, "ms", "", "", ""),
        ("(d) parse+check 500 lines, in-process", "lt_check_total", None, None, "ms",
         "< 1 ms", verdict("lt_check_total", 1.0), PEERS["d"]),
        ("(d)   lex / parse (incl. lex)", "lt_check_lex", None, None, "ms", "",
         f"parse {fig('lt_check_parse', 3)} ms", ""),
        ("(d)   types::check_program / lower", "lt_check_types", None, None, "ms", "",
         f"lower {fig('lt_check_lower', 3)} ms", ""),
        ("(d)   lt check FILE, whole process", "lt_d_process", None, None, "ms", "", "", ""),
        ("(e) 10 x 100 ms calls, gather (whole process)", "lt_e_gather_10", "py_e_gather", None,
         "ms", "", "", ""),
        ("(e)   fan_out / traverse (sequential)", "lt_e_fan_out_10", None, None, "ms", "",
         f"traverse {fig('lt_e_traverse_10', 1)} ms", ""),
    ]
    print()
    print(["MEDIANS", "MINIMUMS (the least-disturbed run; in-process lt figures are medians in both)"][STAT[0]])
    head = f"{'workload':<47} {'lt':>9} {'CPython':>9} {'Monty':>9} {'unit':<8} {'lt/Py':>6} {'lt/Mty':>6}  target     verdict / notes"
    print(head)
    print("-" * len(head))
    for label, lt, py, mo, unit, target, note, peers in rows:
        digits = 3 if unit in ("us/call",) or (lt and lt.startswith("lt_check")) else 2
        print(f"{label:<47} {fig(lt, digits) if lt else '':>9} {fig(py, digits) if py else '':>9} "
              f"{fig(mo, digits) if mo else '':>9} {unit:<8} {ratio(lt, py) if py else '':>6} "
              f"{ratio(lt, mo) if mo else '':>6}  {target:<10} {note}")
        if peers:
            print(f"{'':<47}   peers seen: {peers}")


def verdict_ratio(a, b):
    if a not in R or b not in R:
        return "n/a"
    return "met" if R[a][STAT[0]] <= R[b][STAT[0]] else "NOT met"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="repetitions per figure (default 5)")
    ap.add_argument("--only", default="a,b,c,d,e", help="workloads, e.g. a,c")
    ap.add_argument("--lt", default=os.path.join(ROOT, "target", "release", "lt"))
    ap.add_argument("--no-monty", action="store_true")
    ap.add_argument("--no-inproc", action="store_true",
                    help="do not build or run bench/inproc (no in-process lt figures)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    only = set(args.only.split(","))
    lt = find_lt(args.lt)
    monty, monty_note = find_monty(args.no_monty)
    print(f"lt: {lt}\nCPython: {sys.executable} {sys.version.split()[0]}\nMonty: {monty_note}")
    exe = build_inproc() if only & {"a", "b", "c", "d"} and not args.no_inproc else None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "program500.lt")
        with open(program, "w") as f:
            f.write(gen_program.generate(500))
        steps = []
        if "a" in only:
            steps.append(("(a) whole-process start-up", lambda: workload_a(lt, monty, args.runs, tmp)))
        parts = [p for p, w in [("trivial", "a"), ("calls", "b"), ("compute", "c"), ("check", "d")]
                 if w in only]
        if exe and parts:
            steps.append(("lt in-process (bench/inproc)",
                          lambda: inproc_figures(exe, args.runs, program, parts)))
        if "b" in only:
            steps.append(("(b) lt run + fixed executor", lambda: workload_b_process(lt, args.runs, tmp)))
            steps.append(("(b) CPython", lambda: workload_b_python(args.runs)))
            if monty:
                steps.append(("(b) Monty", lambda: workload_b_monty(args.runs)))
        if "c" in only:
            steps.append(("(c) CPython", lambda: workload_c_python(args.runs)))
            if monty:
                steps.append(("(c) Monty", lambda: workload_c_monty(args.runs)))
        if "d" in only:
            steps.append(("(d) lt check, whole process", lambda: workload_d_process(lt, args.runs, program)))
        if "e" in only:
            steps.append(("(e) gather", lambda: workload_e(lt, args.runs)))
        for label, step in steps:
            print(f"  {label} ...", flush=True)
            try:
                step()
            except Exception as e:  # one failing peer must not sink the rest
                print(f"    failed: {type(e).__name__}: {e}")
    print(f"(measured in {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f})")
    print(f"Monty: {monty_note}")
    for STAT[0] in (0, 1):
        report(monty_note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: {"median": v[0], "min": v[1], "unit": v[2]} for k, v in R.items()}, f, indent=1)


if __name__ == "__main__":
    main()
