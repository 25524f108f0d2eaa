"""A schema released with differential privacy: DP bounds by a log-scale histogram, DP
category discovery.

When a user cannot declare bounds or domains, they can spend part of their budget on them:

* numeric column (:func:`dp_bounds`): a coarse public range ``[a, b]`` per numeric column is
  still required -- no DP mechanism can find the scale of an unbounded line -- but it may be
  very loose (e.g. ``[0, 10**9]`` for an age or an income). A noisy histogram over signed
  geometric buckets ``2^k`` of the range (snapped, so its counts may be shown) finds the
  buckets that hold data; the bounds run from the lowest passing bucket to the highest, so
  they cover the bulk of the data rather than sit at noisy quantiles. A column too sparse
  for its budget keeps the coarse range and is named in a :class:`DpSchemaWarning`. A
  ``date`` column takes the same path on its day counts since 1970-01-01 (its coarse range
  given as two dates, e.g. ``("1900-01-01", "2100-12-31")``); the buckets double away from
  1970-01-01 (or from the range's end nearest to it), so released dates far from it are
  coarse -- declare a date column's bounds (``declared=``) when they are known;
* categorical column: the categories whose noisy count exceeds a threshold
  (:func:`dp_categories`); a category held by few records is suppressed.

By default all these histograms are released together by one Gaussian mechanism
(:func:`dp_joint_histograms`, one ledger entry ``dp-schema-histograms``): one record adds 1 to
one cell of each, so the noise grows with the square root of the number of columns; with
``noise="laplace"`` each column is its own snapped Laplace release (entries
``dp-bounds:<name>`` or ``dp-categories:<name>``), pure epsilon-DP for the bounds. Columns the
user can declare in full (``declared=``) are copied at no cost; the budget ``epsilon`` is
split equally over the others, except that a released target takes :data:`TARGET_SHARE` of
it (its classes drop their records when suppressed). The result is a :class:`SchemaRelease`
holding the schema, the ledger of its release and the noisy clipped share of each numeric
column. Category discovery is (epsilon, delta)-DP (a category present in only one of two
neighbouring datasets can be released, with probability at most delta), recorded as an
``EpsilonDeltaDpEvent``; see ``docs/privacy.md``, "DP category discovery" and "DP bounds".

Records holding a suppressed category are either mapped to an extra category ``other_label``
that the release adds to every string-valued categorical feature column (``suppressed="other"``,
the default; the target keeps its released labels, and a column of integer or boolean
categories drops such records) or dropped (``suppressed="drop"``). On Adult at epsilon 0.3
dropping lost 21% of the records, mapping none (``scripts/numeric_columns.py``). Either
is a fixed public function of each record given the released schema (no extra cost); the
"other" records are then counted by the method like any category.

Pass the release itself wherever a schema is accepted (``schema=`` of
:func:`jdp.synth.base.fit_model` and of every ``Synthesizer``, ``jdp fit --schema``): the model
is fitted on what remains of the budget and its ledger opens with the release's entries.
:meth:`SchemaRelease.save` writes schema and ledger to one JSON file (``jdp schema --dp``
writes one); :func:`load_schema` reads it back as a release (or a plain schema file as a
:class:`Schema`). The released schema is marked ``from_release``: records holding a category
the release suppressed are dropped by ``Schema.conform`` (their values are never shown) unless
:meth:`SchemaRelease.conform` maps them to ``other``, and using the schema without its
release warns that its cost is missing from the ledger.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd

from accounting import PrivacyLedger
from accounting import events as ev
from accounting.builders import with_noise_cut
from accounting.compose import pure_spend
from accounting.validation import check_count, check_open_unit, check_positive
from jdp.data.schema import (
    INTEGER_VALUED_KINDS,
    Column,
    ColumnKind,
    Problems,
    Schema,
    SuppressedCategoryWarning,
    Table,
    date_to_days,
    dates_to_days,
    write_atomic,
)
from jdp.mechanisms.consistency import window_reach
from jdp.mechanisms.noise import (
    LAPLACE_RELEASE_CUT,
    Snapping,
    gaussian_event,
    gaussian_mechanism,
    laplace_mechanism,
    power_of_two_at_least,
    snapping_laplace_parameters,
)
from jdp.mechanisms.tape import public, released
from jdp.verbosity import warn_private

RELEASE_FORMAT = "jdp-schema-release"
#: Powers of two below the coarse range's half-width that :func:`log_bucket_edges` resolves.
LEVELS = 40
#: Default probability that some empty bucket of the range search passes its threshold.
RANGE_FAILURE = 1e-3
#: The most probability that an empty bucket next to the bounds extends them by one bucket
#: (the grid point Lambda: 0.18-0.30, since Lambda is within a factor 2 above lambda).
EXTEND_CHANCE = 1 / 3
#: Buckets added beyond the extended bounds on each side (each doubles the distance covered):
#: a tail decaying over doubling buckets too thin for the noise to show (creditcard's
#: components at a schema epsilon of 0.3 on 5,000 rows: 2-3% of a column past one bucket,
#: up to 2.5% past two) ends within three.
MARGIN = 3
SUPPRESSED = ("drop", "other")
#: A released column whose noisy share of values outside its bounds exceeds this is named in
#: a :class:`DpSchemaWarning`.
CLIPPED_WARNING = 0.01
#: A released column whose 95% upper bound on that share (:class:`DpBounds`) exceeds this is
#: named too: the noise cannot rule out that a thin tail was cut.
CLIPPED_BOUND_WARNING = 0.05
#: The one-sided 95% normal quantile of :attr:`DpBounds.clipped_bound`.
Z_95 = 1.645
#: The side of a column's bounds that faces the anchor (:func:`log_bucket_edges`) is widened
#: to the anchor when the 95% upper bound on the share of values between them exceeds this.
TAIL_TOLERANCE = 0.02
#: The suppressed shares' epsilon as a fraction of one column's (:func:`infer_schema_dp`): a
#: share of three noisy counts over ``n`` is accurate to about ``2.5 / (epsilon n)``, a
#: percent or so on a few thousand rows at a schema's usual budget, which a report needs.
SHARES_WEIGHT = 0.5
#: The default delta of a whole schema release (:func:`infer_schema_dp`).
DEFAULT_DELTA = 1e-7
#: The share of the histograms' budget that :func:`infer_schema_dp` gives a released target
#: column (when others are released beside it): its classes are what a downstream model
#: predicts, and a class the release suppresses drops its records (a target has no "other").
#: With Gaussian noise it is the target's share of the squared sensitivity
#: (:func:`target_weight`), with Laplace noise its share of the epsilon. A third costs the
#: other columns 1.2x the noise and lets a class of 222 records in 5,000 pass 98.7% of the time
#: on a 30-column table; a half cost them 1.4x (creditcard's clipped share went to 5%).
TARGET_SHARE = 1 / 3
#: How :func:`infer_schema_dp` noises its histograms: one joint Gaussian release of all of
#: them (:func:`dp_joint_histograms`), or one snapped Laplace release per column.
NOISES = ("gaussian", "laplace")


class DpSchemaWarning(UserWarning):
    """A DP schema release kept a coarse range (no signal) or clips a noticeable share."""


def log_bucket_edges(lower: float, upper: float, *, levels: int = LEVELS) -> np.ndarray:
    """Edges of signed geometric buckets over ``[lower, upper]``: a function of the range only.

    With anchor ``c = clip(0, lower, upper)`` and half-width ``s = max(upper - c, c - lower)``,
    the candidate edges are ``c +- s 2^-j`` for ``j = 0 .. levels``; those strictly inside
    ``(lower, upper)`` together with ``lower`` and ``upper`` are returned, sorted. The buckets
    are ``[e_i, e_{i+1})`` (the last one closed): one around the anchor of half-width
    ``s 2^-levels``, then buckets doubling in width outwards (``[c + s 2^-(j+1), c + s 2^-j)``),
    so a bucket's edges are within a factor 2 of each other on either side of the anchor.
    """
    check_positive("levels", levels)
    if not lower < upper:
        raise ValueError(f"expected lower < upper, got [{lower}, {upper}]")
    c = min(max(0.0, float(lower)), float(upper))
    s = max(float(upper) - c, c - float(lower))
    steps = s * 2.0 ** -np.arange(int(levels), -1, -1)
    candidates = np.concatenate([c - steps, c + steps])
    inside = candidates[(candidates > lower) & (candidates < upper)]
    return np.unique(np.concatenate([[float(lower), float(upper)], inside]))


def bucket_index(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The bucket of each value (clipped to ``[edges[0], edges[-1]]``): exactly one each."""
    x = np.clip(np.asarray(values, dtype=np.float64), edges[0], edges[-1])
    return np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)


