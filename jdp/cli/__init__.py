"""The ``jdp`` command line.

Each sub-command lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``func(args) -> int``.
Only the module of the command being run is imported (``jdp --help`` imports them all to
list their help), and a command module imports nothing heavy at its top: JAX, pandas,
scikit-learn and the accounting package (dp_accounting, scipy) take seconds to import, so
each command imports its implementation inside the functions that run it, and parsing and
``--help`` stay fast (``tests/cli/test_cli_imports.py``; ``scripts/cli_startup.py`` times it).
Bad input, or an output that cannot be written, exits with status 2 and a one-line reason
on stderr (one JSON object under ``--json``); Ctrl-C exits 130, a closed pipe 141
(:func:`main`). Warnings and errors show no private counts (row count, clipped values,
``1/n``) unless the command was given ``--verbose`` (:mod:`jdp.verbosity`). Long work shows
its progress on a terminal only, and nothing under ``--quiet`` (:mod:`jdp.progress`).

Compiled programs are kept between runs in JAX's persistent compilation cache, in the user's
cache directory (:func:`compile_cache_dir`: ``$XDG_CACHE_HOME/jdp/jax``, else
``~/.cache/jdp/jax``, created readable by its owner only), so a second fit of the same shapes
skips most of its compilation. ``JDP_COMPILE_CACHE=off`` turns it off; a
``JAX_COMPILATION_CACHE_DIR`` already set is left as it is. An entry is an XLA executable,
keyed by the program and the JAX version; a program that closes over an array holds it as a
constant, so entries of a fit may hold values of the data it read: the directory is as private
as the data (delete it, or turn the cache off, on a shared account).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys

from jdp.cli._args import one_line_warnings
from jdp.progress import command as progress_command
from jdp.verbosity import no_progress, show_private_details

# Sub-command modules, in the order ``jdp --help`` lists them.
COMMANDS = ["demo", "schema", "fit", "sample", "evaluate", "report", "datasets", "account", "audit"]


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` whose usage errors are one line (``jdp CMD: error: reason``), or one
    JSON object on stderr when the command line has ``--json``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.exit(_fail(self.prog.removeprefix("jdp").strip() or None, message, 2))


#: Whether errors are printed as JSON (the command line has ``--json``); set by :func:`main`.
_JSON_ERRORS = False

#: A negative number in exponent form (argparse takes ``-1e-5`` for an option, not a value).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def _fail(command: str | None, message: str, code: int) -> int:
    """Print ``message`` as the one error line of ``command`` (JSON under ``--json``)."""
    if _JSON_ERRORS:
        print(json.dumps({"error": message, "command": command}), file=sys.stderr)
    else:
        print(f"jdp {command}: error: {message}" if command else f"jdp: error: {message}",
              file=sys.stderr)  # fmt: skip
    return code


def _message(exc: BaseException) -> str:
    """The first line of an error; an ``OSError`` as ``reason: file``."""
    if isinstance(exc, OSError) and exc.strerror:
        names = [str(f) for f in (exc.filename, exc.filename2) if f is not None]
        return ": ".join([exc.strerror, " -> ".join(names)] if names else [exc.strerror])
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _attach_negative_values(argv: list[str]) -> list[str]:
    """``--delta -1e-5`` -> ``--delta=-1e-5``, so that the value reaches its range check."""
    out: list[str] = []
    for arg in argv:
        prev = out[-1] if out else ""
        if _NEGATIVE_NUMBER.match(arg) and prev.startswith("--") and "=" not in prev:
            out[-1] = f"{prev}={arg}"
        else:
            out.append(arg)
    return out


def _selected_command(argv: list[str]) -> str | None:
    """The sub-command named on the command line, if it is a known one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with full arguments for ``command`` (or for every command if None)."""
    from jdp import __version__

    parser = _Parser(
        prog="jdp", description="Differentially private synthetic data and generative models."
    )
    parser.add_argument("--version", action="version", version=f"jdp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        if command in (None, name):
            importlib.import_module(f"jdp.cli.{name}").register(sub)
        else:
            sub.add_parser(name)
    return parser


#: Set to ``off`` (or ``0``, ``false``, ``no``) to keep no compiled programs between runs.
COMPILE_CACHE_SWITCH = "JDP_COMPILE_CACHE"


def compile_cache_dir(environ: dict[str, str] | os._Environ[str]) -> str | None:
    """Where the CLI keeps compiled programs (module docstring), or ``None`` when the user
    turned the cache off or set JAX's own ``JAX_COMPILATION_CACHE_DIR`` (then JAX uses it)."""
    if environ.get(COMPILE_CACHE_SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return None
    if environ.get("JAX_COMPILATION_CACHE_DIR"):
        return None
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jdp", "jax")


def _use_compile_cache() -> None:
    """Point JAX at :func:`compile_cache_dir` (before JAX is imported, through its environment
    variables; after, through its config), keeping every program however fast it compiled:
    the dozens of small ones a fit compiles add up (a second P3GM fit of Adult took 0.72 of
    the first's CPU seconds keeping those over 0.2 s, 0.67 keeping all; dp-GAN 0.66 and
    0.56; 1.2 MiB of entries instead of 0.8; scripts/bench_compile_cache.py). A directory
    that cannot be made leaves the cache off, silently: it only saves time."""
    path = compile_cache_dir(os.environ)
    if path is None:
        return
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    if "jax" in sys.modules:  # an in-process caller imported it already
        import jax

        jax.config.update("jax_compilation_cache_dir", path)


def main(argv: list[str] | None = None) -> int:
    """Run ``jdp`` on ``argv``; return the exit status.

    0: done (also after ``--help``, ``--version``). 2: bad input (usage errors included) or a failed read/write (one line on stderr naming the problem; one
    JSON object ``{"error": ..., "command": ...}`` under ``--json``). 130: interrupted
    (Ctrl-C), one line. 141 (128 + SIGPIPE, what a shell reports for a Unix tool killed by
    SIGPIPE): the reader of stdout went away (``jdp ... | head``), silently. Any other
    exception is a bug and shows its traceback. Every warning raised while a command runs is
    printed as one ``jdp COMMAND: warning: message`` line on stderr.
    """
    global _JSON_ERRORS
    argv = _attach_negative_values(sys.argv[1:] if argv is None else list(argv))
    _JSON_ERRORS = "--json" in argv
    command = _selected_command(argv)
    try:
        try:
            args = build_parser(command).parse_args(argv)
        except SystemExit as exc:  # --help, --version, a usage error (already printed)
            return exc.code if isinstance(exc.code, int) else 0
        # one warning style for every command: "jdp CMD: warning: message" on stderr; one
        # progress rule: a terminal only, never under --quiet (jdp.progress)
        quiet = getattr(args, "quiet", False)
        _use_compile_cache()
        with (
            show_private_details(getattr(args, "verbose", False)),
            no_progress(quiet),
            progress_command(command),
            one_line_warnings(command),
        ):
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return _fail(command, "interrupted", 130)
    except BrokenPipeError:
        # stdout's reader is gone: point stdout at /dev/null so the final flush is quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (ValueError, TypeError, KeyError, OSError) as exc:
        return _fail(command, _message(exc), 2)


if __name__ == "__main__":
    sys.exit(main())
