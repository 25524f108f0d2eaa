"""How a method maps numeric columns to its unit scale: min-max, a public log scale, or knots
released by DP quantiles.

A method's config holds a :class:`NumericScale`; the one table adapter
(:meth:`jdp.synth.base.Method.fit`) calls :func:`scale_table` before it reads anything else:

* ``"minmax"`` (default): nothing changes; a column maps by its declared bounds.
* ``"log"``: public knots, free: each numeric column that :func:`needs_knots` gets the knots
  of ``u = (g(x) - g(lower)) / (g(upper) - g(lower))`` with ``g(x) = sign(x - o) log1p(|x -
  o| / s)`` (:func:`log_knots`; ``s`` one unit for an integer column, ``(upper - lower)
  2^-10`` for a continuous one), measured from the column's origin ``o``, the point of its
  declared range nearest zero: its lower bound when that is zero or more (then ``u =
  log1p((x - lower) / s) / log1p((upper - lower) / s)``), zero when the range holds it, its
  upper bound when that is below zero. So a long-tailed column's bulk near its floor, and a
  centred or signed column's bulk near zero (a principal-component score declared on ``[-20,
  20]`` with its middle half within 0.2 of zero), take a fair part of the unit interval
  instead of a few percent. A function of the schema only.
* ``"tails"``: the public log scale only on right-tailed columns, those whose declared lower
  bound is zero or more (counts, amounts, durations, weights: values that run right from a
  floor, often with a point mass at it); min-max elsewhere, so a signed column keeps its
  linear scale (for one whose bulk lies far from zero). Free. A column declared far wider
  than its bulk (Adult's ``fnlwgt``, ``[1, 2e6]``) is right-tailed without any point mass:
  measured against the zero-inflated columns alone in docs/results/numeric_columns.md.
* ``"quantiles"``: ``share`` of the fit's epsilon buys
  :func:`jdp.mechanisms.quantiles.dp_quantiles` knots at ``probs`` for each column that needs
  knots (:func:`release_all_knots`). A tenth of
  it (:data:`COUNT_SHARE`) first releases each column's noisy count ``n_c`` of value records
  (those besides point masses and missing values); the rest is split over the columns in
  proportion to ``sqrt(log(4 B_c) / max(n_c, s))`` (:func:`split_knots_epsilon`, ``B_c`` the
  column's geometric buckets, ``s`` the counts' noise sd): a zero-inflated column whose
  value part is a few percent of the rows gets more than a column every record fills.
  :func:`jdp.synth.signal.knot_releases` judges
  each column's knots by the no-signal rule: they carry signal when ``epsilon_l n_c >= 8
  log(4 B_c)`` at the per-level budget ``epsilon_l`` (the exponential mechanism then puts its
  median inside the interquartile range with odds of about 4 to 1: outside, at most ``B_c``
  buckets of base mass weigh ``exp(-epsilon_l n_c / 8)`` each; inside, about one bucket
  weighs 1).

The knots go into the schema (:attr:`jdp.data.schema.Column.quantiles`), so every encoding of
the fit and of sampling reads the column through them (:mod:`jdp.data.scales`). The DP schema
(:func:`jdp.data.dp_schema.infer_schema_dp`) releases bounds from noisy geometric histograms,
not knots (its docstring says why not quantiles).

Released knots are an estimate of each column's distribution, and a model may not follow them
(dp-GAN's tanh heads pile values at the range's ends under DP-SGD's noise). After the fit the
adapter reads the model's own distribution of each knotted column on the unit scale from
:data:`CDF_DRAWS` of its rows (:func:`own_cdf`), and sampling maps a drawn value ``x`` to
``from_unit(F(to_unit(x)))`` (:func:`onto_knots`): the model decides which rows are high or low,
the knots decide the marginal. Post-processing of the model and the knots with public noise.

Privacy: ``"log"`` reads no data. ``"quantiles"`` releases the value counts with Laplace
noise (L1 sensitivity ``k``, the knotted columns: a record is in each count at most once;
``COUNT_SHARE * epsilon``-DP, entry ``dp-counts:knots``), then one
:func:`~jdp.mechanisms.quantiles.dp_quantiles` release per column, on the column's values
besides its declared point masses and missing values (a per-record public filter),
``epsilon_c``-DP under add/remove. The split ``epsilon_c`` depends on the released counts, but
the ``epsilon_c`` sum to ``(1 - COUNT_SHARE) epsilon`` for every count: given the counts, the
releases together are that pure-DP mechanism (the probability of any output sequence changes
by at most ``prod_c exp(epsilon_c)``; a pure-DP privacy filter, Rogers et al. 2016), one entry
``dp-quantiles`` with a ``PureDpEvent`` of the sum. The per-column events would not do: how
RDP or PLD compose them depends on the split, which the data chose. The rest of the budget
goes to the method (basic composition of the pure releases). docs/privacy.md, "Joint DP
quantiles", *As an encoding*.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.validation import check_open_unit
from jdp.data.scales import from_unit, to_unit
from jdp.data.schema import Column, Schema, Table
from jdp.data.transforms import numeric_column, numeric_state, numeric_values
from jdp.mechanisms.noise import laplace_counts
from jdp.mechanisms.quantiles import check_probs, default_resolution, dp_quantiles, geometric_edges
from jdp.random import numpy_rng

__all__ = [
    "COUNT_SHARE",
    "DEFAULT_PROBS",
    "LOG",
    "MIN_MAX",
    "QUANTILES",
    "SCALE_KINDS",
    "TAILS",
    "KnotSpend",
    "NumericScale",
    "Scaled",
    "knot_buckets",
    "knotted",
    "log_knots",
    "needs_knots",
    "onto_knots",
    "own_cdf",
    "release_all_knots",
    "release_knots",
    "right_tailed",
    "scale_table",
    "split_knots_epsilon",
]

#: The knots' levels: the bulk and both shoulders of the distribution (5 knots: three levels
#: of the recursion).
DEFAULT_PROBS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)


#: The share of the knots' epsilon that buys the noisy value counts that split the rest.
COUNT_SHARE = 0.1


#: The numeric scales a method may use (:class:`NumericScale`).
SCALE_KINDS: tuple[str, ...] = ("minmax", "log", "tails", "quantiles")
#: Knots of the public log scale (:func:`log_knots`).
LOG_KNOTS = 16


@dataclass(frozen=True, kw_only=True)
class NumericScale:
    """How a method encodes numeric columns (the module docstring).

    Attributes:
      kind: ``"minmax"`` by the declared bounds, ``"log"`` (public knots, free), ``"tails"``
        (public log knots on right-tailed columns only, free) or ``"quantiles"`` (released
        knots); columns the schema already gives knots keep them.
      share: the share of the fit's epsilon the released knots spend (all columns together;
        ``"quantiles"`` only).
      probs: the released knots' levels.
    """

    kind: str = "minmax"
    share: float = 0.1
    probs: tuple[float, ...] = DEFAULT_PROBS

    def __post_init__(self) -> None:
        if self.kind not in SCALE_KINDS:
            raise ValueError(f"expected kind in {SCALE_KINDS}, got {self.kind!r}")
        check_open_unit("share", self.share)
        object.__setattr__(self, "probs", check_probs(self.probs))

    @property
    def spends(self) -> bool:
        """Whether this scale releases anything (reads the data)."""
        return self.kind == "quantiles"


#: Min-max by the declared bounds (no release).
MIN_MAX = NumericScale()
#: The public log scale (no release).
LOG = NumericScale(kind="log")
#: The public log scale on right-tailed columns only (no release).
TAILS = NumericScale(kind="tails")
#: Released quantile knots at the default share and levels.
QUANTILES = NumericScale(kind="quantiles")


def needs_knots(column: Column) -> bool:
    """A numeric column without knots whose value part has more than two values (a 0/1
    column or a two-value integer range needs no scale)."""
    if not column.is_numeric or column.quantiles:
        return False
    return column.kind == "continuous" or column.upper - column.lower > 1


def right_tailed(column: Column) -> bool:
    """A numeric column whose declared lower bound is zero or more (public: the schema)."""
    return column.is_numeric and column.lower >= 0


def log_knots(column: Column, count: int = LOG_KNOTS) -> Column:
    """``column`` with the public knots of its log scale: ``count`` levels ``p_i = i / (count +
    1)`` at ``v_i = o + sign(y_i) s expm1(|y_i|)``, ``y_i = g(lower) + p_i (g(upper) -
    g(lower))`` (the inverse of the module docstring's ``u``, ``o`` the origin
    ``clip(0, lower, upper)``), rounded up to whole units for an integer column and made
    strictly increasing; an integer column of fewer than ``4 count`` values keeps min-max.
    Reads no data."""
    width = column.upper - column.lower
    unit = 1.0 if column.is_integer_valued else width * 2.0**-10
    if width < 4 * count * unit:  # a few dozen integers: min-max cells are as fine
        return column
    p = np.arange(1, count + 1) / (count + 1)
    origin = float(np.clip(0.0, column.lower, column.upper))
    g_lo = -np.log1p((origin - column.lower) / unit)
    g_hi = np.log1p((column.upper - origin) / unit)
    y = g_lo + p * (g_hi - g_lo)
    v = origin + np.sign(y) * unit * np.expm1(np.abs(y))
    if column.is_integer_valued:
        v = np.ceil(v - 1e-9)
    keep = np.concatenate([[True], np.diff(v) > 0]) & (v > column.lower) & (v < column.upper)
    if keep.sum() < 2:
        return column
    return dataclasses.replace(column, quantiles=tuple(zip(p[keep].tolist(), v[keep].tolist())))


def release_knots(
    rng: np.random.Generator,
    column: Column,
    values: np.ndarray,
    *,
    epsilon: float,
    probs: Sequence[float] = DEFAULT_PROBS,
) -> tuple[Column, ev.DpEvent]:
    """``column`` with knots released from ``values`` (its point masses and missing values
    left out first) by :func:`~jdp.mechanisms.quantiles.dp_quantiles` over its bounds.

    Post-processing: the released values are made strictly increasing (each at least the
    previous plus ``width * 1e-9``, the last at most the upper bound); a column whose knots
    cannot be (its width too small for them) keeps min-max.
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x) & ~np.isin(x, column.point_masses)]
    q, event = dp_quantiles(
        rng, x, tuple(probs), lower=column.lower, upper=column.upper, epsilon=epsilon,
        integer=column.is_integer_valued,
    )  # fmt: skip
    step = column.width * 1e-9
    v = np.maximum.accumulate(q + step * np.arange(len(q)))
    if v[-1] > column.upper:
        return column, event
    return dataclasses.replace(column, quantiles=tuple(zip(probs, v.tolist()))), event


