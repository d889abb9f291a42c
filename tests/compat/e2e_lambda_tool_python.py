#!/usr/bin/env python3
"""lt as a drop-in `lambda_tool` for the PyPI package `lambda-tool-python`.

Uses only the package's public API (`LambdaTool`, `LambdaToolError`), as an
agent built on it would. Run it with lt's `lambda_tool` first on PATH:

    python3 -m venv target/compat-venv
    target/compat-venv/bin/pip install lambda-tool-python==0.1.0
    cargo build --release
    PATH=target/release:$PATH target/compat-venv/bin/python tests/compat/e2e_lambda_tool_python.py

Exits 0 when every scenario passes, 1 with a line per failure otherwise.
"""

from __future__ import annotations

import shutil
import sys
import time
import traceback

from lambda_tool import LambdaTool, LambdaToolError

FAILURES: list[str] = []
PASSED: list[str] = []


def scenario(fn):
    """Runs `fn` now, recording a failure instead of stopping."""
    name = fn.__name__
    try:
        fn()
        PASSED.append(name)
    except Exception as e:  # noqa: BLE001 - report every failure the same way
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        FAILURES.append(f"{name}: {detail}")
    return fn


def expect(actual, expected, what: str) -> None:
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def expect_error(fn, *fragments: str) -> list[str]:
    """`fn()` raises LambdaToolError whose errors contain every fragment."""
    try:
        result = fn()
    except LambdaToolError as e:
        if not isinstance(e.errors, list) or not e.errors:
            raise AssertionError(f"errors is not a non-empty list: {e.errors!r}")
        if not all(isinstance(x, str) for x in e.errors):
            raise AssertionError(f"errors are not strings: {e.errors!r}")
        text = "\n".join(e.errors)
        for f in fragments:
            if f not in text:
                raise AssertionError(f"{f!r} not in the errors: {e.errors!r}")
        return e.errors
    raise AssertionError(f"expected LambdaToolError, got {result!r}")


found = shutil.which("lambda_tool")
if found is None:
    print("FAIL: no lambda_tool on PATH (put lt's target/release first)")
    sys.exit(1)
print(f"lambda_tool: {found}")

lt = LambdaTool()
started = time.monotonic()

QUERY = """
tool query: String -{Read}-> {name: String};
match exec tool query "SELECT name FROM users" {
  Ok(r) => r.name,
  Err(e) => "failed: " ++ e
}
"""


# --- typecheck ----------------------------------------------------------------


@scenario
def typecheck_reports_type_and_effects():
    r = lt.typecheck("let x = 1 + 2 in x")
    expect(r.type, "Int", "type")
    expect(r.effects, [], "effects")
    expect(lt.typecheck('{name = "Alice", age = 30}').type, "{name: String, age: Int}", "record type")
    expect(lt.typecheck('["a"]').type, "List String", "list type")
    r = lt.typecheck(QUERY)
    expect((r.type, r.effects), ("String", ["Read"]), "tool program")


@scenario
def typecheck_rejects_with_lambda_tool_wording():
    errors = expect_error(
        lambda: lt.typecheck(
            'tool get: String -{Read}-> {id: String, subscription_tier: String};\n'
            'match exec tool get "c" { Ok(a) => a.plan, Err(e) => e }'
        ),
        "Field 'plan' not found in record type {id: String, subscription_tier: String}",
        "[E0202 at line 2, col ",
        "; hint: ",
    )
    expect(len(errors), 1, "one error")
    expect_error(
        lambda: lt.typecheck("fn token: !String => let a = token in let b = token in a"),
        "Linearity violation for 'token': used 2 times (must be exactly once)",
    )
    expect_error(
        lambda: lt.typecheck(
            "tool charge: {id: Int, amount: Int} -{Write}-> {tx_id: String};\n"
            "map (fn o: {id: Int, amount: Int} => exec tool charge o) [{id = 1, amount = 100}]"
        ),
        "Effect violation: allowed {} but got {Write}",
    )
    expect_error(lambda: lt.typecheck("let x = 1 + true in x"), "[E0201 at line 1")
    expect_error(lambda: lt.typecheck("@@invalid@@"), "[E0001 at line 1, col 1")
    expect_error(lambda: lt.typecheck(""), "[E0104")


# --- run without executors ------------------------------------------------------


