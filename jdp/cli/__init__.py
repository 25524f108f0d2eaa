"""The ``jdp`` command line.

Each sub-command lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``func(args) -> int``.
Bad input exits with status 2 and a one-line reason on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Sub-command modules, in the order ``jdp --help`` lists them.
COMMANDS = ["account"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jdp", description="Differentially private synthetic data and generative models."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"jdp.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, KeyError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"jdp {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