def pass_threshold(params: Snapping, buckets: int, failure: float) -> float:
    """The grid point ``k Lambda`` that the snapped noisy count of an empty bucket reaches
    with probability at most ``failure / buckets``.

    A snapped count of 0 is ``round_Lambda(lambda L)`` with ``L`` standard Laplace (the
    clamp at ``B`` lies far above), so it is ``>= k Lambda`` exactly when ``lambda L >=
    (k - 1/2) Lambda``: probability ``exp(-(k - 1/2) Lambda / lambda) / 2``. Hence ``k =
    ceil(lambda ln(M / (2 failure)) / Lambda + 1/2)``, and some empty bucket among ``M``
    passes with probability at most ``failure``.
    """
    k = math.ceil(params.scale * math.log(buckets / (2.0 * failure)) / params.grid + 0.5)
    return k * params.grid


class DpBounds(NamedTuple):
    """Bounds released by :func:`dp_bounds`: whether any bucket passed (``signal``; without
    it the bounds are the coarse public range), the noisy share of the column's values
    outside the bounds (``clipped``) and a one-sided 95% upper bound on that share
    (``clipped_bound``: the noisy count outside plus 1.645 standard deviations of the noise
    of the sum of the buckets outside, over the noisy total; a normal approximation, used to
    warn, never to release more). Both are post-processing of the released counts."""

    lower: float
    upper: float
    signal: bool
    clipped: float
    clipped_bound: float = 0.0


def share_shows(share: float, bound: float) -> bool:
    """Whether a released clipped share stands out of its noise: it exceeds the 1.645 standard
    deviations between it and its 95% upper bound (:class:`DpBounds`). With a loose coarse
    range the share sums the noise of dozens of empty buckets outside the bounds (creditcard's
    V20 in ``[-1e9, 1e9]``: about 10% reported, about 0 true), and only the bound is
    worth showing."""
    return share > bound - share


def dp_bounds(
    rng: np.random.Generator,
    values: np.ndarray,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    integer: bool = False,
    failure: float = RANGE_FAILURE,
    levels: int = LEVELS,
) -> tuple[DpBounds, ev.DpEvent]:
    """Bounds holding the bulk of one numeric column, inside a coarse public range, from a
    Laplace log-histogram.

    The values (clipped to ``[lower, upper]``) are counted in the ``M`` buckets of
    :func:`log_bucket_edges`; the counts are released by the snapping mechanism
    (:func:`jdp.mechanisms.noise.laplace_mechanism`, exact in binary64). Then, all from the
    snapped counts:

    1. *core*: the buckets from the lowest to the highest one whose count reaches
       :func:`pass_threshold` (an empty bucket does with probability at most
       ``failure / M``), and the bucket of largest count (report noisy max), so that an
       empty bucket passing by chance only widens the bounds; when none passes (a column
       too sparse for its budget) the bounds are the coarse range and ``signal`` is False;
    2. *tails*: the core grows outwards, one bucket at a time, while the next bucket's count
       reaches ``pass_threshold(params, 1, p)`` with ``p`` = :data:`EXTEND_CHANCE` (an empty
       bucket extends it with probability at most ``p``, so empty tails add at most
       ``p / (1 - p)`` buckets on average; a tail holding data keeps extending);
    3. *toward the anchor*: the side that faces the anchor ``c`` (values between ``c`` and
       the bounds: a long lower tail of a positive column, spread thinly over many doubling
       buckets, as crx's A2) moves to ``c`` when the 95% upper bound on the share of values
       between them (below; each bucket's noisy count taken at least 0, so that the negative
       noise of many empty buckets cannot cancel a tail) exceeds :data:`TAIL_TOLERANCE`: the
       noise cannot rule out a tail there, and widening towards the anchor costs at most the
       bounds' own extent;
    4. *what the counts show outside*: each side extends to the far end of the window of
       buckets beyond it whose noisy sum most exceeds :data:`TAIL_TOLERANCE` of the total,
       in noise standard deviations, while that excess is significant
       (:func:`jdp.mechanisms.consistency.window_reach`: pure noise shows one with
       probability at most its ``SHOW_FAILURE``, Bonferroni over the windows, normal
       approximation): a mass the core missed (the other half of a signed column whose two
       halves sit in doubling buckets on either side of 0, with the near-empty buckets of
       tiny values between them, as creditcard's centred components: 40% of V20 was outside
       before this step) or a far tail the release can see. It once grew one bucket at a
       time while the plain noisy sum beyond exceeded the tolerance: the sums of many empty
       buckets, correlated from one step to the next, walked a side of some column to
       ``1e7``-``1e8`` times the data's extent in most releases with a loose range such as
       ``[-1e9, 1e9]``;
    5. *margin*: :data:`MARGIN` more buckets on each side, inside the coarse range and not
       past the anchor a side was moved to; last, so that it also covers a tail past where
       step 4 stopped that the noise hides (a 3% tail of creditcard's V5 just beyond).

    Each bucket doubles the distance from the anchor, so the bounds stay within a small
    factor of the data they cover rather than at the coarse range, and what is clipped is
    only tails too thin to show through the noise. Integer columns are rounded outwards,
    inside ``[ceil(lower), floor(upper)]``. ``clipped`` is the noisy share outside the bounds
    (sum of the snapped counts outside over the sum of all, clamped to ``[0, 1]``), and
    ``clipped_bound`` a 95% upper bound on it (:class:`DpBounds`).

    Why not quantiles: an epsilon-DP quantile is off by about ``2 ln(range / resolution) /
    epsilon`` ranks, which at a schema's per-column budget (0.3 over 15-21 columns) exceeds a
    small table's row count: the 1% and 99% quantiles released before came out near the
    median (issue 26: a count with 99% quantile 21.8 got bounds [-1, 1], and 28% of Adult's
    non-zero capital gains were clipped).

    Privacy:
      Neighbouring relation: add/remove one record, which lands in exactly one bucket: the
      count vector changes by 1 in one entry, L1 sensitivity 1. The snapped Laplace
      histogram is epsilon-DP (event ``LaplaceDpEvent(1/epsilon)``); the thresholds, the
      bounds and the clipped share are post-processing.

    References:
      The log-scale bucket search of practical DP libraries (Google's differential-privacy
      library, "ApproxBounds"; Wilson et al. 2020, "Differentially private SQL with bounded
      user contribution"); the Laplace histogram: Dwork et al. 2006, "Calibrating noise to
      sensitivity in private data analysis"; snapping: Mironov 2012.
    """
    check_positive("epsilon", epsilon)
    check_open_unit("failure", failure)
    edges = log_bucket_edges(lower, upper, levels=levels)
    m = len(edges) - 1
    counts = np.bincount(bucket_index(edges, values), minlength=m).astype(np.float64)
    noisy, event = laplace_mechanism(rng, counts, l1_sensitivity=1.0, epsilon=epsilon)
    params = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=epsilon, size=m)
    passing, extending = (
        pass_threshold(params, m, failure),
        pass_threshold(params, 1, EXTEND_CHANCE),
    )
    count_sd = math.sqrt(2 * params.scale**2 + params.grid**2 / 12)  # Laplace, then rounding
    bounds = bounds_from_counts(
        noisy, edges, passing, extending, integer=integer, count_sd=count_sd
    )
    return bounds, event


