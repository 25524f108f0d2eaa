"""What the command modules share: the common flags (declared once), key streams, warnings.

Every command adds the flags it takes with :func:`add_flags`, by name; a command that needs
another default or help text for a shared flag passes it as an override (``--out`` is a
model directory for ``fit``, a CSV file for ``sample``), so each flag's spelling, type and
usual meaning live here once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import warnings
import zlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jax

    from jdp.synth.base import FittedModel

#: Commands that draw randomness from ``--seed``; each gets its own stream.
SEED_STREAMS = ("fit", "sample")

#: ``--seed`` takes an integer in ``[0, MAX_SEED]`` (a 63-bit ``jax.random.key`` seed).
MAX_SEED = 2**63 - 1


def seed_value(text: str) -> int:
    """``--seed``'s type: an integer in ``[0, MAX_SEED]`` (argparse reports the error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, 2**63 - 1], got {text}")
    return value


#: The shared flags: name -> (option strings, ``add_argument`` keyword arguments).
FLAGS: Mapping[str, tuple[tuple[str, ...], Mapping[str, Any]]] = {
    "json": (("--json",), {"action": "store_true", "help": "print one JSON object"}),
    "quiet": (
        ("--quiet",),
        {"action": "store_true", "help": "no progress output (shown on a terminal only)"},
    ),
    "seed": (
        ("--seed",),
        {"type": seed_value, "help": "fixed seed (research only; default: OS entropy)"},
    ),
    "verbose": (
        ("--verbose",),
        {
            "action": "store_true",
            "help": "show private counts (rows, clipped values, 1/n) in warnings and errors, "
            "and the warnings whose presence depends on the data (values clipped, records "
            "dropped, delta >= 1/n); for the data holder's own terminal only",
        },
    ),
    "out": (("--out",), {"metavar": "DIR", "help": "output directory"}),
    "method": (("--method",), {"help": "registered synthesizer name"}),
    "epsilon": (("--epsilon",), {"type": float, "help": "privacy budget epsilon (> 0)"}),
    "delta": (
        ("--delta",),
        {"type": float, "default": 1e-5, "help": "privacy budget delta (default 1e-5)"},
    ),
    "dataset": (
        ("--dataset",),
        {"metavar": "NAME", "help": "a named dataset's training split (e.g. adult)"},
    ),
    "data": (("--data",), {"metavar": "PATH", "help": "training CSV (needs --schema)"}),
    "schema": (
        ("--schema",),
        {
            "metavar": "PATH",
            "help": "public schema JSON of --data, or a saved DP schema release (its cost is "
            "charged)",
        },
    ),
}

#: The training data flags of ``fit`` (read by :func:`jdp.cli.fit.training_data`).
DATA_FLAGS = ("dataset", "data", "schema")


def add_flags(parser: argparse.ArgumentParser, *names: str, **overrides: Mapping[str, Any]) -> None:
    """Add the shared flags ``names`` (keys of :data:`FLAGS`) to ``parser``, in that order.

    ``overrides[name]`` updates that flag's keyword arguments (a command's own default,
    ``required`` or help text); an override for a flag not in ``names`` is an error.
    """
    bad = [n for n in (*names, *overrides) if n not in FLAGS or n not in names]
    if bad:
        raise ValueError(f"expected a shared flag named in names, got {bad[0]!r}")
    for name in names:
        options, kwargs = FLAGS[name]
        parser.add_argument(*options, **{**kwargs, **overrides.get(name, {})})


def add_command(
    subparsers: argparse._SubParsersAction, name: str, doc: str, *, help: str, **kwargs: Any
) -> argparse.ArgumentParser:
    """The parser of command ``name``: ``help`` for ``jdp --help``, and as description the
    second paragraph of the command module's docstring ``doc`` (its first is the synopsis);
    ``kwargs`` go to ``add_parser``."""
    return subparsers.add_parser(
        name, help=help, description=doc.split("\n\n")[1].replace("\n", " "), **kwargs
    )


def output_path(text: str, *, kind: str, flag: str = "--out") -> Path:
    """Check an output path before any work: raises ``ValueError`` with a one-line reason.

    Refuses an empty path, a path below a file, a parent directory the user cannot write
    (outputs are written beside the target, then renamed into place), a ``kind="dir"``
    target that is a file, and a ``kind="file"`` target that is a directory.
    """
    if kind not in ("dir", "file"):
        raise ValueError(f"expected kind 'dir' or 'file', got {kind!r}")
    if not str(text).strip():
        raise ValueError(f"expected a path for {flag}, got an empty string")
    path = Path(text)
    parent = Path(os.path.abspath(path)).parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: directory {parent} is not writable")
    if kind == "dir" and path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {path} exists and is not a directory")
    if kind == "file" and path.is_dir():
        raise ValueError(f"{flag} {path} is a directory; expected a file path")
    return path


@contextlib.contextmanager
def replaced_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``.

    An error, Ctrl-C or ``kill -9`` before the end leaves the old ``path`` (or none) and
    never a partial file under its name (a hidden ``.NAME.*.tmp`` at most, after kill -9).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def command_key(seed: int | None, command: str) -> jax.Array:
    """The key of ``command``: ``fold_in(key_from_seed(seed), crc32(command))``.

    ``jdp fit --seed S`` and ``jdp sample --seed S`` must not reuse one key (the sampler
    would replay the noise of the fit), so every command folds its own name into the key.
    Without a seed the base key comes from fresh OS entropy (:func:`key_from_seed`).
    """
    import jax

    from jdp.random import key_from_seed

    if command not in SEED_STREAMS:
        raise ValueError(f"expected command in {SEED_STREAMS}, got {command!r}")
    return jax.random.fold_in(key_from_seed(seed), zlib.crc32(command.encode()))


def model_summary(model: FittedModel, **details: Any) -> dict[str, Any]:
    """The ``--json`` object of a command that fitted ``model``: method, spent epsilon at the
    budget's delta, the budget, the command's ``details``, then the ledger."""
    budget = model.budget
    return {
        "method": model.method,
        "epsilon": model.epsilon(),
        "delta": budget.delta,
        "budget": {"epsilon": budget.epsilon, "delta": budget.delta},
        **details,
        "ledger": model.ledger.to_dict(),
    }


#: The messages of the warnings the running command has raised (:func:`one_line_warnings`).
_RAISED: ContextVar[list[str] | None] = ContextVar("jdp_cli_warnings", default=None)


@contextlib.contextmanager
def one_line_warnings(command: str) -> Iterator[list[warnings.WarningMessage]]:
    """Print each warning as one ``jdp COMMAND: warning: message`` line on stderr when it is
    raised (clipped values, a large delta, a method that cannot work here, said before its
    fit starts: :func:`jdp.progress.say`), and keep its message for :func:`json_line`;
    yields the list of caught warnings."""
    from jdp.progress import say

    raised: list[str] = []
    token = _RAISED.set(raised)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")

            def show_now(message, category, filename, lineno, file=None, line=None):
                caught.append(
                    warnings.WarningMessage(message, category, filename, lineno, file, line)
                )
                raised.append(str(message))
                say(f"jdp {command}: warning: {message}")

            warnings.showwarning = show_now  # restored by catch_warnings
            yield caught
    finally:
        _RAISED.reset(token)


def json_line(result: Mapping[str, Any]) -> str:
    """``result`` as the one JSON object a ``--json`` command prints, with ``"warnings"``: the
    messages of the warnings the command raised so far (the lines stderr showed, without
    their prefix), so that a program reading the JSON sees them too."""
    return json.dumps({**result, "warnings": list(_RAISED.get() or [])})
