"""Reversible encodings between a schema-conforming table and a numeric matrix.

Every encoder here is a function of the public :class:`~jdp.data.schema.Schema` and of
options alone; it reads nothing off the data, so building one costs no privacy and two
neighbouring datasets get the identical encoder.

Layout of an encoded row (``TableEncoder.spans``), one span per column in schema order:

* numeric column ``x`` in ``[lo, hi]`` -> one coordinate
  ``a + (b - a) (x - lo) / (hi - lo)`` in ``continuous_range = [a, b]`` (min-max to the
  declared bounds; values outside were clipped by :meth:`Schema.conform`, with a counted
  warning);
* categorical column with ``K`` categories -> ``K`` coordinates, the one-hot vector of its
  category (a softmax head in a generator: :func:`jdp.nn.heads.heads_for_spans`); a
  ``nullable`` one gets a ``K+1``-th category, "missing";
* a numeric column with declared ``point_masses``, or ``nullable``, is followed by its
  *state indicator*
  (:func:`~jdp.data.schema.state_column_name`, e.g. ``"capital-gain#state"``): a one-hot
  block over its states (:func:`state_categories`: "value", one per point mass, "missing"),
  modelled like any categorical column. Decoding puts a point mass back exactly when the
  indicator names it, writes a missing value when it says "missing", and otherwise decodes
  the value coordinate. (Tried on Adult at epsilon = 1: also naming one of 8 or 32 public
  value cells in the state made P3GM's 2-way TVD worse, 0.29-0.30 against 0.24: the wider
  encoding costs more than the sampled cells give back.)

With ``unit_norm=True`` each row is divided by the public constant
``row_norm_bound = sqrt(sum_numeric max(a^2, b^2) + n_categorical)``, the largest L2 norm an
encoded row can have, so every row has L2 norm <= 1 (what DP-PCA, DP-EM and similar
mechanisms assume) and the scaling is exactly invertible (a data-dependent normalisation
``x / ||x||`` would not be).

Decoding maps numeric coordinates back (clipped into the range; integers rounded), and each
categorical span to the category of its largest coordinate (argmax), so it accepts a
generator's softmax output or a noisy one-hot as well as an exact one. For in-bound data,
``decode(encode(t))`` returns ``t`` exactly for integer and categorical columns, point masses
and missing values, and to within a few floating-point ulps for continuous values.

``TableEncoder.columns`` lists one column per span (the state indicators as categorical
columns), so code that walks ``zip(encoder.columns, encoder.spans)`` sees them as ordinary
categorical columns; ``source_columns`` are the schema's columns.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import jax
import numpy as np
import pandas as pd

from jdp.data.scales import from_unit, to_unit
from jdp.data.schema import (
    Column,
    Schema,
    Table,
    dates_to_days,
    days_to_dates,
    state_column_name,
    typed_labels,
)

Activation = Literal["sigmoid", "tanh", "identity", "softmax"]
BlockChoice = Literal["states", "all"]


@dataclass(frozen=True)
class Span:
    """Coordinates ``[start, stop)`` of one column in an encoded row."""

    name: str
    kind: str
    start: int
    stop: int
    activation: Activation

    @property
    def size(self) -> int:
        return self.stop - self.start


def category_index(column: Column, values: np.ndarray | pd.Series) -> np.ndarray:
    """Positions of ``values`` in ``column.categories`` (int64); raises on an unseen value.
    A nullable column's missing values (``None``, NaN, ``pd.NA``) get position ``K`` (one past
    the categories: the "missing" category)."""
    lookup = {c: i for i, c in enumerate(column.categories)}
    values = np.asarray(values, dtype=object)
    if column.nullable:
        values = np.where(pd.isna(values), _MISSING, values)
        lookup[_MISSING] = len(column.categories)
    try:
        return np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))
    except KeyError as exc:
        raise ValueError(
            f"column {column.name!r} has a value outside its declared domain: {exc.args[0]!r}"
        ) from None


def category_labels(column: Column, index: np.ndarray) -> np.ndarray:
    """Inverse of :func:`category_index`, as an array of the categories' own type (objects,
    ``None`` at position ``K``, for a nullable column)."""
    labels = list(column.categories) + ([None] if column.nullable else [])
    return typed_labels(column, np.asarray(labels, dtype=object)[np.asarray(index, dtype=np.int64)])


class _Missing:
    """The lookup key of a missing value in :func:`category_index`."""


_MISSING = _Missing()


def _numeric_activation(lo: float, hi: float) -> Activation:
    if (lo, hi) == (0.0, 1.0):
        return "sigmoid"
    if (lo, hi) == (-1.0, 1.0):
        return "tanh"
    return "identity"


def value_cells(column: Column, bins: int) -> int:
    """Cells of a numeric column's value range: its integers (if at most ``bins``) or
    ``bins`` equal-width cells of its public bounds."""
    if column.is_integer_valued:
        return min(bins, int(column.upper - column.lower) + 1)
    return bins


def integer_runs(column: Column, bins: int) -> bool:
    """Whether an integer column's value cells are runs of whole integers (no knots, or one
    cell per value); otherwise cells are equal parts of its unit scale (:mod:`jdp.data.scales`)."""
    r = int(column.upper - column.lower) + 1
    return column.is_integer_valued and (not column.quantiles or r <= bins)


def has_state(column: Column) -> bool:
    """Whether a numeric column gets a state indicator in :class:`TableEncoder` (point
    masses or missing values)."""
    return column.is_numeric and bool(column.point_masses or column.nullable)


def state_categories(column: Column, bins: int = 1) -> tuple[str, ...]:
    """The cells of a numeric column, public, in :func:`numeric_state` order: its value
    cells (``"value"`` when there is one, as in :class:`TableEncoder`'s state indicator,
    else ``"value:j"``), one ``"=m"`` per declared point mass ``m``, and ``"missing"`` if
    the column is nullable."""
    b = value_cells(column, bins)
    values = ("value",) if b == 1 else tuple(f"value:{j}" for j in range(b))
    masses = tuple("=" + format(m, ".17g") for m in column.point_masses)
    return (*values, *masses, *(("missing",) if column.nullable else ()))


def numeric_values(series: pd.Series | np.ndarray) -> np.ndarray:
    """A numeric column's values as float64, NaN where missing (``pd.NA`` included); a
    ``datetime64`` column (a date column as :func:`numeric_column` decodes it) as its day
    counts (:func:`jdp.data.schema.dates_to_days`)."""
    series = pd.Series(series)
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return dates_to_days(series, str(series.name))
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def numeric_state(column: Column, x: np.ndarray, bins: int = 1) -> np.ndarray:
    """The cell of each value (int64, :func:`state_categories` order): value cell ``k < B``
    (``B = value_cells``; an integer column with ``R = upper - lower + 1`` values puts ``x``
    in ``floor((x - lower) B / R)``, so each cell holds a run of whole integers; a continuous
    one in the ``k``-th equal-width cell), ``B + j`` for a value equal to point mass ``j``
    (a cell of its own, not the value cell around it), the last for missing. A column on its
    quantile scale puts ``x`` in ``floor(to_unit(x) B)`` (:mod:`jdp.data.scales`; equal-width
    cells without knots). A function of each record's own value and the public schema: each
    record is in exactly one cell."""
    b = value_cells(column, bins)
    if integer_runs(column, bins):
        r = int(column.upper - column.lower) + 1
        cells = ((x - column.lower) * b) // r
    else:
        cells = np.floor(to_unit(column, np.nan_to_num(x, nan=column.lower)) * b)
    cells = np.clip(np.nan_to_num(cells), 0, b - 1).astype(np.int64)
    for j, m in enumerate(column.point_masses):
        cells[x == m] = b + j
    if column.nullable:
        cells[np.isnan(x)] = b + len(column.point_masses)
    return cells


def run_bounds(column: Column, cells: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The first and last whole integer of value cells that are integer runs."""
    b, r = value_cells(column, bins), int(column.upper - column.lower) + 1
    first = -((-cells * r) // b)  # ceil(k R / B)
    stop = -((-(cells + 1) * r) // b)  # ceil((k + 1) R / B)
    return column.lower + first, column.lower + stop - 1


def _off_masses(column: Column, mass: float) -> float:
    """The nearest value to ``mass`` inside the bounds, towards the interior, that is no
    point mass (``mass`` itself if there is none)."""
    inward = column.upper if mass < column.upper else column.lower
    v = mass
    for _ in range(len(column.point_masses)):
        v = v + np.sign(inward - v) if column.is_integer_valued else np.nextafter(v, inward)
        if not column.lower <= v <= column.upper:
            return mass
        if v not in column.point_masses:
            return float(v)
    return mass


def numeric_column(
    column: Column, values: np.ndarray, state: np.ndarray | None, bins: int = 1
) -> np.ndarray:
    """Values in ``[lower, upper]`` (integers rounded) with ``state`` (cells of
    :func:`numeric_state` with ``bins``) applied: the point mass exactly where the state
    names one, missing where it says missing. A value cell never gives a point mass (no
    record of a value cell equals one: it would be in the mass's cell): a value equal to a
    mass moves to the nearest value in bounds that is none (integers: the next integer
    inwards; continuous: the next float inwards), e.g. capital-gain's "value" state with a
    value coordinate at the lower bound gives 1, not 0. Array type: float64 (NaN =
    missing), int64, or pandas ``Int64`` for a nullable integer column; for a date column
    (day counts, as an integer column) ``datetime64[ns]`` dates, ``NaT`` where missing
    (:func:`jdp.data.schema.days_to_dates`: the one conversion back to dates)."""
    v = np.clip(np.asarray(values, dtype=np.float64), column.lower, column.upper)
    if column.is_integer_valued:
        v = np.clip(np.round(v), column.lower, column.upper)
    if state is not None:
        b = value_cells(column, bins)
        for m in column.point_masses:
            v[(state < b) & (v == m)] = _off_masses(column, m)
        masses = np.asarray((*column.point_masses, np.nan))
        v = np.where(state < b, v, masses[np.clip(state - b, 0, len(masses) - 1)])
    if column.kind == "date":
        return days_to_dates(v)
    if not column.is_integer_valued:
        return v
    return pd.array(v, dtype="Int64") if column.nullable else v.astype(np.int64)


@dataclass(frozen=True)
class TableEncoder:
    """Min-max + one-hot encoder built from a public schema (see the module docstring).

    Args:
      schema: the public schema.
      continuous_range: the interval ``[a, b]`` numeric columns are mapped onto.
      unit_norm: divide rows by :attr:`row_norm_bound` so every row has L2 norm <= 1.
      exclude_target: leave the target column out of the matrix (encode it with
        :meth:`encode_target`; give its codes back to :meth:`decode`).
    """

    schema: Schema
    continuous_range: tuple[float, float] = (0.0, 1.0)
    unit_norm: bool = False
    exclude_target: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise TypeError(f"expected a Schema, got {type(self.schema).__name__}")
        a, b = (float(v) for v in self.continuous_range)
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise ValueError(
                f"expected continuous_range (a, b) with a < b, got {self.continuous_range}"
            )
        object.__setattr__(self, "continuous_range", (a, b))
        if self.exclude_target and self.schema.target is None:
            raise ValueError("exclude_target=True needs a schema with a target column")
        if not self.source_columns:
            raise ValueError("nothing to encode: the schema has no column besides the target")

    # -- layout -----------------------------------------------------------------------------
    @cached_property
    def source_columns(self) -> tuple[Column, ...]:
        """The schema's columns that are encoded (all but an excluded target)."""
        skip = self.schema.target if self.exclude_target else None
        return tuple(c for c in self.schema.columns if c.name != skip)

    @cached_property
    def columns(self) -> tuple[Column, ...]:
        """One column per span, in span order: each source column as it is, except that a
        numeric column with point masses or ``nullable`` becomes its value part (the same
        column without them) followed by its state indicator, a categorical column named
        :func:`~jdp.data.schema.state_column_name` with :func:`state_categories`."""
        out = []
        for col in self.source_columns:
            if has_state(col):
                out.append(dataclasses.replace(col, point_masses=(), nullable=False))
                out.append(
                    Column(
                        name=state_column_name(col.name),
                        kind="categorical",
                        categories=state_categories(col),
                    )
                )
            else:
                out.append(col)
        return tuple(out)

    @cached_property
    def spans(self) -> tuple[Span, ...]:
        spans, start = [], 0
        numeric_act = _numeric_activation(*self.continuous_range)
        for col in self.columns:
            size = 1 if col.is_numeric else len(col.categories) + col.nullable
            act: Activation = numeric_act if col.is_numeric else "softmax"
            spans.append(Span(col.name, col.kind, start, start + size, act))
            start += size
        return tuple(spans)

    @cached_property
    def _layout(self) -> tuple[tuple[Column, Span, Span | None], ...]:
        """(source column, its value or one-hot span, its state span or None)."""
        spans = iter(self.spans)
        return tuple(
            (col, next(spans), next(spans) if has_state(col) else None)
            for col in self.source_columns
        )

    @property
    def width(self) -> int:
        return self.spans[-1].stop

    @cached_property
    def row_norm_bound(self) -> float:
        """The largest L2 norm of an encoded row before unit-norm scaling (public): each
        numeric coordinate is in ``[a, b]`` and each one-hot block (categories, states) has
        exactly one 1."""
        a, b = self.continuous_range
        n_numeric = sum(c.is_numeric for c in self.columns)
        return math.sqrt(n_numeric * max(a * a, b * b) + (len(self.columns) - n_numeric))

    @property
    def scale(self) -> float:
        return self.row_norm_bound if self.unit_norm else 1.0

    def one_hot_spans(self, which: BlockChoice) -> tuple[Span, ...]:
        """The one-hot spans :meth:`sample_blocks` draws: ``"states"`` (the state
        indicators) or ``"all"`` (state indicators and categorical columns)."""
        if which not in ("states", "all"):
            raise ValueError(f"expected which in ('states', 'all'), got {which!r}")
        states = {s.name for _, _, s in self._layout if s is not None}
        return tuple(
            s
            for s in self.spans
            if s.kind == "categorical" and (which == "all" or s.name in states)
        )

    def sample_blocks(
        self, rng: np.random.Generator, x: np.ndarray, which: BlockChoice = "states"
    ) -> np.ndarray:
        """Encoded rows with each one-hot block of :meth:`one_hot_spans` replaced by a one-hot
        vector drawn from the block itself (post-processing: no privacy cost).

        Row ``i``'s block ``b`` (``K`` coordinates) names category ``j`` with probability
        ``p_j = max(b_j, 0) / sum_l max(b_l, 0)``; a block with no positive coordinate keeps
        its argmax. For a block that estimates the probabilities of its categories (the mean
        of a group of one-hot records, or a model's conditional mean of the one-hot vector
        given the rest of the row) the drawn categories then have those probabilities, where
        :meth:`decode`'s argmax would give every row its block's most likely category (the
        majority state of a 92%-zero column comes out in ~100% of the rows). Every other
        coordinate is returned unchanged; :meth:`decode` of the result reads the drawn
        categories.

        Args:
          rng: the source of the draws.
          x: ``(n, width)`` encoded rows (with ``unit_norm``, as :meth:`encode` returns them).
          which: the blocks to draw, see :meth:`one_hot_spans`.
        """
        x = np.array(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.width:
            raise ValueError(f"expected an array of shape (n, {self.width}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("cannot draw categories from non-finite values")
        rows = np.arange(len(x))
        for span in self.one_hot_spans(which):
            block = x[:, span.start : span.stop]
            weight = np.maximum(block, 0.0)
            total = weight.sum(axis=1)
            cumulative = np.cumsum(weight, axis=1) / np.where(total > 0, total, 1.0)[:, None]
            drawn = np.minimum(
                (cumulative < rng.random(len(x))[:, None]).sum(axis=1), span.size - 1
            )
            index = np.where(total > 0, drawn, np.argmax(block, axis=1))
            x[:, span.start : span.stop] = 0.0
            x[rows, span.start + index] = 1.0 / self.scale
        return x

    # -- encode / decode --------------------------------------------------------------------
    def _table(self, data: Table | pd.DataFrame) -> Table:
        if isinstance(data, Table):
            if data.schema != self.schema:
                raise ValueError("the table's schema differs from the encoder's schema")
            return data
        return self.schema.conform(data)

    def encode(self, data: Table | pd.DataFrame, dtype: Any = np.float64) -> np.ndarray:
        """Encode a table (a DataFrame is first checked and clipped by ``schema.conform``)
        into rows of ``dtype`` (a float type; float32 halves the table's one encoded copy).

        A numeric value is mapped by its column's unit scale (:func:`jdp.data.scales.to_unit`:
        min-max by the bounds, or the CDF through its quantile knots) onto
        ``continuous_range``. A missing value's coordinate is the scale's middle (its state
        says "missing"); a point mass's is the mass itself.
        """
        frame = self._table(data).frame
        a, b = self.continuous_range
        rows = np.arange(len(frame))
        out = np.zeros((len(frame), self.width), dtype=dtype)
        for col, span, state_span in self._layout:
            if col.is_numeric:
                x = numeric_values(frame[col.name])
                u = np.where(np.isnan(x), 0.5, to_unit(col, np.nan_to_num(x, nan=col.lower)))
                out[:, span.start] = a + (b - a) * u
                if state_span is not None:
                    out[rows, state_span.start + numeric_state(col, x)] = 1.0
            else:
                out[rows, span.start + category_index(col, frame[col.name])] = 1.0
        out /= self.scale  # in place: the table's one encoded copy
        return out

    def encode_target(self, data: Table | pd.DataFrame) -> np.ndarray:
        """The target column as category indices (int64)."""
        if self.schema.target is None:
            raise ValueError("the schema has no target column")
        frame = self._table(data).frame
        return category_index(self.schema[self.schema.target], frame[self.schema.target])

    def decode(
        self, x: np.ndarray | jax.Array, target_codes: np.ndarray | None = None
    ) -> pd.DataFrame:
        """Map encoded rows back to a DataFrame with the schema's columns, labels and dtypes.

        A state indicator (argmax of its block) puts a point mass back exactly, or a missing
        value (NaN; ``pd.NA`` in a nullable integer column; ``None`` for a category).
        ``target_codes`` (category indices) is required when ``exclude_target`` is set.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.width:
            raise ValueError(f"expected an array of shape (n, {self.width}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("cannot decode non-finite values")
        x = x * self.scale
        a, b = self.continuous_range
        decoded: dict[str, Any] = {}
        for col, span, state_span in self._layout:
            if col.is_numeric:
                u = np.clip((x[:, span.start] - a) / (b - a), 0.0, 1.0)
                state = (
                    None
                    if state_span is None
                    else np.argmax(x[:, state_span.start : state_span.stop], axis=1)
                )
                decoded[col.name] = numeric_column(col, from_unit(col, u), state)
            else:
                decoded[col.name] = category_labels(
                    col, np.argmax(x[:, span.start : span.stop], axis=1)
                )
        if self.exclude_target:
            if target_codes is None:
                raise ValueError("decode needs target_codes when the encoder excludes the target")
            target = self.schema[self.schema.target]
            codes = np.asarray(target_codes)
            if codes.shape != (len(x),):
                raise ValueError(f"expected {len(x)} target codes, got shape {codes.shape}")
            decoded[target.name] = category_labels(target, codes)
        return pd.DataFrame({name: decoded[name] for name in self.schema.names})