def bounds_from_counts(
    noisy: np.ndarray,
    edges: np.ndarray,
    passing: float,
    extending: float,
    *,
    integer: bool,
    count_sd: float,
) -> DpBounds:
    """Steps 1-5 of :func:`dp_bounds` on released bucket counts (post-processing): the core
    from the lowest to the highest bucket reaching ``passing`` (and the noisy mode), grown
    while the next bucket reaches ``extending``, widened to the anchor on the side facing it
    unless the noise rules out a tail there, grown while the counts beyond a side show more
    than :data:`TAIL_TOLERANCE`, plus :data:`MARGIN`; the coarse range
    ``[edges[0], edges[-1]]`` and ``signal=False`` when none passes. Shared by the Laplace
    histogram of one column and the joint Gaussian release (:func:`dp_joint_histograms`),
    which differ only in the two levels and in ``count_sd``, the standard deviation of one
    noisy count (noise and rounding to the snapping grid), which gives ``clipped_bound``."""
    lower, upper, m = float(edges[0]), float(edges[-1]), len(edges) - 1
    passed = np.flatnonzero(noisy >= passing)
    if len(passed) == 0:
        return DpBounds(lower, upper, False, 0.0)
    top = int(np.argmax(noisy))  # the mode's bucket: a lone spurious pass only widens
    first, last = min(int(passed[0]), top), max(int(passed[-1]), top)
    while first > 0 and noisy[first - 1] >= extending:
        first -= 1
    while last < m - 1 and noisy[last + 1] >= extending:
        last += 1
    total = max(noisy.sum(), 1.0)

    def share_bound(counts: np.ndarray) -> float:
        """A 95% upper bound on the share of values in the buckets of noisy ``counts``."""
        spread = Z_95 * count_sd * math.sqrt(len(counts))
        return min(max((counts.sum() + spread) / total, 0.0), 1.0)

    # 3. the side facing the anchor reaches it unless the noise rules out a tail there; a
    # negative noisy count may not cancel a positive one (the test runs on every column)
    c = min(max(0.0, lower), upper)
    a = int(bucket_index(edges, np.array([c]))[0])
    anchored = [False, False]  # lower, upper side moved to the anchor
    if c < edges[first] and share_bound(np.maximum(noisy[:first], 0)) > TAIL_TOLERANCE:
        first, anchored[0] = a, True
    if edges[last + 1] < c and share_bound(np.maximum(noisy[last + 1 :], 0)) > TAIL_TOLERANCE:
        last, anchored[1] = a, True

    # 4. each side grows while the counts beyond it show more than the tolerance
    floor = TAIL_TOLERANCE * total
    while first > 0 and (step := window_reach(noisy[:first][::-1], count_sd, floor=floor)):
        first, anchored[0] = first - step, False
    while last < m - 1 and (step := window_reach(noisy[last + 1 :], count_sd, floor=floor)):
        last, anchored[1] = last + step, False
    # 5. the margin, beyond wherever a side ended but never past the anchor it was moved to
    first = first if anchored[0] else max(first - MARGIN, 0)
    last = last if anchored[1] else min(last + MARGIN, m - 1)
    lo = c if anchored[0] else float(edges[first])
    hi = c if anchored[1] else float(edges[last + 1])
    if integer:
        lo = float(max(math.floor(lo), math.ceil(lower)))
        hi = float(min(math.ceil(hi), math.floor(upper)))
        hi = max(hi, lo + 1)
    outside = np.concatenate([np.arange(first), np.arange(last + 1, m)])
    clipped = min(max(noisy[outside].sum() / total, 0.0), 1.0)
    return DpBounds(lo, hi, True, float(clipped), share_bound(noisy[outside]))


def threshold_for(epsilon: float, delta: float) -> float:
    """Threshold ``tau = 1 + ln(1 / (2 delta)) / epsilon``: a count of 1 plus Laplace(1/epsilon)
    noise exceeds it with probability exactly ``delta``."""
    return 1.0 + math.log(1.0 / (2.0 * delta)) / epsilon


def fewest_records(epsilon: float, delta: float) -> float:
    """The fewest records that must hold a value no public domain lists before ANY
    ``(epsilon, delta)``-DP mechanism can release it with probability 1/2:
    ``ln(1 + (e^epsilon - 1) / (2 delta)) / epsilon``.

    Group privacy over the ``c`` records holding ``v``: ``P[v in M(D)] <= e^{c epsilon}
    P[v in M(D')] + delta (e^{c epsilon} - 1) / (e^epsilon - 1)``, with ``P[v in M(D')] = 0``
    for a value only those records can have taught the mechanism; setting the right side to
    1/2 and solving for ``c`` gives the bound (docs/privacy.md, "The limit on small
    tables")."""
    return math.log1p(math.expm1(epsilon) / (2 * delta)) / epsilon


@released(lambda rng, values, epsilon, delta: (epsilon, delta))
def dp_categories(
    rng: np.random.Generator, values: pd.Series | np.ndarray, *, epsilon: float, delta: float
) -> tuple[tuple, ev.DpEvent]:
    """The categories of ``values`` whose noisy count exceeds :func:`threshold_for`.

    Each distinct value's count gets independent Laplace(1/epsilon) noise; values above the
    threshold are released (sorted), counts are not.

    Returns:
      ``(categories, EpsilonDeltaDpEvent(epsilon, delta))`` with the textbook Laplace
      sampler's cut beside it (:func:`jdp.mechanisms.noise.laplace_event`): epsilon covers the noisy counts
      of values present in both neighbours; delta is the probability of releasing a value
      present in only one (Korolova et al. 2009, "Releasing search queries and clicks
      privately"; the stability-based histogram).

    Privacy:
      Neighbouring relation: add/remove one record, which changes one count by 1 (L1
      sensitivity 1) or creates/removes a value with count 1, released with probability
      ``P(1 + Lap(1/epsilon) > tau) = exp(-epsilon (tau - 1)) / 2 = delta``.
      Overall (epsilon, delta)-DP.
    """
    check_positive("epsilon", epsilon)
    check_open_unit("delta", delta)
    counts = pd.Series(np.asarray(values, dtype=object)).value_counts(sort=False)
    # the textbook sampler: the counts are never released (only which pass the threshold),
    # so its low bits carry nothing; snapping's grid would move the threshold's probability
    # and its calibration would read the private number of distinct values
    noisy, _ = laplace_mechanism(
        rng, counts.to_numpy(dtype=np.float64), l1_sensitivity=1.0, epsilon=epsilon,
        secure_noise=False,
    )  # fmt: skip
    cats = categories_from_counts(counts.index, noisy, threshold_for(epsilon, delta))
    event = ev.EpsilonDeltaDpEvent(epsilon=float(epsilon), delta=float(delta))
    return cats, with_noise_cut(event, LAPLACE_RELEASE_CUT)


