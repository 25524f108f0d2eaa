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
COMMANDS = ["demo", "fit", "sample", "evaluate", "report", "datasets", "account"]


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose usage errors are one line (``jdp CMD: error: reason``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
