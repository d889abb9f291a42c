"""One tool call from an lt program into a Python function and back,
through the `lt` Python package (issue 28), beside pydantic-monty's
external function call through its package; and `lt.check` of the
500-line program (bench/gen_program.py).

    pip install target/wheels/*.whl [pydantic-monty]; python3 bench/python_call.py

Per call = (1,000 calls − the same traverse building the record itself) /
1,000, the median of the runs (the method of bench/compare.py's (b)).
Without pydantic-monty its column is skipped, with a note."""

import os
import statistics
import sys
import time

import lt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_program import generate  # noqa: E402

WITH_CALLS = """
tool lookup: {id: Int, name: String} -{Read}-> {id: Int, name: String, balance: Int};
match traverse (fn i: Int => exec tool lookup {id = i, name = "cust"}) (range 0 1000) {
  Ok(rs) => fold (fn acc: Int => fn r: {id: Int, name: String, balance: Int} => acc + r.balance) 0 rs,
  Err(e) => 0
}
"""
WITHOUT = """
tool lookup: {id: Int, name: String} -{Read}-> {id: Int, name: String, balance: Int};
match traverse (fn i: Int => Ok({id = i, name = "cust", balance = 1})) (range 0 1000) {
  Ok(rs) => fold (fn acc: Int => fn r: {id: Int, name: String, balance: Int} => acc + r.balance) 0 rs,
  Err(e) => 0
}
"""


def lookup(arg):
    return {"id": arg["id"], "name": arg["name"], "balance": 1}


def median_ms(f, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    runs = int(os.environ.get("RUNS", "30"))
    tools = {"lookup": lookup}
    assert lt.run(WITH_CALLS, tools=tools).value == 1000
    c = median_ms(lambda: lt.run(WITH_CALLS, tools=tools), runs)
    b = median_ms(lambda: lt.run(WITHOUT, tools=tools), runs)
    print(f"lt: one tool call into Python and back: {c - b:.2f} µs net ({c:.2f} µs gross)")
    src = generate(500)
    assert lt.check(src).ok
    print(f"lt.check of the 500-line program: {median_ms(lambda: lt.check(src), runs):.2f} ms")
    try:
        import pydantic_monty  # noqa: F401
    except ImportError:
        print("pydantic-monty is not installed: its column is skipped (pip install pydantic-monty)")
        return
    from compare import monty_session, time_fn  # noqa: F401

    pool, s = monty_session()
    try:
        with_calls = ("total = 0\nfor i in range(1000):\n"
                      "    total += lookup({'id': i, 'name': 'cust'})['balance']\ntotal\n")
        without = ("total = 0\nfor i in range(1000):\n"
                   "    total += {'id': i, 'name': 'cust', 'balance': 1}['balance']\ntotal\n")
        mc = median_ms(lambda: s.feed_run(with_calls, external_lookup=tools), runs)
        mb = median_ms(lambda: s.feed_run(without, external_lookup=tools), runs)
        print(f"pydantic-monty: one external function call: {mc - mb:.2f} µs net ({mc:.2f} µs gross)")
        print(f"ratio monty / lt: {(mc - mb) / max(c - b, 1e-9):.1f}x")
    finally:
        s.__exit__(None, None, None)
        pool.__exit__(None, None, None)


if __name__ == "__main__":
    main()