def categories_from_counts(values: Sequence[Any], noisy: np.ndarray, threshold: float) -> tuple:
    """The values whose noisy count exceeds ``threshold``, sorted (post-processing; shared
    by :func:`dp_categories` and :func:`dp_joint_histograms`)."""
    keep = [v for v, c in zip(values, noisy) if c > threshold]
    return tuple(sorted(keep, key=lambda v: (str(type(v)), v)))


class SuppressedShares(NamedTuple):
    """The noisy shares of records that a schema release's categories change: ``mapped``
    (a value mapped to the "other" category, no value dropped) and ``dropped`` (a value
    outside the released categories of a column whose such records are dropped)."""

    mapped: float
    dropped: float


def dp_suppressed_shares(
    rng: np.random.Generator, dropped: np.ndarray, mapped: np.ndarray, *, epsilon: float
) -> tuple[SuppressedShares, ev.DpEvent]:
    """The noisy shares of records that lose a value to the released categories.

    Each record falls in exactly one of three cells -- some value of it is dropped; else
    some value is mapped to "other"; else neither (``dropped``/``mapped``: per-record
    booleans, a fixed public function of the record given the released categories) -- and
    the three counts are released by the snapping Laplace mechanism
    (:func:`jdp.mechanisms.noise.laplace_mechanism`). The shares are the noisy counts over
    their noisy sum, clamped to ``[0, 1]`` (post-processing).

    Privacy:
      Neighbouring relation: add/remove one record, which lands in exactly one cell: L1
      sensitivity 1, ``epsilon``-DP (event ``LaplaceDpEvent(1/epsilon)``). The cells are
      defined by the categories released before (sequential composition; both in the
      ledger).
    """
    check_positive("epsilon", epsilon)
    dropped = np.asarray(dropped, dtype=bool)
    mapped = np.asarray(mapped, dtype=bool) & ~dropped
    counts = np.array([dropped.sum(), mapped.sum(), len(dropped) - dropped.sum() - mapped.sum()])
    noisy, event = laplace_mechanism(
        rng, counts.astype(np.float64), l1_sensitivity=1.0, epsilon=epsilon
    )
    total = max(float(noisy.sum()), 1.0)
    share = [min(max(float(c) / total, 0.0), 1.0) + 0.0 for c in noisy[:2]]  # no -0.0
    return SuppressedShares(mapped=share[1], dropped=share[0]), event


class Histogram(NamedTuple):
    """One released column's histogram in a schema release (:func:`infer_schema_dp`):
    ``edges`` the public buckets of a numeric column (:func:`log_bucket_edges` of its coarse
    range) or ``None`` for a categorical column (whose cells are its distinct values);
    ``values`` what is counted (a numeric column's values without missing values and point
    masses; a categorical column's values, missing ones not counted); ``integer`` for an
    integer-valued kind; ``masses`` its declared point masses (public); ``target`` for the
    target column's (weighted in a joint release, :attr:`JointGaussian.target_weight`)."""

    edges: np.ndarray | None
    values: Any
    integer: bool = False
    masses: tuple[float, ...] = ()
    target: bool = False


def _histogram(
    series: pd.Series,
    name: str,
    kind: str,
    ranges: Mapping[str, Any],
    masses: Sequence[Any],
    target: bool,
) -> Histogram:
    """The :class:`Histogram` of one released column (its values checked before)."""
    if kind == "categorical":
        return Histogram(None, series, target=target)
    a, b = (_number(kind, v) for v in ranges[name])
    x = _numbers(kind, series, name)
    points = tuple(_number(kind, m) for m in masses)
    return Histogram(
        log_bucket_edges(a, b), x[~np.isnan(x) & ~np.isin(x, points)],
        kind in INTEGER_VALUED_KINDS, points, target,
    )  # fmt: skip


def target_weight(histograms: int) -> float:
    """The weight ``w`` of a released target's histogram among ``histograms`` in one joint
    release: ``w^2 = TARGET_SHARE / (1 - TARGET_SHARE) (k - 1)`` (so the target carries
    :data:`TARGET_SHARE` of the squared sensitivity ``k - 1 + w^2``), and 1 when it is the
    only one. A function of the public number of released columns."""
    check_count("histograms", histograms, minimum=1)
    if histograms == 1:
        return 1.0
    return math.sqrt(TARGET_SHARE / (1 - TARGET_SHARE) * (histograms - 1))


class JointGaussian(NamedTuple):
    """The plan of a joint Gaussian schema release (:func:`plan_joint_gaussian`), public.

    Attributes:
      noise_multiplier: ``z``: the counts, the target's multiplied by ``w``, get
        ``N(0, sigma^2)`` with ``sigma = z sqrt(k - 1 + w^2)`` (:attr:`sensitivity`).
      histograms: ``k``, the released columns (one histogram each).
      categorical: how many of them are categorical (cells = private distinct values).
      new_key_tail: ``tau``, the bound on the probability that a value present in one
        neighbour only passes its threshold in some column.
      epsilon, delta: what the release is: :meth:`event` meets ``(epsilon, delta)`` under the
        ledger's rule (``epsilon`` as found, at most the target).
      target_weight: ``w``, the weight of the target's histogram (:func:`target_weight`; 1
        when no target is released, and the noise on its counts is ``sigma / w``).

    The read-off of a histogram of weight ``w`` divides by ``w``: :meth:`count_sd`,
    :meth:`level` and :meth:`category_threshold` take it (1 for every other histogram).
    """

    noise_multiplier: float
    histograms: int
    categorical: int
    new_key_tail: float
    epsilon: float = math.inf
    delta: float = 0.0
    target_weight: float = 1.0

    def weight_of(self, histogram: Histogram) -> float:
        """A histogram's weight in the release: :attr:`target_weight` for the target's, 1 for
        any other."""
        return self.target_weight if histogram.target else 1.0

    @property
    def sensitivity(self) -> float:
        """``sqrt(k - 1 + w^2)``: one record adds ``w`` to one cell of the target's weighted
        histogram and 1 to one cell of each other histogram (``sqrt(k)`` without a target)."""
        return math.sqrt(self.histograms - 1 + self.target_weight**2)

    @property
    def sigma(self) -> float:
        """The noise standard deviation of every weighted count."""
        return self.noise_multiplier * self.sensitivity

    def count_sd(self, weight: float = 1.0) -> float:
        """The standard deviation of one released count of a histogram of ``weight``: the
        noise and the rounding to the snapping grid ``g``, ``sqrt(sigma^2 + g^2 / 12) / w``."""
        return math.sqrt(self.sigma**2 + power_of_two_at_least(self.sigma) ** 2 / 12) / weight

    def level(self, probability: float, weight: float = 1.0) -> float:
        """``(g / 2 + sigma Phi^-1(1 - p)) / w`` (``g`` the snapping grid, the smallest power
        of two ``>= sigma``): a count of 0 in a histogram of weight ``w`` (weighted: 0, plus
        ``N(0, sigma^2)``, rounded to the grid, then divided by ``w``) reaches it with
        probability at most ``p`` (rounding moves a value by at most ``g / 2``)."""
        grid = power_of_two_at_least(self.sigma)
        return (grid / 2 + self.sigma * -NormalDist().inv_cdf(probability)) / weight

    def category_threshold(self, weight: float = 1.0) -> float:
        """``1 + level(tau / c, w)``: a value of count 1 passes with probability at most ``tau /
        c``, so one record's at most ``c`` new values (one per categorical column) pass with
        probability at most ``tau`` (union bound); infinite without categorical columns."""
        if not self.categorical:
            return math.inf
        return 1.0 + self.level(self.new_key_tail / self.categorical, weight)

    def event(self) -> ev.DpEvent:
        """The release's exact event: ``gaussian_event(z)`` (:mod:`jdp.mechanisms.noise`)
        with the new-value tail as a cut, ``NoiseCutDpEvent(tau)``."""
        return with_noise_cut(gaussian_event(self.noise_multiplier), self.new_key_tail)


