"""Membership inference against a fitted synthesizer: any method, from its samples alone.

:func:`synthetic_data_mia` samples the fitted model, encodes real and synthetic rows with the
schema's min-max + one-hot :class:`jdp.data.transforms.TableEncoder`, and runs the black-box
attacks of :mod:`jdp.audit.attacks` on training records (members) against held-out records
(non-members): distance to the closest synthetic record (DCR) and the DOMIAS density ratio
against a reference sample. White-box scores (a released critic, a likelihood) are
method-specific: pass the model's score function to :func:`jdp.audit.attacks.membership_attack`.
:func:`mia_section` formats the results for ``jdp report`` / ``jdp audit``.

**These are attacks, not guarantees.** An AUC near 0.5 says these attacks fail on these
records; only the accounted epsilon bounds every attack (under (eps, delta)-DP no test does
better than ``TPR <= e^eps FPR + delta``). In particular distance to the closest record is an
attack score, never a privacy metric.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pandas as pd

from accounting.validation import check_count
from jdp.audit.attacks import AttackResult, dcr_attack
from jdp.audit.density_attack import density_ratio_attack

__all__ = ["MIA_NOTE", "mia_section", "mia_split", "synthetic_data_mia"]

#: The caveat every MIA table carries.
MIA_NOTE = (
    "Membership-inference AUCs are attack measurements, not privacy guarantees: 0.5 means "
    "these attacks fail here, not that the release is private. Distance to the closest "
    "record (DCR) is an attack, not a privacy metric; only the accounted epsilon bounds "
    "every attack."
)


def mia_split(
    train: pd.DataFrame, test: pd.DataFrame, *, members: int, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(members, nonmembers, reference)``: ``members`` rows of ``train`` (the records the
    model was fitted on), and two disjoint sets of ``test`` rows of the same size (the
    non-members, and the reference sample of the density-ratio attack), seeded."""
    m = check_count("members", members, minimum=2)
    if len(train) < m or len(test) < 2 * m:
        raise ValueError(
            f"expected at least {m} training and {2 * m} held-out rows for {m} members, got "
            f"{len(train)} and {len(test)}"
        )
    rng = np.random.default_rng(seed)
    mem = train.iloc[rng.choice(len(train), m, replace=False)].reset_index(drop=True)
    held = test.iloc[rng.choice(len(test), 2 * m, replace=False)].reset_index(drop=True)
    return mem, held.iloc[:m].reset_index(drop=True), held.iloc[m:].reset_index(drop=True)


def synthetic_data_mia(
    key: jax.Array,
    model: Any,
    members: pd.DataFrame,
    nonmembers: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    n_synthetic: int | None = None,
    density: str = "kde",
    confidence: float = 0.95,
) -> list[AttackResult]:
    """Black-box membership inference on a fitted model's synthetic data.

    Args:
      key: the sampling key.
      model: a :class:`jdp.synth.base.FittedModel`.
      members: records the model was fitted on.
      nonmembers: records from the same distribution it was not fitted on.
      reference: further held-out records (for the density-ratio attack's population
        density), disjoint from both.
      n_synthetic: synthetic rows to draw (default ``len(members)``).
      density: the density-ratio attack's estimator (``"kde"`` or ``"gmm"``).
      confidence: of the AUC intervals.

    Returns:
      ``[DCR attack, density-ratio attack]`` (:class:`jdp.audit.attacks.AttackResult`).
    """
    from jdp.data.transforms import TableEncoder
    from jdp.synth.base import sample_model

    n = check_count("n_synthetic", len(members) if n_synthetic is None else n_synthetic, minimum=1)
    synthetic = sample_model(key, model, n)
    encoder = TableEncoder(model.schema)
    mem, non, ref, syn = (encoder.encode(t) for t in (members, nonmembers, reference, synthetic))
    return [
        dcr_attack(mem, non, syn, confidence=confidence, name="black-box dcr"),
        density_ratio_attack(
            mem, non, syn, ref, density=density, confidence=confidence, name="black-box domias"
        ),
    ]


def mia_section(
    results: list[AttackResult], *, method: str, epsilon: float | None
) -> tuple[dict[str, Any], list[str]]:
    """The MIA section of a report: a JSON-able dict and markdown lines (a table and the
    caveat :data:`MIA_NOTE`). ``epsilon`` is the model's accounted epsilon (None: not
    private)."""
    eps = "non-private" if epsilon is None else f"{epsilon:.3g}"
    lines = [
        "## Membership inference (attacks, not guarantees)",
        "",
        f"Method `{method}`, epsilon {eps}.",
        "",
        "| attack | AUC | 95% CI | held-out accuracy | members | non-members |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.auc:.3f} | [{r.auc_ci[0]:.3f}, {r.auc_ci[1]:.3f}] | "
            f"{r.accuracy:.3f} | {r.n_members} | {r.n_nonmembers} |"
        )
    lines += ["", MIA_NOTE]
    section = {
        "method": method,
        "epsilon": epsilon,
        "attacks": [r.as_dict() for r in results],
        "note": MIA_NOTE,
    }
    return section, lines
