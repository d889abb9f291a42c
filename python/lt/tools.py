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
from ._errors import ConfigError, a_type, raise_failure

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


# The deepest definitions converted to JSON text (json.dumps would raise
# RecursionError, or ValueError for a cycle, far below Python's limit).
_MAX_DEPTH = 200


def _too_deep(value: Any) -> Optional[str]:
    """The path of the first part of ``value`` nested deeper than
    ``_MAX_DEPTH`` (or in a cycle), e.g. ``defs[0]["function"]…``; ``None``
    when there is none. Iterative: never a RecursionError itself."""
    stack: List[Tuple[Any, str, int]] = [(value, "defs", 0)]
    while stack:
        v, path, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return path
        if isinstance(v, dict):
            stack.extend((item, f"{path}[{json.dumps(k)}]", depth + 1) for k, item in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(v))
    return None


def _text(defs: Definitions) -> str:
    from . import _utf8

    if defs is None:
        raise TypeError("the definitions are None: give them as parsed JSON (lists, dicts) or its text")
    if isinstance(defs, str):
        if not defs.strip():
            raise ConfigError(
                "the definitions are empty text",
                'give the JSON of tool definitions, e.g. [{"type": "function", "function": {"name": …, "parameters": {…}}}]',
                "input",
            )
        return _utf8(defs, "the definitions' text")
    deep = _too_deep(defs)
    if deep is not None:
        if len(deep) > 200:
            deep = deep[:150] + "…" + deep[-40:]
        raise ConfigError(
            f"the definitions are nested more than {_MAX_DEPTH} levels deep (a cycle?) at {deep}",
            "give tool definitions as parsed JSON (lists, dicts) or its text",
            "input",
        )
    try:
        # Not ASCII-escaped: a lone surrogate stays one, for `_utf8` to name
        # (escaped, "\\ud800" is JSON no reader takes).
        text = json.dumps(defs, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"the definitions are not JSON: {e}", "give the parsed JSON (lists, dicts) or its text", "input") from None
    return _utf8(text, "the definitions (as JSON)")


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
        if not isinstance(command, (list, tuple)):
            raise TypeError(f"command= is {a_type(command)}: give a list of the program and its arguments, e.g. [\"uvx\", \"mcp-server-time\"]")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise TypeError(f"timeout_ms= is {a_type(timeout_ms)}: give an int of milliseconds")
        if not 0 < timeout_ms < 2**63:
            raise ConfigError(
                f"timeout_ms={timeout_ms} is out of range: give the milliseconds to wait for the server, at least 1",
                "e.g. timeout_ms=60000 (the default)",
                "input",
            )
        return _imported(_unwrap(_lt.import_server([_arg(c) for c in command], timeout_ms)))
    assert tools_list is not None
    return _imported(_unwrap(_lt.import_tools(_text(tools_list), "mcp")))


def _arg(c: Any) -> str:
    """One item of ``command=``, as a ``str``."""
    from . import _fspath

    return _fspath(c, "an item of command=", "the program or an argument")


def _declarations(decls: Union[str, "os.PathLike[str]"]) -> Tuple[str, str]:
    from . import _declarations as read

    d = read(decls, "declarations")
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