def plan_joint_gaussian(
    *, epsilon: float, delta: float, histograms: int, categorical: int, target: bool = False
) -> JointGaussian:
    """The joint Gaussian release of ``histograms`` columns meeting ``(epsilon, delta)``, one
    of them the target's when ``target`` (weighted by :func:`target_weight`).

    Half of ``delta`` is the new-value tail's cost: a cut costs ``(1 + e^epsilon)`` times
    its mass (:mod:`accounting.compose`), so ``tau = delta / (2 (1 + e^epsilon))`` (0 without
    categorical columns); the noise multiplier is the smallest that meets the target with
    the ledger's own rule (:func:`accounting.calibrate.calibrate`), and the plan's
    ``epsilon`` is what that rule gives it (:func:`accounting.compose.best_epsilon`).
    """
    from accounting.calibrate import calibrate
    from accounting.compose import best_epsilon

    check_count("histograms", histograms, minimum=1)
    tau = delta / (2 * (1 + math.exp(epsilon))) if categorical else 0.0

    w = target_weight(histograms) if target else 1.0

    def event(z: float) -> ev.DpEvent:
        return JointGaussian(z, histograms, categorical, tau, target_weight=w).event()

    z = calibrate(event, target_epsilon=epsilon, target_delta=delta)
    spent = best_epsilon(event(z), delta).value
    return JointGaussian(z, histograms, categorical, tau, spent, delta, w)


def _joint_fingerprint(
    rng: np.random.Generator, histograms: Sequence[Histogram], plan: JointGaussian
) -> Any:
    """The joint release's public fingerprint (:mod:`jdp.mechanisms.tape`): the buckets,
    kinds and target flags of its histograms and the plan; the values are private."""
    del rng
    return public(
        ([h.edges for h in histograms], [(h.integer, h.target) for h in histograms], plan)
    )


def histogram_counts(h: Histogram) -> tuple[Any, np.ndarray]:
    """``(cells, counts)`` of one :class:`Histogram`: the distinct values and their counts
    (categorical, ``cells`` private), or ``None`` and the count of each bucket (numeric)."""
    if h.edges is None:
        c = pd.Series(np.asarray(h.values, dtype=object)).value_counts(sort=False)
        return c.index, c.to_numpy(dtype=np.float64)
    m = len(h.edges) - 1
    return None, np.bincount(bucket_index(h.edges, h.values), minlength=m).astype(np.float64)


@released(_joint_fingerprint)
def dp_joint_histograms(
    rng: np.random.Generator, histograms: Sequence[Histogram], plan: JointGaussian
) -> tuple[tuple[DpBounds | tuple, ...], ev.DpEvent]:
    """A schema's histograms released together by one Gaussian mechanism, read off as
    bounds (numeric) and categories (categorical).

    Every histogram's counts, the target's (``Histogram.target``, at most one) multiplied by
    ``w = plan.target_weight``, are concatenated and released with ``N(0, sigma^2)`` noise
    (:func:`jdp.mechanisms.noise.gaussian_mechanism`, snapped to the grid ``g``), and the
    target's divided by ``w`` again. A numeric column's bounds are
    :func:`bounds_from_counts` with an empty bucket passing with probability
    ``RANGE_FAILURE / M`` and extending with probability :data:`EXTEND_CHANCE`
    (:meth:`JointGaussian.level` at the histogram's weight); a categorical column's released
    values are those whose noisy count exceeds :meth:`JointGaussian.category_threshold`.

    Returns:
      ``(results, event)``: per histogram, in order, a :class:`DpBounds` or a tuple of
      categories; ``EpsilonDeltaDpEvent(plan.epsilon, plan.delta)``, the guarantee that the
      exact event (:meth:`JointGaussian.event`) meets, so that budgets and fits compose the
      release by the basic theorem as they do every DP category list.

    Privacy (``docs/privacy.md``, "Joint Gaussian schema release"):
      Add/remove one record ``x``. Each histogram gets 1 from ``x`` in at most one cell
      (``w`` in the weighted target's). On the cells present in both neighbours (every
      bucket; the values held by other records too) the weighted count vectors differ by
      at most 1 in at most ``k - 1`` cells and by ``w`` in one: L2 sensitivity
      ``sqrt(k - 1 + w^2)`` (:attr:`JointGaussian.sensitivity`), the Gaussian mechanism with
      multiplier ``z``, and all that is read off them is post-processing. A value only
      ``x`` holds is a cell of count 1 in one neighbour and absent in the other: it passes
      its threshold with probability at most ``tau / c`` (at its histogram's weight), and
      ``x`` has at most ``c`` such values, so the release is within
      total variation ``tau`` of one that never shows them (a function of the common cells
      alone). The exact event is ``gaussian_event(z)`` with that cut
      (``NoiseCutDpEvent(tau)``, charged ``(1 + e^epsilon) tau`` by every accountant).

    References:
      The Gaussian thresholding of DP set union and partition selection (Gopi et al. 2020,
      "Differentially private set union"; Wilson et al. 2020); the stability-based histogram
      (Korolova et al. 2009).
    """
    if len(histograms) != plan.histograms or sum(h.target for h in histograms) > 1:
        raise ValueError(
            f"expected the plan's {plan.histograms} histograms, at most one the target's; got "
            f"{len(histograms)}, {sum(h.target for h in histograms)} marked target"
        )
    weights = [plan.weight_of(h) for h in histograms]
    cells, counts = zip(*(histogram_counts(h) for h in histograms), strict=True)
    noisy, _ = gaussian_mechanism(  # its event is plan.event()'s Gaussian part
        rng, np.concatenate([w * c for w, c in zip(weights, counts, strict=True)]),
        secure_noise=True, l2_sensitivity=plan.sensitivity,
        noise_multiplier=plan.noise_multiplier,
    )  # fmt: skip
    parts = np.split(noisy, np.cumsum([len(c) for c in counts])[:-1])
    results: list[DpBounds | tuple] = []
    for h, w, part, keys in zip(histograms, weights, parts, cells, strict=True):
        part = part / w
        if h.edges is None:
            results.append(categories_from_counts(keys, part, plan.category_threshold(w)))
        else:
            passing = plan.level(RANGE_FAILURE / len(part), w)
            extending = plan.level(EXTEND_CHANCE, w)
            results.append(
                bounds_from_counts(
                    part,
                    h.edges,
                    passing,
                    extending,
                    integer=h.integer,
                    count_sd=plan.count_sd(w),
                )
            )
    return tuple(results), ev.EpsilonDeltaDpEvent(epsilon=plan.epsilon, delta=plan.delta)