def knot_buckets(column: Column) -> int:
    """How many geometric buckets :func:`~jdp.mechanisms.quantiles.dp_quantiles` cuts the
    column's declared range into (public)."""
    resolution = default_resolution(column.lower, column.upper, integer=column.is_integer_valued)
    return len(geometric_edges(column.lower, column.upper, resolution)) - 1


def split_knots_epsilon(
    epsilon: float, columns: Sequence[Column], counts: np.ndarray, floor: float = 1.0
) -> np.ndarray:
    """``epsilon`` split over ``columns`` in proportion to ``sqrt(log(4 B_c) / max(n_c,
    floor))`` (``B_c`` :func:`knot_buckets`, ``n_c`` the released value counts): the per-level
    budget that gives a column's knots signal scales as ``log(4 B_c) / n_c`` (module
    docstring), and the square root gives a thin column more without starving the others
    (splitting in proportion to the need itself put Adult's hours-per-week median outside its
    interquartile range of 40 to 45 hours: docs/privacy.md, "As an encoding"). ``floor``, the
    counts' noise standard deviation in a fit, keeps a count that the noise put near zero or
    below from taking nearly all of ``epsilon`` (at epsilon 0.3 on Adult, capital-loss's
    count came out negative and its knots took 97% of the budget). Post-processing of the
    counts. The parts sum to ``epsilon`` for any counts."""
    need = np.array([np.log(4.0 * knot_buckets(c)) for c in columns])
    weight = np.sqrt(need / np.maximum(np.asarray(counts, dtype=np.float64), max(floor, 1.0)))
    return epsilon * weight / weight.sum()


