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
* ``"quantiles"``: ``share`` of the fit's epsilon, split equally over the columns that need
  knots, buys :func:`jdp.mechanisms.quantiles.dp_quantiles` knots at ``probs`` for each.

The knots go into the schema (:attr:`jdp.data.schema.Column.quantiles`), so every encoding of
the fit and of sampling reads the column through them (:mod:`jdp.data.scales`). The DP schema
(:func:`jdp.data.dp_schema.infer_schema_dp`) releases knots with the same function.

Released knots are an estimate of each column's distribution, and a model may not follow them
(dp-GAN's tanh heads pile values at the range's ends under DP-SGD's noise). After the fit the
adapter reads the model's own distribution of each knotted column on the unit scale from
:data:`CDF_DRAWS` of its rows (:func:`own_cdf`), and sampling maps a drawn value ``x`` to
``from_unit(F(to_unit(x)))`` (:func:`onto_knots`): the model decides which rows are high or low,
the knots decide the marginal. Post-processing of the model and the knots with public noise.

Privacy: ``"log"`` reads no data. ``"quantiles"`` makes one
:func:`~jdp.mechanisms.quantiles.dp_quantiles` release per column, on the column's values
besides its declared point masses and missing values (a per-record public filter), each
``epsilon_c``-DP under add/remove; entries ``dp-quantiles:<column>`` in the ledger; the rest of
the budget goes to the method (basic composition of the pure releases).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.validation import check_open_unit
from jdp.data.scales import from_unit, to_unit
from jdp.data.schema import Column, Schema, Table
from jdp.data.transforms import numeric_column, numeric_state, numeric_values
from jdp.mechanisms.quantiles import check_probs, dp_quantiles
from jdp.random import numpy_rng

__all__ = [
    "DEFAULT_PROBS",
    "LOG",
    "MIN_MAX",
    "QUANTILES",
    "SCALE_KINDS",
    "TAILS",
    "NumericScale",
    "knotted",
    "log_knots",
    "needs_knots",
    "onto_knots",
    "own_cdf",
    "release_knots",
    "right_tailed",
    "scale_table",
]

#: The knots' levels: the bulk and both shoulders of the distribution (5 knots: three levels
#: of the recursion).
DEFAULT_PROBS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)


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


def scale_table(
    key: jax.Array | None, data: Table, budget: PrivacyBudget, scale: NumericScale
) -> tuple[Table, PrivacyLedger, PrivacyBudget]:
    """``data`` on the schema with knots for every column that :func:`needs_knots`, by
    ``scale.kind``; returns the table, the releases' ledger and the budget left for the method
    (:meth:`~accounting.budget.PrivacyBudget.less`; the knots take ``share`` of the epsilon
    basic composition leaves, :attr:`~accounting.budget.PrivacyBudget.left`).
    ``key`` is read only to release knots."""
    todo = [c for c in data.schema.columns if needs_knots(c)]
    if scale.kind == "minmax" or not todo:
        return data, PrivacyLedger(), budget
    ledger, rest, scaled = PrivacyLedger(), budget, {}
    if scale.kind == "log":
        scaled = {c.name: log_knots(c) for c in todo}
    elif scale.kind == "tails":
        scaled = {c.name: log_knots(c) for c in todo if right_tailed(c)}
    else:
        rng = numpy_rng(key)
        eps = scale.share * budget.left.epsilon / len(todo)
        for column in todo:
            values = numeric_values(data.frame[column.name])
            scaled[column.name], event = release_knots(
                rng, column, values, epsilon=eps, probs=scale.probs
            )
            ledger = ledger.record(f"dp-quantiles:{column.name}", event)
        rest = budget.less(ledger)
    schema = dataclasses.replace(
        data.schema, columns=tuple(scaled.get(c.name, c) for c in data.schema.columns)
    )
    return dataclasses.replace(data, schema=schema), ledger, rest


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
