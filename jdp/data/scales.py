"""A numeric column's map to the unit interval: min-max by its bounds, or its CDF through
quantile knots.

Every encoding of a numeric value goes through :func:`to_unit` and back through
:func:`from_unit` (:class:`jdp.data.transforms.TableEncoder`'s coordinates,
:func:`jdp.data.cells.discretize`'s cells), so a column with knots is encoded on its
quantile scale by every method at once.

* Without knots: ``u = (x - lower) / (upper - lower)``.
* With knots ``(p_1, v_1), ..., (p_m, v_m)`` (:attr:`jdp.data.schema.Column.quantiles`:
  released by :func:`jdp.mechanisms.quantiles.dp_quantiles`, or declared): the piecewise-linear
  CDF through them, extended on each side with the slope of its outer segment down to
  ``u = 0`` and up to ``u = 1`` and cut at the column's bounds (:func:`knots`). A value
  beyond the extended ends maps to 0 or 1; ``from_unit`` never leaves the extended ends.
  The tails of a long-tailed column then take no more of the unit interval than their share
  of the records, and a decoded value is spread like the data, not over the public range.

Both maps read the public schema only (post-processing of released knots).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from jdp.data.schema import Column

__all__ = ["from_unit", "knots", "to_unit"]


def knots(column: Column) -> tuple[np.ndarray, np.ndarray]:
    """``(values, probabilities)``: the increasing breakpoints of the column's map, from
    ``(lower, 0)`` to ``(upper, 1)`` without knots; with knots, the knots and the two ends
    extended linearly by the outer segments' slopes, cut at the bounds."""
    if not column.quantiles:
        return np.array([column.lower, column.upper]), np.array([0.0, 1.0])
    p = np.array([q for q, _ in column.quantiles])
    v = np.array([x for _, x in column.quantiles])
    if len(p) == 1:
        low_slope = (v[0] - column.lower) / p[0]
        high_slope = (column.upper - v[0]) / (1 - p[0])
    else:
        low_slope = (v[1] - v[0]) / (p[1] - p[0])
        high_slope = (v[-1] - v[-2]) / (p[-1] - p[-2])
    first = max(column.lower, v[0] - p[0] * low_slope)
    last = min(column.upper, v[-1] + (1 - p[-1]) * high_slope)
    return np.concatenate([[first], v, [last]]), np.concatenate([[0.0], p, [1.0]])


def to_unit(column: Column, x: np.ndarray) -> np.ndarray:
    """The value ``x`` (float array, no NaN) in ``[0, 1]`` by the column's map."""
    xp, fp = knots(column)
    return np.interp(np.asarray(x, dtype=np.float64), xp, fp)


def from_unit(column: Column, u: np.ndarray) -> np.ndarray:
    """The inverse of :func:`to_unit`: ``u`` (clipped to ``[0, 1]``) back to a value."""
    xp, fp = knots(column)
    return np.interp(np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0), fp, xp)
