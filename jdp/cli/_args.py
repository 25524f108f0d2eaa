"""What the command modules share: the common flags (declared once), key streams, warnings.

Every command adds the flags it takes with :func:`add_flags`, by name; a command that needs
another default or help text for a shared flag passes it as an override (``--out`` is a
model directory for ``fit``, a CSV file for ``sample``), so each flag's spelling, type and
usual meaning live here once.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
import zlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jax

    from jdp.synth.base import FittedModel

#: Commands that draw randomness from ``--seed``; each gets its own stream.
SEED_STREAMS = ("fit", "sample")

#: The shared flags: name -> (option strings, ``add_argument`` keyword arguments).
FLAGS: Mapping[str, tuple[tuple[str, ...], Mapping[str, Any]]] = {
    "json": (("--json",), {"action": "store_true", "help": "print one JSON object"}),
    "quiet": (("--quiet",), {"action": "store_true", "help": "no progress output"}),
    "seed": (
        ("--seed",),
        {"type": int, "help": "fixed seed (research only; default: OS entropy)"},
    ),
    "verbose": (
        ("--verbose",),
        {
            "action": "store_true",
            "help": "show private counts (rows, clipped values, 1/n) in warnings and errors; "
            "for the data holder's own terminal only",
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
    subparsers: argparse._SubParsersAction, name: str, doc: str, *, help: str
) -> argparse.ArgumentParser:
    """The parser of command ``name``: ``help`` for ``jdp --help``, and as description the
    second paragraph of the command module's docstring ``doc`` (its first is the synopsis)."""
    return subparsers.add_parser(
        name, help=help, description=doc.split("\n\n")[1].replace("\n", " ")
    )


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


@contextlib.contextmanager
def one_line_warnings(command: str) -> Iterator[None]:
    """Collect warnings and print each as one ``jdp COMMAND: warning: message`` line on
    stderr (clipped values, a large delta, ...)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            yield
        finally:
            for w in caught:
                print(f"jdp {command}: warning: {w.message}", file=sys.stderr)