@scenario
def run_without_executors():
    r = lt.run("let x = 1 + 2 in x")
    expect((r.value, r.type, r.effects), (3, "Int", []), "arithmetic")
    expect(lt.run('{name = "Alice", age = 30}').value, {"name": "Alice", "age": 30}, "record")
    expect(lt.run("[1, 2, 3]").value, [1, 2, 3], "list")
    expect(lt.run("map (fn x: Int => x * 2) [1, 2, 3]").value, [2, 4, 6], "map")
    expect(lt.run("()").value, None, "unit")
    # No executors: each call is an Err the program handles.
    expect(lt.run(QUERY).value, "failed: no executor for tool 'query'", "a call")


@scenario
def runtime_errors_raise():
    expect_error(lambda: lt.run("let d = 1 in 9223372036854775807 + d"), "integer overflow: 9223372036854775807 + 1 [arithmetic at line 1")


# --- run with Python executors ---------------------------------------------------


@scenario
def run_with_an_executor():
    seen = []

    def query(arg):
        seen.append(arg)
        return {"name": "Alice", "extra": "dropped by the declared type"}

    r = lt.run(QUERY, executors={"query": query})
    expect((r.value, r.type, r.effects), ("Alice", "String", ["Read"]), "result")
    expect(seen, ["SELECT name FROM users"], "argument")


@scenario
def a_failing_executor_is_an_err():
    def query(arg):
        raise ConnectionError("database offline")

    expect(lt.run(QUERY, executors={"query": query}).value, "failed: database offline", "value")


@scenario
def a_missing_executor_is_an_err():
    expect(
        lt.run(QUERY, executors={"other": lambda a: 1}).value,
        "failed: no executor for tool 'query'",
        "value",
    )
    expect(lt.run(QUERY, executors={}).value, "failed: no executor for tool 'query'", "empty executors")


@scenario
def a_wrong_shaped_result_is_an_err():
    expect(
        lt.run(QUERY, executors={"query": lambda a: {"nom": "Alice"}}).value,
        "failed: tool query returned an invalid result: field name: missing (expected String)",
        "value",
    )


@scenario
def traverse_over_three_hosts():
    code = """
    tool check: String -{Network}-> {ok: Bool};
    let hosts = ["a", "b", "c"] in
    match traverse (fn h: String => exec tool check h) hosts {
      Ok(results) => map (fn r: {ok: Bool} => r.ok) results,
      Err(e) => []: Bool
    }
    """
    calls = []

    def check(arg):
        calls.append(arg)
        return {"ok": arg != "b"}

    r = lt.run(code, executors={"check": check})
    expect(r.value, [True, False, True], "value")
    expect(r.type, "List Bool", "type")
    expect(r.effects, ["Network"], "effects")
    expect(calls, ["a", "b", "c"], "calls in order")

    calls.clear()

    def down_at_b(arg):
        calls.append(arg)
        if arg == "b":
            raise TimeoutError("b timed out")
        return {"ok": True}

    expect(lt.run(code, executors={"check": down_at_b}).value, [], "stops at the first Err")
    expect(calls, ["a", "b"], "c is not called")


@scenario
def conditional_calls():
    code = """
    tool get_size: String -{Read}-> {size: Int};
    tool read_full: String -{Read}-> {content: String};
    tool read_summary: String -{Read}-> {content: String};

    match exec tool get_size "file.txt" {
      Ok(info) =>
        if info.size < 100
        then match exec tool read_full "file.txt" { Ok(r) => r.content, Err(e) => "error" }
        else match exec tool read_summary "file.txt" { Ok(r) => r.content, Err(e) => "error" },
      Err(e) => "error"
    }
    """
    for size, expected, other in [(50, "full content", "read_summary"), (500, "summary", "read_full")]:
        called = []

        def tool(name, answer):
            def run(arg):
                called.append(name)
                return answer

            return run

        executors = {
            "get_size": tool("get_size", {"size": size}),
            "read_full": tool("read_full", {"content": "full content"}),
            "read_summary": tool("read_summary", {"content": "summary"}),
        }
        expect(lt.run(code, executors=executors).value, expected, f"size {size}")
        if other in called:
            raise AssertionError(f"size {size}: {other} was called: {called}")


@scenario
def type_errors_stop_before_any_executor_runs():
    ran = []
    expect_error(
        lambda: lt.run(
            "tool q: String -{Read}-> {name: String};\n"
            'match exec tool q "x" { Ok(r) => r.nam, Err(e) => e }',
            executors={"q": lambda a: ran.append(a) or {"name": "x"}},
        ),
        "Field 'nam' not found",
    )
    expect(ran, [], "no executor ran")


elapsed = time.monotonic() - started
for name in PASSED:
    print(f"ok   {name}")
for failure in FAILURES:
    print(f"FAIL {failure}")
print(f"{len(PASSED)} passed, {len(FAILURES)} failed in {elapsed:.2f} s")
sys.exit(1 if FAILURES else 0)
