"""lt from Python: check and run lt programs, Python functions as tools.

    import lt
    result = lt.run(source, tools={"lookup": lookup})
    print(result.value)

Every run is a session of the same engine as the ``lt`` command line
(profile, limits, hash-chained log, replay). See ``docs/python.md``.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from . import _lt
from ._errors import CheckError, ConfigError, Error, InternalError, LogError, RunStopped, a_type as _a, raise_failure
from ._results import CheckResult, Diagnostic, Label, ReplayResult, RunResult
from ._tools import Dispatch
from . import tools

__version__: str = _lt.__version__

# Python's exit cancels the runs still in flight (daemon threads) and waits
# for their logs to end, before any thread running lt could be ended by
# finalization (python/src/gate.rs).
atexit.register(_lt.python_exiting)

# A forked child has only the thread that forked: the pool of tool threads,
# the gate and the runs in flight are reset there (python/src/fork.rs).
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_lt.before_fork,
        after_in_parent=_lt.after_fork_in_parent,
        after_in_child=_lt.after_fork_in_child,
    )

__all__ = [
    "check",
    "run",
    "run_async",
    "replay",
    "prompt",
    "tools",
    "CheckResult",
    "Diagnostic",
    "Label",
    "RunResult",
    "ReplayResult",
    "Error",
    "CheckError",
    "ConfigError",
    "RunStopped",
    "LogError",
    "InternalError",
]

PathLike = Union[str, "os.PathLike[str]"]
Profile = Union[PathLike, Mapping[str, Any], None]
Tools = Union[Mapping[str, Callable[[Any], Any]], PathLike, None]


def _unwrap(v: Any) -> Dict[str, Any]:
    if isinstance(v, dict) and "failure" in v:
        raise_failure(v["failure"])
    assert isinstance(v, dict)
    return v


def _fspath(value: Any, keyword: str, what: str) -> str:
    """``value``, a file's path (a ``str`` or ``os.PathLike``), as a
    ``str``; a value of another type is a ``TypeError`` naming ``keyword``."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str):
            return _utf8(path, keyword)
    raise TypeError(f"{keyword} is {_a(value)}: give {what} (a str or os.PathLike)")


