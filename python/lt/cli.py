"""The ``lt`` command line shipped in the wheel: ``pip install`` gives the
``lt`` command (and ``python -m lt``), the same program as the Rust
binary, run through the extension."""

from __future__ import annotations

import sys

from . import _lt


def main() -> None:
    """Runs ``lt`` with this process's arguments and exits with its status."""
    sys.exit(_lt.main(["lt", *sys.argv[1:]]))
