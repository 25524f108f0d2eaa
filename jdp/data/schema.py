"""Table schemas: what is public about a table, and checking a private table against it.

A :class:`Schema` lists, per column, a kind and its public support:

* ``continuous`` -- a real value with public bounds ``[lower, upper]``;
* ``integer`` -- an integer value with public integer bounds ``[lower, upper]``;
* ``date`` -- a calendar date with public bounds declared as ISO dates (``"2000-01-01"``);
  resolution one day (a time of day is dropped: values are truncated to their day);
* ``categorical`` -- a value from a public, finite, ordered domain ``categories``.

A ``date`` column is converted once, at the table boundary: :meth:`Schema.conform` reads its
values (``datetime64`` of any unit -- a time-zone-aware one by its own wall-clock date --,
``datetime.date``/``Timestamp`` objects, or ISO date strings as :func:`jdp.data.read.read_csv`
reads them) as integer day counts since 1970-01-01 (:data:`DATE_ORIGIN`), and the
:class:`Column` stores its bounds (and point masses) as those day counts. Everything else --
encodings, mechanisms, methods, DP bounds -- sees an integer column
(:attr:`Column.is_integer_valued`); decoding turns day counts back into ``datetime64[ns]``
dates (:func:`days_to_dates`, in :func:`jdp.data.transforms.numeric_column`). Values outside
the declared dates are clipped to them like integers; a value that is not a date raises,
naming the column (never the value). The bounds must lie in ``datetime64[ns]``'s range
(1677-09-22 to 2262-04-11).

One categorical column may be named the ``target`` (the label of the downstream
classification task). The schema is *public*: it is declared by the user (in code or a JSON
file, :meth:`Schema.load`) or released by an accounted mechanism
(:func:`jdp.data.dp_schema.infer_schema_dp`). Nothing in a schema may be read off the private
data without a ledger event; :func:`infer_schema_nonprivate` does exactly that and therefore
warns (:class:`NonPrivateSchemaWarning`) -- it exists for public data and for experiments. The
schema it returns is marked ``nonprivate`` (saved with it, and with every model fitted on it),
and a model fitted on it says in its privacy statement that the release is NOT DP as a whole
(:data:`NONPRIVATE_SCHEMA_CLAIM`).

:meth:`Schema.conform` checks a private DataFrame against the schema and returns a
:class:`Table`: NaN, inf, unseen categories, wrong dtypes, missing or extra columns raise an
error naming the column (any number of rows, 0 included, is accepted: the count is private,
DESIGN rule 7); numeric values outside the declared
bounds are clipped to them. Whether any value was clipped is private (one out-of-bounds
record decides it), so the :class:`ClipWarning` naming the columns and counts is shown only
under :func:`jdp.verbosity.show_private_details` (:func:`jdp.verbosity.warn_private`); the
counts are kept on the :class:`Table` for the data holder, and no synthesizer may copy them
into a model. An unseen category may be one
person's rare value, so no message shows it (nor how many there are): they name the column.

A schema released by :func:`jdp.data.dp_schema.infer_schema_dp` is marked ``from_release``.
Its categories are those DP discovery kept, so a record holding another value is expected:
``conform`` drops such records (a fixed public filter given the released schema; under
add/remove neighbours it maps neighbouring tables to neighbouring or equal tables); one
:class:`SuppressedCategoryWarning` names the columns, never the values, and only under
:func:`jdp.verbosity.show_private_details` (that such a record exists is private). The mark
also lets ``fit_model`` warn (:class:`UnaccountedSchemaWarning`) when such a schema arrives
without its :class:`~jdp.data.dp_schema.SchemaRelease`, i.e. without the ledger of its cost.

JSON layout (``Schema.to_dict``)::

    {"target": "income",
     "columns": [{"name": "age", "kind": "integer", "lower": 17, "upper": 90},
                 {"name": "sex", "kind": "categorical", "categories": ["Female", "Male"]},
                 {"name": "fnlwgt", "kind": "continuous", "lower": 1, "upper": 1.5e6},
                 {"name": "hired", "kind": "date", "lower": "2000-01-01",
                  "upper": "2024-12-31"}]}

plus ``"from_release": true`` for a schema released with DP, ``"nonprivate": true`` for one
read off the data by :func:`infer_schema_nonprivate` (absent: declared), and optionally:

* per numeric column ``"point_masses": [0]`` -- public values that many records hold exactly
  (Adult's capital-gain is 0 for most people); the encoders give each a state of its own
  (:mod:`jdp.data.transforms`) so synthesizers reproduce it exactly (ISO dates in a date
  column; its ``"quantiles"`` knots, a scale rather than a declaration, are day counts);
* per column ``"nullable": true`` -- missing values are allowed and modelled (a "missing"
  state or category); in any other column a missing value is an error naming the column
  (the count only under :func:`jdp.verbosity.show_private_details`);
* ``"missing_values": ["", "?"]`` -- the CSV tokens read as missing
  (:func:`jdp.data.read.read_csv`; default: only the empty field, so a category named
  ``"NA"`` stays a category);
* ``"ignore": ["id"]`` -- data columns to drop before checking (not read from a CSV);
* ``"constraints": [{"type": "functional_dependency", "determinant": "education",
  "dependent": "education-num", "mapping": [["Bachelors", 13], ...]}, {"type":
  "forbidden_combination", "values": {"relationship": "Husband", "sex": "Female"}},
  {"type": "less_equal", "left": "a", "right": "b"}]`` -- public constraints
  (:mod:`jdp.data.constraints`), enforced on every synthetic draw by
  :func:`jdp.synth.base.sample_model`.

:func:`draft_schema` drafts a template from public metadata only (column names and dtypes,
never a value): kinds filled in (``date`` for a ``datetime64`` dtype), bounds and categories
left null, identifiers, text named like a date and likely free text put in ``ignore`` with the
reason (``jdp schema --data CSV`` without
``--dp`` writes it).

Validation reports every problem at once: one exception whose first line is
``"N problems: a; b; c"`` (:class:`Problems`).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import warnings
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import date
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd

from jdp.data.constraints import CONSTRAINT_TYPES, Constraint, constraint_from_dict
from jdp.mechanisms.quantiles import check_probs
from jdp.verbosity import private_detail, warn_private

ColumnKind = Literal["continuous", "integer", "date", "categorical"]
KINDS: tuple[str, ...] = ("continuous", "integer", "date", "categorical")
#: The kinds whose values are whole numbers (a date as its day count since
#: :data:`DATE_ORIGIN`): :attr:`Column.is_integer_valued`.
INTEGER_VALUED_KINDS: tuple[str, ...] = ("integer", "date")
#: Day 0 of a date column's day counts.
DATE_ORIGIN = "1970-01-01"
#: The day counts a date column may span: the whole days inside ``datetime64[ns]``'s range,
#: into which sampled dates are decoded (1677-09-22 to 2262-04-11).
DATE_DAYS = (
    -int(-pd.Timestamp.min.value // 86_400_000_000_000),
    int(pd.Timestamp.max.value // 86_400_000_000_000),
)
#: The first line of the privacy statement of a model fitted on a ``nonprivate`` schema
#: (as :data:`accounting.ledger.PAPER_CLAIM` heads a paper-mode ledger's).
NONPRIVATE_SCHEMA_CLAIM = (
    "Non-private schema: its bounds and categories were read off the private data without a "
    "mechanism (infer_schema_nonprivate) -- this release is NOT differentially private as a "
    "whole; the guarantee below covers only the fit given that schema."
)


class ClipWarning(UserWarning):
    """Numeric values outside the declared public bounds were clipped to them."""


class NonPrivateSchemaWarning(UserWarning):
    """A schema was read off the data without differential privacy."""


class SuppressedCategoryWarning(UserWarning):
    """Records holding a category that a DP schema release suppressed were dropped."""


class UnaccountedSchemaWarning(UserWarning):
    """A schema released with DP was used without its release: its cost is not in the ledger."""


def state_column_name(name: str) -> str:
    """Name of the state indicator of a numeric column with point masses or missing values
    (its span in :class:`jdp.data.transforms.TableEncoder`)."""
    return f"{name}#state"


class Problems:
    """Collects validation errors so that one exception reports all of them.

    :meth:`raise_if_any` re-raises a single problem as it is; several become one exception
    whose first line reads ``"N problems: a; b; c"`` (what the CLI prints), followed by one
    line per problem. The type is the problems' common type, else ``ValueError``.
    """

    def __init__(self) -> None:
        self.errors: list[Exception] = []

    def add(self, error: Exception) -> None:
        self.errors.append(error)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if not self.errors:
            return
        if len(self.errors) == 1:
            raise self.errors[0]
        lines = [str(e).splitlines()[0] for e in self.errors]
        types = {type(e) for e in self.errors}
        cls = types.pop() if len(types) == 1 else ValueError
        summary = f"{len(lines)} problems: " + "; ".join(lines)
        raise cls("\n".join([summary, *(f"- {line}" for line in lines)]))


# -- dates as day counts (the one conversion of a date column) ------------------------------


def _is_date_value(value: object) -> bool:
    """A single date: ISO text, a ``datetime.date``/``datetime`` (``Timestamp`` included) or
    a ``numpy.datetime64``."""
    return isinstance(value, (str, date, np.datetime64))


def date_to_days(value: str | date | np.datetime64 | pd.Timestamp) -> int:
    """The day count since :data:`DATE_ORIGIN` of one date: ISO text (``"2000-01-01"``), a
    ``datetime.date`` or ``datetime``, a pandas ``Timestamp`` or a ``numpy.datetime64``. A
    time of day is dropped (the day it falls in: ``"2000-01-01T23:59"`` is day 10957); a
    time-zone-aware value counts by its own wall-clock date.

    Raises:
      TypeError: ``value`` is not one of these types.
      ValueError: ``value`` is text that is not an ISO date, or ``NaT``.
    """
    if not _is_date_value(value):
        raise TypeError(
            f"expected a date (ISO text, datetime.date, Timestamp or datetime64), got {value!r}"
        )
    try:
        if isinstance(value, str):
            stamp = pd.to_datetime(value, format="ISO8601")
        else:
            stamp = pd.Timestamp(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"expected an ISO date (YYYY-MM-DD), got {value!r}") from None
    if pd.isna(stamp):
        raise ValueError(f"expected a date, got {value!r}")
    if stamp.tzinfo is not None:
        stamp = stamp.tz_localize(None)
    return int(np.datetime64(stamp.to_datetime64(), "D").astype(np.int64))


def iso_date(days: float) -> str:
    """A day count since :data:`DATE_ORIGIN` as its ISO date (``10957`` -> ``"2000-01-01"``)."""
    return str(np.datetime64(math.floor(days), "D"))


def dates_to_days(series: pd.Series | np.ndarray, column: str) -> np.ndarray:
    """The values of date column ``column`` as day counts since :data:`DATE_ORIGIN` (float64,
    NaN where missing): the table boundary of a date column (:meth:`Schema.conform`).

    Reads a ``datetime64`` dtype of any unit (a time-zone-aware one by its own wall-clock
    date), or values that are ISO date text (``"2024-02-29"``, ``"2024-02-29T08:30"``, as
    :func:`jdp.data.read.read_csv` reads a date column), ``datetime.date``/``datetime``,
    ``Timestamp`` or ``datetime64`` objects. A time of day is dropped: each value counts as
    the day it falls in (one-day resolution). Missing values (``None``, ``NaN``, ``NaT``)
    stay missing; whether they are allowed is :meth:`Schema.conform`'s check.

    Raises:
      TypeError: a numeric or bool dtype (a number is no date: convert day counts or years
        with ``pd.to_datetime`` first).
      ValueError: values that are not dates (text that is no ISO date, such as
        ``"2023-02-30"`` or ``""``, or other objects); the message names the column, never
        the values (they are private), and their count only under
        :func:`jdp.verbosity.show_private_details`.
    """
    series = pd.Series(series)
    dtype = series.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        stamps = series.dt.tz_localize(None) if getattr(dtype, "tz", None) is not None else series
        return _stamp_days(stamps.to_numpy())
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        raise TypeError(
            f"column {column!r}: expected dates (a datetime64 dtype or ISO date text), got "
            f"dtype {dtype}"
        )
    values = series.astype(object).to_numpy()
    missing = pd.isna(values)
    present = values[~missing]
    days = None
    if all(_is_date_value(v) for v in present):
        try:
            parsed = pd.to_datetime(pd.Series(present), errors="coerce", format="ISO8601")
            if getattr(parsed.dtype, "tz", None) is not None:
                parsed = parsed.dt.tz_localize(None)
            days = _stamp_days(parsed.to_numpy())
        except (TypeError, ValueError, OverflowError):  # e.g. mixed time zones
            days = None
    if days is None:  # other objects or mixed zones: one by one
        days = np.array([_day_or_nan(v) for v in present], dtype=np.float64)
    out = np.full(len(values), np.nan)
    out[~missing] = days
    bad = int(np.isnan(days).sum())
    if bad:
        raise ValueError(
            f"column {column!r} is declared date but has values that are not dates "
            f"(ISO YYYY-MM-DD)" + private_detail(f"{bad} of them") + " (values not shown)"
        )
    return out


def _day_or_nan(value: object) -> float:
    """:func:`date_to_days` of ``value``, NaN when it is no date."""
    try:
        return float(date_to_days(value))
    except (TypeError, ValueError, OverflowError):
        return np.nan


def _stamp_days(stamps: np.ndarray) -> np.ndarray:
    """Naive ``datetime64`` values as float64 day counts (floored to the day; NaT -> NaN)."""
    days = stamps.astype("datetime64[D]")
    out = days.astype(np.int64).astype(np.float64)
    out[np.isnat(days)] = np.nan
    return out


def days_to_dates(days: np.ndarray | pd.Series) -> np.ndarray:
    """Day counts since :data:`DATE_ORIGIN` (NaN or ``pd.NA`` where missing) as
    ``datetime64[ns]`` dates at midnight (``NaT`` where missing): a date column's values
    after decoding."""
    x = pd.Series(days).to_numpy(dtype=np.float64, na_value=np.nan)
    out = np.full(len(x), np.datetime64("NaT"), dtype="datetime64[ns]")
    present = ~np.isnan(x)
    out[present] = np.floor(x[present]).astype(np.int64).astype("datetime64[D]")
    return out


def _is_category_value(value: object) -> bool:
    return isinstance(value, (str, bool, Integral)) and not isinstance(value, np.bool_)


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column: its kind and public support (bounds or categories).

    ``quantiles`` (numeric columns): ``(p, value)`` knots of the column's values besides its
    point masses and missing values, ``p`` and ``value`` strictly increasing, ``p`` in
    ``(0, 1)`` and values within the bounds -- released by
    :func:`jdp.mechanisms.quantiles.dp_quantiles` or declared. With knots every encoding maps
    the column through its CDF instead of min-max (:mod:`jdp.data.scales`).

    A ``date`` column takes its bounds (and point masses) as dates -- ISO text
    (``"2000-01-01"``), ``datetime.date``/``datetime``, pandas ``Timestamp`` or
    ``numpy.datetime64``, a time of day dropped -- and stores them normalised as float day
    counts since :data:`DATE_ORIGIN`, so that the rest of the library reads it as an integer
    column (:attr:`is_integer_valued`); a number given for one is taken as such a day count
    (what :func:`dataclasses.replace` passes back). :meth:`to_dict` writes ISO dates, and
    :meth:`from_dict` requires them. Resolution: one day.
    """

    name: str
    kind: ColumnKind
    lower: float | str | date | None = None
    upper: float | str | date | None = None
    categories: tuple[Any, ...] | None = None
    point_masses: tuple[float, ...] = ()
    nullable: bool = False
    quantiles: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"expected a non-empty column name, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: expected kind in {KINDS}, got {self.kind!r}")
        if not isinstance(self.nullable, bool):
            raise TypeError(
                f"column {self.name!r}: expected nullable to be a bool, got {self.nullable!r}"
            )
        if self.kind == "categorical":
            self._check_categorical()
        else:
            self._check_numeric()
            self._check_point_masses()
        self._check_quantiles()

    def _check_categorical(self) -> None:
        if self.lower is not None or self.upper is not None:
            raise ValueError(f"column {self.name!r}: a categorical column takes no bounds")
        if self.point_masses:
            raise ValueError(f"column {self.name!r}: a categorical column takes no point_masses")
        if self.categories is None or len(self.categories) == 0:
            raise ValueError(f"column {self.name!r}: expected a non-empty list of categories")
        cats = tuple(c.item() if isinstance(c, np.generic) else c for c in self.categories)
        bad = [c for c in cats if not _is_category_value(c)]
        if bad:
            raise TypeError(
                f"column {self.name!r}: categories must be str, int or bool, got {bad[0]!r}"
            )
        dup = next((c for i, c in enumerate(cats) if c in cats[:i]), None)
        if len(set(cats)) != len(cats):
            raise ValueError(f"column {self.name!r}: duplicate category {dup!r} in its list")
        if len({type(c) for c in cats}) > 1:
            raise TypeError(f"column {self.name!r}: categories mix types: {list(cats)}")
        object.__setattr__(self, "categories", cats)

    def _as_day(self, value: Any, what: str) -> Any:
        """A date column's date ``value`` as its day count (other values unchanged, for the
        numeric checks that follow)."""
        if self.kind != "date" or not _is_date_value(value):
            return value
        try:
            days = date_to_days(value)
        except ValueError:
            raise ValueError(
                f"column {self.name!r}: expected an ISO date (YYYY-MM-DD) as its {what}, got "
                f"{value!r}"
            ) from None
        if not DATE_DAYS[0] <= days <= DATE_DAYS[1]:
            raise ValueError(
                f"column {self.name!r}: expected a {what} from {iso_date(DATE_DAYS[0])} to "
                f"{iso_date(DATE_DAYS[1])} (the range of datetime64[ns]), got {value!r}"
            )
        return days

    def _check_numeric(self) -> None:
        if self.categories is not None:
            raise ValueError(f"column {self.name!r}: a {self.kind} column takes no categories")
        for side in ("lower", "upper"):
            value = self._as_day(getattr(self, side), f"{side} bound")
            if value is None or isinstance(value, bool) or not isinstance(value, Real):
                if self.kind == "date":
                    raise TypeError(
                        f"column {self.name!r}: expected a date (ISO text such as "
                        f'"2000-01-01", datetime.date or Timestamp) as the public {side} '
                        f"bound, got {value!r}"
                    )
                raise TypeError(
                    f"column {self.name!r}: expected a numeric public {side} bound, got {value!r}"
                )
            if not math.isfinite(float(value)):
                raise ValueError(
                    f"column {self.name!r}: expected a finite {side} bound, got {value}"
                )
            if self.is_integer_valued and not float(value).is_integer():
                raise ValueError(
                    f"column {self.name!r}: expected an integer {side} bound, got {value}"
                )
            if self.kind == "date" and not DATE_DAYS[0] <= value <= DATE_DAYS[1]:
                raise ValueError(
                    f"column {self.name!r}: expected a {side} bound from "
                    f"{iso_date(DATE_DAYS[0])} to {iso_date(DATE_DAYS[1])} (the range of "
                    f"datetime64[ns]), got day {value:g}"
                )
            object.__setattr__(self, side, float(value))
        if not self.lower < self.upper:
            got = self.bounds_text if self.kind == "date" else f"[{self.lower}, {self.upper}]"
            raise ValueError(f"column {self.name!r}: expected lower < upper, got {got}")

    def _check_point_masses(self) -> None:
        masses = self.point_masses
        if isinstance(masses, (str, bytes)) or not isinstance(masses, (tuple, list)):
            raise TypeError(
                f"column {self.name!r}: expected point_masses to be a list of numbers, "
                f"got {masses!r}"
            )
        out = []
        for m in masses:
            m = self._as_day(m, "point mass")
            if isinstance(m, bool) or not isinstance(m, Real) or not math.isfinite(float(m)):
                raise TypeError(f"column {self.name!r}: expected a finite point mass, got {m!r}")
            m = float(m)
            if not self.lower <= m <= self.upper:
                raise ValueError(
                    f"column {self.name!r}: point mass {self.show(m)} is outside the bounds "
                    f"{self.bounds_text}"
                )
            if self.is_integer_valued and not m.is_integer():
                raise ValueError(f"column {self.name!r}: expected integer point masses, got {m:g}")
            if m in out:
                raise ValueError(f"column {self.name!r}: point mass {m:g} is listed twice")
            out.append(m)
        object.__setattr__(self, "point_masses", tuple(out))

    def _check_quantiles(self) -> None:
        try:
            knots = tuple((float(p), float(v)) for p, v in self.quantiles)
        except (TypeError, ValueError):
            raise TypeError(
                f"column {self.name!r}: expected quantiles as (p, value) pairs, got "
                f"{self.quantiles!r}"
            ) from None
        if not knots:
            return
        if not self.is_numeric:
            raise ValueError(f"column {self.name!r}: a categorical column takes no quantiles")
        try:
            check_probs([p for p, _ in knots])
        except ValueError as e:
            raise ValueError(f"column {self.name!r}: quantiles: {e}") from None
        v = np.array([value for _, value in knots])
        if not (np.all(np.diff(v) > 0) and self.lower <= v[0] and v[-1] <= self.upper):
            raise ValueError(
                f"column {self.name!r}: expected quantile values strictly increasing in "
                f"[{self.lower:g}, {self.upper:g}]"
            )
        object.__setattr__(self, "quantiles", knots)

    @property
    def is_numeric(self) -> bool:
        """Whether the column holds numbers inside public bounds (``continuous``,
        ``integer``, and ``date`` as day counts)."""
        return self.kind != "categorical"

    @property
    def is_integer_valued(self) -> bool:
        """Whether the column's values are whole numbers: an ``integer`` column, or a
        ``date`` column as day counts since :data:`DATE_ORIGIN` (:data:`INTEGER_VALUED_KINDS`).
        The one test every encoding, mechanism and method makes for integer handling."""
        return self.kind in INTEGER_VALUED_KINDS

    @property
    def width(self) -> float:
        """``upper - lower`` for a numeric column."""
        return float(self.upper) - float(self.lower)

    def show(self, value: float) -> str:
        """A value of this numeric column for messages: an ISO date in a date column
        (``"2000-01-01"``), else ``format(value, "g")``."""
        return iso_date(value) if self.kind == "date" else format(value, "g")

    @property
    def bounds_text(self) -> str:
        """``"[lower, upper]"`` of a numeric column for messages (:meth:`show`)."""
        return f"[{self.show(self.lower)}, {self.show(self.upper)}]"

    def _json_value(self, value: float) -> Any:
        """A bound or point mass as written in JSON: an ISO date, an int or a float."""
        if self.kind == "date":
            return iso_date(value)
        return int(value) if self.kind == "integer" else value

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.is_numeric:
            out["lower"] = self._json_value(self.lower)
            out["upper"] = self._json_value(self.upper)
        else:
            out["categories"] = list(self.categories)
        if self.point_masses:
            out["point_masses"] = [self._json_value(m) for m in self.point_masses]
        if self.nullable:
            out["nullable"] = True
        if self.quantiles:
            out["quantiles"] = [list(k) for k in self.quantiles]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        if not isinstance(data, dict):
            raise TypeError(f"expected a column object, got {data!r}")
        unknown = set(data) - {
            "name", "kind", "lower", "upper", "categories", "point_masses", "nullable", "quantiles"
        }  # fmt: skip
        if unknown:
            raise ValueError(f"column {data.get('name')!r}: unknown schema keys {sorted(unknown)}")
        cats = data.get("categories")
        masses = data.get("point_masses", ())
        if data.get("kind") == "date":  # JSON declares dates as ISO text, never day counts
            for what, value in (
                ("lower bound", data.get("lower")),
                ("upper bound", data.get("upper")),
                *(("point mass", m) for m in (masses if isinstance(masses, list) else ())),
            ):
                if value is not None and not isinstance(value, str):
                    raise TypeError(
                        f"column {data.get('name')!r}: expected an ISO date such as "
                        f'"2000-01-01" as the {what} of a date column, got {value!r}'
                    )
        return cls(
            name=data.get("name"),
            kind=data.get("kind"),
            lower=data.get("lower"),
            upper=data.get("upper"),
            categories=None if cats is None else tuple(cats),
            point_masses=tuple(masses) if isinstance(masses, list) else masses,
            nullable=data.get("nullable", False),
            quantiles=tuple(tuple(k) for k in data.get("quantiles", ())),
        )