@dataclass(frozen=True)
class SchemaRelease:
    """A DP schema and the ledger of its release.

    The ledger holds the joint Gaussian release's ``EpsilonDeltaDpEvent`` (or, with Laplace
    noise, pure events for the numeric columns and one ``EpsilonDeltaDpEvent`` per
    categorical column) and the suppressed shares' pure event, so the release is
    ``(epsilon, delta)``-DP by basic composition of its entries (:attr:`epsilon`,
    :attr:`delta`).
    Its schema is marked ``from_release`` (see :mod:`jdp.data.schema`). ``other`` is the
    label of the category that holds suppressed values (``infer_schema_dp(...,
    suppressed="other")``), ``None`` when their records are dropped.

    JSON layout (:meth:`to_dict`)::

        {"format": "jdp-schema-release", "schema": {...}, "ledger": {...}}

    plus ``"other": "<label>"`` when suppressed values are mapped and ``"clipped": {name:
    share or null}`` for the released bounds (:attr:`clipped`).

    ``clipped`` holds, per numeric column whose bounds were released, the noisy share of its
    values outside them (post-processing of the release, :func:`dp_bounds`), or ``None`` when
    the release had no signal and the coarse public range was kept; ``clipped_bound`` the 95%
    upper bound on that share (:class:`DpBounds`), saved as ``"clipped_bound": {name: b}``. ``suppressed`` holds the
    noisy shares of records whose categories the release changes (:func:`dp_suppressed_shares`;
    ``None`` when not released), saved as ``"suppressed": {"mapped": m, "dropped": d}``.
    """

    schema: Schema
    ledger: PrivacyLedger
    other: str | None = None
    clipped: tuple[tuple[str, float | None], ...] = ()
    suppressed: SuppressedShares | None = None
    clipped_bound: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise TypeError(f"expected a Schema, got {type(self.schema).__name__}")
        if not isinstance(self.ledger, PrivacyLedger):
            raise TypeError(f"expected a PrivacyLedger, got {type(self.ledger).__name__}")
        if self.other is not None and (not isinstance(self.other, str) or not self.other):
            raise TypeError(f"expected other to be a non-empty str or None, got {self.other!r}")
        if not self.schema.from_release:
            object.__setattr__(self, "schema", dataclasses.replace(self.schema, from_release=True))

    @property
    def delta(self) -> float:
        """The release's delta: its (epsilon, delta) parts', plus its samplers' cut
        (:func:`accounting.compose.pure_spend`)."""
        return pure_spend(self.ledger.event)[1]

    @property
    def epsilon(self) -> float:
        return pure_spend(self.ledger.event)[0]

    def privacy_statement(self) -> str:
        labels = ", ".join(self.ledger.labels)
        return (
            f"Schema release: ({self.epsilon:.4g}, {self.delta:.3g})-DP under add/remove-one "
            f"neighbours (basic composition of: {labels})"
        )

    def bounds_report(self) -> str:
        """One line per numeric column whose bounds were released: the noisy share of its
        values outside them, or that the release had no signal (coarse range kept); then the
        noisy shares of records whose categories it changes (:attr:`suppressed`)."""
        lines, bound = [], dict(self.clipped_bound)
        for name, share in self.clipped:
            column = self.schema[name]
            if share is None:
                what = "no signal at this budget: kept the coarse public range"
            elif name in bound and not share_shows(share, bound[name]):
                what = (
                    "a share of its values outside them too small for the noise to show (at "
                    f"most {100 * bound[name]:.1f}% at 95%)"
                )
            else:
                what = f"about {100 * share:.1f}% of its values outside them (noisy"
                if name in bound:
                    what += f"; at most {100 * bound[name]:.1f}% at 95%"
                what += ")"
            lines.append(f"{name}: bounds {column.bounds_text}, {what}")
        if self.suppressed is not None:
            lines.append(f"categories: {self.suppressed_text()}")
        return "\n".join(lines)

    def suppressed_text(self) -> str:
        """:attr:`suppressed` in words (the caller checks it is not ``None``)."""
        mapped, dropped = self.suppressed
        other = f" to {self.other!r}" if self.other is not None else ""
        return (
            f"about {100 * (mapped + dropped):.1f}% of records hold a category the release "
            f"suppressed ({100 * mapped:.1f}% mapped{other}, {100 * dropped:.1f}% dropped; noisy)"
        )

    def other_columns(self) -> list[str]:
        """The columns whose suppressed values are mapped to :attr:`other`."""
        if self.other is None:
            return []
        return [
            c.name for c in self.schema.columns if not c.is_numeric and self.other in c.categories
        ]

    def conform(self, data: pd.DataFrame) -> Table:
        """:meth:`Schema.conform` of the released schema, after mapping each string value
        outside the released categories of an :meth:`other_columns` column to :attr:`other`
        (one :class:`~jdp.data.schema.SuppressedCategoryWarning` naming the columns, never the
        values, and only under :func:`jdp.verbosity.show_private_details`). Other values
        (missing, wrong type) are left for ``Schema.conform`` to judge.

        Privacy: a fixed public function of each record given the released schema, so
        neighbouring tables stay neighbours (``docs/privacy.md``, "Records holding a
        suppressed category").
        """
        mapped = []
        if isinstance(data, pd.DataFrame):
            for name in self.other_columns():
                if name not in data.columns:
                    continue  # Schema.conform names the missing column
                domain = frozenset(self.schema[name].categories)
                unseen = data[name].map(lambda v, d=domain: isinstance(v, str) and v not in d)
                if unseen.any():
                    if not mapped:
                        data = data.copy()
                    data[name] = data[name].where(~unseen.astype(bool), self.other)
                    mapped.append(name)
        if mapped:
            names = ", ".join(repr(n) for n in mapped)
            warn_private(  # that such a value exists is private: only the data holder sees it
                f"mapped the values of column(s) {names} that are not among the DP-released "
                f"categories to {self.other!r} (values not shown)",
                SuppressedCategoryWarning,
                stacklevel=2,
            )
        return self.schema.conform(data)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "format": RELEASE_FORMAT,
            "schema": self.schema.to_dict(),
            "ledger": self.ledger.to_dict(),
        }
        if self.other is not None:
            out["other"] = self.other
        if self.clipped:
            out["clipped"] = dict(self.clipped)
        if self.clipped_bound:
            out["clipped_bound"] = dict(self.clipped_bound)
        if self.suppressed is not None:
            out["suppressed"] = self.suppressed._asdict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaRelease:
        if not isinstance(data, Mapping) or data.get("format") != RELEASE_FORMAT:
            raise ValueError(
                f"expected a saved SchemaRelease (format {RELEASE_FORMAT!r}) with its ledger; "
                "got a bare schema, without the ledger of its cost"
            )
        return cls(
            Schema.from_dict(data["schema"]),
            PrivacyLedger.from_dict(data["ledger"]),
            data.get("other"),
            tuple(data.get("clipped", {}).items()),
            SuppressedShares(**data["suppressed"]) if "suppressed" in data else None,
            tuple(data.get("clipped_bound", {}).items()),
        )

    def save(self, path: str | Path) -> None:
        """Write schema and ledger to one JSON file (a temporary file, then ``os.replace``)."""
        write_atomic(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SchemaRelease:
        return cls.from_dict(_read_json(path))


def schema_from_dict(data: Mapping[str, Any]) -> Schema | SchemaRelease:
    """A saved release (with its ledger) as a :class:`SchemaRelease`, else a :class:`Schema`."""
    if isinstance(data, Mapping) and "ledger" in data:
        return SchemaRelease.from_dict(data)
    return Schema.from_dict(dict(data) if isinstance(data, Mapping) else data)


def load_schema(path: str | Path) -> Schema | SchemaRelease:
    """Read a schema JSON file: a saved :class:`SchemaRelease` keeps its ledger (and cost)."""
    return schema_from_dict(_read_json(path))


def _read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"schema file not found: {path}")
    return json.loads(path.read_text())


