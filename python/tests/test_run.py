"""lt.run with Python functions as tools: sync and async, a raising tool,
a wrong-shaped result, a program with errors, a profile denial, limits, a
log replayed, tools.toml."""

import asyncio
import json
import time

import pytest

import lt
from conftest import GATHER, LOOKUP, REFUND, lookup, refund


def test_sync_tools():
    r = lt.run(REFUND, tools={"lookup": lookup, "refund": refund})
    assert r.value == "tx_c1_4999" and r.calls == 2 and r.type == "String"
    assert r.effects == ["Read", "Write"] and len(r.session) == 32


def test_async_tools():
    async def alookup(arg):
        await asyncio.sleep(0.01)
        return lookup(arg)

    assert lt.run(LOOKUP, tools={"lookup": alookup}).value == "gold"


def test_results_not_of_a_plain_type_are_settled_first():
    """A sync function's awaitable result is awaited, under lt.run and
    run_async; a subclass of dict is converted as a dict; an awaitable
    that gives a set is a wrong result, not awaited again."""

    async def alookup(arg):
        return lookup(arg)

    class Later:
        def __await__(self):
            return alookup({"id": "c1"}).__await__()

    class Row(dict):
        pass

    assert lt.run(LOOKUP, tools={"lookup": lambda a: alookup(a)}).value == "gold"
    assert lt.run(LOOKUP, tools={"lookup": lambda a: Later()}).value == "gold"
    assert lt.run(LOOKUP, tools={"lookup": lambda a: Row(lookup(a))}).value == "gold"
    assert asyncio.run(lt.run_async(LOOKUP, tools={"lookup": lambda a: Later()})).value == "gold"

    async def aset(arg):
        return {1, 2}

    r = lt.run(LOOKUP, tools={"lookup": lambda a: aset(a)})
    assert "not JSON" in r.value and "set" in r.value


def test_a_future_of_another_loop_is_refused_in_the_tools_words():
    """A tool returning a pending asyncio Future of another event loop
    cannot be awaited where lt awaits it: the call's Err says what the tool
    returned, not asyncio's words about lt's own task; in a gather too. A
    done future, and under run_async a
    future of the host's own loop, give their values."""
    other = asyncio.new_event_loop()
    try:
        r = lt.run(LOOKUP, tools={"lookup": lambda a: other.create_future()},
                   limits={"timeout_ms": 5000})
        assert r.value.startswith("tool lookup returned an asyncio Future of another event loop")
        assert "_tools.py" not in r.value and "Task" not in r.value

        async def slow(arg):
            return arg["n"]

        batch = GATHER.replace("Err(e) => 0 }, Err(e) => 0 }, Err(e) => 0 }",
                               "Err(e) => 0 }, Err(e) => 0 }, Err(e) => 100 }")
        r = lt.run(batch, tools={"slow": lambda a: other.create_future() if a["n"] == 1 else slow(a)})
        assert r.value == 100  # g.a is the refused one

        done = other.create_future()
        done.set_result(lookup({"id": "c1"}))
        assert lt.run(LOOKUP, tools={"lookup": lambda a: done}).value == "gold"
    finally:
        other.close()

    async def host():
        loop = asyncio.get_running_loop()

        def later(arg):
            f = loop.create_future()
            loop.call_later(0.01, f.set_result, lookup(arg))
            return f

        return await lt.run_async(LOOKUP, tools={"lookup": later})

    assert asyncio.run(host()).value == "gold"


def test_a_users_exception_named_like_lts_marker_keeps_its_name():
    """lt's own marker for a result it cannot await is told by its class,
    not its name: a user's exception called `_Foreign` is an ordinary
    raise (break-it pass)."""

    class _Foreign(Exception):
        pass

    def t(arg):
        raise _Foreign("my own message")

    assert lt.run(LOOKUP, tools={"lookup": t}).value == "tool lookup raised _Foreign: my own message"


