"""Rejection sampling of synthetic rows: one loop for ``--where`` conditions
(:func:`jdp.synth.conditions.matching_chunks`) and for a schema's forbidden combinations and
inequalities (:func:`jdp.synth.base.sample_model`).

Post-processing of a released model: no privacy cost. The kept rows are the model's rows
conditioned on acceptance, and a bounded number of draws ends in an error that gives the
acceptance rate (a property of the released model) instead of looping for ever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

__all__ = ["MAX_DRAWS_PER_ROW", "accepted_chunks"]

#: Default bound on rows drawn by a rejection loop, as a multiple of the rows asked for.
MAX_DRAWS_PER_ROW = 1000


def accepted_chunks(
    draw_fn: Callable[[int], pd.DataFrame],
    accept_fn: Callable[[pd.DataFrame], np.ndarray],
    n: int,
    *,
    rounds: int,
    what: str,
    hint: str,
) -> Iterator[pd.DataFrame]:
    """Rejection sampling: the accepted rows of ``draw_fn(0)``, ``draw_fn(1)``, ... (in
    order, as consecutive tables) until ``n`` rows were yielded, the last table cut to fit.

    Each kept row is an unmodified row of a draw, so when the draws are independent draws
    from a model the kept rows are draws from it conditioned on acceptance. ``accept_fn``
    gives the boolean mask of the rows of a draw to keep; ``what`` and ``hint`` word the
    error.

    Raises:
        ValueError: when fewer than ``n`` rows were accepted in ``rounds`` draws: ``"only F
            of D synthetic rows satisfy WHAT (acceptance F/D); asked for n: HINT"``.
    """
    found = drawn = 0
    for i in range(rounds):
        batch = draw_fn(i)
        drawn += len(batch)
        chosen = batch[accept_fn(batch)].iloc[: n - found].reset_index(drop=True)
        found += len(chosen)
        if len(chosen):
            yield chosen
        if found == n:
            return
    raise ValueError(
        f"only {found} of {drawn} synthetic rows satisfy {what} (acceptance "
        f"{found / drawn:.2g}); asked for {n}: {hint}"
    )
