"""The package's type stubs: mypy (strict) accepts a typed use of the
API and rejects a wrong one."""

import os
import subprocess
import sys
import textwrap

GOOD = """
import asyncio
import lt

def lookup(arg: dict) -> dict:
    return {"id": "c1"}

r: lt.CheckResult = lt.check("1 + 2")
d: list[lt.Diagnostic] = r.diagnostics
t: str | None = r.type
res: lt.RunResult = lt.run("1", tools={"lookup": lookup}, limits={"max_calls": 3})
v: lt.ReplayResult = lt.replay("s.jsonl")
p: str = lt.prompt("tool a: Int -{}-> Int;")
imported: lt.tools.Imported = lt.tools.from_openai([{"type": "function", "function": {"name": "a"}}])
defs: list[dict[str, object]] = lt.tools.to_openai(imported.declarations)
c: lt.CheckResult = lt.check("1", declarations=imported.declarations)
async def main() -> lt.RunResult:
    return await lt.run_async("1")
try:
    pass
except lt.CheckError as e:
    print(e.diagnostics[0].code)
except lt.RunStopped as e:
    print(e.kind, e.calls)
"""

BAD = """
import lt
r = lt.check(42)
x: int = lt.run("1").value.nope + r.ok.upper()
"""


def mypy(tmp_path, text):
    f = tmp_path / "use.py"
    f.write_text(textwrap.dedent(text))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.10",
         "--cache-dir", os.devnull, str(f)],
        capture_output=True, text=True, cwd=tmp_path,
    )


def test_typed_use_passes_strict_mypy(tmp_path):
    out = mypy(tmp_path, GOOD.replace("arg: dict) -> dict", "arg: object) -> object"))
    assert out.returncode == 0, out.stdout + out.stderr


def test_wrong_use_is_rejected(tmp_path):
    out = mypy(tmp_path, BAD)
    assert out.returncode == 1, out.stdout
    assert 'incompatible type "int"' in out.stdout
    assert '"bool" has no attribute "upper"' in out.stdout
