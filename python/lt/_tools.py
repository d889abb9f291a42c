"""Python functions (sync or ``async``) as lt tools: each is called with
the tool's argument (JSON-shaped data: a record is a ``dict``) and returns
its result. An ``async`` function is awaited: on the caller's event loop
under ``lt.run_async``, with ``asyncio.run`` under ``lt.run``. A batch of
independent calls (``gather``, ``fan_out``) runs its async tools
concurrently."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Tuple

Tool = Callable[[Any], Any]
Outcome = Tuple[bool, Any]


def _raised(tool: str, e: BaseException) -> str:
    msg = str(e)
    name = type(e).__name__
    return f"tool {tool} raised {name}: {msg}" if msg else f"tool {tool} raised {name}"


async def _await(x: Awaitable[Any]) -> Any:
    return await x


class Dispatch:
    """The functions of one run, adapted to the extension's calling
    convention (one argument in, the result out; a batch of pairs)."""

    def __init__(self, tools: Mapping[str, Tool], loop: Optional[asyncio.AbstractEventLoop]) -> None:
        self.tools = dict(tools)
        self.loop = loop
        self.any_async = any(inspect.iscoroutinefunction(f) for f in self.tools.values())

    def _finish(self, result: Any) -> Any:
        """The value of a result that may be awaitable."""
        if not inspect.isawaitable(result):
            return result
        if self.loop is not None:
            return asyncio.run_coroutine_threadsafe(_await(result), self.loop).result()
        return asyncio.run(_await(result))

    def wrap(self, name: str, f: Tool) -> Tool:
        def call(arg: Any) -> Any:
            return self._finish(f(arg))

        call.__name__ = getattr(f, "__name__", name)
        return call

    def functions(self) -> Dict[str, Tool]:
        return {name: self.wrap(name, f) for name, f in self.tools.items()}

    def batch(self, calls: List[Tuple[str, Any]]) -> List[Outcome]:
        """Every call of a batch: sync ones in turn, then the awaitables of
        all the async ones together."""
        outcomes: List[Optional[Outcome]] = [None] * len(calls)
        pending: List[Tuple[int, str, Awaitable[Any]]] = []
        for i, (name, arg) in enumerate(calls):
            f = self.tools.get(name)
            if f is None:
                outcomes[i] = (False, f"tool {name} has no in-process function")
                continue
            try:
                r = f(arg)
            except Exception as e:  # a raising tool is the call's Err
                outcomes[i] = (False, _raised(name, e))
                continue
            if inspect.isawaitable(r):
                pending.append((i, name, r))
            else:
                outcomes[i] = (True, r)
        if pending:

            async def together() -> List[Any]:
                return await asyncio.gather(*(p[2] for p in pending), return_exceptions=True)

            if self.loop is not None:
                results = asyncio.run_coroutine_threadsafe(together(), self.loop).result()
            else:
                results = asyncio.run(together())
            for (i, name, _), r in zip(pending, results):
                if isinstance(r, BaseException):
                    outcomes[i] = (False, _raised(name, r))
                else:
                    outcomes[i] = (True, r)
        return [o if o is not None else (False, "no outcome") for o in outcomes]
