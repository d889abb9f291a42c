"""``lt.tools``: tool schemas in and out, with the importer and exporter of
``lt tools import`` / ``lt tools export`` (the Rust library's, through the
extension; nothing is mapped again in Python).

    imported = lt.tools.from_openai(openai_tools)   # definitions -> declarations
    lt.check(program, declarations=imported.declarations)
    lt.tools.to_openai(imported.declarations)        # declarations -> definitions

See ``docs/python.md`` and ``docs/tool-schemas.md``.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lt
from ._errors import ConfigError, raise_failure

__all__ = [
    "Imported",
    "from_openai",
    "from_anthropic",
    "from_mcp",
    "to_openai",
    "to_anthropic",
    "to_mcp",
]

Definitions = Union[str, Sequence[Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class Imported:
    """Imported definitions: ``declarations`` (lt text, for
    ``declarations=``), ``tools_toml`` (a ``tools.toml`` skeleton: the
    executors to fill in, or an ``mcp`` executor per tool of a live
    server), ``tools`` (the lt names, in order; ``original`` maps each to
    the definition's name when it had to change) and ``warnings``."""

    declarations: str
    tools_toml: str
    tools: List[str]
    original: Dict[str, str] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)


def _unwrap(v: Any) -> Dict[str, Any]:
    if isinstance(v, dict) and "failure" in v:
        raise_failure(v["failure"])
    assert isinstance(v, dict)
    return v


def _imported(v: Dict[str, Any]) -> Imported:
    tools = [t["name"] for t in v["tools"]]
    return Imported(
        declarations=v["declarations"],
        tools_toml=v["tools_toml"],
        tools=tools,
        original={t["name"]: t["original"] for t in v["tools"]},
        warnings=list(v["warnings"]),
    )


def _text(defs: Definitions) -> str:
    if isinstance(defs, str):
        return defs
    try:
        return json.dumps(defs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"the definitions are not JSON: {e}", "give the parsed JSON (lists, dicts) or its text", "input") from None


def from_openai(defs: Definitions) -> Imported:
    """OpenAI tool definitions (``[{"type": "function", "function": {...}}]``,
    or the text of that JSON) as lt declarations. Raises
    :class:`lt.ConfigError` for definitions that cannot be imported."""
    return _imported(_unwrap(_lt.import_tools(_text(defs), "openai")))


def from_anthropic(defs: Definitions) -> Imported:
    """Anthropic tool definitions (``[{"name", "description",
    "input_schema"}]``) as lt declarations."""
    return _imported(_unwrap(_lt.import_tools(_text(defs), "anthropic")))


def from_mcp(
    tools_list: Optional[Definitions] = None,
    *,
    command: Optional[Sequence[str]] = None,
    timeout_ms: int = 60_000,
) -> Imported:
    """An MCP ``tools/list`` result (``{"tools": [...]}``), or the tools of
    the live MCP server ``command`` starts (stdio), as lt declarations;
    with ``command``, ``tools_toml`` gives each tool an ``mcp`` executor
    running that server. Give one of the two."""
    if (tools_list is None) == (command is None):
        raise ConfigError(
            "from_mcp takes a tools/list result or command=, one of the two",
            'lt.tools.from_mcp({"tools": [...]}) or lt.tools.from_mcp(command=["uvx", "mcp-server-time"])',
            "input",
        )
    if command is not None:
        if isinstance(command, str):
            raise ConfigError("command= is a list of the program and its arguments, not a str", 'e.g. command=["uvx", "mcp-server-time"]', "input")
        return _imported(_unwrap(_lt.import_server([os.fspath(c) for c in command], int(timeout_ms))))
    assert tools_list is not None
    return _imported(_unwrap(_lt.import_tools(_text(tools_list), "mcp")))


def _declarations(decls: Union[str, "os.PathLike[str]"]) -> Tuple[str, str]:
    from . import _declarations as read

    d = read(decls)
    if d is None:
        raise ConfigError(
            "the declarations to export are None",
            'give their text or a .lt file, e.g. lt.tools.to_openai(pathlib.Path("tools.lt"))',
            "input",
        )
    return d


def _export(decls: Union[str, "os.PathLike[str]"], fmt: str) -> Any:
    v = _unwrap(_lt.export_tools(_declarations(decls), fmt))
    for w in v["warnings"]:
        warnings.warn(w, stacklevel=3)
    return v["definitions"]


def to_openai(declarations: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    """The OpenAI definitions (strict mode where lt's types allow it) of the
    tools ``declarations`` declares (their text, or a ``pathlib.Path``).
    Raises :class:`lt.CheckError` when they have errors,
    :class:`lt.ConfigError` when a tool cannot be exported."""
    defs = _export(declarations, "openai")
    assert isinstance(defs, list)
    return defs


def to_anthropic(declarations: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    """The Anthropic definitions of the tools ``declarations`` declares."""
    defs = _export(declarations, "anthropic")
    assert isinstance(defs, list)
    return defs


def to_mcp(declarations: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """The MCP ``tools/list`` result (``{"tools": [...]}``) of the tools
    ``declarations`` declares."""
    defs = _export(declarations, "mcp")
    assert isinstance(defs, dict)
    return defs
