"""Numeric columns on released quantiles: which columns get knots, and their DP release.

A method whose config asks for it (:class:`NumericScale` with ``quantiles=True``) spends
``share`` of its epsilon on :func:`jdp.mechanisms.quantiles.dp_quantiles` for each numeric
column of the schema that has no knots yet (:func:`needs_knots`), split equally over them,
before it reads anything else; the knots go into the schema
(:attr:`jdp.data.schema.Column.quantiles`), so every encoding of the fit and of sampling
reads the column on its quantile scale (:mod:`jdp.data.scales`). The DP schema
(:func:`jdp.data.dp_schema.infer_schema_dp`) releases the same knots with the same function.

Privacy: one :func:`~jdp.mechanisms.quantiles.dp_quantiles` release per column, on the
column's values besides its declared point masses and missing values (a per-record public
filter), each ``epsilon_c``-DP under add/remove; entries ``dp-quantiles:<column>`` in the
ledger; the rest of the budget goes to the method (basic composition of the pure releases).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.validation import check_open_unit
from jdp.data.schema import Column, Table
from jdp.data.transforms import numeric_values
from jdp.mechanisms.quantiles import check_probs, dp_quantiles
from jdp.random import numpy_rng

__all__ = [
    "DEFAULT_PROBS",
    "MIN_MAX",
    "QUANTILES",
    "NumericScale",
    "needs_knots",
    "release_knots",
    "release_scales",
]

#: The knots' levels: the bulk and both shoulders of the distribution (5 knots: three levels
#: of the recursion).
DEFAULT_PROBS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True, kw_only=True)
class NumericScale:
    """How a method encodes numeric columns.

    Attributes:
      quantiles: encode on released quantile knots (:mod:`jdp.data.scales`) instead of
        min-max by the declared bounds; columns the schema already gives knots use them at
        no cost.
      share: the share of the fit's epsilon the knots spend (all columns together).
      probs: the knots' levels.
    """

    quantiles: bool = False
    share: float = 0.1
    probs: tuple[float, ...] = DEFAULT_PROBS

    def __post_init__(self) -> None:
        if not isinstance(self.quantiles, bool):
            raise TypeError(f"expected quantiles to be a bool, got {self.quantiles!r}")
        check_open_unit("share", self.share)
        object.__setattr__(self, "probs", check_probs(self.probs))


#: Min-max by the declared bounds (no release).
MIN_MAX = NumericScale()
#: Released quantile knots at the default share and levels.
QUANTILES = NumericScale(quantiles=True)


def needs_knots(column: Column) -> bool:
    """A numeric column without knots whose value part has more than two values (a 0/1
    column or a two-value integer range needs no scale)."""
    if not column.is_numeric or column.quantiles:
        return False
    return column.kind == "continuous" or column.upper - column.lower > 1


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
        integer=column.kind == "integer",
    )  # fmt: skip
    step = column.width * 1e-9
    v = np.maximum.accumulate(q + step * np.arange(len(q)))
    if v[-1] > column.upper:
        return column, event
    return dataclasses.replace(column, quantiles=tuple(zip(probs, v.tolist()))), event


def release_scales(
    key: jax.Array, data: Table, budget: PrivacyBudget, scale: NumericScale
) -> tuple[Table, PrivacyLedger, PrivacyBudget]:
    """Release knots for every column of ``data`` that :func:`needs_knots`, when ``scale``
    asks for quantiles; returns the table on the schema with knots, the releases' ledger and
    the budget left for the method (``(1 - share) epsilon``, the same delta). Nothing is
    spent when no column needs knots."""
    todo = [c for c in data.schema.columns if needs_knots(c)] if scale.quantiles else []
    if not todo:
        return data, PrivacyLedger(), budget
    rng = numpy_rng(key)
    eps = scale.share * budget.epsilon / len(todo)
    ledger, released = PrivacyLedger(), {}
    for column in todo:
        values = numeric_values(data.frame[column.name])
        released[column.name], event = release_knots(
            rng, column, values, epsilon=eps, probs=scale.probs
        )
        ledger = ledger.record(f"dp-quantiles:{column.name}", event)
    schema = dataclasses.replace(
        data.schema, columns=tuple(released.get(c.name, c) for c in data.schema.columns)
    )
    rest = PrivacyBudget(epsilon=(1 - scale.share) * budget.epsilon, delta=budget.delta)
    return dataclasses.replace(data, schema=schema), ledger, rest
