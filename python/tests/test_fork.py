"""`os.fork()` with lt loaded (break-it pass of issue 28): a child has only
the thread that forked, so the pool of tool threads, the gate and the runs
in flight the parent had are reset there (python/src/fork.rs). A child's
run with a Python tool ends in seconds, not at its deadline."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")


def run_script(body, timeout=60):
    script = "import json, os, sys, threading, time\nimport lt\n" + CHILD + textwrap.dedent(body)
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
    return out, time.monotonic() - began


CHILD = """
def child_runs(tool):
    # The child's run may take 20 s at most: a lost call waits for it.
    try:
        r = lt.run(ONE, tools={"t": tool}, limits={"timeout_ms": 20000})
        ok = r.value == 11
    except BaseException as e:
        os.write(2, f"child: {e!r}\\n".encode())
        ok = False
    os._exit(0 if ok else 1)

def fork_and_wait(tool):
    began = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child_runs(tool)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - began

ONE = "tool t: Int -{}-> Int;\\nmatch exec tool t 1 { Ok(n) => n + 1, Err(e) => 0 - 1 }"
"""


def children_exited_at_once(out, n):
    """The script's last line lists `n` children, each exited 0 within 10 s."""
    assert out.returncode == 0, out.stderr
    codes = json.loads(out.stdout.strip().splitlines()[-1])
    assert [c for c, _ in codes] == [0] * n, (codes, out.stderr)
    assert max(t for _, t in codes) < 10, codes


@pytest.mark.timeout(90, method="thread")
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_forked_child_runs_python_tools(kind):
    out, _ = run_script(
        f"""
        def sync(n):
            return n * 10
        async def async_(n):
            return n * 10
        tool = sync if {kind!r} == "sync" else async_
        assert lt.run(ONE, tools={{"t": tool}}).value == 11   # the parent's pool exists
        time.sleep(0.05)                                       # and its threads are idle
        codes = [fork_and_wait(tool) for _ in range(3)]
        print(json.dumps(codes), flush=True)
        """
    )
    children_exited_at_once(out, 3)


@pytest.mark.timeout(90, method="thread")
def test_a_fork_while_other_threads_run_sessions():
    # The parent's threads hold the pool's and the gate's locks now and
    # then: a child must not inherit them held.
    out, _ = run_script(
        """
        def tool(n):
            return n * 10
        stop = threading.Event()
        def busy():
            while not stop.is_set():
                lt.run(ONE, tools={"t": tool})
        threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        codes = [fork_and_wait(tool) for _ in range(5)]
        stop.set()
        for t in threads:
            t.join()
        print(json.dumps(codes), flush=True)
        """
    )
    children_exited_at_once(out, 5)


@pytest.mark.timeout(90, method="thread")
def test_a_multiprocessing_fork_pool_runs_python_tools():
    out, took = run_script(
        """
        import multiprocessing

        def tool(n):
            return n * 10

        def one(k):
            # 5 s at most: a call lost to the parent's pool waits for it.
            return lt.run(ONE, tools={"t": tool}, limits={"timeout_ms": 5000}).value

        if __name__ == "__main__":
            assert lt.run(ONE, tools={"t": tool}).value == 11
            with multiprocessing.get_context("fork").Pool(2) as pool:
                print(json.dumps(pool.map(one, range(4))), flush=True)
        """
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [11] * 4
    assert took < 20, took