def test_argument_keys_stay_exact_when_kept_keys_share_a_slot():
    """A pool thread keeps the str keys of arguments (python/src/convert.rs,
    Keys): keys of one length with the same first and last letters share a
    slot, and each call still sees its own keys."""

    def keys(arg):
        return " ".join(f"{k}={v}" for k, v in sorted(arg.items()))

    for a, b in [("axb", "ayb"), ("ayb", "azb"), ("axb", "azb")]:
        src = (
            f"tool t: {{{a}: Int, {b}: Int}} -{{}}-> String;\n"
            f"match exec tool t {{{a} = 1, {b} = 2}} {{ Ok(s) => s, Err(e) => e }}"
        )
        for _ in range(3):
            assert lt.run(src, tools={"t": keys}).value == f"{a}=1 {b}=2"


def test_raising_tool_is_the_programs_err():
    def broken(arg):
        raise ValueError("card declined")

    r = lt.run(LOOKUP, tools={"lookup": broken})
    assert r.value == "tool lookup raised ValueError: card declined"


def test_wrong_shape_is_the_programs_err():
    r = lt.run(LOOKUP, tools={"lookup": lambda a: {"id": "c1", "tier": 3, "cents": 1}})
    assert "tier" in r.value and r.calls == 1
    r = lt.run(LOOKUP, tools={"lookup": lambda a: {1, 2}})
    assert "not JSON" in r.value and "set" in r.value


def test_program_with_errors_raises_check_error_and_runs_nothing():
    called = []
    with pytest.raises(lt.CheckError) as e:
        lt.run(LOOKUP.replace("a.tier", "a.plan"), tools={"lookup": lambda a: called.append(a)})
    assert called == []
    assert [d.code for d in e.value.diagnostics] == ["E0202"]
    assert "[E0202]" in str(e.value)


def test_profile_denial_is_an_err_the_tool_never_runs():
    ran = []

    def refund_spy(arg):
        ran.append(arg)
        return refund(arg)

    r = lt.run(REFUND, tools={"lookup": lookup, "refund": refund_spy}, profile={"effects": ["Read"]})
    assert r.value.startswith("denied: effects:") and ran == []


def test_missing_tool_function_is_a_config_error():
    with pytest.raises(lt.ConfigError) as e:
        lt.run(REFUND, tools={"lookup": lookup})
    assert "refund" in str(e.value) and e.value.help


def test_limit_stops_the_run():
    with pytest.raises(lt.RunStopped) as e:
        lt.run(REFUND, tools={"lookup": lookup, "refund": refund}, limits={"max_calls": 1})
    assert e.value.kind == "call_limit" and e.value.calls == 1 and e.value.line


def test_bad_limits_are_a_config_error():
    with pytest.raises(lt.ConfigError):
        lt.run(LOOKUP, tools={"lookup": lookup}, limits={"max_cals": 1})


def test_log_replayed(tmp_path):
    log = tmp_path / "s.jsonl"
    r = lt.run(REFUND, tools={"lookup": lookup, "refund": refund}, log=log)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events[0]["kind"] == "session_started" and events[-1]["kind"] == "session_ended"
    v = lt.replay(log)
    assert v.ok and v.calls == 2 and v.value == r.value
    with pytest.raises(lt.ConfigError):  # an earlier session's log is not replaced
        lt.run(REFUND, tools={"lookup": lookup, "refund": refund}, log=log)
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    with pytest.raises(lt.LogError):
        lt.replay(log)


