"""``python -m lt``: the ``lt`` command line."""

from .cli import main

main()
