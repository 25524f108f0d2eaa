"""Helpers shared by the command modules: key streams and the ``--verbose`` flag."""

from __future__ import annotations

import argparse
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jax

#: Commands that draw randomness from ``--seed``; each gets its own stream.
SEED_STREAMS = ("fit", "sample")


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


def add_verbose_argument(parser: argparse.ArgumentParser) -> None:
    """``--verbose``: let warnings and errors show private counts (:mod:`jdp.verbosity`)."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show private counts (rows, clipped values, 1/n) in warnings and errors; "
        "for the data holder's own terminal only",
    )
