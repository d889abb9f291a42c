"""Restate: a session is a call of the handler `Bench/session`, 3 steps of
`ctx.run`, each step's result journaled by restate-server before the
handler goes on. This file is the service and its host (hypercorn, one
process, HTTP/2 cleartext, which restate-server speaks to its deployments):

  python restate_service.py PORT

bench/serve.py starts restate-server, this service, registers it, and
drives the ingress (`POST /Bench/session` with body `i`, answered with
`"t3-i"` when the workflow is done) with serve_load --call.
"""
import asyncio
import sys

import hypercorn.asyncio
import hypercorn.config
import restate
from restate import Context, Service

bench = Service("Bench")


async def step(n, i):
    return {"tx_id": f"t{n}-{i}"}


@bench.handler()
async def session(ctx: Context, i: int) -> str:
    a = await ctx.run_typed("step1", step, n=1, i=i)
    b = await ctx.run_typed("step2", step, n=2, i=i)
    c = await ctx.run_typed("step3", step, n=3, i=i)
    assert a["tx_id"] and b["tx_id"]
    return c["tx_id"]


app = restate.app(services=[bench])

if __name__ == "__main__":
    cfg = hypercorn.config.Config()
    cfg.bind = [f"127.0.0.1:{int(sys.argv[1])}"]
    cfg.loglevel = "WARNING"
    asyncio.run(hypercorn.asyncio.serve(app, cfg))
