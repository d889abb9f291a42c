"""The ``lt`` command line shipped in the wheel: ``pip install`` gives the
``lt`` command (and ``python -m lt``), the same program as the Rust
binary, run through the extension."""

from __future__ import annotations

import sys

from . import _lt


def main() -> None:
    """Runs ``lt`` with this process's arguments and exits with its status
    (2, a usage error, for an argument that is not UTF-8)."""
    for arg in sys.argv[1:]:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape")
            print(f"error: the argument {shown!r} is not UTF-8", file=sys.stderr)
            print("  = help: lt takes UTF-8 file names and arguments; rename the file", file=sys.stderr)
            sys.exit(2)
    sys.exit(_lt.main(["lt", *sys.argv[1:]]))