class KnotSpend(NamedTuple):
    """One column's knots: what the no-signal rule reads (released or public values only)."""

    #: the column (its declared range sets its buckets)
    column: Column
    #: its released value count (the public cap when the budget was too small to count)
    count: float
    #: the epsilon its knots spent
    epsilon: float


def release_all_knots(
    rng: np.random.Generator,
    frame: pd.DataFrame,
    columns: Sequence[Column],
    *,
    epsilon: float,
    probs: Sequence[float] = DEFAULT_PROBS,
) -> tuple[list[Column], PrivacyLedger, list[KnotSpend]]:
    """``columns`` with knots released from ``frame`` at ``epsilon`` in all: the noisy value
    counts (:data:`COUNT_SHARE`), their split of the rest (:func:`split_knots_epsilon`), one
    :func:`release_knots` per column (module docstring, "Privacy"). Returns the columns, the
    ledger (``dp-counts:knots``, ``dp-quantiles``) and each column's count and epsilon for the
    no-signal rule (:func:`jdp.synth.signal.knot_releases`)."""
    values = []
    for column in columns:
        x = numeric_values(frame[column.name])
        values.append(x[~np.isnan(x) & ~np.isin(x, column.point_masses)])
    sizes = np.array([len(x) for x in values], dtype=np.float64)
    sensitivity, count_epsilon = float(len(columns)), COUNT_SHARE * epsilon
    counts, count_event = laplace_counts(
        rng, sizes, l1_sensitivity=sensitivity, epsilon=count_epsilon
    )
    rest = (1.0 - COUNT_SHARE) * epsilon
    # the counts' noise sd, sqrt(2) k / epsilon_n: a count below it is about as likely zero
    split = split_knots_epsilon(
        rest, columns, counts, floor=np.sqrt(2.0) * sensitivity / count_epsilon
    )
    knotted_columns = [
        release_knots(rng, column, x, epsilon=float(e), probs=probs)[0]
        for column, x, e in zip(columns, values, split, strict=True)
    ]
    ledger = PrivacyLedger()
    if count_event is not None:  # else too small an epsilon to count: the split is by buckets
        ledger = ledger.record(
            "dp-counts:knots", count_event, note="value counts that split the knots' budget"
        )
    ledger = ledger.record(
        "dp-quantiles",
        ev.PureDpEvent(epsilon=rest),
        note="knots of " + ", ".join(c.name for c in columns),
    )
    spends = [KnotSpend(*kce) for kce in zip(columns, counts.tolist(), split.tolist(), strict=True)]
    return knotted_columns, ledger, spends