@dataclass(frozen=True, kw_only=True)
class Schema:
    """The public description of a table: its columns (in order) and optional target.

    ``from_release`` marks a schema released by :func:`jdp.data.dp_schema.infer_schema_dp`:
    :meth:`conform` drops the records holding a category outside it instead of raising, and
    ``fit_model`` warns when it is used without its ``SchemaRelease`` (see the module doc).
    ``nonprivate`` marks a schema read off the data by :func:`infer_schema_nonprivate`: a
    model fitted on it is not DP as a whole and its privacy statement says so. Neither: the
    schema is declared public by the user.
    """

    columns: tuple[Column, ...]
    target: str | None = None
    from_release: bool = False
    nonprivate: bool = False
    missing_values: tuple[str, ...] = ("",)
    ignore: tuple[str, ...] = ()
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        if not cols:
            raise ValueError("expected a schema with at least one column")
        for c in cols:
            if not isinstance(c, Column):
                raise TypeError(f"expected Column entries, got {type(c).__name__}")
        problems = Problems()
        names = [c.name for c in cols]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            problems.add(ValueError(f"duplicate column names in schema: {dup}"))
        for c in cols:
            if state_column_name(c.name) in names and (c.point_masses or c.nullable):
                problems.add(
                    ValueError(
                        f"column name {state_column_name(c.name)!r} is reserved for the state "
                        f"indicator of column {c.name!r}"
                    )
                )
        if self.target is not None:
            if self.target not in names:
                problems.add(ValueError(f"target column {self.target!r} is not in the schema"))
            elif cols[names.index(self.target)].kind != "categorical":
                problems.add(ValueError(f"target column {self.target!r} must be categorical"))
            elif cols[names.index(self.target)].nullable:
                problems.add(ValueError(f"target column {self.target!r} must not be nullable"))
        for flag in ("from_release", "nonprivate"):
            if not isinstance(getattr(self, flag), bool):
                problems.add(
                    TypeError(f"expected {flag} to be a bool, got {getattr(self, flag)!r}")
                )
        if self.from_release is True and self.nonprivate is True:
            problems.add(
                ValueError(
                    "expected at most one of from_release and nonprivate to be true (a schema "
                    "is released with DP or read off the data, not both)"
                )
            )
        for field_name in ("missing_values", "ignore"):
            value = getattr(self, field_name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                problems.add(
                    TypeError(f"expected {field_name} to be a list of strings, got {value!r}")
                )
            else:
                object.__setattr__(self, field_name, tuple(value))
        clash = [n for n in self.ignore if n in names] if not problems else []
        if clash:
            problems.add(ValueError(f"column {clash[0]!r} is both in the schema and ignored"))
        problems.raise_if_any()
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "constraints", tuple(self.constraints))
        for constraint in self.constraints:
            if not isinstance(constraint, CONSTRAINT_TYPES):
                names = ", ".join(cls.__name__ for cls in CONSTRAINT_TYPES)
                problems.add(
                    TypeError(f"expected constraints of types {names}, got {constraint!r}")
                )
            else:
                try:
                    constraint.check(self)
                except ValueError as exc:
                    problems.add(exc)
        problems.raise_if_any()

    # -- access -----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def features(self) -> list[str]:
        """All column names except the target."""
        return [c.name for c in self.columns if c.name != self.target]

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"column {name!r} is not in the schema")

    def __len__(self) -> int:
        return len(self.columns)

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {"target": self.target, "columns": [c.to_dict() for c in self.columns]}
        if self.from_release:
            out["from_release"] = True
        if self.nonprivate:
            out["nonprivate"] = True
        if self.missing_values != ("",):
            out["missing_values"] = list(self.missing_values)
        if self.ignore:
            out["ignore"] = list(self.ignore)
        if self.constraints:
            out["constraints"] = [c.to_dict() for c in self.constraints]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        if isinstance(data, dict) and "ledger" in data:
            raise ValueError(
                "this is a saved SchemaRelease: load it with jdp.data.dp_schema.load_schema "
                "(or SchemaRelease.load) so that its privacy cost is kept"
            )
        if (
            not isinstance(data, dict)
            or "columns" not in data
            or not isinstance(data["columns"], list)
        ):
            raise ValueError("expected a schema object with a 'columns' list")
        unknown = set(data) - {
            "target", "columns", "from_release", "nonprivate", "missing_values", "ignore",
            "description", "constraints",
        }  # fmt: skip
        problems = Problems()
        if unknown:
            problems.add(ValueError(f"unknown schema keys {sorted(unknown)}"))
        columns = []
        for c in data["columns"]:
            try:
                columns.append(Column.from_dict(c))
            except (TypeError, ValueError) as exc:
                problems.add(exc)
        constraints = []
        for c in data.get("constraints", []):
            try:
                constraints.append(constraint_from_dict(c))
            except (TypeError, ValueError, KeyError) as exc:
                problems.add(ValueError(f"bad constraint {c!r}: {exc}"))
        problems.raise_if_any()
        lists = {
            k: tuple(data[k]) for k in ("missing_values", "ignore") if isinstance(data.get(k), list)
        }
        return cls(
            columns=tuple(columns),
            target=data.get("target"),
            from_release=data.get("from_release", False),
            nonprivate=data.get("nonprivate", False),
            constraints=tuple(constraints),
            **{k: lists.get(k, data[k]) for k in ("missing_values", "ignore") if k in data},
        )

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> Schema:
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        write_atomic(path, self.to_json(indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"schema file not found: {path}")
        return cls.from_json(path.read_text())

    # -- checking data ----------------------------------------------------------------------
    def conform(self, data: pd.DataFrame) -> Table:
        """Check ``data`` against the schema; clip numeric values to their bounds.

        A date column's values are read as day counts since :data:`DATE_ORIGIN`
        (:func:`dates_to_days`: ``datetime64`` or ISO date text, a time of day dropped), so
        the table's frame holds them as an integer column (``int64``; ``Int64`` when
        nullable), clipped to the declared dates like any integer column.

        A schema ``from_release`` drops the records holding a category outside its domain
        (one :class:`SuppressedCategoryWarning` naming the columns); any other schema raises.
        Both warnings (clipped values, dropped records) depend on the private records, so
        they appear only under :func:`jdp.verbosity.show_private_details`.

        Raises:
          TypeError: ``data`` is not a DataFrame, or a column has the wrong dtype.
          ValueError: missing/extra/target column, NaN, inf, non-integer value in an integer
            column, a value that is not a date in a date column, category outside the domain
            (the message names the column, never the values).
        """
        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"expected a pandas DataFrame, got {type(data).__name__}")
        data = data.drop(columns=[n for n in self.ignore if n in data.columns])
        problems = Problems()
        if self.target is not None and self.target not in data.columns:
            problems.add(ValueError(f"target column {self.target!r} is missing from the data"))
        for name in self.names:
            if name not in data.columns and name != self.target:
                problems.add(ValueError(f"column {name!r} of the schema is missing from the data"))
        for name in data.columns:
            if name not in self.names:
                problems.add(ValueError(f"column {str(name)!r} of the data is not in the schema"))
        labels, days = {}, {}
        for c in self.columns:
            if c.name not in data.columns:
                continue
            try:
                if c.kind == "date":  # the one conversion: dates -> integer day counts
                    days[c.name] = pd.Series(dates_to_days(data[c.name], c.name), data.index)
                    _check_numeric_values(c, days[c.name])
                elif c.is_numeric:
                    _check_numeric_values(c, data[c.name])
                else:
                    labels[c.name] = _category_values(c, data[c.name])
            except (TypeError, ValueError) as exc:
                problems.add(exc)
        problems.raise_if_any()
        if days:
            data = data.assign(**days)
        keep = self._in_domain(labels, len(data))
        if not keep.all():  # records dropped (a release's schema): else no copy of the table
            data = data.loc[keep]
            labels = {name: values[keep] for name, values in labels.items()}
        out = {}
        clipped = {}
        for col in self.columns:
            if col.is_numeric:
                out[col.name], n_clipped = _conform_numeric(col, data[col.name])
                if n_clipped:
                    clipped[col.name] = n_clipped
            else:
                out[col.name] = typed_labels(col, labels[col.name])
        if clipped:  # whether any value was clipped is private: only the data holder sees it
            detail = ", ".join(
                f"{n} value(s) of column {name!r} to {self[name].bounds_text}"
                for name, n in clipped.items()
            )
            warn_private(f"clipped {detail}", ClipWarning, stacklevel=2)
        # copy=False: one block per column, no consolidating copy of the whole table
        frame = pd.DataFrame(out, index=pd.RangeIndex(len(data)), copy=False)
        return Table(frame=frame, schema=self, clip_counts=clipped)

    def _in_domain(self, labels: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Mask of the ``n`` records whose every category is in the domain; raises unless the
        schema is ``from_release`` (then warns, naming the columns only)."""
        keep = np.ones(n, dtype=bool)
        bad = []
        for name, values in labels.items():
            domain = set(self[name].categories)
            if self[name].nullable:
                domain.add(None)
            inside = np.fromiter((v in domain for v in values), dtype=bool, count=n)
            if not inside.all():
                bad.append(name)
                keep &= inside
        if not bad:
            return keep
        if not self.from_release:
            problems = Problems()
            for name in bad:
                problems.add(
                    ValueError(
                        f"column {name!r} has values not in the schema's categories (not shown: "
                        "they may be rare private values)"
                    )
                )
            problems.raise_if_any()
        names = ", ".join(repr(name) for name in bad)
        warn_private(  # that such a record exists is private: only the data holder sees it
            f"dropped the records whose value in column(s) {names} is not among the DP-released "
            "categories (values not shown)",
            SuppressedCategoryWarning,
            stacklevel=3,
        )
        return keep


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes) to ``path`` through a temporary file in the same folder and
    ``os.replace``: readers see the old file or the new one, never a partial write."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _missing_message(col: Column, n_missing: int, what: str = "missing value(s)") -> str:
    """The error for missing values in a non-nullable column (the count is private)."""
    return (
        f"column {col.name!r} has {what} and is not nullable"
        + private_detail(f"{n_missing} of them")
        + ' (declare "nullable": true in the schema to model them)'
    )


def _check_numeric_values(col: Column, series: pd.Series) -> None:
    """Raise on a wrong dtype, a missing value in a non-nullable column, inf, or a
    non-integer value in an integer column (one problem per column)."""
    if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
        raise TypeError(f"column {col.name!r}: expected a numeric dtype, got {series.dtype}")
    x = series.to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.isnan(x)
    if missing.any() and not col.nullable:
        raise ValueError(_missing_message(col, int(missing.sum()), "NaN or missing value(s)"))
    n_inf = int(np.isinf(x).sum())
    if n_inf:
        raise ValueError(f"column {col.name!r} has infinite value(s)" + private_detail(str(n_inf)))
    present = x[~missing]
    if col.is_integer_valued and not np.all(present == np.round(present)):
        raise ValueError(f"column {col.name!r} is declared integer but has non-integer values")


def _conform_numeric(col: Column, series: pd.Series) -> tuple[np.ndarray, int]:
    """Checked values clipped to the bounds (missing stays missing: NaN, or ``pd.NA`` in a
    nullable integer column's ``Int64`` array) and the private count of clipped values."""
    _check_numeric_values(col, series)
    x = series.to_numpy(dtype=np.float64, na_value=np.nan)
    n_clipped = int(((x < col.lower) | (x > col.upper)).sum())
    x = np.clip(x, col.lower, col.upper)
    if not col.is_integer_valued:
        return x, n_clipped
    if col.nullable:
        return pd.array(x, dtype="Int64"), n_clipped
    return x.astype(np.int64), n_clipped


def _category_values(col: Column, series: pd.Series) -> np.ndarray:
    """The values of a categorical column as Python objects (``None`` where missing), after
    the missing-value and type checks."""
    missing = series.isna().to_numpy()
    if missing.any() and not col.nullable:
        raise ValueError(_missing_message(col, int(missing.sum())))
    want_str = isinstance(col.categories[0], str)
    values = series.to_numpy(dtype=object)
    if want_str != all(isinstance(v, str) for v in values[~missing]):
        kind = "string" if want_str else "non-string"
        raise TypeError(
            f"column {col.name!r}: expected {kind} categories, got dtype {series.dtype}"
        )
    return np.array(
        [
            None if m else (v.item() if isinstance(v, np.generic) else v)
            for v, m in zip(values, missing)
        ],
        dtype=object,
    )


def typed_labels(column: Column, values: np.ndarray) -> np.ndarray:
    """Category labels as the array type of their domain: bool, int64, or object (str); a
    nullable column's labels stay objects, ``None`` where missing."""
    first = column.categories[0]
    if column.nullable:
        canonical = {c: c for c in column.categories}  # 1.0 (read beside a blank) -> 1
        out = np.empty(len(values), dtype=object)
        out[:] = [None if v is None else canonical.get(v, v) for v in values]
        return out
    if isinstance(first, bool):
        return np.asarray(values, dtype=object).astype(bool)
    if isinstance(first, int):
        return np.asarray(values, dtype=object).astype(np.int64)
    return np.asarray(values, dtype=object)


@dataclass(frozen=True, eq=False)
class Table:
    """A private table that conforms to its schema (build with :meth:`Schema.conform`).

    ``frame`` holds the clipped values (float64 / int64 / object; a date column as int64 day
    counts since :data:`DATE_ORIGIN`), ``schema`` the public
    description; ``clip_counts`` the number of clipped values per column -- private, for the
    data holder's eyes only. ``len(table)`` is the private row count: a synthesizer must not
    release it except through an accounted mechanism.
    """

    frame: pd.DataFrame
    schema: Schema
    clip_counts: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.frame)


def infer_schema_nonprivate(
    data: pd.DataFrame, *, target: str | None = None, ignore: Collection[str] = ()
) -> Schema:
    """Read a schema off ``data`` WITHOUT differential privacy (warns every time).

    Bounds are the observed min/max, domains the observed values: both reveal individual
    records (the max of a column is one person's value). Use only for public data or
    experiments; for private data declare the schema or use
    :func:`jdp.data.dp_schema.infer_schema_dp`.

    Floats become ``continuous``, integers ``integer``, ``datetime64`` dtypes ``date`` (the
    observed first and last days as bounds), everything else ``categorical``.
    Columns that cannot or must not be modelled are put in the schema's ``ignore`` list, with
    one :class:`UserWarning` naming each and why (decided by :func:`draft_column` from the
    name and dtype alone): time spans and periods, text named like a date, identifiers by name
    (``id``, ``*_id``, ``uuid``), and text columns named like free text (comment,
    description, notes, ...), whose observed values would otherwise become categories and be
    copied verbatim into synthetic records; plus the columns named in ``ignore``. The schema
    is marked ``nonprivate``: saved with it and with every model fitted on it, whose privacy
    statement then opens with :data:`NONPRIVATE_SCHEMA_CLAIM`.
    """
    warnings.warn(
        "infer_schema_nonprivate reads bounds and categories off the data without differential "
        "privacy; any release built on this schema is NOT differentially private",
        NonPrivateSchemaWarning,
        stacklevel=2,
    )
    if not isinstance(data, pd.DataFrame) or len(data) == 0:
        raise ValueError("expected a non-empty pandas DataFrame")
    if isinstance(ignore, str):
        ignore = [ignore]
    unknown = [n for n in ignore if n not in data.columns]
    if unknown:
        raise ValueError(f"ignored column {unknown[0]!r} is not in the data")
    if target is not None and target in ignore:
        raise ValueError(f"target column {target!r} cannot be ignored")
    drafts = {d.name: d for d in draft_columns(data, target=target)}
    skipped = {n: "ignored as asked" for n in ignore}
    skipped |= {n: d.reason for n, d in drafts.items() if d.ignored and n not in skipped}
    if skipped:
        warnings.warn(
            "infer_schema_nonprivate ignores column(s) "
            + "; ".join(f"{n!r} ({why})" for n, why in skipped.items()),
            UserWarning,
            stacklevel=2,
        )
    cols = []
    for name in data.columns:
        if str(name) in skipped:
            continue
        s = data[name]
        if drafts[str(name)].kind == "date":
            days = dates_to_days(s, str(name))
            lo, hi = float(np.nanmin(days)), float(np.nanmax(days))
            cols.append(Column(name=str(name), kind="date", lower=lo, upper=max(hi, lo + 1)))
        elif (
            pd.api.types.is_numeric_dtype(s)
            and not pd.api.types.is_bool_dtype(s)
            and name != target
        ):
            kind = "integer" if pd.api.types.is_integer_dtype(s) else "continuous"
            lo, hi = float(s.min()), float(s.max())
            if lo == hi:
                hi = lo + 1.0
            cols.append(Column(name=str(name), kind=kind, lower=lo, upper=hi))
        else:
            cats = sorted(pd.unique(s.dropna()).tolist(), key=lambda v: (str(type(v)), v))
            cols.append(Column(name=str(name), kind="categorical", categories=tuple(cats)))
    return Schema(columns=tuple(cols), target=target, nonprivate=True, ignore=tuple(skipped))


# -- drafting a schema from public metadata (column names and dtypes) ----------------------

#: Name tokens that mark an identifier column (``id``, ``customer_id``, ``userID``, ``uuid``).
ID_TOKENS = frozenset({"id", "uuid", "guid"})
#: Name tokens that mark a free-text column (object dtype only).
TEXT_TOKENS = frozenset({
    "comment", "comments", "description", "desc", "note", "notes", "text", "remark",
    "remarks", "feedback", "message", "review", "summary", "freetext", "body",
})  # fmt: skip
#: Name tokens that mark a date or time held as text (object dtype only).
DATE_TOKENS = frozenset({"date", "datetime", "timestamp", "time", "dob", "birthday"})
#: The advice of a drafted date column's note.
_DATE_ADVICE = (
    'to model it, declare it kind "date" with public bounds as ISO dates ("lower": '
    '"2000-01-01"); its values are then read as ISO dates, to the day'
)


def _name_tokens(name: str) -> set[str]:
    """Lower-case words of a column name: split at non-alphanumerics and camelCase humps
    (``"customerID"`` -> ``{"customer", "id"}``, ``"free_text"`` -> ``{"free", "text"}``)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", str(name))
    return {w.lower() for w in words}


class ColumnDraft(NamedTuple):
    """One column of a drafted schema: its ``kind`` (``None`` when ignored), and the public
    ``reason`` of an ``ignore`` (or a note: a bool column's filled-in domain, a date column's
    resolution)."""

    name: str
    kind: str | None
    reason: str | None = None
    categories: tuple[Any, ...] | None = None

    @property
    def ignored(self) -> bool:
        return self.kind is None


def draft_column(name: str, dtype: Any, *, target: bool = False) -> ColumnDraft:
    """Draft one column from its name and dtype only (public metadata; never a value).

    * ``datetime64`` (naive or time-zone-aware) -> ``date`` (one-day resolution: a time of
      day is dropped; the note says so); ``timedelta64`` and period dtypes are ignored;
    * an identifier by its name (``id``, ``*_id``, ``*ID``, ``uuid``, ``guid``) is ignored;
    * an unnamed column (``"Unnamed: 0"``, pandas' name for a written row index) is ignored;
    * an object/string column named like free text (comment, description, notes, text, ...)
      is ignored: categories of free text would be copied verbatim into synthetic records;
      one named like a date (date, time, timestamp, dob, ...) is ignored, with the advice to
      declare it ``date`` (text may hold times or other formats: the data holder decides);
    * bool -> ``categorical`` with the dtype's domain ``(False, True)``;
    * integers -> ``integer``, floats -> ``continuous``, any other dtype the CSV reader
      gives (object, string, category) -> ``categorical``; bounds and categories are left to
      be declared or released (``jdp schema --dp``).

    The ``target`` is never ignored and is always ``categorical``.
    """
    tokens = _name_tokens(name)
    kind: str | None
    reason: str | None = None
    if pd.api.types.is_bool_dtype(dtype):
        return ColumnDraft(name, "categorical", "bool dtype: categories [false, true] from the dtype",
                           (False, True))  # fmt: skip
    if pd.api.types.is_integer_dtype(dtype):
        kind = "integer"
    elif pd.api.types.is_float_dtype(dtype):
        kind = "continuous"
    elif pd.api.types.is_datetime64_any_dtype(dtype):
        kind = "date"
        reason = (
            f"a date/time dtype {dtype}: drafted as a date, to the day (a time of day is "
            'dropped); declare its public bounds as ISO dates ("2000-01-01")'
        )
    elif isinstance(dtype, pd.PeriodDtype):
        kind = None
        reason = f"a period dtype {dtype} (to model it as a date, convert it: .dt.to_timestamp())"
    elif pd.api.types.is_timedelta64_dtype(dtype):
        kind, reason = None, f"a time-span dtype {dtype} (convert it to a number)"
    elif pd.api.types.is_numeric_dtype(dtype):  # complex
        kind, reason = None, f"unsupported dtype {dtype}"
    else:
        kind = "categorical"
    if target:
        return ColumnDraft(name, "categorical")
    if kind is None:
        return ColumnDraft(name, None, reason)
    if tokens & ID_TOKENS:
        return ColumnDraft(name, None, "an identifier by its name (its values single out records)")
    if str(name).startswith("Unnamed:"):
        return ColumnDraft(name, None, "an unnamed column (usually a written row index)")
    if kind == "categorical" and tokens & TEXT_TOKENS:
        return ColumnDraft(
            name, None, "likely free text by its name (as categories its values would be "
            "copied verbatim into synthetic records)"
        )  # fmt: skip
    if kind == "categorical" and tokens & DATE_TOKENS:
        return ColumnDraft(name, None, f"likely a date held as text by its name; {_DATE_ADVICE}")
    return ColumnDraft(name, kind, reason)


def draft_columns(
    dtypes: pd.DataFrame | pd.Series | Mapping[str, Any], *, target: str | None = None
) -> list[ColumnDraft]:
    """:func:`draft_column` for every column of a DataFrame (only its ``dtypes`` are read)
    or of a ``{name: dtype}`` mapping."""
    if isinstance(dtypes, pd.DataFrame):
        dtypes = dtypes.dtypes
    items = list(dtypes.items())
    names = [str(n) for n, _ in items]
    if target is not None and target not in names:
        raise ValueError(f"target column {target!r} is not in the data")
    return [draft_column(str(n), d, target=str(n) == target) for n, d in items]


def draft_schema(
    dtypes: pd.DataFrame | pd.Series | Mapping[str, Any],
    *,
    target: str | None = None,
    kinds: Mapping[str, str] | None = None,
    ignore: Collection[str] = (),
    nullable: Collection[str] = (),
    description: str = "",
) -> dict[str, Any]:
    """A schema template (JSON layout, :meth:`Schema.to_dict`) drafted from column names and
    dtypes only (:func:`draft_column`; never a value): kinds filled in, bounds and categories
    ``null`` (to be declared or released with DP), ignored columns in ``"ignore"`` with their
    reasons in the ``"description"``. The template loads as a :class:`Schema` once its nulls
    are filled in.

    Args:
      dtypes: a DataFrame (only its ``dtypes`` are read) or ``{name: dtype}``, in column
        order; the dtype of a column given in ``kinds`` is not consulted (may be ``None``).
      target: the target column (drafted ``categorical``).
      kinds: public kinds that override the draft, by column name.
      ignore: columns to ignore besides those the draft ignores.
      nullable: columns to mark ``"nullable": true``.
      description: text put before the notes in ``"description"``.

    Raises:
      ValueError: naming every problem at once (:class:`Problems`): a name not among the
        columns, an unknown kind, an ignored target, a non-categorical target kind.
    """
    if isinstance(dtypes, pd.DataFrame):
        dtypes = dtypes.dtypes
    items = [(str(n), d) for n, d in dtypes.items()]
    names = [n for n, _ in items]
    kinds = dict(kinds or {})
    ignore, nullable = list(dict.fromkeys(ignore)), list(dict.fromkeys(nullable))
    problems = Problems()
    for what, given in (("kinds", kinds), ("ignore", ignore), ("nullable", nullable)):
        for name in given:
            if name not in names:
                problems.add(ValueError(f"column {name!r} of {what} is not in the data"))
    for name, kind in kinds.items():
        if kind not in KINDS:
            problems.add(ValueError(f"column {name!r}: expected kind in {KINDS}, got {kind!r}"))
    if target is not None:
        if target not in names:
            problems.add(ValueError(f"target column {target!r} is not in the data"))
        if target in ignore:
            problems.add(ValueError(f"target column {target!r} cannot be ignored"))
        if kinds.get(target, "categorical") != "categorical":
            problems.add(ValueError(f"target column {target!r} must be categorical"))
    for name in (n for n in nullable if n in ignore):
        problems.add(ValueError(f"column {name!r} is both ignored and nullable"))
    problems.raise_if_any()
    drafts = []
    for name, dtype in items:
        if name in ignore:
            drafts.append(ColumnDraft(name, None, "ignored as declared"))
        elif name in kinds:
            drafts.append(ColumnDraft(name, kinds[name]))
        else:
            drafts.append(draft_column(name, dtype, target=name == target))
    columns: list[dict[str, Any]] = []
    for d in drafts:
        if d.ignored:
            continue
        entry: dict[str, Any] = {"name": d.name, "kind": d.kind}
        if d.kind == "categorical":
            entry["categories"] = None if d.categories is None else list(d.categories)
        else:
            entry["lower"] = entry["upper"] = None
        if d.name in nullable:
            entry["nullable"] = True
        columns.append(entry)
    notes = [f"{d.name!r}: {d.reason}" for d in drafts if d.reason]
    text = " ".join(p for p in (description, "Notes: " + "; ".join(notes) if notes else "") if p)
    out: dict[str, Any] = {"description": text, "target": target, "columns": columns}
    ignored = [d.name for d in drafts if d.ignored]
    if ignored:
        out["ignore"] = ignored
    return out
