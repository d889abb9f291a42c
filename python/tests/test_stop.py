"""Stopping runs (break-it pass of issue 28): Python exiting with a run in
flight, a double Ctrl-C, deadlines on sync and async tools, and the
cancelled task of ``lt.run_async``. None may abort the interpreter or hang;
a stopped session's log ends with a cancelled ``session_ended``."""

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import lt

ONE = """
tool slow: {n: Int} -{Read}-> Int;
match exec tool slow {n = 1} { Ok(n) => n, Err(e) => 0 - 1 }
"""

ONE_ERR = """
tool slow: {n: Int} -{Read}-> Int;
match exec tool slow {n = 1} { Ok(n) => "ok", Err(e) => e }
"""


def last_event(log):
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return events[-1]


def assert_ended_cancelled(log):
    end = last_event(log)
    assert end["kind"] == "session_ended", end
    assert "cancel" in json.dumps(end), end


def run_script(body, timeout=30):
    script = "import json, os, signal, sys, threading, time, asyncio\nimport lt\n" + textwrap.dedent(body)
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
    return out, time.monotonic() - began


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_python_exiting_with_a_run_in_a_daemon_thread(tmp_path, kind):
    log = tmp_path / "s.jsonl"
    out, took = run_script(
        f"""
        started = threading.Event()
        def slow(arg):
            started.set()
            for _ in range(3000):       # takes the GIL back every 10 ms
                time.sleep(0.01)
            return 1
        async def aslow(arg):
            started.set()
            await asyncio.sleep(30)
            return 1
        tool = slow if {kind!r} == "sync" else aslow
        threading.Thread(target=lambda: lt.run({ONE!r}, tools={{"slow": tool}}, log={str(log)!r}),
                         daemon=True).start()
        assert started.wait(10)
        print("exiting", flush=True)
        """
    )
    assert out.returncode == 0, (out.returncode, out.stderr)
    assert "FATAL" not in out.stderr and "exiting" in out.stdout
    assert took < 10
    assert_ended_cancelled(log)


@pytest.mark.timeout(60, method="thread")
def test_python_exiting_with_a_run_async_in_a_daemon_thread(tmp_path):
    log = tmp_path / "s.jsonl"
    out, took = run_script(
        f"""
        started = threading.Event()
        async def stuck(arg):
            started.set()
            await asyncio.sleep(1000)
            return 1
        def bg():
            asyncio.run(lt.run_async({ONE!r}, tools={{"slow": stuck}}, log={str(log)!r}))
        threading.Thread(target=bg, daemon=True).start()
        assert started.wait(10)
        print("exiting", flush=True)
        """
    )
    assert out.returncode == 0, (out.returncode, out.stderr)
    assert "exiting" in out.stdout
    assert took < 10
    assert_ended_cancelled(log)


@pytest.mark.timeout(60, method="thread")
def test_many_run_async_sessions_whose_tools_use_to_thread_all_end():
    # The loop's default executor has min(32, cpus + 4) threads: sessions
    # held them while their tools' to_thread work queued behind them.
    source = "tool t: Int -{}-> Int;\nmatch exec tool t 1 { Ok(n) => n, Err(e) => 0 - 1 }"

    def blocking(a):
        time.sleep(0.05)
        return a + 1

    async def t(a):
        return await asyncio.to_thread(blocking, a)

    async def main():
        n = (os.cpu_count() or 1) + 12
        runs = [lt.run_async(source, tools={"t": t}) for _ in range(n)]
        return await asyncio.wait_for(asyncio.gather(*runs), 30)

    results = asyncio.run(main())
    assert [r.value for r in results] == [2] * len(results)


@pytest.mark.timeout(60, method="thread")
def test_double_ctrl_c_then_exit(tmp_path):
    log = tmp_path / "s.jsonl"
    out, took = run_script(
        f"""
        started = threading.Event()
        def slow(arg):
            started.set()
            for _ in range(3000):
                time.sleep(0.01)
            return 1
        def interrupt():
            started.wait(20)
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        interrupts = 0
        try:
            lt.run({ONE!r}, tools={{"slow": slow}}, log={str(log)!r})
        except KeyboardInterrupt:
            interrupts += 1
        try:
            time.sleep(1)
        except KeyboardInterrupt:
            interrupts += 1
        print(json.dumps({{"interrupts": interrupts}}), flush=True)
        """
    )
    assert out.returncode == 0, (out.returncode, out.stderr)
    assert json.loads(out.stdout.strip().splitlines()[-1])["interrupts"] >= 1
    assert took < 10
    assert_ended_cancelled(log)


@pytest.mark.timeout(30, method="thread")
def test_a_tool_timeout_stops_a_blocking_sync_tool():
    release = threading.Event()

    def stuck(arg):
        release.wait(20)
        return 1

    began = time.monotonic()
    r = lt.run(ONE_ERR, tools={"slow": stuck}, profile={"tools": {"slow": {"timeout_ms": 200}}})
    took = time.monotonic() - began
    release.set()
    assert r.value == "tool slow timed out after 200 ms"
    assert took < 3, took


