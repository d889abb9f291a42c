"""Figures of `lt mcp` (docs/performance.md, "lt mcp"), with the official MCP
Python SDK as the client.

1. The size of run_program's description against the sum of the downstream
   tools' JSON definitions (`lt tools export --format mcp`), for 10, 50 and
   200 generated tools.
2. The added latency of run_program for a program of 3 `fixed` calls over
   stdio: the client's round trip, median and p90 over N calls, against a
   tools/list round trip (the protocol's own cost) and a program of no call.

Usage: target/mcp-venv/bin/python bench/mcp_code_mode.py [LT_BINARY] [N]
"""

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

LT = sys.argv[1] if len(sys.argv) > 1 else "target/release/lt"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300


def catalog(n):
    """n tools of a realistic shape: a doc line, a record input of 3 fields,
    a record output of 4; each with a fixed executor."""
    decls, toml = [], []
    for i in range(n):
        decls.append(
            f"// Looks up the order {i} of a customer account and returns its status, total and currency.\n"
            f"tool order_lookup_{i}: {{customer_id: String, order_id: String, include_items: Bool}} "
            f"-{{Read}}-> {{status: String, total_cents: Int, currency: String, items: List String}};"
        )
        toml.append(
            f'[tools.order_lookup_{i}]\nfixed = {{ ok = {{ status = "paid", total_cents = 1, currency = "EUR", items = [] }} }}\n'
        )
    return "\n".join(decls) + "\n", "\n".join(toml)


async def session(dirname, steps):
    params = StdioServerParameters(
        command=os.path.abspath(LT),
        args=["mcp", "--tools", "tools.lt", "--executors", "tools.toml"],
        cwd=dirname,
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            return await steps(s)


def sizes():
    rows = []
    for n in (10, 50, 200):
        with tempfile.TemporaryDirectory() as d:
            decls, toml = catalog(n)
            open(os.path.join(d, "tools.lt"), "w").write(decls)
            open(os.path.join(d, "tools.toml"), "w").write(toml)
            exported = subprocess.run(
                [os.path.abspath(LT), "tools", "export", "--format", "mcp", "tools.lt"],
                cwd=d, capture_output=True, text=True, check=True,
            ).stdout
            tools = json.loads(exported)
            tools = tools["tools"] if isinstance(tools, dict) else tools
            json_chars = sum(len(json.dumps(t, separators=(",", ":"))) for t in tools)

            async def describe(s):
                listed = await s.list_tools()
                return listed.tools[0].description

            desc = asyncio.run(session(d, describe))
            rows.append((n, len(desc), json_chars, "search first" if "search_tools with" in desc else "declarations"))
    return rows


def latency():
    with tempfile.TemporaryDirectory() as d:
        decls, toml = catalog(3)
        open(os.path.join(d, "tools.lt"), "w").write(decls)
        open(os.path.join(d, "tools.toml"), "w").write(toml)
        three = "\n".join(
            f'let r{i} = exec tool order_lookup_{i} {{customer_id = "c", order_id = "o{i}", include_items = false}} in'
            for i in range(3)
        ) + "\n{a = match r0 { Ok(x) => x.total_cents, Err(e) => 0 }, b = match r1 { Ok(x) => x.total_cents, Err(e) => 0 }, c = match r2 { Ok(x) => x.total_cents, Err(e) => 0 }}"

        async def measure(s):
            out = {}
            for name, call in (
                ("tools/list", lambda: s.list_tools()),
                ("run_program, no call", lambda: s.call_tool("run_program", {"program": "1 + 1"})),
                ("run_program, 3 fixed calls", lambda: s.call_tool("run_program", {"program": three})),
            ):
                for _ in range(20):  # warm up
                    await call()
                times = []
                for _ in range(N):
                    t0 = time.perf_counter()
                    r = await call()
                    times.append((time.perf_counter() - t0) * 1000)
                    if hasattr(r, "isError") and r.isError:
                        raise SystemExit(f"{name} failed: {r}")
                times.sort()
                out[name] = (statistics.median(times), times[int(len(times) * 0.9)])
            return out

        return asyncio.run(session(d, measure))


if __name__ == "__main__":
    print("| tools | run_program's description (chars) | the tools' MCP JSON definitions (chars) | description shows |")
    print("|---:|---:|---:|---|")
    for n, desc, js, mode in sizes():
        print(f"| {n} | {desc:,} | {js:,} | {mode} |")
    print()
    print(f"| request ({N} each) | median ms | p90 ms |")
    print("|---|---:|---:|")
    for name, (med, p90) in latency().items():
        print(f"| {name} | {med:.3f} | {p90:.3f} |")