class Scaled(NamedTuple):
    """What :func:`scale_table` returns."""

    #: the table on the schema with knots
    data: Table
    #: the releases' ledger (empty for a public scale)
    ledger: PrivacyLedger
    #: the budget left for the method
    rest: PrivacyBudget
    #: each released column's count and epsilon, for the no-signal rule
    knots: list[KnotSpend]


def scale_table(
    key: jax.Array | None, data: Table, budget: PrivacyBudget, scale: NumericScale
) -> Scaled:
    """``data`` on the schema with knots for every column that :func:`needs_knots`, by
    ``scale.kind``; returns it with the releases' ledger, the budget left for the method
    (:meth:`~accounting.budget.PrivacyBudget.less`; the knots take ``share`` of the epsilon
    basic composition leaves, :attr:`~accounting.budget.PrivacyBudget.left`) and what each
    column's knots spent, for the no-signal rule. ``key`` is read only to release knots."""
    todo = [c for c in data.schema.columns if needs_knots(c)]
    if scale.kind == "minmax" or not todo:
        return Scaled(data, PrivacyLedger(), budget, [])
    ledger, rest, scaled, spends = PrivacyLedger(), budget, {}, []
    if scale.kind == "log":
        scaled = {c.name: log_knots(c) for c in todo}
    elif scale.kind == "tails":
        scaled = {c.name: log_knots(c) for c in todo if right_tailed(c)}
    else:
        epsilon = scale.share * budget.left.epsilon
        knotted_columns, ledger, spends = release_all_knots(
            numpy_rng(key), data.frame, todo, epsilon=epsilon, probs=scale.probs
        )
        scaled = {c.name: c for c in knotted_columns}
        rest = budget.less(ledger)
    schema = dataclasses.replace(
        data.schema, columns=tuple(scaled.get(c.name, c) for c in data.schema.columns)
    )
    return Scaled(dataclasses.replace(data, schema=schema), ledger, rest, spends)


