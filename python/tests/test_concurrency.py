"""The profile's `max_concurrency` in a batch of Python tools: a `gather`
or `fan_out` of `async` tools runs at most that many calls at once, as
every other executor does (it used to run them all at once), and a call's
wait for a slot counts against its timeout. Each test counts the calls
running at once from inside the tools themselves."""

import asyncio
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import lt


def fan_out(over: str, effects: str = "") -> str:
    """A program calling tool ``a`` on each item of ``over`` (an lt list)
    in a ``fan_out``: each call's value as text, or its ``Err``."""
    return f"""
tool a: Int -{{{effects}}}-> Int;
let rs = fan_out (fn i => exec tool a i) {over} in
map (fn r => match r {{ Ok(x) => to_string x, Err(e) => e }}) rs
"""


FAN_OUT = fan_out("(range 0 12)")


class Peak:
    """The number of calls running at once, and its peak (tools on any
    thread or loop)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.calls = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.now -= 1


def run(source, tools, profile, under_run_async):
    if under_run_async:

        async def main():
            return await lt.run_async(source, tools=tools, profile=profile)

        return asyncio.run(main())
    return lt.run(source, tools=tools, profile=profile)


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("under_run_async", [False, True])
@pytest.mark.parametrize("limit", [1, 3, None])
def test_a_fan_out_of_async_tools_runs_at_most_max_concurrency_at_once(limit, under_run_async):
    peak = Peak()

    async def a(i):
        with peak:
            await asyncio.sleep(0.05)
        return i

    profile = {} if limit is None else {"max_concurrency": limit}
    r = run(FAN_OUT, {"a": a}, profile, under_run_async)
    assert r.value == [str(i) for i in range(12)]
    assert peak.calls == 12
    # No profile: the default, 8, as for every executor (docs/profiles.md).
    assert peak.peak == (8 if limit is None else limit)


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("under_run_async", [False, True])
def test_sync_and_async_tools_of_one_gather_share_the_limit(under_run_async):
    # The sync calls run one by one beside the async ones, so the async
    # ones get one slot fewer: never more than `max_concurrency` at once.
    source = """
    tool s: Int -{}-> Int;
    tool a: Int -{}-> Int;
    let g = gather { w = exec tool s 1, x = exec tool a 2, y = exec tool a 3, z = exec tool a 4 } in
    map (fn r => match r { Ok(x) => to_string x, Err(e) => e }) [g.w, g.x, g.y, g.z]
    """
    peak = Peak()

    def s(i):
        with peak:
            time.sleep(0.2)
        return i

    async def a(i):
        with peak:
            await asyncio.sleep(0.2)
        return i

    r = run(source, {"s": s, "a": a}, {"max_concurrency": 2}, under_run_async)
    assert r.value == ["1", "2", "3", "4"]
    assert peak.peak == 2


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("under_run_async", [False, True])
def test_the_wait_for_a_slot_counts_against_a_calls_timeout(under_run_async):
    # Two slots, three 0.3 s calls with 0.5 s each: the third waits 0.3 s
    # for a slot and has 0.2 s left, not enough (the command executor
    # counts the wait the same way).
    source = fan_out("[0, 1, 2]")
    started = []

    async def a(i):
        started.append(i)
        await asyncio.sleep(0.3)
        return i

    profile = {"max_concurrency": 2, "tools": {"a": {"timeout_ms": 500}}}
    r = run(source, {"a": a}, profile, under_run_async)
    assert r.value == ["0", "1", "tool a timed out after 500 ms"]
    assert started == [0, 1, 2]


def test_calls_still_waiting_for_a_slot_when_the_run_is_cancelled_leave_no_warning():
    # Under lt.run_async the batch runs on the host's loop; cancelled while
    # some calls still wait for a slot, their coroutines never start and are
    # closed, not left for Python to warn that they were "never awaited".
    script = textwrap.dedent(
        '''
        import asyncio, gc, lt
        SRC = """tool a: Int -{}-> Int;
        let rs = fan_out (fn i => exec tool a i) (range 0 6) in
        map (fn r => match r { Ok(x) => x, Err(e) => 0 }) rs"""
        async def a(i):
            await asyncio.sleep(10)
            return i
        async def main():
            run = asyncio.ensure_future(lt.run_async(SRC, tools={"a": a}, profile={"max_concurrency": 2}))
            await asyncio.sleep(0.3)
            run.cancel()
            try:
                await run
            except asyncio.CancelledError:
                print("cancelled")
        for _ in range(5):  # how the loop's end finds the calls varies
            asyncio.run(main())
            gc.collect()
        '''
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cancelled"] * 5
    assert "never awaited" not in out.stderr, out.stderr


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("kind,limit", [("sync", 8), ("sync", 1), ("async", 1)])
def test_no_call_of_a_fan_out_starts_after_the_runs_deadline(kind, limit):
    # Calls run one after another (sync tools, or max_concurrency = 1):
    # each used to start with the time the batch began with, so twenty
    # 0.1 s calls ran to their end, 1.7 s past a 0.25 s deadline
    # (break-it pass). The calls past it now time out at once.
    source = fan_out("(range 0 20)", "Write")
    started = []

    def sync_a(i):
        started.append(i)
        time.sleep(0.1)
        return i

    async def async_a(i):
        started.append(i)
        await asyncio.sleep(0.1)
        return i

    tool = sync_a if kind == "sync" else async_a
    began = time.monotonic()
    with pytest.raises(lt.RunStopped) as e:
        lt.run(source, tools={"a": tool}, profile={"max_concurrency": limit}, limits={"timeout_ms": 250})
    assert e.value.kind == "timeout"
    assert len(started) <= 4, started
    assert time.monotonic() - began < 1.5


@pytest.mark.timeout(10, method="thread")
def test_a_fan_out_of_twenty_thousand_async_calls_through_eight_slots_is_not_quadratic():
    # The batch waited with `asyncio.wait` over every call left once a
    # completion: 20,000 calls through 8 slots took 20 s (break-it pass);
    # a callback a call takes about half a second. The timeout is the
    # test: a guard against the N² steps, twenty times the time it takes.
    source = fan_out("(range 0 20000)")

    async def a(i):
        return i

    r = lt.run(source, tools={"a": a}, limits={"max_calls": 20000})
    assert r.value == [str(i) for i in range(20000)]


def test_a_stop_in_one_call_of_a_big_batch_names_its_tool_once(tmp_path):
    # The cancel's reason named the batch's tool once a call ("tool a, a,
    # a, …": 15 KB for 5,000 calls; break-it pass).
    source = fan_out("(range 0 50)")

    async def a(i):
        if i == 5:
            raise KeyboardInterrupt
        await asyncio.sleep(0.01)
        return i

    log = tmp_path / "s.jsonl"
    with pytest.raises(KeyboardInterrupt):
        lt.run(source, tools={"a": a}, profile={"max_concurrency": 2}, log=log)
    last = log.read_text().splitlines()[-1]
    assert "tool a (one of a batch of 50 calls) raised KeyboardInterrupt" in last, last


@pytest.mark.timeout(60, method="thread")
def test_a_big_batch_under_run_async_makes_a_task_per_slot_not_per_call():
    # A task a call: 200,000 calls held the host's loop for 3 s while they
    # were made, and a cancel went through them all (break-it pass). The
    # host's loop now holds about as many tasks as the batch has slots.
    source = fan_out("(range 0 5000)")
    most = [0]

    async def a(i):
        most[0] = max(most[0], len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return i

    async def main():
        return await lt.run_async(source, tools={"a": a}, profile={"max_concurrency": 8})

    assert asyncio.run(main()).value == [str(i) for i in range(5000)]
    assert most[0] <= 20, f"{most[0]} tasks on the host's loop for 8 slots"
