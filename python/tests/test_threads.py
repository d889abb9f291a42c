"""The GIL and threads: a run releases the GIL while no Python tool runs,
ten threads each running sessions work, and Ctrl-C stops a run cleanly."""

import json
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import pytest

import lt
from conftest import REFUND, lookup, refund

PURE = "fold (fn acc: Int => fn x: Int => acc + x) 0 (range 0 3000000)"

SLOW = """
tool slow: String -{Read}-> {ok: Bool};
match traverse (fn h: String => exec tool slow h) ["a", "b", "c", "d", "e"] {
  Ok(rs) => length rs,
  Err(e) => 0
}
"""


def test_a_pure_run_releases_the_gil():
    done = threading.Event()
    box = {}

    def work():
        box["value"] = lt.run(PURE).value
        done.set()

    t = threading.Thread(target=work)
    t.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    assert box["value"] == sum(range(3000000))
    assert ticks > 20, f"the main thread ran {ticks} times during the run: the GIL was held"


def test_ten_threads_each_running_sessions():
    def slow_lookup(arg):
        time.sleep(0.05)  # releases the GIL, as I/O does
        return lookup(arg)

    results = []
    errors = []

    def worker(k):
        try:
            for _ in range(5):
                r = lt.run(REFUND, tools={"lookup": slow_lookup, "refund": refund})
                results.append(r.value)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    began = time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - began
    assert errors == []
    assert results == ["tx_c1_4999"] * 50
    # 50 sessions, each waiting 50 ms in a tool: 2.5 s one after the other.
    assert took < 1.5, f"ten threads took {took:.2f} s: sessions did not overlap"