def test_a_cancelled_session_replays_up_to_its_stop(tmp_path):
    # A tool raising KeyboardInterrupt cancels the session; its replay says
    # so (break-it pass: the verdict came back with no sign of the stop,
    # as if the program had ended with an error after 0 steps).
    log = tmp_path / "k.jsonl"
    source = "tool a: Int -{}-> Int;\nmatch exec tool a 1 { Ok(n) => n, Err(e) => 0 }"

    def interrupt(arg):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lt.run(source, tools={"a": interrupt}, log=log)
    v = lt.replay(log)
    assert v.ok and v.cancelled and not v.timed_out, v
    assert v.calls == 1 and v.status == "error" and v.value is None, v
    done = lt.replay(_logged_run(tmp_path))
    assert done.ok and not done.cancelled and not done.timed_out, done
    late = tmp_path / "t.jsonl"

    def slow(arg):
        time.sleep(0.5)
        return 1

    with pytest.raises(lt.RunStopped):
        lt.run(source, tools={"a": slow}, limits={"timeout_ms": 100}, log=late)
    stopped = lt.replay(late)
    assert stopped.ok and stopped.timed_out and not stopped.cancelled, stopped


def _logged_run(tmp_path):
    log = tmp_path / "done.jsonl"
    lt.run(REFUND, tools={"lookup": lookup, "refund": refund}, log=log)
    return log


def test_tools_toml(tmp_path):
    (tmp_path / "tools.toml").write_text(
        '[tools.lookup]\nfixed = { ok = { id = "c1", tier = "silver", cents = 5 } }\n'
    )
    assert lt.run(LOOKUP, tools=tmp_path / "tools.toml").value == "silver"
    (tmp_path / "bad.toml").write_text("[tools.lookup]\nfixed = 3\n")
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools=tmp_path / "bad.toml")
    assert e.value.line == 2


def test_run_async_gathers_async_tools_concurrently():
    async def slow(arg):
        await asyncio.sleep(0.3)
        return arg["n"]

    async def main():
        began = time.monotonic()
        r = await lt.run_async(GATHER, tools={"slow": slow})
        return r, time.monotonic() - began

    r, took = asyncio.run(main())
    assert r.value == 6 and r.calls == 3
    assert took < 0.8, f"three 0.3 s calls took {took:.2f} s: not concurrent"


# The pending tasks the user's close destroyed say so as they are collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("program", ["one", "gather"])
def test_a_host_loop_closed_with_a_call_pending_ends_the_call_not_the_deadline(tmp_path, program):
    """Break-it pass: a `run_async` session whose host loop was closed while
    it awaited an `async` tool waited for the run's deadline (300 s by
    default) with its log unfinished. The call now fails ("Event loop is
    closed", as a call made after the close does) and the session ends."""
    import json
    import warnings

    async def slow(arg):
        await asyncio.sleep(60)
        return arg["n"] if "n" in arg else {"id": "c1", "tier": "gold", "cents": 1}

    src, tools = {"one": (LOOKUP, {"lookup": slow}), "gather": (GATHER, {"slow": slow})}[program]
    log = tmp_path / "s.jsonl"
    loop = asyncio.new_event_loop()
    loop.create_task(lt.run_async(src, tools=tools, log=log, limits={"timeout_ms": 120_000}))
    loop.run_until_complete(asyncio.sleep(0.3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the task destroyed pending, by the user's close
        loop.close()
    began = time.monotonic()
    ended = None
    while time.monotonic() - began < 15 and ended is None:
        time.sleep(0.05)
        events = [json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")]
        ended = next((e for e in events if e["kind"] == "session_ended"), None)
    assert ended is not None, f"the session did not end in 15 s: {[e['kind'] for e in events]}"
    failed = [e for e in events if e["kind"] == "failed"]
    assert failed and all("Event loop is closed" in e["message"] for e in failed), failed
    assert lt.replay(log).ok
    import gc

    del loop
    gc.collect()  # the destroyed tasks' coroutines go here, under this test's filter


def test_prompt_lists_the_declarations():
    p = lt.prompt("tool lookup: {id: String} -{Read}-> {tier: String};\n")
    assert "tool lookup" in p and "exec tool" in p
    with pytest.raises(lt.CheckError):
        lt.prompt("tool lookup: {id: Strin} -{Read}-> {tier: String};\n")
