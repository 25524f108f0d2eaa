"""Bounded moment sums and their sensitivities: ``(n, sum_i w_i, sum_i w_i w_i^T)``.

The statistics of a Gaussian fitted under DP (PCA-Gauss, Chanyaswad, Liu & Mittal, Sec. V-VII,
:mod:`jdp.synth.pca_gauss`) are the record count, the sum and the second-moment sum of
records ``w`` with declared norm bounds ``||w||_2 <= a`` and ``||w||_1 <= b``. This module
computes those sums (the exact, private values) and their L1 sensitivities under either
neighbouring relation; the Laplace releases themselves go through
:func:`jdp.mechanisms.noise.laplace_mechanism` (the second moment with ``symmetric=True``:
the sensitivity below is that of its upper triangle). Derivations: docs/privacy.md,
section PCA-Gauss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting import events as ev
from accounting.validation import check_positive

__all__ = ["MomentSensitivity", "moment_sensitivity", "moment_sums"]


@dataclass(frozen=True)
class MomentSensitivity:
    """L1 sensitivities of ``(n, sum_i w_i, upper triangle of sum_i w_i w_i^T)``."""

    count: float
    total: float
    second: float


def moment_sensitivity(
    l2_bound: float, l1_bound: float, relation: ev.NeighboringRelation
) -> MomentSensitivity:
    """Sensitivities of the moment sums for records with ``||w||_2 <= a``, ``||w||_1 <= b``.

    Add/remove one record ``w``: the count moves by 1, the sum by ``||w||_1 <= b``, and the
    upper triangle (diagonal included) of ``w w^T`` has L1 norm
    ``sum_{j<=l} |w_j w_l| = (||w||_2^2 + ||w||_1^2) / 2 <= (a^2 + b^2) / 2``.
    Replace one record ``w -> w'``: the count is unchanged (n is public), the sum moves by
    ``||w - w'||_1 <= 2b`` (reached at ``w' = -w``), and the triangle inequality bounds the
    second moment by ``a^2 + b^2``.
    """
    a, b = check_positive("l2_bound", l2_bound), check_positive("l1_bound", l1_bound)
    if relation == ev.NeighboringRelation.ADD_OR_REMOVE_ONE:
        return MomentSensitivity(count=1.0, total=b, second=(a * a + b * b) / 2.0)
    if relation == ev.NeighboringRelation.REPLACE_ONE:
        return MomentSensitivity(count=0.0, total=2.0 * b, second=a * a + b * b)
    raise ValueError(
        f"expected neighboring_relation ADD_OR_REMOVE_ONE or REPLACE_ONE, got {relation}"
    )


def moment_sums(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(n, sum_i w_i, sum_i w_i w_i^T)`` of the rows of ``w`` (the exact, private values)."""
    w = np.asarray(w, float)
    return float(w.shape[0]), w.sum(axis=0), w.T @ w
