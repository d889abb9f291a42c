"""The `lt` command line shipped in the wheel (the console script and
`python -m lt`) is the Rust CLI: same output, same exit codes."""

import os
import pathlib
import subprocess
import sys

import pytest

LT = pathlib.Path(sys.executable).parent / "lt"


@pytest.mark.parametrize("cmd", [[str(LT)], [sys.executable, "-m", "lt"]])
def test_check_exit_codes_and_output(tmp_path, cmd):
    good = tmp_path / "ok.lt"
    good.write_text("1 + 2")
    out = subprocess.run(cmd + ["check", str(good)], capture_output=True, text=True)
    assert out.returncode == 0 and "type: Int" in out.stdout
    bad = tmp_path / "bad.lt"
    bad.write_text('1 + "x"')
    out = subprocess.run(cmd + ["check", str(bad)], capture_output=True, text=True)
    assert out.returncode == 1 and "E0" in out.stderr
    out = subprocess.run(cmd + ["check", str(tmp_path / "missing.lt")], capture_output=True, text=True)
    assert out.returncode == 2


@pytest.mark.parametrize("cmd", [[str(LT)], [sys.executable, "-m", "lt"]])
def test_an_argument_that_is_not_utf8_is_a_usage_error(tmp_path, cmd):
    name = os.fsencode(str(tmp_path)) + b"/\xff.lt"
    out = subprocess.run([os.fsencode(c) for c in cmd] + [b"check", name], capture_output=True)
    assert out.returncode == 2, out
    assert b"not UTF-8" in out.stderr and b"Traceback" not in out.stderr, out.stderr
