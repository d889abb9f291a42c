"""The typed results: :class:`CheckResult` (the fields of ``lt check
--json``), :class:`Diagnostic`, :class:`RunResult`, :class:`ReplayResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class Label:
    """A secondary label of a diagnostic (1-based lines and columns)."""

    message: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Diagnostic:
    """One error or warning, with a stable ``code`` (``lt explain CODE``),
    its exact location and a concrete fix (``help``). ``str(d)`` is the
    diagnostic as ``lt check`` prints it."""

    code: str
    severity: str
    message: str
    label: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    labels: List[Label]
    notes: List[str]
    help: Optional[str]
    expected: Optional[str] = None
    found: Optional[str] = None
    rendered: str = field(default="", repr=False, compare=False)

    def __str__(self) -> str:
        return self.rendered

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "Diagnostic":
        return cls(
            code=d["code"],
            severity=d["severity"],
            message=d["message"],
            label=d["label"],
            file=d["file"],
            line=d["line"],
            column=d["column"],
            end_line=d["end_line"],
            end_column=d["end_column"],
            labels=[Label(**label) for label in d.get("labels", [])],
            notes=list(d.get("notes", [])),
            help=d.get("help"),
            expected=d.get("expected"),
            found=d.get("found"),
            rendered=d.get("rendered", ""),
        )


@dataclass(frozen=True)
class CheckResult:
    """What ``lt.check`` found: ``ok`` (well-typed), the program's ``type``
    and ``effects`` (``None`` and ``[]`` when it has errors), every
    diagnostic, and how many more were ``truncated``."""

    ok: bool
    type: Optional[str]
    effects: List[str]
    diagnostics: List[Diagnostic]
    truncated: int = 0
    profile: Optional[str] = None
    rendered: str = field(default="", repr=False, compare=False)

    @classmethod
    def _from_report(cls, r: Dict[str, Any]) -> "CheckResult":
        return cls(
            ok=bool(r.get("ok")),
            type=r.get("type"),
            effects=list(r.get("effects", [])),
            diagnostics=[Diagnostic._from_json(d) for d in r.get("diagnostics", [])],
            truncated=int(r.get("truncated", 0)),
            profile=r.get("profile"),
            rendered=r.get("rendered", ""),
        )


@dataclass(frozen=True)
class RunResult:
    """A finished run: the program's ``value`` (JSON-shaped Python data; a
    ``Result`` is ``{"Ok": v}`` or ``{"Err": e}``), its ``type`` and
    ``effects``, the ``calls`` and ``steps`` it used, the ``session`` id
    (the log's), and ``elapsed_ms``."""

    value: Any
    type: str
    effects: List[str]
    calls: int
    steps: int
    session: str
    elapsed_ms: float


@dataclass(frozen=True)
class ReplayResult:
    """The verdict of ``lt.replay``: ``ok`` when the program made exactly
    the recorded calls and reached the recorded ending. When it differs,
    ``kind`` (``incomplete``, ``non_determinism``, ``different_value``) and
    ``message`` say how. A session stopped from outside the program
    (cancelled: Ctrl-C, a tool raising ``KeyboardInterrupt``, Python's
    exit; or its wall-clock deadline) replays only up to that stop (replay
    has no clock and no cancel): ``ok`` when every recorded call was made,
    ``cancelled`` or ``timed_out`` set, ``status == "error"``, and no
    ``steps`` or ``value`` (``lt replay --json`` gives the same)."""

    ok: bool
    calls: int = 0
    steps: int = 0
    status: Optional[str] = None
    value: Any = None
    kind: Optional[str] = None
    message: Optional[str] = None
    cancelled: bool = False
    timed_out: bool = False