def _utf8(text: str, keyword: str) -> str:
    """``text``, which lt reads as UTF-8: a lone surrogate (``"\\ud800"``,
    or a file name's undecodable byte) has no UTF-8 form, an
    :class:`ConfigError` naming ``keyword`` and the place."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        column = e.start - (text.rfind("\n", 0, e.start) + 1) + 1
        raise ConfigError(
            f"{keyword} holds U+{ord(text[e.start]):04X}, a lone surrogate, at line {line}, column {column}: it has no UTF-8 form",
            "remove it, or pair it (a surrogate pair is one character, e.g. \"\\ud83d\\ude00\" is \"\U0001F600\")",
            "input",
        ) from None
    return text


def _source(source: Any) -> str:
    """The program's text: a ``str`` (a path or another type is a
    ``TypeError`` saying to give the text; a ``str`` naming a ``.lt`` file
    that exists, an :class:`ConfigError`)."""
    if isinstance(source, str):
        if _names_file(source, ".lt") and os.path.isfile(source):
            raise ConfigError(
                f"source is the path of a file ({source}), not the program's text",
                "give its text: pathlib.Path(path).read_text()",
                "input",
                source,
            )
        return _utf8(source, "source")
    if isinstance(source, os.PathLike):
        raise TypeError(
            f"source is a path ({os.fspath(source)!r}): give the program's text, e.g. pathlib.Path(...).read_text()"
        )
    raise TypeError(f"source is {_a(source)}: give the program's text (a str)")


def _flag(value: Any, keyword: str) -> bool:
    """A ``bool`` keyword (``force=``); another type is a ``TypeError``."""
    if isinstance(value, bool):
        return value
    raise TypeError(f"{keyword} is {_a(value)}: give True or False")


def _profile(profile: Profile) -> Tuple[Optional[str], Optional[Mapping[str, Any]]]:
    if profile is None:
        return None, None
    if isinstance(profile, Mapping):
        return None, dict(profile)
    return _fspath(profile, "profile=", "a [profile] file's path or a dict of its keys"), None


def _limits(limits: Optional[Mapping[str, int]]) -> Optional[Dict[str, int]]:
    if limits is None:
        return None
    if not isinstance(limits, Mapping):
        raise TypeError(
            f"limits= is {_a(limits)}: give a dict, e.g. limits={{\"max_calls\": 10, \"timeout_ms\": 5000}}"
        )
    for k, v in limits.items():
        # Named as Python spells it (`True`, `None`), not as JSON would.
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(
                f"limits[{k!r}] is {v!r}, not a non-negative int",
                help='e.g. limits={"max_calls": 10, "timeout_ms": 5000}',
                stage="input",
            )
    return dict(limits)


def _declarations(
    declarations: Optional[Union[str, "os.PathLike[str]"]], keyword: str = "declarations="
) -> Optional[Tuple[str, str]]:
    """``(name, text)`` of declarations given as text (a ``str``) or a file
    (a ``pathlib.Path``, or a one-line ``str`` ending ``.lt`` that reads
    as a file name); ``keyword`` names the argument in errors."""
    if declarations is None:
        return None
    text = isinstance(declarations, str) and not _names_file(declarations, ".lt")
    if text and not _names_file(str(declarations), ".toml"):
        return ("<tools>", _utf8(str(declarations), keyword))
    path = _fspath(declarations, keyword, "the declarations' text or a .lt file's path")
    if _names_file(path, ".toml"):
        raise ConfigError(
            f"declarations= is {path}, a tools.toml: declarations are lt text (tool …: … -{{…}}-> …;)",
            "a tools.toml maps tools to executors: pass it to lt.run as tools=; the declarations go in declarations=",
            "input",
            path,
        )
    try:
        with open(path, encoding="utf-8") as f:
            return (path, f.read())
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", "check the path", "input", path) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"cannot read {path}: it is not UTF-8 text ({e.reason} at byte {e.start})", "save it as UTF-8", "input", path) from None


def _names_file(s: str, suffix: str) -> bool:
    """Whether ``s`` reads as a file name with ``suffix`` (one line, no
    declaration syntax: no ``;``, braces or comment, and no ``:`` in its
    last part) rather than text."""
    return (
        s.endswith(suffix)
        and "\n" not in s
        and not any(c in s for c in ";{}")
        and "//" not in s
        and ":" not in s.replace(os.sep, "/").split("/")[-1]
    )


def check(
    source: str,
    declarations: Optional[Union[str, "os.PathLike[str]"]] = None,
    profile: Profile = None,
    *,
    tools: Any = None,
) -> CheckResult:
    """Checks ``source`` as ``lt check --json`` does; never raises for a
    program with errors (see ``.ok`` and ``.diagnostics``).
    ``declarations``: declarations joined before the program (their text,
    or a ``pathlib.Path`` to a ``.lt`` file, as ``--tools``), the same
    keyword as :func:`run`'s; ``profile``: a ``[profile]`` file's path or a
    dict of its keys: every call the profile would deny is one more
    diagnostic. ``tools=`` (Python functions or a tools.toml) is
    :func:`run`'s and is refused here. Raises :class:`ConfigError` for an
    invalid profile or declarations of the wrong kind."""
    if tools is not None:
        raise ConfigError(
            "lt.check takes declarations=, not tools=: tools= is lt.run's (Python functions, or a tools.toml)",
            "pass the declarations' text or a .lt file as declarations=",
            "input",
        )
    path, table = _profile(profile)
    report = _unwrap(_lt.check(_source(source), _declarations(declarations), path, table))
    return CheckResult._from_report(report)


def _executors(tools: Any) -> str:
    """The tools.toml path of ``tools=`` (a ``str`` or path ending
    ``.toml``); anything else that is not a dict of functions is refused."""
    if isinstance(tools, (str, os.PathLike)):
        path = os.fspath(tools)
        if isinstance(path, str) and _names_file(path, ".toml"):
            return _utf8(path, "tools=")
        raise ConfigError(
            f"tools= is {path[:60]!r}: a str or path there names a tools.toml (ending .toml)",
            "declarations (lt text or a .lt file) go in declarations=; Python functions in tools={\"name\": function}",
            "input",
        )
    raise ConfigError(
        f"tools= is {_a(tools)}: give a dict of Python functions or a tools.toml path",
        'e.g. tools={"lookup": lookup} or tools="tools.toml"',
        "input",
    )


def _run_args(
    source: str,
    tools: Tools,
    declarations: Optional[Union[str, "os.PathLike[str]"]],
    profile: Profile,
    limits: Optional[Mapping[str, int]],
    log: Optional[PathLike],
    force: bool,
    loop: Optional[asyncio.AbstractEventLoop],
) -> Dict[str, Any]:
    path, table = _profile(profile)
    functions = None
    settle = None
    batch = None
    async_tools = None
    executors = None
    if isinstance(tools, Mapping):
        for name, f in tools.items():
            if isinstance(name, str):
                _utf8(name, f"tools= key {name!r}")
            if not callable(f):
                raise ConfigError(
                    f"tools[{name!r}] is {_a(f)}, not a function",
                    "each value of tools= is a function (sync or async) taking the tool's argument",
                    "executors",
                )
        dispatch = Dispatch(tools, loop)
        functions = dispatch.tools
        settle = dispatch.settle
        batch = dispatch.batch if dispatch.any_async else None
        async_tools = dispatch.async_names() if dispatch.any_async else None
    elif tools is not None:
        executors = _executors(tools)
    return dict(
        source=_source(source),
        declarations=_declarations(declarations),
        tools=functions,
        settle=settle,
        batch=batch,
        async_tools=async_tools,
        executors=executors,
        profile_path=path,
        profile_table=table,
        limits=_limits(limits),
        log=_fspath(log, "log=", "the event log's path") if log is not None else None,
        force=_flag(force, "force="),
    )


def _result(report: Dict[str, Any]) -> RunResult:
    return RunResult(
        value=report.get("value"),
        type=report["type"],
        effects=list(report.get("effects", [])),
        calls=report.get("calls", 0),
        steps=report.get("steps", 0),
        session=report.get("session", ""),
        elapsed_ms=report.get("elapsed_ms", 0.0),
    )


def run(
    source: str,
    tools: Tools = None,
    *,
    declarations: Optional[Union[str, "os.PathLike[str]"]] = None,
    profile: Profile = None,
    limits: Optional[Mapping[str, int]] = None,
    log: Optional[PathLike] = None,
    force: bool = False,
) -> RunResult:
    """Checks ``source`` and runs it as a session. ``tools``: a dict of
    Python functions (sync or ``async``; each takes the tool's argument and
    returns its result), or the path of a ``tools.toml`` (a ``str`` or path
    ending ``.toml``); ``declarations``: as :func:`check`'s. A function that
    raises, or returns a value of the wrong shape, is the program's
    ``Err``. ``profile``: a file's path or a dict (default: allow all, or
    the ``[profile]`` of ``tools.toml``); ``limits``: ``max_calls``,
    ``max_steps``, ``timeout_ms``, ``max_list_len``; ``log``: the path of
    the session's event log. The GIL is released while no Python tool runs.
    Raises :class:`CheckError` (nothing ran), :class:`ConfigError`,
    :class:`RunStopped`; Ctrl-C cancels the session and raises
    ``KeyboardInterrupt``, and so does a tool raising ``KeyboardInterrupt``
    or ``SystemExit`` (that exception is raised)."""
    args = _run_args(source, tools, declarations, profile, limits, log, force, None)
    return _result(_unwrap(_lt.run(**args)))


def _on_thread(loop: "asyncio.AbstractEventLoop", call: Any) -> "asyncio.Future[Any]":
    """Runs ``call`` on a daemon thread of its own and settles a future of
    ``loop`` with its result or exception. Not the loop's default executor:
    its few threads would be held by sessions while their tools'
    ``asyncio.to_thread`` waited behind them (a deadlock from about six
    sessions on), and Python's exit joins that executor's threads before
    lt's own exit hook can cancel the sessions."""
    done: "asyncio.Future[Any]" = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if done.cancelled():
            return
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)

    def work() -> None:
        try:
            ok, value = True, call()
        except BaseException as e:  # handed to the awaiting task as it is
            ok, value = False, e
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:
            pass  # the loop is closed: nobody awaits the session any more

    threading.Thread(target=work, name="lt-run-async", daemon=True).start()
    return done