def test_ctrl_c_cancels_the_session_and_raises_keyboard_interrupt(tmp_path):
    log = tmp_path / "s.jsonl"
    script = textwrap.dedent(
        f"""
        import json, os, signal, threading, time
        import lt
        calls = []
        def slow(arg):
            calls.append(arg)
            time.sleep(0.3)
            return {{"ok": True}}
        threading.Timer(0.45, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        began = time.monotonic()
        try:
            lt.run({SLOW!r}, tools={{"slow": slow}}, log={str(log)!r})
            print(json.dumps({{"raised": None}}))
        except KeyboardInterrupt:
            print(json.dumps({{"raised": "KeyboardInterrupt", "calls": len(calls),
                               "took": time.monotonic() - began}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["raised"] == "KeyboardInterrupt"
    assert got["calls"] == 2 and got["took"] < 1.2, got
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events[-1]["kind"] == "session_ended", events[-1]
    assert "cancel" in json.dumps(events[-1])
    # The reason names the exception by its name, not its repr.
    assert "interrupted in Python (KeyboardInterrupt)" in json.dumps(events[-1]), events[-1]


def test_calls_one_after_another_keep_to_one_pool_thread():
    # A run's calls, one at a time, are all taken by one pool thread: the
    # thread that just gave an outcome counts as on its way back, so the
    # next call does not start a second one (two would take turns spinning
    # for jobs on a loaded machine). A fresh process: no threads before.
    script = textwrap.dedent(
        """
        import threading, lt
        many = '''
        tool lookup: {id: Int} -{Read}-> {id: Int};
        match traverse (fn i: Int => exec tool lookup {id = i}) (range 0 2000) {
          Ok(rs) => length rs,
          Err(e) => 0
        }
        '''
        for _ in range(20):
            assert lt.run(many, tools={"lookup": lambda a: {"id": a["id"]}}).value == 2000
        print(sum(1 for t in threading.enumerate() if t.name == "lt-tool"))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1", f"pool threads after 40,000 calls one at a time: {out.stdout.strip()}"


def test_idle_pool_threads_retire_beyond_two_and_the_pool_runs_on():
    # Twelve sessions in threads, each call held until all twelve run at
    # once, need twelve pool threads; idle past `_retire_after` they end,
    # two kept (the pool used to keep every thread for the life of the
    # process). Later sessions, one and twelve at once, still run. A fresh
    # process: no threads before.
    script = textwrap.dedent(
        """
        import threading, time, lt
        from lt import _lt
        _lt._retire_after(0.2)
        src = 'tool t: Int -{}-> Int;\\nmatch exec tool t 1 { Ok(n) => n, Err(e) => 0 }'
        def burst():
            together = threading.Barrier(12)
            def t(n):
                together.wait(10)
                return n
            values = []
            runs = [threading.Thread(target=lambda: values.append(lt.run(src, tools={"t": t}).value)) for _ in range(12)]
            for r in runs: r.start()
            for r in runs: r.join()
            return values
        def pool():
            return sum(1 for t in threading.enumerate() if t.name == "lt-tool")
        assert burst() == [1] * 12
        print(pool())
        until = time.monotonic() + 10
        while pool() > 2 and time.monotonic() < until:
            time.sleep(0.05)
        print(pool())
        assert lt.run(src, tools={"t": lambda n: n + 1}).value == 2
        assert burst() == [1] * 12
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["12", "2", "ok"], out.stdout


def test_a_tool_function_is_let_go_when_the_run_returns():
    # The session's thread keeps its job slots for reuse, and they hold the
    # function: they are let go before lt.run returns, not whenever that
    # thread ends (a weak reference to the function is dead at once).
    program = """
    tool t: {n: Int} -{Read}-> Int;
    match exec tool t {n = 1} { Ok(v) => v, Err(e) => 0 }
    """

    class Tool:
        def __call__(self, arg):
            return arg["n"]

    alive = 0
    for _ in range(200):
        f = Tool()
        ref = weakref.ref(f)
        assert lt.run(program, tools={"t": f}).value == 1
        del f
        alive += ref() is not None
    assert alive == 0, f"{alive} of 200 tool functions still alive right after lt.run returned"


def test_a_pool_thread_that_ends_with_a_call_in_hand_gives_it_an_err():
    # A pool thread can end between taking a call and running the tool (an
    # exception injected into it, as a host's watchdog may do): the call
    # gets its Err at once instead of waiting for its deadline (break-it
    # pass: the run hung until timeout_ms). A fresh process: one pool thread.
    script = textwrap.dedent(
        """
        import ctypes, json, threading, time, lt
        program = '''
        tool t: Int -{}-> Int;
        match traverse (fn i: Int => match exec tool t i { Ok(x) => Ok(to_string x), Err(e) => Ok(e) }) (range 0 3) {
          Ok(vs) => vs,
          Err(e) => []
        }
        '''
        lt.run(program, tools={"t": lambda i: i})
        pool = [t for t in threading.enumerate() if t.name == "lt-tool"]
        for t in pool:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(SystemExit))
        began = time.monotonic()
        value = lt.run(program, tools={"t": lambda i: i}, limits={"timeout_ms": 20000}).value
        print(json.dumps({"value": value, "took": time.monotonic() - began, "pool": len(pool)}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["pool"] == 1, got
    assert got["took"] < 5, got
    assert got["value"] == ["tool t: the Python thread running it ended before it finished", "1", "2"], got


def test_the_pool_loops_builtin_takes_one_result_and_refuses_the_rest():
    """`_lt.giver(job)` (python/src/fast.rs) is `job.done` as a METH_O
    builtin: with no call in hand a result is ignored; a wrong number of
    arguments or an object that is not a job is a TypeError, never a
    crash."""
    from lt import _lt

    job = _lt.Job()
    give = _lt.giver(job)
    assert give({"a": 1}) is None and give(None) is None
    for bad in [(), (1, 2)]:
        with pytest.raises(TypeError):
            give(*bad)
    with pytest.raises(TypeError):
        give(result=1)
    with pytest.raises(TypeError):
        _lt.giver(object())
    assert lt.run(
        'tool t: {n: Int} -{Read}-> Int;\nmatch exec tool t {n = 2} { Ok(v) => v, Err(e) => 0 }',
        tools={"t": lambda a: a["n"] * 21},
    ).value == 42
