"""Timeouts inside a batch (break-it pass of issue 28): a `gather` with
`async` tools runs them together, yet each call keeps its own deadline;
the one that outlives it is the only `Err` (it used to fail every call of
the batch)."""

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest

import lt

SOURCE = """
tool fast: {n: Int} -{Read}-> Int;
tool slow: {n: Int} -{Read}-> Int;
let g = gather { a = exec tool fast {n = 1}, b = exec tool slow {n = 2}, c = exec tool fast {n = 3} } in
match g.a {
  Ok(a) => match g.c { Ok(c) => match g.b { Ok(b) => "all ok", Err(e) => e }, Err(e) => "c: " ++ e },
  Err(e) => "a: " ++ e
}
"""
PROFILE = {"tools": {"slow": {"timeout_ms": 200}}}


def fast_sync(arg):
    return arg["n"]


async def fast_async(arg):
    await asyncio.sleep(0.01)
    return arg["n"]


async def slow_async(arg):
    await asyncio.sleep(5)
    return arg["n"]


release = threading.Event()


def slow_sync(arg):
    release.wait(5)
    return arg["n"]


COMBOS = {
    "async slow, async fast": (fast_async, slow_async),
    "async slow, sync fast": (fast_sync, slow_async),
    "sync slow, async fast": (fast_async, slow_sync),
}


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("combo", list(COMBOS))
def test_only_the_call_past_its_timeout_fails(combo):
    fast, slow = COMBOS[combo]
    began = time.monotonic()
    r = lt.run(SOURCE, tools={"fast": fast, "slow": slow}, profile=PROFILE)
    assert r.value == "tool slow timed out after 200 ms", r.value
    assert time.monotonic() - began < 3


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("combo", list(COMBOS))
def test_only_the_call_past_its_timeout_fails_under_run_async(combo):
    fast, slow = COMBOS[combo]

    async def main():
        return await lt.run_async(SOURCE, tools={"fast": fast, "slow": slow}, profile=PROFILE)

    began = time.monotonic()
    assert asyncio.run(main()).value == "tool slow timed out after 200 ms"
    assert time.monotonic() - began < 3


@pytest.mark.timeout(30, method="thread")
def test_a_tool_raising_timeout_error_itself_is_its_err_not_a_timeout():
    async def slow(arg):
        raise TimeoutError("the database did not answer")

    r = lt.run(SOURCE, tools={"fast": fast_async, "slow": slow}, profile=PROFILE)
    assert r.value == "tool slow raised TimeoutError: the database did not answer"


def teardown_module():
    release.set()


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("under_run_async", [False, True])
def test_one_async_call_past_its_timeout_leaves_the_others_of_its_batch(under_run_async):
    # The batch function answers each call that outlives its own timeout;
    # the batch as a whole is waited for a little longer than its longest
    # call's time, so the calls that finished keep their values (break-it
    # pass: every call of the batch was reported timed out).
    source = """
    tool a: Int -{}-> Int;
    let rs = fan_out (fn i => exec tool a i) (range 0 4) in
    map (fn r => match r { Ok(x) => to_string x, Err(e) => e }) rs
    """

    async def a(i):
        if i == 3:
            await asyncio.sleep(0.5)
        return i

    profile = {"tools": {"a": {"timeout_ms": 100}}}
    if under_run_async:

        async def main():
            return await lt.run_async(source, tools={"a": a}, profile=profile)

        value = asyncio.run(main()).value
    else:
        value = lt.run(source, tools={"a": a}, profile=profile).value
    assert value == ["0", "1", "2", "tool a timed out after 100 ms"], value


def test_a_batch_abandoned_before_it_ran_leaves_no_never_awaited_warning():
    # Under load a batch's job can be abandoned (its deadline passed) before
    # its tasks ran: the tools' coroutines were made but never started, and
    # Python warned "coroutine 't' was never awaited" as if the user's code
    # were at fault (break-it pass). They are closed instead.
    from lt import _tools

    class Abandoned:
        """A job already abandoned: its canceller runs at once."""

        def on_cancel(self, f):
            f()

    async def t(arg):
        return arg

    dispatch = _tools.Dispatch({"t": t}, None)
    _tools._here.job = Abandoned()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(asyncio.CancelledError):
                dispatch.batch((1, [("t", 1, None), ("t", 2, 0.5)]))
            gc.collect()
    finally:
        del _tools._here.job
    never = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert never == [], never


G2 = """tool a: Int -{}-> Json;
tool t: Int -{}-> Json;
let g = gather { x = exec tool a 1, y = exec tool t 2 } in
to_json {x = match g.x { Ok(v) => v, Err(e) => to_json {err = e} }, y = match g.y { Ok(v) => v, Err(e) => to_json {err = e} }}"""


async def answers_at_once(n):
    return "ok"


async def ignores_cancellation(n):
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass


async def stops_slowly(n):
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        await asyncio.sleep(0.5)
        raise


