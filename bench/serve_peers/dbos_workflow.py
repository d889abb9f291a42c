"""DBOS Transact: a session is a workflow of 3 steps, each step's output
recorded in DBOS's system database (SQLite, DBOS's own settings) before
the next runs. DBOS is a library: the client threads call the workflow in
the same process, as an application embedding it would.

  python dbos_workflow.py DB_PATH|postgresql://… sequential RUNS
  python dbos_workflow.py DB_PATH concurrent CLIENTS SECONDS

Prints one JSON object (driver.py). Runs under the venv that bench/serve.py
installs DBOS into.
"""
import importlib.metadata
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402
from dbos import DBOS  # noqa: E402

path, mode = sys.argv[1], sys.argv[2]


@DBOS.step()
def step1(i):
    return {"tx_id": f"t1-{i}"}


@DBOS.step()
def step2(i, previous):
    return {"tx_id": f"t2-{i}"}


@DBOS.step()
def step3(i, previous):
    return {"tx_id": f"t3-{i}"}


@DBOS.workflow()
def session(i):
    a = step1(i)
    b = step2(i, a["tx_id"])
    c = step3(i, b["tx_id"])
    return c["tx_id"]


def checked(i):
    value = session(i)
    if value != f"t3-{i}":
        raise RuntimeError(f"workflow {i} returned {value!r}")


DBOS(config={
    "name": "lt-serve-bench",
    # A PostgreSQL URL (bench/serve_workers.py), else an SQLite file.
    "system_database_url": path if path.startswith("postgres") else "sqlite:///" + path,
    "sys_db_pool_size": 80,
    "max_executor_threads": 128,
    "run_admin_server": False,
    "log_level": "WARNING",
})
DBOS.launch()
# Several processes on one database (bench/serve_workers.py) open their
# windows at the same instant.
start_at = float(os.environ.get("LT_BENCH_START_AT", "0"))
if start_at > time.time():
    time.sleep(start_at - time.time())
if mode == "sequential":
    result = driver.sequential(checked, int(sys.argv[3]))
else:
    result = driver.concurrent(checked, int(sys.argv[3]), float(sys.argv[4]))
result["dbos"] = importlib.metadata.version("dbos")
DBOS.destroy()
driver.emit(result)
