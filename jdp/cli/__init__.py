"""The ``jdp`` command line.

Each sub-command lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``func(args) -> int``.
Only the module of the command being run is imported (some pull in JAX or scikit-learn,
which take seconds to import); ``jdp --help`` imports them all to list their help.
Bad input exits with status 2 and a one-line reason on stderr. Warnings and errors show no
private counts (row count, clipped values, ``1/n``) unless the command was given ``--verbose``
(:mod:`jdp.verbosity`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jdp.verbosity import show_private_details

# Sub-command modules, in the order ``jdp --help`` lists them.
COMMANDS = ["demo", "schema", "fit", "sample", "evaluate", "report", "datasets", "account"]


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose usage errors are one line (``jdp CMD: error: reason``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def _selected_command(argv: list[str]) -> str | None:
    """The sub-command named on the command line, if it is a known one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with full arguments for ``command`` (or for every command if None)."""
    parser = _Parser(
        prog="jdp", description="Differentially private synthetic data and generative models."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        if command in (None, name):
            importlib.import_module(f"jdp.cli.{name}").register(sub)
        else:
            sub.add_parser(name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_selected_command(argv)).parse_args(argv)
    try:
        with show_private_details(getattr(args, "verbose", False)):
            return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, KeyError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"jdp {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
