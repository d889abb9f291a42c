"""The exceptions of the lt package, and how the extension's failures
(``{"failure": {"class": ...}}``) become them. Every error lt raises is an
``lt.Error``; none is a bare ``RuntimeError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

if TYPE_CHECKING:
    from ._results import CheckResult


class Error(Exception):
    """The base of every lt error: ``message`` and, where there is one,
    ``help`` (the fix)."""

    def __init__(self, message: str, help: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.help = help

    def __str__(self) -> str:
        return self.message if not self.help else f"{self.message}\n  = help: {self.help}"


class CheckError(Error):
    """The checker rejected the program: nothing ran. ``diagnostics`` holds
    every error (``str(d)`` is rendered as ``lt check`` prints it);
    ``result`` is the whole :class:`CheckResult`."""

    def __init__(self, message: str, result: "CheckResult") -> None:
        super().__init__(message)
        self.result = result
        self.diagnostics = result.diagnostics

    def __str__(self) -> str:
        return f"{self.message}\n{self.result.rendered}"

    def __reduce__(self) -> Any:
        # Pickled (multiprocessing, concurrent.futures) and copied with its
        # result: an exception is rebuilt from its args, which hold only
        # the message.
        return (type(self), (self.message, self.result), self.__dict__)


class ConfigError(Error):
    """The session could not start: an invalid tools.toml or profile, a
    missing tool function, a log that would be replaced, bad limits.
    ``stage`` says which; ``file``, ``line`` and ``column`` point at the
    fault where there is one."""

    def __init__(
        self,
        message: str,
        help: Optional[str] = None,
        stage: Optional[str] = None,
        file: Optional[str] = None,
        line: Optional[int] = None,
        column: Optional[int] = None,
    ) -> None:
        super().__init__(message, help)
        self.stage = stage
        self.file = file
        self.line = line
        self.column = column

    def __str__(self) -> str:
        at = ""
        if self.file:
            at = f"{self.file}"
            if self.line is not None:
                at += f":{self.line}"
                if self.column is not None:
                    at += f":{self.column}"
            at += ": "
        return at + super().__str__()


class RunStopped(Error):
    """The run stopped before the program's value: a limit (``kind`` is
    ``call_limit``, ``step_limit``, ``timeout``, ``size_limit``), an
    arithmetic fault, a cancellation, or an internal error; ``line`` and
    ``column`` locate the expression, ``calls`` and ``steps`` say how far it
    got, ``session`` is the session's id (its log's)."""

    def __init__(
        self,
        message: str,
        help: Optional[str] = None,
        kind: str = "internal",
        line: Optional[int] = None,
        column: Optional[int] = None,
        calls: int = 0,
        steps: int = 0,
        session: Optional[str] = None,
    ) -> None:
        super().__init__(message, help)
        self.kind = kind
        self.line = line
        self.column = column
        self.calls = calls
        self.steps = steps
        self.session = session

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.kind}: {super().__str__()}"
        return f"{self.kind} at line {self.line}, column {self.column}: {super().__str__()}"


class LogError(Error):
    """An event log that cannot be read, does not verify, or records no
    session."""

    def __init__(self, message: str, help: Optional[str] = None, file: Optional[str] = None) -> None:
        super().__init__(message, help)
        self.file = file


class InternalError(Error):
    """A bug in lt (a panic caught at the boundary): please report it."""


def raise_failure(failure: Dict[str, Any]) -> None:
    """Raises the exception of one failure object from the extension."""
    from ._results import CheckResult

    cls = failure.get("class")
    message = str(failure.get("message", ""))
    help = failure.get("help")
    if cls == "CheckError":
        raise CheckError(message, CheckResult._from_report(failure.get("report") or {}))
    if cls == "ConfigError":
        raise ConfigError(
            message,
            help,
            failure.get("stage"),
            failure.get("file"),
            failure.get("line"),
            failure.get("column"),
        )
    if cls == "RunStopped":
        raise RunStopped(
            message,
            help,
            failure.get("kind", "internal"),
            failure.get("line"),
            failure.get("column"),
            failure.get("calls", 0),
            failure.get("steps", 0),
            failure.get("session"),
        )
    if cls == "LogError":
        raise LogError(message, help, failure.get("file"))
    raise InternalError(message, help)


def a_type(value: Any) -> str:
    """``an int``, ``a list``: the name of ``value``'s type with its article
    (for the words of a ``TypeError``)."""
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"