@pytest.mark.timeout(30, method="thread")
def test_the_runs_timeout_stops_a_blocking_sync_tool():
    release = threading.Event()

    def stuck(arg):
        release.wait(20)
        return 1

    began = time.monotonic()
    with pytest.raises(lt.RunStopped) as e:
        lt.run(ONE_ERR, tools={"slow": stuck}, limits={"timeout_ms": 300})
    took = time.monotonic() - began
    release.set()
    assert e.value.kind == "timeout" and e.value.calls == 1
    assert took < 3, took


@pytest.mark.timeout(30, method="thread")
def test_a_timeout_cancels_an_async_tool():
    cancelled = threading.Event()

    async def stuck(arg):
        try:
            await asyncio.sleep(20)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    began = time.monotonic()
    r = lt.run(ONE_ERR, tools={"slow": stuck}, profile={"tools": {"slow": {"timeout_ms": 200}}})
    assert r.value == "tool slow timed out after 200 ms"
    assert time.monotonic() - began < 3
    assert cancelled.wait(5), "the async tool's task was not cancelled"


@pytest.mark.timeout(30, method="thread")
def test_a_timeout_cancels_an_async_tool_under_run_async():
    cancelled = []

    async def stuck(arg):
        try:
            await asyncio.sleep(20)
        except asyncio.CancelledError:
            cancelled.append(arg)
            raise
        return 1

    async def main():
        r = await lt.run_async(ONE_ERR, tools={"slow": stuck}, profile={"tools": {"slow": {"timeout_ms": 200}}})
        await asyncio.sleep(0.05)
        return r

    r = asyncio.run(main())
    assert r.value == "tool slow timed out after 200 ms"
    assert cancelled == [{"n": 1}]


@pytest.mark.timeout(30, method="thread")
def test_cancelling_the_task_of_run_async_cancels_the_session(tmp_path):
    log = tmp_path / "s.jsonl"
    cancelled = []
    started = []

    async def stuck(arg):
        started[0].set()
        try:
            await asyncio.sleep(20)
        except asyncio.CancelledError:
            cancelled.append(arg)
            raise
        return 1

    async def main():
        started.append(asyncio.Event())
        task = asyncio.ensure_future(lt.run_async(ONE, tools={"slow": stuck}, log=log))
        await asyncio.wait_for(started[0].wait(), 20)
        task.cancel()
        began = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - began

    took = asyncio.run(main())
    assert took < 3, took
    assert cancelled == [{"n": 1}]
    assert_ended_cancelled(log)


@pytest.mark.timeout(60, method="thread")
def test_lt_in_a_later_atexit_handler_does_not_hang():
    # atexit runs handlers last-registered first: this one runs after lt's
    # own (registered at import), on the thread that finalizes.
    script = textwrap.dedent(
        """
        import atexit
        def late():
            import lt
            print("check:", lt.check("1 + 2").type, flush=True)
            try:
                lt.run("1 + 2")
            except lt.RunStopped as e:
                print("run:", e.kind, flush=True)
        atexit.register(late)
        import lt
        print(lt.run("1 + 1").value, flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "check:", "Int", "run:", "cancelled"], out.stdout


@pytest.mark.timeout(30, method="thread")
def test_calls_after_one_that_timed_out_get_their_own_outcomes():
    # The session's thread reuses its job slots (python/src/worker.rs): the
    # slot of the call that timed out is held by the thread still running
    # it, and once that thread lets it go (its late result dropped) the
    # slot serves later calls, which must not inherit its state.
    release = threading.Event()
    returned = threading.Event()
    program = """
    tool slow: {n: Int} -{Read}-> Int;
    match traverse (fn i: Int => match exec tool slow {n = i} { Ok(v) => Ok(v), Err(e) => Ok(0 - 1) }) (range 0 8) {
      Ok(vs) => vs,
      Err(e) => []
    }
    """
    calls = []

    def slow(arg):
        n = arg["n"]
        calls.append(n)
        if n == 0:
            release.wait(20)
            returned.set()
            return 999
        if n == 3:
            release.set()
            assert returned.wait(10)
            time.sleep(0.05)  # its outcome given (and dropped) meanwhile
        return n * 10

    r = lt.run(program, tools={"slow": slow}, profile={"tools": {"slow": {"timeout_ms": 300}}})
    assert r.value == [-1, 10, 20, 30, 40, 50, 60, 70], r.value
    assert calls == list(range(8)), calls
    # And a run after it, on a new session thread, as usual.
    assert lt.run(program.replace("range 0 8", "range 4 7"), tools={"slow": slow}).value == [40, 50, 60]
