"""lt from Python: check and run lt programs, Python functions as tools.

    import lt
    result = lt.run(source, tools={"lookup": lookup})
    print(result.value)

Every run is a session of the same engine as the ``lt`` command line
(profile, limits, hash-chained log, replay). See ``docs/python.md``.
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from . import _lt
from ._errors import CheckError, ConfigError, Error, InternalError, LogError, RunStopped, raise_failure
from ._results import CheckResult, Diagnostic, Label, ReplayResult, RunResult
from ._tools import Dispatch

__version__: str = _lt.__version__

__all__ = [
    "check",
    "run",
    "run_async",
    "replay",
    "prompt",
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


def _profile(profile: Profile) -> Tuple[Optional[str], Optional[Mapping[str, Any]]]:
    if profile is None:
        return None, None
    if isinstance(profile, Mapping):
        return None, dict(profile)
    return os.fspath(profile), None


def _declarations(declarations: Optional[Union[str, "os.PathLike[str]"]]) -> Optional[Tuple[str, str]]:
    """``(name, text)`` of declarations given as text (a ``str``) or a file
    (a ``pathlib.Path``)."""
    if declarations is None:
        return None
    if isinstance(declarations, str):
        return ("<tools>", declarations)
    path = os.fspath(declarations)
    try:
        with open(path, encoding="utf-8") as f:
            return (path, f.read())
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", "check the path", "input", path) from None


def check(source: str, tools: Optional[Union[str, "os.PathLike[str]"]] = None, profile: Profile = None) -> CheckResult:
    """Checks ``source`` as ``lt check --json`` does; never raises for a
    program with errors (see ``.ok`` and ``.diagnostics``). ``tools``:
    declarations joined before the program (their text, or a
    ``pathlib.Path`` to a ``.lt`` file, as ``--tools``); ``profile``: a
    ``[profile]`` file's path or a dict of its keys: every call the profile
    would deny is one more diagnostic. Raises :class:`ConfigError` for an
    invalid profile."""
    path, table = _profile(profile)
    report = _unwrap(_lt.check(source, _declarations(tools), path, table))
    return CheckResult._from_report(report)


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
    batch = None
    executors = None
    if isinstance(tools, Mapping):
        dispatch = Dispatch(tools, loop)
        functions = dispatch.functions()
        batch = dispatch.batch if dispatch.any_async else None
    elif tools is not None:
        executors = os.fspath(tools)
    return dict(
        source=source,
        declarations=_declarations(declarations),
        tools=functions,
        batch=batch,
        executors=executors,
        profile_path=path,
        profile_table=table,
        limits=dict(limits) if limits is not None else None,
        log=os.fspath(log) if log is not None else None,
        force=force,
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
    returns its result), or the path of a ``tools.toml``. A function that
    raises, or returns a value of the wrong shape, is the program's
    ``Err``. ``profile``: a file's path or a dict (default: allow all, or
    the ``[profile]`` of ``tools.toml``); ``limits``: ``max_calls``,
    ``max_steps``, ``timeout_ms``, ``max_list_len``; ``log``: the path of
    the session's event log. The GIL is released while no Python tool runs.
    Raises :class:`CheckError` (nothing ran), :class:`ConfigError`,
    :class:`RunStopped`; Ctrl-C cancels the session and raises
    ``KeyboardInterrupt``."""
    args = _run_args(source, tools, declarations, profile, limits, log, force, None)
    return _result(_unwrap(_lt.run(**args)))


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
    runs them concurrently), and the loop stays free meanwhile."""
    loop = asyncio.get_running_loop()
    args = _run_args(source, tools, declarations, profile, limits, log, force, loop)
    report = await loop.run_in_executor(None, functools.partial(_lt.run, **args))
    return _result(_unwrap(report))


def replay(log: PathLike) -> ReplayResult:
    """Re-runs a session from its event log, calling no tool, and says
    whether the program made exactly the recorded calls and reached the
    recorded ending (``lt replay``). Raises :class:`LogError` for a log
    that cannot be read or does not verify."""
    v = _unwrap(_lt.replay(os.fspath(log)))
    return ReplayResult(
        ok=bool(v.get("ok")),
        calls=v.get("calls", 0),
        steps=v.get("steps", 0),
        status=v.get("status"),
        value=v.get("value"),
        kind=v.get("kind"),
        message=v.get("message"),
    )


def prompt(tools: Union[str, "os.PathLike[str]"]) -> str:
    """The system prompt of the agent loop (``lt prompt``): the guide to lt
    for models, then the declarations of ``tools`` (their text, or a
    ``pathlib.Path``). Raises :class:`CheckError` when they have errors."""
    decls = _declarations(tools)
    assert decls is not None
    v = _unwrap(_lt.prompt(decls[1]))
    return str(v["prompt"])