async def run_async(
    source: str,
    tools: Tools = None,
    *,
    declarations: Optional[Union[str, "os.PathLike[str]"]] = None,
    profile: Profile = None,
    limits: Optional[Mapping[str, int]] = None,
    log: Optional[PathLike] = None,
    force: bool = False,
) -> RunResult:
    """:func:`run` for asyncio hosts: the session runs on a worker thread,
    ``async`` tools are awaited on the running event loop (a ``gather``
    runs them concurrently), and the loop stays free meanwhile. Cancelling
    the task cancels the session (its running tools too; its log ends
    ``cancelled``), then raises ``CancelledError``."""
    loop = asyncio.get_running_loop()
    args = _run_args(source, tools, declarations, profile, limits, log, force, loop)
    handle = _lt.RunHandle()
    done = _on_thread(loop, functools.partial(_lt.run, **args, handle=handle))
    try:
        report = await asyncio.shield(done)
    except asyncio.CancelledError:
        # The task was cancelled: so is the session; its end is awaited
        # (its log ends ``cancelled``) before the cancellation goes on.
        handle.cancel("the asyncio task running lt.run_async was cancelled")
        try:
            await done
        except Exception:
            pass
        raise
    return _result(_unwrap(report))


def replay(log: PathLike) -> ReplayResult:
    """Re-runs a session from its event log, calling no tool, and says
    whether the program made exactly the recorded calls and reached the
    recorded ending (``lt replay``). Raises :class:`LogError` for a log
    that cannot be read or does not verify."""
    v = _unwrap(_lt.replay(_fspath(log, "log", "the event log's path")))
    return ReplayResult(
        ok=bool(v.get("ok")),
        calls=v.get("calls", 0),
        steps=v.get("steps", 0),
        status=v.get("status"),
        value=v.get("value"),
        kind=v.get("kind"),
        message=v.get("message"),
        cancelled=bool(v.get("cancelled", False)),
        timed_out=bool(v.get("timed_out", False)),
    )


def prompt(tools: Union[str, "os.PathLike[str]"]) -> str:
    """The system prompt of the agent loop (``lt prompt``): the guide to lt
    for models, then the declarations of ``tools`` (their text, or a
    ``pathlib.Path``). Raises :class:`CheckError` when they have errors."""
    decls = _declarations(tools, "tools")
    if decls is None:
        raise ConfigError(
            "lt.prompt needs the tools' declarations, not None",
            'e.g. lt.prompt("tool lookup: {id: String} -{Read}-> {tier: String};") or lt.prompt(pathlib.Path("tools.lt"))',
            "input",
        )
    v = _unwrap(_lt.prompt(decls[1]))
    return str(v["prompt"])