def _numbers(kind: str, series: pd.Series, name: str) -> np.ndarray:
    """A numeric column's values as float64 (a date column's as day counts since
    1970-01-01, :func:`~jdp.data.schema.dates_to_days`), NaN where missing."""
    if kind == "date":
        return dates_to_days(series, name)
    return pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64)


def _number(kind: str, value: Any) -> float:
    """A public value (a range end, a point mass) of a numeric column: a date column's as
    its day count (:func:`~jdp.data.schema.date_to_days`)."""
    return float(date_to_days(value)) if kind == "date" else float(value)


def _check_numeric_column(
    series: pd.Series,
    name: str,
    ranges: Mapping[str, tuple[Any, Any]],
    *,
    nullable: bool,
    kind: str = "continuous",
    masses: Sequence[Any] = (),
) -> None:
    """Raise when a numeric column to release has no coarse range, a non-numeric value (a
    value that is not a date in a date column, or a range or point mass that is not a
    date), an infinite value, or a missing value without being nullable (the values are
    never shown)."""
    if name not in ranges:
        raise ValueError(f"column {name!r}: a coarse public range (a, b) is required")
    if kind == "date":
        try:
            for value in (*ranges[name], *masses):
                _number(kind, value)
        except (TypeError, ValueError):  # public values: shown
            raise ValueError(
                f"column {name!r}: expected its coarse range and point masses as dates (ISO "
                f"text such as '2000-01-01'), got range {ranges[name]!r}, point masses "
                f"{list(masses)!r}"
            ) from None
    try:
        x = _numbers(kind, series, name)
    except (TypeError, ValueError) as exc:  # pandas' message quotes the value: never shown
        if kind == "date":
            raise ValueError(str(exc)) from None
        raise ValueError(
            f"column {name!r} is declared numeric but has non-numeric values (not shown)"
        ) from None
    missing = np.isnan(x)
    if np.isinf(x).any() or (missing.any() and not nullable):
        raise ValueError(f"column {name!r} has NaN or infinite values (and is not nullable)")


