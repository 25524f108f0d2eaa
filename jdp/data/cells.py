"""Discretisation for the histogram methods: a table as one cell index per column, and back.

A column's cells are public (a function of the schema and ``bins``): a categorical column's
categories (plus "missing" when nullable); a numeric column's value cells -- ``bins`` equal
parts of its unit scale (:mod:`jdp.data.scales`), or whole runs of integers -- then one cell
per point mass and one for missing values (:func:`jdp.data.transforms.state_categories`).
Each record falls in exactly one cell; decoding draws a value inside its cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax
import numpy as np
import pandas as pd

from jdp.data.scales import from_unit
from jdp.data.schema import Column, Schema, Table
from jdp.data.transforms import (
    category_index,
    category_labels,
    integer_runs,
    numeric_column,
    numeric_state,
    numeric_values,
    run_bounds,
    state_categories,
    value_cells,
)
from jdp.random import numpy_rng


def resolved_bins(bins: int | Literal["auto"]) -> int:
    """``bins`` for a codec: an int, refused while a method's ``"auto"`` is unresolved (a fit
    resolves it from the declared or released row count, ``Method.for_shape``)."""
    if bins == "auto":
        raise ValueError(
            "bins='auto' is resolved from the row count when fitting a table (fit_model, "
            "for_shape); give an int to use the arrays directly"
        )
    return bins


def n_bins(column: Column, bins: int) -> int:
    """Number of cells of ``column``: its categories (plus one "missing" cell if nullable),
    or for a numeric column its value cells plus one cell per point mass and one "missing"
    cell if nullable (:func:`state_categories`). Public: a function of the schema."""
    if not column.is_numeric:
        return len(column.categories) + column.nullable
    return len(state_categories(column, bins))


def discretize(column: Column, values: np.ndarray | pd.Series, bins: int) -> np.ndarray:
    """Cell index (int64) of each value: its category's position, or the numeric cell of
    :func:`numeric_state` (value cells of the public bounds, then a cell of its own per point
    mass and for missing values). Each record falls in exactly one cell."""
    if not column.is_numeric:
        return category_index(column, values)
    return numeric_state(column, numeric_values(values), bins)


def undiscretize(
    rng: np.random.Generator, column: Column, cells: np.ndarray, bins: int
) -> np.ndarray:
    """Values for cell indices: the category, a uniform draw inside a value cell (a whole
    integer of its run; else uniform on the cell's part of the unit scale, mapped back), the
    point mass of a mass cell, or missing (array types as :func:`numeric_column`)."""
    cells = np.asarray(cells, dtype=np.int64)
    if not column.is_numeric:
        return category_labels(column, cells)
    b = value_cells(column, bins)
    value = np.minimum(cells, b - 1)
    if integer_runs(column, bins):
        first, last = run_bounds(column, value, bins)
        values = rng.integers(first, last + 1)
    else:
        values = from_unit(column, (value + rng.random(len(cells))) / b)
    return numeric_column(column, values, cells, bins)


def cell_values(column: Column, bins: int, points: int = 64) -> np.ndarray:
    """The mean value :func:`undiscretize` draws in each of a numeric column's cells: the
    mean of a value cell's integer run, or of ``from_unit`` over the cell's part of the unit
    scale (midpoint rule on ``points`` points); a point mass's value; NaN for "missing".
    Public: a function of the schema and ``bins``."""
    b = value_cells(column, bins)
    cells = np.arange(b)
    if integer_runs(column, bins):
        first, last = run_bounds(column, cells, bins)
        values = (first + last) / 2.0
    else:
        u = (cells[:, None] + (np.arange(points) + 0.5)[None, :] / points) / b
        values = from_unit(column, u.ravel()).reshape(b, points).mean(axis=1)
    return np.concatenate(
        [values, np.asarray(column.point_masses, dtype=np.float64), [np.nan] * column.nullable]
    )


@dataclass(frozen=True)
class CellCodec:
    """A table as one cell index per column (:func:`discretize`), and back
    (:func:`undiscretize`): the codec (:class:`jdp.synth.base.Codec`) of the histogram methods.
    Public: built from the schema and ``bins`` alone."""

    schema: Schema
    bins: int

    def encode(self, data: Table) -> np.ndarray:
        """The ``(n, d)`` int64 cell indices of the records (private), a column at a time into
        the one output array."""
        cells = np.empty((len(data), len(self.schema.columns)), dtype=np.int64)
        for j, col in enumerate(self.schema.columns):
            cells[:, j] = discretize(col, data.frame[col.name], self.bins)
        return cells

    def decode(self, key: jax.Array, cells: np.ndarray) -> pd.DataFrame:
        """A table of the cells' values (post-processing; :func:`undiscretize` draws inside a
        value cell with a generator from ``key``)."""
        rng = numpy_rng(key)
        return pd.DataFrame(
            {
                col.name: undiscretize(rng, col, cells[:, j], self.bins)
                for j, col in enumerate(self.schema.columns)
            }
        )
