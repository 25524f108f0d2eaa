"""Noisy histograms made into distributions without spreading mass over empty cells.

A histogram released with zero-mean noise has, in each of its empty cells, a count that is
positive half the time. Clipping at zero and normalising (the textbook post-processing) keeps
all those positive halves: with noise of standard deviation ``s`` over ``m`` empty cells it
adds about ``m s / sqrt(2 pi)`` records of mass spread evenly over the cells, which on a small
table is more than the real records (crx: 690 rows, 64 cells per feature, ``s`` about 18: about
460 spurious records). A numeric column's non-zero part then spreads over its whole public
range.

Norm-sub (Wang, Lopuhaä-Zwakenberg, Li, Škorić, Li, "Locally Differentially Private Frequency
Estimation with Consistency", NDSS 2020, Sec. IV) subtracts one common amount ``theta`` from
every cell and clips at zero, with ``theta`` chosen so that the result sums to an estimate
``N`` of the true total: ``sum_i max(h_i - theta, 0) = N``. The cells whose noisy count
stands out of the noise keep their shape; noise-level cells go to zero. With ``N`` itself
estimated from the released counts (:func:`pooled_totals`), all of it is post-processing of
a release: no privacy cost.

Norm-sub keeps a noise spike that happens to exceed ``theta``. On ordered cells (a numeric
column's value cells) such a spike is usually alone: :func:`drop_isolated` removes a kept cell
whose neighbours were both sent to zero and whose noisy count is within :data:`RARE_SDS`
noise standard deviations of zero (the threshold MST uses to merge rare cells, McKenna et
al. 2021, Sec. 3.2). A lone spike in a tail cell moves a column's mean by its mass times the
cell's distance from the bulk; on spambase's zero-inflated frequencies (public range
[0, 100], real means 0.1-0.3) it was most of the error.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Noise standard deviations within which a lone cell counts as noise (MST's rare-cell rule).
RARE_SDS = 3.0

#: The fewest and the most value cells :func:`cells_for_noise` gives a numeric column.
AUTO_BINS = (4, 32)


def cells_for_noise(rows: float, noise_sd: float) -> int:
    """Value cells for a numeric column counted from ``rows`` records with noise of sd
    ``noise_sd`` per cell: as many as keep a cell that holds an equal share of the rows
    :data:`RARE_SDS` noise sds above zero, ``round(rows / (RARE_SDS * noise_sd))`` within
    :data:`AUTO_BINS`. Every released cell carries the same noise, so fewer, fuller cells keep
    a column's tail from being noise spikes spread over its public range. Public when
    ``rows`` is declared or released."""
    low, high = AUTO_BINS
    return int(np.clip(round(rows / (RARE_SDS * noise_sd)), low, high))


def norm_sub(noisy: np.ndarray, total: float) -> np.ndarray:
    """``max(noisy - theta, 0)`` with ``theta >= 0`` such that the result sums to ``total``, or
    to less where the positive counts already sum to less (``theta = 0``: they are kept).

    ``theta`` is found exactly: with the counts sorted in decreasing order ``c_1 >= c_2 ...``,
    keeping the top ``k`` gives ``theta_k = (sum_{i<=k} c_i - total) / k``, and the right ``k``
    is the largest with ``c_k > theta_k`` (the projection onto ``{p >= 0, sum p = total}``,
    Duchi et al. 2008). That projection's ``theta`` is negative when the positive counts sum
    to less than ``total``: it would raise every cell, empty ones included, by ``-theta`` --
    the very spreading this module is here to stop -- so ``theta`` is floored at 0.

    Args:
      noisy: a 1-d vector of noisy counts.
      total: the target sum, > 0.

    Returns:
      The non-negative vector summing to ``min(total, sum of the positive counts)``.
    """
    if total <= 0:
        raise ValueError(f"expected a positive total, got {total}")
    c = np.sort(np.asarray(noisy, dtype=np.float64))[::-1]
    k = np.arange(1, c.size + 1)
    theta = (np.cumsum(c) - total) / k
    kept = int(np.flatnonzero(c > theta)[-1])
    return np.maximum(np.asarray(noisy, dtype=np.float64) - max(theta[kept], 0.0), 0.0)


def pooled_totals(sums: Sequence[np.ndarray], cells: Sequence[int]) -> np.ndarray:
    """Inverse-variance mean of several noisy estimates of the same totals.

    Each estimate ``sums[j]`` is a sum of ``cells[j]`` released cells that carry i.i.d. noise
    of one variance, so its variance is proportional to ``cells[j]``; the weights are
    ``1 / cells[j]``. Post-processing.

    Args:
      sums: estimates of one shape (e.g. per-class row counts, one per histogram).
      cells: how many noisy cells each estimate sums.

    Returns:
      The pooled estimate, of the estimates' shape.
    """
    if not sums or len(sums) != len(cells):
        raise ValueError(f"expected one cell count per estimate, got {len(sums)} and {len(cells)}")
    weights = 1.0 / np.asarray(cells, dtype=np.float64)
    stacked = np.stack([np.asarray(s, dtype=np.float64) for s in sums])
    return np.tensordot(weights, stacked, axes=1) / weights.sum()


def drop_isolated(kept: np.ndarray, noisy: np.ndarray, noise_sd: float) -> np.ndarray:
    """``kept`` (ordered cells, e.g. after :func:`norm_sub`) with each positive cell set to 0
    when both its neighbours are 0 (a missing neighbour at either end counts as 0) and its
    ``noisy`` count is below ``RARE_SDS * noise_sd``. One pass; post-processing."""
    kept = np.asarray(kept, dtype=np.float64)
    padded = np.pad(kept, 1)
    alone = (kept > 0) & (padded[:-2] == 0) & (padded[2:] == 0)
    return np.where(alone & (np.asarray(noisy) < RARE_SDS * noise_sd), 0.0, kept)


def distribution(
    noisy: np.ndarray, total: float, *, ordered: int = 0, noise_sd: float | None = None
) -> np.ndarray:
    """One noisy histogram's sampling distribution: :func:`norm_sub` to the estimated
    ``total`` (where ``total <= 0``: the noisy counts clipped at 0), the first ``ordered``
    cells through :func:`drop_isolated` when ``noise_sd`` is known, normalised (uniform when
    nothing is left). Post-processing."""
    noisy = np.asarray(noisy, dtype=np.float64)
    kept = norm_sub(noisy, total) if total > 0 else np.maximum(noisy, 0.0)
    if ordered and noise_sd is not None:
        kept[:ordered] = drop_isolated(kept[:ordered], noisy[:ordered], noise_sd)
    if kept.sum() <= 0:
        kept = np.maximum(noisy, 0.0)
    return kept / kept.sum() if kept.sum() > 0 else np.full(noisy.size, 1.0 / noisy.size)
