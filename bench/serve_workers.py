#!/usr/bin/env python3
"""Many `lt serve` workers on one PostgreSQL, beside DBOS Transact on the
same server (issue 24).

The session is bench/serve.py's (3 durable tool calls; its client, tools and
program are reused from there). For each count N of `--workers`: a fresh
database, N `lt serve --store postgres://…` processes on it, and N
`serve_load` processes (compiled Rust, one per worker, `--clients`/N
clients each, started together): sessions/s is the sum of theirs. A
session is one `POST /v1/sessions` with `Prefer: wait` (its answer is the
ended session), as DBOS's client starts a workflow and waits for its result;
`--stream` makes it a POST and an event stream to the end instead. For each
count N of `--dbos`: a fresh database, N DBOS processes of
bench/serve_peers/dbos_workflow.py on it (`--clients`/N client threads
each, their windows opened at the same instant). CPU over each window, in
cores: the lt workers (each serve_load reads its worker's), the load
generators, and the PostgreSQL cluster (the postmaster's children, read
from /proc); and the cluster's WAL flushes (pg_stat_wal, timed by the
bench databases' backends: `track_wal_io_timing`): how many a second and
how long each, the resource a durable commit waits for.

    eval "$(bash tests/fixtures/postgres/cluster.sh start)"   # or LT_BENCH_POSTGRES_URL
    python3 bench/serve_workers.py                        # 1, 2, 4 workers; DBOS 1, 2, 4
    python3 bench/serve_workers.py --workers 1,2 --dbos 1 --seconds 5 --no-build
    python3 bench/serve_workers.py --json out.json

The PostgreSQL server must be local (its CPU is read from /proc): the
postmaster's pid comes from --pg-data (default: the test cluster's).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve as S  # noqa: E402  (bench/serve.py: the client, the build, the helpers)


def postmaster(data):
    """The postmaster's pid of the cluster in `data`, or None."""
    for d in (Path(data), Path((Path(data).parent / "data-path").read_text().strip())
              if (Path(data).parent / "data-path").exists() else None):
        try:
            return int((d / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError, TypeError):
            continue
    return None


def cluster_cpu(pm):
    """CPU seconds the cluster spent so far: the postmaster's own and its
    reaped children's (cutime, cstime: backends that ended), plus each live
    child's (backends, WAL writer, checkpointer…)."""
    if pm is None:
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            rest = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if pid == pm:
            total += sum(int(x) for x in rest[11:15]) / tick
        elif int(rest[1]) == pm:
            total += (int(rest[11]) + int(rest[12])) / tick
    return total


def spent(before, after):
    return after - before


def psql(url, sql):
    """One query's single row through psql (the distribution's), as text
    fields, or None."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))
    exe = S.shutil.which("psql") or (str(bins[-1]) if bins else None)
    if not exe:
        return None
    p = subprocess.run([exe, url, "-Atc", sql], capture_output=True, text=True)
    return p.stdout.strip().split("|") if p.returncode == 0 else None


def time_wal_flushes(db_url):
    """Backends of the database `db_url` time their WAL flushes
    (`track_wal_io_timing`, read back in pg_stat_wal)."""
    name = db_url.partition("?")[0].rsplit("/", 1)[1]
    psql(db_url, f"ALTER DATABASE {name} SET track_wal_io_timing = on")


def wal(server_url):
    """The cluster's WAL flushes so far: (count, milliseconds timed, bytes
    written)."""
    row = psql(server_url, "SELECT wal_sync, wal_sync_time, wal_bytes FROM pg_stat_wal")
    try:
        return int(row[0]), float(row[1]), int(row[2])
    except (TypeError, ValueError, IndexError):
        return None


def wal_spent(before, after, wall):
    """WAL flushes a second, ms each, and the share of the window a flush
    was under way, between two `wal()` readings."""
    if not before or not after or not wall:
        return {}
    n, ms = after[0] - before[0], after[1] - before[1]
    return {"wal_flushes_per_s": round(n / wall, 1), "wal_flush_ms": round(ms / n, 2) if n else None,
            "wal_flush_busy": round(ms / 1000 / wall, 2), "wal_bytes": after[2] - before[2]}


def split(total, n):
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def bench_lt_workers(opts, lt, load_bin, server_url, n, pm):
    S.say(f"lt serve, {n} worker(s) on one PostgreSQL")
    d = S.lt_folder(f"lt-pg-{n}", opts.idempotent)
    store, why = S.fresh_pg_database(server_url)
    if why:
        return {"engine": "lt-pg", "workers": n, "missing": why}
    time_wal_flushes(store)
    servers, urls, logs = [], [], []
    try:
        for i in range(n):
            port = S.free_port()
            log = open(d / f"server{i}.log", "w")
            logs.append(log)
            servers.append(subprocess.Popen(
                [lt, "serve", "--config", str(d / "serve.toml"), "--listen", f"127.0.0.1:{port}",
                 "--store", store], stdout=log, stderr=subprocess.STDOUT))
            urls.append(f"http://127.0.0.1:{port}")
        for url, server in zip(urls, servers):
            why = S.wait_http(f"{url}/healthz", server) or S.smoke_lt(url)
            if why:
                return {"engine": "lt-pg", "workers": n, "missing": f"{why}; see {d}"}
        before = S.wait_quiet()
        pg0, wal0, t0 = cluster_cpu(pm), wal(server_url), time.time()
        loads = [subprocess.Popen(
            [load_bin, "--url", url, "--key", S.KEY, "--program", str(d / "program.lt"),
             "--profile", "bench", "--expect", json.dumps(S.EXPECTED), "--pid", str(server.pid),
             "--clients", str(c), "--seconds", str(opts.seconds)] + ([] if opts.stream else ["--wait"]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for url, server, c in zip(urls, servers, split(opts.clients, n))]
        recs = []
        for p in loads:
            out, err = p.communicate(timeout=opts.seconds * 4 + 180)
            rec = next((json.loads(l) for l in reversed(out.splitlines()) if l.startswith("{")), {})
            if p.returncode != 0:
                rec["failed"] = (err.strip() or f"exit {p.returncode}")[-400:]
            recs.append(rec)
        pg, wal1, wall = spent(pg0, cluster_cpu(pm)), wal(server_url), time.time() - t0
        rec = summed("lt-pg", n, recs, before, pg, wall,
                     server=sum(r.get("server_cpu_s") or 0 for r in recs),
                     client=sum(r.get("client_cpu_s") or 0 for r in recs),
                     wal_use=wal_spent(wal0, wal1, wall))
    finally:
        for server in servers:
            S.stop(server)
        for log in logs:
            log.close()
    # The sessions table's updates, and how many were HOT (no new index
    # entry), counted by PostgreSQL once the workers' backends are gone.
    time.sleep(1)
    row = psql(store, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'sessions'")
    if row and len(row) == 2:
        rec["sessions_updates"], rec["sessions_hot_updates"] = int(row[0]), int(row[1])
        S.say(f"  sessions table: {row[0]} updates, {row[1]} HOT")
    return rec


def bench_dbos_procs(opts, server_url, n, pm):
    S.say(f"DBOS Transact, {n} process(es) on one PostgreSQL")
    python, why = S.venv_with("dbos", "dbos")
    if why:
        return {"engine": "dbos-pg", "workers": n, "missing": why}
    url, why = S.fresh_pg_database(server_url)
    if why:
        return {"engine": "dbos-pg", "workers": n, "missing": why}
    time_wal_flushes(url)
    url = url.replace("postgres://", "postgresql://", 1)
    script = str(S.SCRIPTS / "dbos_workflow.py")
    # One process first: DBOS migrates its system database.
    first = subprocess.run([python, script, url, "sequential", "5"], capture_output=True, text=True, timeout=300)
    if first.returncode != 0:
        return {"engine": "dbos-pg", "workers": n, "missing": first.stderr.strip()[-400:]}
    before = S.wait_quiet()
    start_at = time.time() + 6 + 2 * n  # every process launched and warmed up by then
    env = dict(os.environ, LT_BENCH_START_AT=str(start_at))
    procs = [subprocess.Popen([python, script, url, "concurrent", str(c), str(opts.seconds)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for c in split(opts.clients, n)]
    time.sleep(max(0.0, start_at - time.time()))
    pg0, wal0, t0 = cluster_cpu(pm), wal(server_url), time.time()
    recs = []
    for p in procs:
        out, err = p.communicate(timeout=opts.seconds * 4 + 300)
        rec = next((json.loads(l) for l in reversed(out.splitlines()) if l.startswith("{")), {})
        if p.returncode != 0 or rec.get("errors"):
            rec["failed"] = (err.strip() or f"exit {p.returncode}, {rec.get('errors')} errors")[-400:]
        recs.append(rec)
    pg, wal1, wall = spent(pg0, cluster_cpu(pm)), wal(server_url), time.time() - t0
    # The engine is a library: its CPU and its client threads' are one process's.
    return summed("dbos-pg", n, recs, before, pg, wall,
                  server=sum(r.get("cpu_s") or 0 for r in recs), client=None,
                  wal_use=wal_spent(wal0, wal1, wall))


def summed(engine, n, recs, before, pg_cpu, wall, server, client, wal_use):
    """One record for N processes' records: rates summed, each process's p50/p99."""
    rec = {
        "engine": engine, "workers": n,
        "sessions": sum(r.get("sessions") or 0 for r in recs),
        "sessions_per_s": round(sum(r.get("sessions_per_s") or 0 for r in recs), 1),
        "p50_ms": [r.get("p50_ms") for r in recs], "p99_ms": [r.get("p99_ms") for r in recs],
        "seconds": max((r.get("seconds") or 0 for r in recs), default=0),
        "engine_cores": round(server / wall, 2) if wall else None,
        "client_cores": None if client is None else round(client / wall, 2),
        "postgres_cores": round(pg_cpu / wall, 2) if wall else None,
        "machine_before": before, "machine_after": S.machine(),
        **wal_use,
    }
    done = rec["sessions"]
    if done:
        # What one session cost: CPU (ms) of the engine and of PostgreSQL,
        # and the WAL it wrote (KB; the cluster's, this window only).
        rec["engine_ms_per_session"] = round(server * 1000 / done, 3)
        rec["postgres_ms_per_session"] = round(pg_cpu * 1000 / done, 3)
        if wal_use.get("wal_bytes") is not None:
            rec["wal_kb_per_session"] = round(wal_use["wal_bytes"] / 1024 / done, 2)
    failed = [r["failed"] for r in recs if r.get("failed")]
    if failed:
        rec["failed"] = "; ".join(failed)[:800]
    S.say(f"  {engine} ×{n}: {rec.get('failed') or str(rec['sessions_per_s']) + ' sessions/s'}, "
          f"p50 {rec['p50_ms']} ms; cores: engine {rec['engine_cores']}, client {rec['client_cores']}, "
          f"postgres {rec['postgres_cores']}; WAL flushes {rec.get('wal_flushes_per_s')}/s, "
          f"{rec.get('wal_flush_ms')} ms each; per session: engine {rec.get('engine_ms_per_session')} ms, "
          f"postgres {rec.get('postgres_ms_per_session')} ms, WAL {rec.get('wal_kb_per_session')} KB"
          f"  [load {before['load']} → {rec['machine_after']['load']}]")
    return rec


def table(records):
    rows = ["| engine | processes | sessions/s | p50 ms (each) | p99 ms (each) | engine cores | client cores "
            "| PostgreSQL cores | WAL flushes/s, ms each | load |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if r.get("missing"):
            rows.append(f"| {r['engine']} | {r['workers']} | missing: {r['missing'][:120]} | | | | | | | |")
            continue
        rows.append(f"| {r['engine']} | {r['workers']} | {r['sessions_per_s']:,} | {r['p50_ms']} | {r['p99_ms']} "
                    f"| {r['engine_cores']} | {r['client_cores'] if r['client_cores'] is not None else 'in engine'} "
                    f"| {r['postgres_cores']} | {r.get('wal_flushes_per_s')}, {r.get('wal_flush_ms')} "
                    f"| {r['machine_before']['load']} |")
    return "\n".join(rows)


def ratios(records):
    lt = {r["workers"]: r["sessions_per_s"] for r in records if r["engine"] == "lt-pg" and not r.get("missing")}
    db = {r["workers"]: r["sessions_per_s"] for r in records if r["engine"] == "dbos-pg" and not r.get("missing")}
    lines = []
    for n in sorted(set(lt) & set(db)):
        x = lt[n] / db[n] if db[n] else float("inf")
        lines.append(f"{n} worker(s): lt {lt[n]:,} vs DBOS {db[n]:,} sessions/s = {x:.1f}× "
                     f"({'meets' if x >= 20 else 'misses'} the 20× target)")
    if 1 in lt:
        lines += [f"lt scaling: {n} workers = {lt[n] / lt[1]:.2f}× one worker" for n in sorted(lt) if n > 1]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4", help="lt serve worker counts, comma-separated")
    ap.add_argument("--dbos", default="1,2,4", help="DBOS process counts, comma-separated ('' for none)")
    ap.add_argument("--clients", type=int, default=64, help="concurrent clients in all")
    ap.add_argument("--seconds", type=float, default=10.0, help="each timed window")
    ap.add_argument("--no-build", action="store_true", help="use the release lt and serve_load already built")
    ap.add_argument("--lt", help="this lt binary instead of the release build's (implies --no-build for lt)")
    ap.add_argument("--pg-data", default=str(S.ROOT / "target" / "postgres" / "data"),
                    help="the local cluster's data folder (its postmaster.pid: PostgreSQL's CPU)")
    ap.add_argument("--json", help="write every record to this file")
    ap.add_argument("--stream", action="store_true",
                    help="lt sessions as a POST and an event stream to the end (two requests); by default "
                         "one POST with `Prefer: wait`, the shape of DBOS's start-and-wait in its process")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before each timed run, wait up to S seconds for other builds to end")
    ap.add_argument("--idempotent", action="store_true",
                    help="lt's three tools declared idempotent = true: at least once, as DBOS's steps "
                         "(each call then starts without waiting for its scheduled event to commit)")
    opts = ap.parse_args()
    S.QUIET["seconds"] = opts.wait_quiet
    server_url = os.environ.get("LT_BENCH_POSTGRES_URL") or os.environ.get("LT_TEST_POSTGRES_URL")
    if not server_url:
        sys.exit("set LT_BENCH_POSTGRES_URL (or LT_TEST_POSTGRES_URL: tests/fixtures/postgres/cluster.sh start)")
    pm = postmaster(opts.pg_data)
    if pm is None:
        S.say(f"WARNING: no postmaster.pid under {opts.pg_data}: PostgreSQL's CPU is not measured")
    workers = [int(x) for x in opts.workers.split(",") if x.strip()]
    dbos = [int(x) for x in opts.dbos.split(",") if x.strip()]
    lt, load_bin = S.build(opts.no_build or bool(opts.lt)) if workers else (None, None)
    lt = opts.lt or lt
    S.WORK.mkdir(parents=True, exist_ok=True)
    start = S.machine()
    S.say(f"machine: {os.cpu_count()} cores, load {start['load']}, {start['build_procs']} build processes")
    records = [bench_lt_workers(opts, lt, load_bin, server_url, n, pm) for n in workers]
    records += [bench_dbos_procs(opts, server_url, n, pm) for n in dbos]
    print(f"\nsessions of 3 durable steps, {opts.clients} clients in all, {opts.seconds:g} s windows, "
          f"{os.cpu_count()} cores shared by clients, engines and PostgreSQL\n")
    print(table(records))
    print()
    print(ratios(records))
    if opts.json:
        Path(opts.json).write_text("".join(json.dumps(r) + "\n" for r in records))
    if any(r.get("failed") for r in records):
        sys.exit(1)


if __name__ == "__main__":
    main()
