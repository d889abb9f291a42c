"""The client loop for the embedded peers (the SQLite floor and DBOS): N
threads each run sessions in a loop for S seconds, or one thread runs R
sessions one after the other, and the figures come out as the same JSON
object `serve_load` prints (`benches/serve_load.rs`), with `cpu_s` the CPU
time of this process (client and engine together: the engine is a library
here, so they cannot be told apart).

A session started inside the window is waited for and counted; `seconds`
runs to the last one's end. Warm-up sessions run first and are not counted.
"""
import json
import os
import threading
import time

KEPT_ERRORS = 5


def percentile(sorted_ms, p):
    """Nearest rank, as serve_load computes it."""
    if not sorted_ms:
        return None
    rank = -(-p * len(sorted_ms) // 100)  # ceil
    return sorted_ms[min(max(int(rank), 1), len(sorted_ms)) - 1]


def cpu_s():
    t = os.times()
    return t.user + t.system


def report(mode, clients, latencies_ms, seconds, errors, first_errors, cpu):
    lat = sorted(latencies_ms)
    n = len(lat)
    r = lambda x, k=3: None if x is None else round(x, k)
    return {
        "mode": mode,
        "clients": clients,
        "sessions": n,
        "seconds": r(seconds),
        "sessions_per_s": r(n / seconds if seconds else 0.0, 1),
        "p50_ms": r(percentile(lat, 50)),
        "p99_ms": r(percentile(lat, 99)),
        "mean_ms": r(sum(lat) / n if n else None),
        "max_ms": r(lat[-1] if lat else None),
        "errors": errors,
        "first_errors": first_errors[:KEPT_ERRORS],
        "cpu_s": r(cpu, 2),
    }


def sequential(session, runs, warmup=20):
    """`session(i)` R times, one at a time."""
    errors, first = 0, []
    for i in range(warmup):
        session(-1 - i)
    lat = []
    c0, t0 = cpu_s(), time.perf_counter()
    for i in range(runs):
        s = time.perf_counter()
        try:
            session(i)
        except Exception as e:  # counted, reported, and the run fails
            errors += 1
            first.append(repr(e)[:300])
            continue
        lat.append((time.perf_counter() - s) * 1000)
    return report("sequential", 1, lat, time.perf_counter() - t0, errors, first, cpu_s() - c0)


def concurrent(session, clients, seconds, warmup=2, make_client=None):
    """N threads, each `session(i)` in a loop until the window closes.
    `make_client()`, if given, runs once per thread and its result is passed
    as `session(i, state)` (a connection per thread)."""
    lock = threading.Lock()
    counter = [0]
    lat, errors, first = [], [0], []

    def next_i():
        with lock:
            counter[0] += 1
            return counter[0]

    def call(state, i):
        return session(i) if make_client is None else session(i, state)

    barrier = threading.Barrier(clients + 1)
    deadline = [0.0]

    def worker():
        state = make_client() if make_client else None
        for _ in range(warmup):
            call(state, -next_i())
        barrier.wait()
        barrier.wait()  # the window's start is set between the two
        mine = []
        while time.perf_counter() < deadline[0]:
            i = next_i()
            s = time.perf_counter()
            try:
                call(state, i)
            except Exception as e:
                with lock:
                    errors[0] += 1
                    if len(first) < KEPT_ERRORS:
                        first.append(repr(e)[:300])
                time.sleep(0.01)
                continue
            mine.append((time.perf_counter() - s) * 1000)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    c0, t0 = cpu_s(), time.perf_counter()
    deadline[0] = t0 + seconds
    barrier.wait()
    for t in threads:
        t.join()
    return report("concurrent", clients, lat, time.perf_counter() - t0, errors[0], first, cpu_s() - c0)


def emit(result):
    print(json.dumps(result), flush=True)
