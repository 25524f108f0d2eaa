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
[0, 100], real means 0.1-0.3) it was most of the error. A pair of neighbouring spikes escapes
that rule; :func:`support` keeps only the run of ordered cells whose mass the noise can show,
grown window by window (:func:`window_reach`, the DP schema's bounds rule, step 4), and
:func:`distribution` zeroes the rest before norm-sub.

A noisy 2-way table released beside more precise 1-way marginals is made consistent with them
by :func:`rake`: the table keeps its dependence, the 1-ways give its margins.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

#: Noise standard deviations within which a lone cell counts as noise (MST's rare-cell rule).
RARE_SDS = 3.0

#: The probability that pure noise beyond a run of ordered cells shows a window of cells worth
#: taking (:func:`window_reach`; Bonferroni over the windows).
SHOW_FAILURE = 0.05

#: The fewest and the most value cells :func:`cells_for_noise` gives a numeric column.
AUTO_BINS = (4, 32)

#: The weight of the independent table in :func:`rake`'s seed (the noisy table weighs 1).
RAKE_FLOOR = 1e-6
#: The most rounds of :func:`rake` (on random sparse 33 x 33 tables with unrelated margins,
#: 2,400 at most to 1e-9).
RAKE_ROUNDS = 10_000


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


def rake(joint: np.ndarray, rows: np.ndarray, cols: np.ndarray, *, tol: float = 1e-9) -> np.ndarray:
    """The 2-way distribution with margins ``rows`` and ``cols`` nearest (in KL divergence)
    to a seed from ``joint`` (below): iterative proportional fitting (Deming & Stephan 1940),
    rows and columns rescaled in turn until both margins are met to ``tol`` (at most
    :data:`RAKE_ROUNDS` rounds; on a seed positive wherever the margins put mass it converges,
    at a geometric rate).

    A noisy 2-way table released beside more precise 1-way marginals (the tree's edges,
    :mod:`jdp.synth.tree`) keeps its dependence but takes its margins from the 1-way
    releases: sampling a child from the table's rows then gives the child its own 1-way
    distribution, not the noisier sums of the table. The seed is ``joint / sum(joint) +``
    :data:`RAKE_FLOOR` ``rows cols^T``: every cell both margins give mass is positive, so
    fitting converges (it keeps the seed's cross-product ratios), and a row (column) the
    table left empty is filled from the independent table ``rows cols^T``, rescaled by the
    column (row) factors. Post-processing.

    Args:
      joint: a non-negative ``(r, c)`` table (zero everywhere is allowed).
      rows, cols: the target margins, non-negative, each summing to 1.

    Returns:
      The ``(r, c)`` distribution, summing to 1, with margins ``rows`` and ``cols``.
    """
    joint = np.asarray(joint, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.float64)
    if joint.shape != (rows.size, cols.size) or (joint < 0).any():
        raise ValueError(
            f"expected a non-negative {(rows.size, cols.size)} table, got shape {joint.shape}"
        )
    mass = joint.sum()
    t = (joint / mass if mass > 0 else joint) + RAKE_FLOOR * np.outer(rows, cols)
    for _ in range(RAKE_ROUNDS):
        t *= _ratio(rows, t.sum(axis=1))[:, None]
        t *= _ratio(cols, t.sum(axis=0))[None, :]
        if np.abs(t.sum(axis=1) - rows).max() <= tol:
            break
    return t


def _ratio(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """``target / current``, 0 where ``current`` is 0 (IPF's scaling of an empty line)."""
    return np.divide(target, current, out=np.zeros_like(target), where=current > 0)


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


def _windows(
    counts: np.ndarray, noise_sd: float, floor: float, failure: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Every window ``[start, end)`` of the ordered ``counts``, its score (the noisy sum's
    excess over ``floor`` in noise standard deviations; the plain excess when ``noise_sd``
    is 0) and the level a score must pass to be significant: pure noise passes it with
    probability at most ``failure``, Bonferroni over the windows, normal approximation (0
    without noise)."""
    sums = np.concatenate([[0.0], np.cumsum(np.asarray(counts, dtype=np.float64))])
    start, end = np.triu_indices(len(sums), 1)
    excess = sums[end] - sums[start] - floor
    if noise_sd <= 0:
        return start, end, excess, 0.0
    level = -NormalDist().inv_cdf(failure / len(start))
    return start, end, excess / (noise_sd * np.sqrt(end - start)), level


def window_reach(
    beyond: np.ndarray, noise_sd: float, *, floor: float = 0.0, failure: float = SHOW_FAILURE
) -> int:
    """How many of the ordered noisy counts ``beyond`` (nearest first) a run of cells should
    take: up to the far end of the window of them whose noisy sum most exceeds ``floor``, in
    noise standard deviations, when that score is significant -- pure noise reaches it with
    probability at most ``failure``, Bonferroni over the ``w (w + 1) / 2`` windows, normal
    approximation; 0 otherwise. With ``noise_sd = 0`` any excess shows. Post-processing.

    A window, not one cell at a time: a tail spread thinly over many cells shows in their
    sum where no single cell stands out, while the sums of all cells beyond a side, which
    share most of their terms from one step to the next, would walk a side out over empty
    cells whenever their common noise is high."""
    if not len(beyond):
        return 0
    _, end, score, level = _windows(beyond, noise_sd, floor, failure)
    best = int(np.argmax(score))
    return int(end[best]) if score[best] > level else 0


def support(noisy: np.ndarray, noise_sd: float) -> np.ndarray:
    """The ordered cells whose mass the noise can show, as a boolean mask: the window of
    cells whose noisy sum stands out most in noise standard deviations, when that score is
    significant (:data:`SHOW_FAILURE`, Bonferroni over the windows), each side then grown by
    :func:`window_reach` (floor 0) while a window of cells beyond it holds a significantly
    positive sum; every cell when no window is significant (nothing shows where the mass
    is: a seed chosen among noise windows put crx's A15 median at 68,082 against 4 in the DP
    tree's one-way marginals).
    Post-processing.

    Cells outside are noise as far as the release can tell. Kept, a few of them survive
    :func:`norm_sub` in every histogram, and on a column's public range far beyond its data
    (spambase's word frequencies: public ``[0, 100]``, real 99% quantiles 0.3-4) the spikes
    among them were most of the synthetic mean (0.5-2.3 against 0.05-0.3). A single cell
    would be a poor seed: the largest noisy count of a thinly spread column is often such a
    spike. The price: a real tail too thin for any window to show is cut (german's ages past
    49 at eps 1, where norm-sub alone spread them to 91)."""
    noisy = np.asarray(noisy, dtype=np.float64)
    start, end, score, level = _windows(noisy, noise_sd, 0.0, SHOW_FAILURE)
    best = int(np.argmax(score))
    if score[best] <= level:
        return np.ones(len(noisy), dtype=bool)
    first, last = int(start[best]), int(end[best]) - 1
    while first > 0 and (step := window_reach(noisy[:first][::-1], noise_sd)):
        first -= step
    while last < len(noisy) - 1 and (step := window_reach(noisy[last + 1 :], noise_sd)):
        last += step
    mask = np.zeros(len(noisy), dtype=bool)
    mask[first : last + 1] = True
    return mask


def distribution(
    noisy: np.ndarray,
    total: float,
    *,
    ordered: int = 0,
    noise_sd: float | None = None,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """One noisy histogram's sampling distribution. When ``noise_sd`` is known, the first
    ``ordered`` cells outside ``keep`` (default: their own :func:`support`; a caller with
    several histograms of one column passes the support of their pooled counts) are set to 0
    first; then :func:`norm_sub` to the estimated ``total`` (where ``total <= 0``: the noisy
    counts clipped at 0), the ordered cells through :func:`drop_isolated`; where cells were
    cut, what the kept cells fall short of ``total`` goes to the ordered cells, in proportion
    to their mass (the cut cells were ordered ones: without this, a zero-inflated column's
    point mass took the share of the tail the cut removed, and its mean fell with it);
    normalised (uniform when nothing is left). Post-processing."""
    noisy = np.asarray(noisy, dtype=np.float64)
    if ordered and noise_sd is not None:
        keep = support(noisy[:ordered], noise_sd) if keep is None else keep
        noisy = np.concatenate([np.where(keep, noisy[:ordered], 0.0), noisy[ordered:]])
    kept = norm_sub(noisy, total) if total > 0 else np.maximum(noisy, 0.0)
    if ordered and noise_sd is not None:
        kept[:ordered] = drop_isolated(kept[:ordered], noisy[:ordered], noise_sd)
        value = kept[:ordered].sum()
        if total > 0 and not keep.all() and value > 0:
            kept[:ordered] *= 1.0 + max(total - kept.sum(), 0.0) / value
    if kept.sum() <= 0:
        kept = np.maximum(noisy, 0.0)
    return kept / kept.sum() if kept.sum() > 0 else np.full(noisy.size, 1.0 / noisy.size)