@pytest.mark.parametrize("late", [ignores_cancellation, stops_slowly])
@pytest.mark.parametrize("limits", [{"timeout_ms": 0}, {"timeout_ms": 5000}])
def test_a_call_slow_to_stop_after_its_deadline_keeps_its_own_deadline_in_a_batch(late, limits):
    """An async tool that ignores its cancellation, or takes long to stop,
    gets its Err at its own deadline, and the other call of its batch
    keeps its value (break-it pass: both calls ended timed out at the
    other's deadline, the run stopped at its own, or never returned)."""
    profile = {"tools": {"t": {"timeout_ms": 100}}}
    t0 = time.monotonic()
    r = lt.run(G2, tools={"a": answers_at_once, "t": late}, profile=profile, limits=limits)
    took = time.monotonic() - t0
    assert r.value == {"x": "ok", "y": {"err": "tool t timed out after 100 ms"}}
    assert took < 0.45, took


def test_an_exception_whose_str_fails_is_its_own_calls_err_in_a_batch():
    """An async tool raising an exception whose str() fails is named by
    its type, and the batch's other calls keep their values (it used to
    fail the whole batch with another exception's words)."""

    class Broken(Exception):
        def __str__(self):
            raise self

    class Buggy(Exception):
        def __str__(self):
            return f"code {self.detail}"  # no such attribute

    src = """tool t: Int -{}-> Int;
let rs = fan_out (fn i => exec tool t i) [0, 1, 2, 3] in
map (fn r => match r { Ok(v) => to_string v, Err(e) => e }) rs"""
    for exc in (Broken, Buggy):

        async def t(i):
            if i == 2:
                raise exc()
            return i * 10

        want = ["0", "10", f"tool t raised {exc.__name__}", "30"]
        assert lt.run(src, tools={"t": t}).value == want
        assert asyncio.run(lt.run_async(src, tools={"t": t})).value == want


def test_a_late_awaitable_after_the_hosts_loop_closed_leaves_no_warning():
    """Under run_async, a sync tool that returns a coroutine after its
    call timed out and the host's loop has closed: the coroutines lt could
    not schedule are closed, not left to warn "never awaited"."""
    script = textwrap.dedent(
        """
        import asyncio, time, lt
        P = "tool t: Int -{}-> Int;\\nmatch exec tool t 1 { Ok(n) => to_string n, Err(e) => e }"
        async def co(n): return n
        def t(n):
            time.sleep(0.1)
            return co(n)
        async def main():
            return (await lt.run_async(P, tools={"t": t}, profile={"tools": {"t": {"timeout_ms": 20}}})).value
        print(asyncio.run(main()))
        time.sleep(0.3)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tool t timed out after 20 ms"
    assert "never awaited" not in out.stderr, out.stderr


def test_a_call_past_its_deadline_in_a_batch_is_let_clean_up_and_leaves_no_warning():
    """Under lt.run a batch's loop is lt's own: a call cancelled at its
    deadline is given time to run its cleanup (break-it pass: its loop was
    closed at once, the cleanup never ran and the task was destroyed
    pending, with a warning naming lt's code); one that never ends leaves
    the program free to go on."""
    script = textwrap.dedent(
        '''
        import asyncio, gc, time, lt
        SRC = """tool a: Int -{}-> Json;
        tool t: Int -{}-> Json;
        let g = gather { x = exec tool a 1, y = exec tool t 2 } in
        to_json {x = match g.x { Ok(v) => v, Err(e) => to_json {err = e} }, y = match g.y { Ok(v) => v, Err(e) => to_json {err = e} }}"""
        P = {"tools": {"t": {"timeout_ms": 100}}}
        log = []
        async def fast(n): return "ok"
        async def clean(n):
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                await asyncio.sleep(0.01)
                log.append("cleaned")
                raise
        async def never(n):
            while True:
                try:
                    await asyncio.sleep(0.05)
                except:
                    pass
        for t in (clean, never):
            print(lt.run(SRC, tools={"a": fast, "t": t}, profile=P).value)
        junk = [{i: [i]} for i in range(100000)]
        time.sleep(0.3)
        gc.collect()
        print(log)
        '''
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[:2] == ["{'x': 'ok', 'y': {'err': 'tool t timed out after 100 ms'}}"] * 2, out.stdout
    assert lines[2] == "['cleaned']", out.stdout
    assert "destroyed but it is pending" not in out.stderr, out.stderr


@pytest.mark.parametrize("under_run_async", [False, True])
def test_a_stop_in_one_call_of_a_batch_does_not_wait_for_the_others(under_run_async):
    """A KeyboardInterrupt in one async call of a batch stops the run at
    once, as it does alone (it used to wait for the slowest sibling)."""

    async def stops(n):
        await asyncio.sleep(0.01)
        raise KeyboardInterrupt

    async def slow(n):
        await asyncio.sleep(5)
        return n

    tools = {"a": stops, "t": slow}
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        if under_run_async:
            asyncio.run(lt.run_async(G2, tools=tools))
        else:
            lt.run(G2, tools=tools)
    assert time.monotonic() - t0 < 1.5


def test_an_async_call_that_blocks_its_loop_past_its_deadline_is_timed_out():
    """An async tool that blocks the event loop (time.sleep before its
    first await) past its deadline is timed out in a batch, as it is alone
    (its late value used to be taken)."""

    async def blocks(n):
        time.sleep(0.3)
        return n

    r = lt.run(G2, tools={"a": answers_at_once, "t": blocks}, profile={"tools": {"t": {"timeout_ms": 100}}})
    assert r.value["y"] == {"err": "tool t timed out after 100 ms"}, r.value
