"""Every ```python example of docs/python.md runs (each in a fresh
namespace)."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_example_runs(i):
    exec(compile(BLOCKS[i], f"{DOC}:block{i}", "exec"), {"__name__": f"doc{i}"})