def infer_schema_dp(
    rng: np.random.Generator,
    data: pd.DataFrame,
    *,
    epsilon: float,
    kinds: Mapping[str, ColumnKind],
    ranges: Mapping[str, tuple[float, float]],
    target: str | None = None,
    declared: Collection[Column] = (),
    delta: float = DEFAULT_DELTA,
    noise: Literal["gaussian", "laplace"] = "gaussian",
    suppressed: Literal["drop", "other"] = "other",
    other_label: str = "other",
    point_masses: Mapping[str, Sequence[float]] | None = None,
    nullable: Collection[str] = (),
    ignore: Collection[str] = (),
    report_suppressed: bool = True,
) -> SchemaRelease:
    """Release a schema for ``data`` under ``epsilon``-DP (plus threshold deltas).

    Args:
      rng: the noise source.
      data: the private table.
      epsilon: total budget, split over the columns the release has to find (the columns
        not in ``declared``): equally, a released target taking :data:`TARGET_SHARE` of the
        histograms' share (budget rule below).
      kinds: each released column's kind (public: it is a property of the data format).
      ranges: a coarse public ``(a, b)`` per released numeric column (required for each; may
        be very loose: :func:`dp_bounds` searches it on a log scale); two dates (ISO text,
        ``datetime.date`` or ``Timestamp``) for a ``date`` column, whose bounds are
        released on its day counts as an integer column's (module docstring).
      target: the target column (categorical).
      declared: columns the data holder declares in full (public: a codebook's categories,
        documented bounds): copied into the schema as they are, at no cost.
      delta: the release's delta (default :data:`DEFAULT_DELTA`): with ``noise="gaussian"``
        the joint release's (half of it the new-category tail); with ``"laplace"`` split
        equally over the categorical columns' thresholds.
      noise: ``"gaussian"`` (default): every histogram in one Gaussian release
        (:func:`dp_joint_histograms`: the noise grows with the square root of the number of
        released columns, not with the number, so categories and buckets need about 2.5x
        fewer records on a 15-column table); ``"laplace"``: one snapped Laplace release per
        column (:func:`dp_bounds`, :func:`dp_categories`), pure epsilon-DP bounds.
      suppressed: what happens to records holding a category the release suppressed: map
        them to ``other_label`` (``"other"``, default), which is then added to the categories
        of every string-valued categorical column except the target, or ``"drop"`` them.
      other_label: the label of that category; it must not be a released category.
      point_masses: public point-mass values of numeric columns (e.g. ``{"capital-gain":
        [0]}``, see :class:`~jdp.data.schema.Column`; dates in a date column): copied into
        the schema; the bounds are released from the other values and widened to include
        the masses.
      nullable: the columns declared nullable (public): their missing values are left out of
        the release and the column is marked nullable; a missing value elsewhere raises.
      ignore: data columns the release leaves out (public: identifiers, free text, dates):
        never read, listed in the schema's ``ignore`` (so ``conform`` and
        :func:`jdp.data.read.read_csv` drop them) and not counted in the budget split; a name
        absent from ``data`` (a CSV read without it) is listed all the same.
      report_suppressed: when categories are released, also release the noisy shares of
        records that hold a suppressed category, mapped to ``other_label`` or dropped
        (:func:`dp_suppressed_shares`, entry ``dp-suppressed-shares``, one more share of the
        budget), kept in :attr:`SchemaRelease.suppressed`, shown by ``jdp schema --dp`` and
        named in a :class:`DpSchemaWarning` above 1%.

    Leaving out missing values and point-mass values is a fixed public filter applied record
    by record (neighbours stay neighbours), so it costs nothing.

    Budget rule (public): ``epsilon / k`` for each of the ``k`` released columns (with the
    suppressed shares, ``k`` counts them as :data:`SHARES_WEIGHT` of a column). With the
    Laplace noise, a numeric column's bounds (:func:`dp_bounds`, entry ``dp-bounds:<name>``)
    and a categorical column's categories (:func:`dp_categories`, entry
    ``dp-categories:<name>``) each take one share; with the Gaussian noise, all the
    histograms take their shares together (``(k - w) epsilon / k`` at ``delta``, one entry
    ``dp-schema-histograms``). Both are thresholded histograms that need a bucket or category
    of about ``c / epsilon_k`` records to pass (Laplace: ``c`` = 6-10 for bounds, 15-16 for
    categories at the default deltas; Gaussian: ``c`` shrinks as ``1 / sqrt(k)``), so one
    share serves both; declaring what is known is what frees budget. A released ``target``
    beside other columns takes :data:`TARGET_SHARE` (a third) of the histograms' budget: its
    epsilon with Laplace noise, its share of the squared sensitivity with Gaussian noise
    (:func:`target_weight`: noise ``z / sqrt(TARGET_SHARE)`` on its counts whatever ``k``);
    the others split the rest equally. A
    :class:`DpSchemaWarning` names the numeric columns released without signal (coarse range
    kept) or with a noisy clipped share above 1%; :attr:`SchemaRelease.clipped` holds the
    shares. Categorical columns with no category above the threshold raise, all in one
    message (spend more epsilon, or declare their domains). Bad inputs (columns without a
    kind or range, unknown names, NaN or non-numeric values in a numeric column) are all
    reported in one exception (:class:`~jdp.data.schema.Problems`) before any noise is drawn.
    """
    check_positive("epsilon", epsilon)
    check_open_unit("delta", delta)
    if noise not in NOISES:
        raise ValueError(f"expected noise in {NOISES}, got {noise!r}")
    if suppressed not in SUPPRESSED:
        raise ValueError(f"expected suppressed in {SUPPRESSED}, got {suppressed!r}")
    if not isinstance(other_label, str) or not other_label:
        raise ValueError(f"expected a non-empty other_label, got {other_label!r}")
    if not isinstance(data, pd.DataFrame) or len(data) == 0:
        raise ValueError("expected a non-empty pandas DataFrame")
    given = {c.name: c for c in declared}
    ignore = [ignore] if isinstance(ignore, str) else list(ignore)
    nullable = [nullable] if isinstance(nullable, str) else list(nullable)
    point_masses = dict(point_masses or {})
    problems = Problems()
    for what, names in (
        ("declared column {!r}", given),
        ("column {!r} of point_masses/nullable", [*point_masses, *nullable]),
    ):
        for name in dict.fromkeys(names):
            if name not in data.columns:
                problems.add(ValueError(what.format(name) + " is not in the data"))
    for name in dict.fromkeys(ignore):
        if name == target or name in given or name in point_masses or name in nullable:
            problems.add(ValueError(f"column {name!r} is ignored and also used (target, "
                                    "declared, point_masses or nullable)"))  # fmt: skip
    released_names = [c for c in data.columns if c not in given and c not in ignore]
    for name in released_names:
        if name not in kinds:
            problems.add(ValueError(f"column {name!r} has no declared kind"))
        elif kinds[name] != "categorical":
            try:
                _check_numeric_column(
                    data[name], name, ranges, nullable=name in nullable, kind=kinds[name],
                    masses=point_masses.get(name, ()),
                )  # fmt: skip
            except ValueError as exc:
                problems.add(exc)
    problems.raise_if_any()
    shares = report_suppressed and any(kinds[n] == "categorical" for n in released_names)
    histograms = {
        name: _histogram(
            data[name], name, kinds[name], ranges, point_masses.get(name, ()), name == target
        )
        for name in released_names
    }
    ledger, found = PrivacyLedger(), {}
    k = len(histograms)
    eps_col = epsilon / max(k + shares * SHARES_WEIGHT, 1)
    if noise == "laplace":
        n_cat = sum(h.edges is None for h in histograms.values())
        # the target's share of the histograms' epsilon: w^2 of k - 1 + w^2 (TARGET_SHARE)
        units = {n: target_weight(k) ** 2 if h.target else 1.0 for n, h in histograms.items()}
        unit = eps_col * k / sum(units.values())
        tau = threshold_for(unit, delta / max(n_cat, 1))
        for name, h in histograms.items():
            if h.edges is None:
                found[name], event = dp_categories(rng, h.values, epsilon=units[name] * unit,
                                                   delta=delta / n_cat)  # fmt: skip
                ledger = ledger.record(f"dp-categories:{name}", event)
            else:
                found[name], event = dp_bounds(
                    rng, h.values, lower=h.edges[0], upper=h.edges[-1],
                    epsilon=units[name] * unit, integer=h.integer,
                )  # fmt: skip
                ledger = ledger.record(f"dp-bounds:{name}", event)
        per = f"epsilon {unit:.3g} per column"
    elif histograms:
        plan = plan_joint_gaussian(
            epsilon=eps_col * k, delta=delta, histograms=k,
            categorical=sum(h.edges is None for h in histograms.values()),
            target=any(h.target for h in histograms.values()),
        )  # fmt: skip
        results, event = dp_joint_histograms(rng, list(histograms.values()), plan)
        found = dict(zip(histograms, results, strict=True))
        ledger = ledger.record("dp-schema-histograms", event)
        tau = plan.category_threshold()
        per = f"epsilon {eps_col:.3g} per column (one joint release)"
    columns, clipped, clipped_bound, empty = [], [], [], []
    mapped, dropped = np.zeros(len(data), bool), np.zeros(len(data), bool)
    for name in data.columns:
        if name in ignore:
            continue
        if name in given:
            columns.append(given[name])
            continue
        kind, result = kinds[name], found[name]
        if kind == "categorical":
            if not result:
                empty.append(name)
                continue
            cats, outside = result, _outside(data[name], result)
            if suppressed == "other" and name != target and isinstance(cats[0], str):
                if other_label in cats:
                    raise ValueError(
                        f"column {name!r}: {other_label!r} is a released category; choose "
                        "another other_label"
                    )
                cats = (*cats, other_label)
                mapped |= outside
            else:
                dropped |= outside
            columns.append(Column(name=name, kind=kind, categories=cats, nullable=name in nullable))
            continue
        masses = histograms[name].masses
        clipped.append((name, result.clipped if result.signal else None))
        if result.signal:
            clipped_bound.append((name, result.clipped_bound))
        lo, hi = min((result.lower, *masses)), max((result.upper, *masses))  # lo < hi already
        columns.append(
            Column(name=name, kind=kind, lower=lo, upper=hi, point_masses=masses,
                   nullable=name in nullable)
        )  # fmt: skip
    if empty:
        raise ValueError(
            f"column(s) {', '.join(repr(n) for n in empty)}: no category passed the DP "
            f"threshold at {per} (a category needs about {tau:.0f} records to pass; none here "
            f"has as many; no DP release of a value that no public domain lists can pass with "
            f"fewer than {fewest_records(epsilon, delta):.0f} at this budget); spend more "
            "epsilon, declare "
            "their domains (declared=) or leave them out (ignore=, jdp schema --ignore)"
        )
    lost = None
    if shares:
        lost, event = dp_suppressed_shares(rng, dropped, mapped, epsilon=SHARES_WEIGHT * eps_col)
        ledger = ledger.record("dp-suppressed-shares", event)
    release = SchemaRelease(
        Schema(columns=tuple(columns), target=target, ignore=tuple(dict.fromkeys(ignore))),
        ledger,
        other_label if suppressed == "other" else None,
        tuple(clipped),
        lost,
        tuple(clipped_bound),
    )
    bound = dict(clipped_bound)
    weak = [
        (n, s)
        for n, s in clipped
        if s is None or s > CLIPPED_WARNING or bound[n] > CLIPPED_BOUND_WARNING
    ]
    if weak:
        warnings.warn(
            "DP schema bounds: "
            + "; ".join(
                f"{n}: no signal, coarse range kept"
                if s is None
                else f"{n}: ~{100 * s:.1f}% outside (noisy; up to {100 * bound[n]:.0f}% at 95%)"
                if share_shows(s, bound[n])
                else f"{n}: up to {100 * bound[n]:.0f}% outside at 95% (the noise hides the share)"
                for n, s in weak
            )
            + ". More epsilon, or declared bounds for these columns, help",
            DpSchemaWarning,
            stacklevel=2,
        )
    if lost is not None and sum(lost) > CLIPPED_WARNING:
        warnings.warn(
            f"DP schema categories: {release.suppressed_text()}. More epsilon, or declared "
            "categories for the columns with many rare values, help",
            DpSchemaWarning,
            stacklevel=2,
        )
    label = release.schema[target] if target is not None and target not in given else None
    if label is not None and not label.is_numeric and len(label.categories) < 2:
        warnings.warn(
            f"DP schema target {target!r}: only {label.categories[0]!r} passed the DP "
            "threshold, so records of its other classes are dropped and a model fitted on "
            "this schema generates one class. Declare the target's categories (declared=, a "
            "codebook: free) or spend more epsilon",
            DpSchemaWarning,
            stacklevel=2,
        )
    return release


def _outside(values: pd.Series, categories: tuple) -> np.ndarray:
    """Per record: a value present and not among ``categories`` (public once released)."""
    domain = frozenset(categories)
    present = ~pd.isna(values).to_numpy()
    return present & values.map(lambda v: v not in domain).to_numpy(dtype=bool)