#: Rows from which a fitted model's own distribution of each knotted column is read
#: (:func:`own_cdf`), and the points of it kept.
CDF_DRAWS, CDF_POINTS = 16384, 129


def knotted(schema: Schema, scale: NumericScale) -> list[Column]:
    """The columns of ``schema`` whose knots were released from the data (``scale`` of kind
    ``"quantiles"``; the log scale's public knots estimate nothing)."""
    if scale.kind != "quantiles":
        return []
    return [c for c in schema.columns if c.is_numeric and c.quantiles]


def own_cdf(schema: Schema, scale: NumericScale, drawn: pd.DataFrame) -> np.ndarray:
    """``(len(knotted), CDF_POINTS)``: for each :func:`knotted` column, the quantiles of its
    drawn values (not its point masses or missing values) on the unit scale (``to_unit``) at
    probabilities ``linspace(0, 1, CDF_POINTS)`` (the identity where no drawn row holds a
    value)."""
    grid = np.linspace(0.0, 1.0, CDF_POINTS)
    out = []
    for column in knotted(schema, scale):
        x = numeric_values(drawn[column.name])
        u = to_unit(column, x[numeric_state(column, x) == 0])
        out.append(np.quantile(u, grid) if u.size else grid)
    return np.asarray(out).reshape(-1, CDF_POINTS)


def onto_knots(
    schema: Schema, scale: NumericScale, drawn: pd.DataFrame, cdf: np.ndarray
) -> pd.DataFrame:
    """``drawn`` with each :func:`knotted` column's values ``x`` (not its point masses or
    missing values) replaced by ``from_unit(F(to_unit(x)))``, ``F`` the piecewise-linear CDF
    through that column's row of ``cdf`` (:func:`own_cdf`; a value the model ties on goes to
    the middle of its probabilities: a constant column gives the knots' median), in the
    column's type (:func:`~jdp.data.transforms.numeric_column`: an integer rounded, a value
    that lands on a point mass moved off it): the model's ranks on the released knots."""
    out = drawn.copy()
    grid = np.linspace(0.0, 1.0, cdf.shape[1])
    for q, column in zip(cdf, knotted(schema, scale)):
        x = numeric_values(drawn[column.name]).copy()
        state = numeric_state(column, x)
        rows = state == 0
        u = to_unit(column, x[rows])
        rank = 0.5 * (np.interp(u, q, grid) + np.interp(-u, -q[::-1], grid[::-1]))
        x[rows] = from_unit(column, rank)
        out[column.name] = numeric_column(column, x, state)
    return out
