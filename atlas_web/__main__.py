"""``python -m atlas_web``: the command line.

Commands (a table of name -> (help, handler)):

* ``backends`` prints every registered backend, whether it can start here,
  and its devices or the reason it cannot (exit status 1 when none can).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from . import __version__


def _backends(args: argparse.Namespace) -> int:
    from .registry import print_backend_summary
    statuses = print_backend_summary()
    return 0 if any(status.available for status in statuses) else 1


#: command name -> (one-line help, handler returning the exit status)
COMMANDS: dict[str, tuple[str, Callable[[argparse.Namespace], int]]] = {
    "backends": ("list the registered backends and whether each can start here", _backends),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one subcommand per row of COMMANDS."""
    parser = argparse.ArgumentParser(
        prog="python -m atlas_web",
        description="atlas-web: run Atlas ISA programs on NumPy, WebAssembly and WebGPU.")
    parser.add_argument("--version", action="version", version=f"atlas-web {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (summary, handler) in COMMANDS.items():
        commands.add_parser(name, help=summary, description=summary).set_defaults(handler=handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: sys.argv[1:]); returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
