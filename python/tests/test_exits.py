"""`KeyboardInterrupt` and `SystemExit` raised inside a tool (break-it pass
of issue 28): whether the tool is sync, `async`, or in a `gather` of
`async` tools, under `lt.run` or `lt.run_async`, the run stops as Ctrl-C
stops it: the session is cancelled (its log ends ``cancelled``) and the
exception is raised by `lt.run`, as if the function had been called
directly. Other exceptions stay the call's `Err`."""

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

import lt

ONE = "tool t: Int -{}-> Int;\nmatch exec tool t 1 { Ok(n) => n, Err(e) => 0 - 1 }"
GATHER = """
tool t: Int -{}-> Int;
let g = gather { a = exec tool t 1, b = exec tool t 2 } in
match g.a { Ok(a) => match g.b { Ok(b) => a + b, Err(e) => 0 - 2 }, Err(e) => 0 - 1 }
"""


def sync_tool(exc):
    def t(n):
        raise exc("from the tool")

    return t


def async_tool(exc):
    async def t(n):
        await asyncio.sleep(0)
        if n == 2:
            raise exc("from the tool")
        return n

    return t


def assert_ended_cancelled(log):
    end = json.loads(log.read_text().splitlines()[-1])
    assert end["kind"] == "session_ended", end
    assert "cancel" in json.dumps(end), end


CASES = [
    ("sync", ONE, sync_tool),
    ("async", ONE, lambda exc: async_tool_always(exc)),
    ("gather", GATHER, async_tool),
]


def async_tool_always(exc):
    async def t(n):
        await asyncio.sleep(0)
        raise exc("from the tool")

    return t


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("kind,source,make", CASES, ids=[c[0] for c in CASES])
def test_a_tool_raising_it_stops_lt_run(tmp_path, exc, kind, source, make):
    log = tmp_path / "s.jsonl"
    with pytest.raises(exc) as e:
        lt.run(source, tools={"t": make(exc)}, log=log)
    assert "from the tool" in str(e.value)
    assert_ended_cancelled(log)


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("kind,source,make", CASES, ids=[c[0] for c in CASES])
def test_a_tool_raising_it_stops_lt_run_async(tmp_path, exc, kind, source, make):
    log = tmp_path / "s.jsonl"

    async def main():
        return await lt.run_async(source, tools={"t": make(exc)}, log=log)

    with pytest.raises(exc):
        asyncio.run(main())
    assert_ended_cancelled(log)


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_in_a_gather_it_is_raised_by_the_awaited_run_async(tmp_path, exc):
    # Raised by `await lt.run_async(...)`, where the host can catch it: the
    # host's event loop goes on (it used to be raised out of the loop).
    log = tmp_path / "s.jsonl"

    async def main():
        try:
            await lt.run_async(GATHER, tools={"t": async_tool(exc)}, log=log)
        except exc as e:
            return e
        return None

    caught = asyncio.run(main())
    assert isinstance(caught, exc) and "from the tool" in str(caught), caught
    assert_ended_cancelled(log)


@pytest.mark.timeout(60, method="thread")
def test_in_a_gather_it_leaves_no_task_pending():
    # Each call of the batch has a deadline (the run's, 300 s), so its
    # coroutine runs as a task of `wait_for`: the exception escaped that
    # task and the loop, and the batch's task was destroyed pending
    # ("Task was destroyed but it is pending!" at the interpreter's exit).
    script = textwrap.dedent(
        """
        import asyncio, gc, lt
        GATHER = %r
        async def t(n):
            await asyncio.sleep(0)
            if n == 2:
                raise KeyboardInterrupt("from the tool")
            return n
        try:
            lt.run(GATHER, tools={"t": t})
        except KeyboardInterrupt as e:
            print("raised:", e)
        gc.collect()
        """
    ) % GATHER
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=40)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "raised: from the tool", out.stdout
    assert "Task was destroyed" not in out.stderr, out.stderr
    assert "Traceback" not in out.stderr, out.stderr


def test_other_exceptions_stay_the_calls_err():
    def t(n):
        raise LookupError("no such row")

    r = lt.run("tool t: Int -{}-> Int;\nmatch exec tool t 1 { Ok(n) => \"ok\", Err(e) => e }", tools={"t": t})
    assert r.value == "tool t raised LookupError: no such row"
