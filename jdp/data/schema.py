"""Table schemas: what is public about a table, and checking a private table against it.

A :class:`Schema` lists, per column, a kind and its public support:

* ``continuous`` -- a real value with public bounds ``[lower, upper]``;
* ``integer`` -- an integer value with public integer bounds ``[lower, upper]``;
* ``categorical`` -- a value from a public, finite, ordered domain ``categories``.

One categorical column may be named the ``target`` (the label of the downstream
classification task). The schema is *public*: it is declared by the user (in code or a JSON
file, :meth:`Schema.load`) or released by an accounted mechanism
(:func:`jdp.data.dp_schema.infer_schema_dp`). Nothing in a schema may be read off the private
data without a ledger event; :func:`infer_schema_nonprivate` does exactly that and therefore
warns (:class:`NonPrivateSchemaWarning`) -- it exists for public data and for experiments.

:meth:`Schema.conform` checks a private DataFrame against the schema and returns a
:class:`Table`: NaN, inf, unseen categories, wrong dtypes, missing or extra columns, an empty
table or a single row raise an error naming the column; numeric values outside the declared
bounds are clipped to them, with one :class:`ClipWarning` naming the columns. (The clip counts
are a private statistic: they are kept on the :class:`Table` for the data holder, shown in the
warning only under :func:`jdp.verbosity.show_private_details`, and no synthesizer may copy
them into a model; nor is the row count shown when it is too small.) An unseen category may
be one person's rare value, so no message shows it (nor how many there are): they name the
column.

A schema released by :func:`jdp.data.dp_schema.infer_schema_dp` is marked ``from_release``.
Its categories are those DP discovery kept, so a record holding another value is expected:
``conform`` drops such records (a fixed public filter given the released schema; under
add/remove neighbours it maps neighbouring tables to neighbouring or equal tables) with one
:class:`SuppressedCategoryWarning` naming the columns, never the values. The mark also lets
``fit_model`` warn (:class:`UnaccountedSchemaWarning`) when such a schema arrives without its
:class:`~jdp.data.dp_schema.SchemaRelease`, i.e. without the ledger of its cost.

JSON layout (``Schema.to_dict``)::

    {"target": "income",
     "columns": [{"name": "age", "kind": "integer", "lower": 17, "upper": 90},
                 {"name": "sex", "kind": "categorical", "categories": ["Female", "Male"]},
                 {"name": "fnlwgt", "kind": "continuous", "lower": 1, "upper": 1.5e6}]}

plus ``"from_release": true`` for a schema released with DP.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from jdp.verbosity import private_detail, private_details_shown

ColumnKind = Literal["continuous", "integer", "categorical"]
KINDS: tuple[str, ...] = ("continuous", "integer", "categorical")
MIN_ROWS = 2


class ClipWarning(UserWarning):
    """Numeric values outside the declared public bounds were clipped to them."""


class NonPrivateSchemaWarning(UserWarning):
    """A schema was read off the data without differential privacy."""


class SuppressedCategoryWarning(UserWarning):
    """Records holding a category that a DP schema release suppressed were dropped."""


class UnaccountedSchemaWarning(UserWarning):
    """A schema released with DP was used without its release: its cost is not in the ledger."""


def _is_category_value(value: object) -> bool:
    return isinstance(value, (str, bool, Integral)) and not isinstance(value, np.bool_)


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column: its kind and public support (bounds or categories)."""

    name: str
    kind: ColumnKind
    lower: float | None = None
    upper: float | None = None
    categories: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"expected a non-empty column name, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: expected kind in {KINDS}, got {self.kind!r}")
        if self.kind == "categorical":
            self._check_categorical()
        else:
            self._check_numeric()

    def _check_categorical(self) -> None:
        if self.lower is not None or self.upper is not None:
            raise ValueError(f"column {self.name!r}: a categorical column takes no bounds")
        if self.categories is None or len(self.categories) == 0:
            raise ValueError(f"column {self.name!r}: expected a non-empty list of categories")
        cats = tuple(c.item() if isinstance(c, np.generic) else c for c in self.categories)
        bad = [c for c in cats if not _is_category_value(c)]
        if bad:
            raise TypeError(
                f"column {self.name!r}: categories must be str, int or bool, got {bad[0]!r}"
            )
        if len(set(cats)) != len(cats):
            raise ValueError(f"column {self.name!r}: duplicate categories in {list(cats)}")
        if len({type(c) for c in cats}) > 1:
            raise TypeError(f"column {self.name!r}: categories mix types: {list(cats)}")
        object.__setattr__(self, "categories", cats)

    def _check_numeric(self) -> None:
        if self.categories is not None:
            raise ValueError(f"column {self.name!r}: a {self.kind} column takes no categories")
        for side in ("lower", "upper"):
            value = getattr(self, side)
            if value is None or isinstance(value, bool) or not isinstance(value, Real):
                raise TypeError(
                    f"column {self.name!r}: expected a numeric public {side} bound, got {value!r}"
                )
            if not math.isfinite(float(value)):
                raise ValueError(
                    f"column {self.name!r}: expected a finite {side} bound, got {value}"
                )
            if self.kind == "integer" and not float(value).is_integer():
                raise ValueError(
                    f"column {self.name!r}: expected an integer {side} bound, got {value}"
                )
            object.__setattr__(self, side, float(value))
        if not self.lower < self.upper:
            raise ValueError(
                f"column {self.name!r}: expected lower < upper, got [{self.lower}, {self.upper}]"
            )

    @property
    def is_numeric(self) -> bool:
        return self.kind != "categorical"

    @property
    def width(self) -> float:
        """``upper - lower`` for a numeric column."""
        return float(self.upper) - float(self.lower)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.is_numeric:
            as_int = self.kind == "integer"
            out["lower"] = int(self.lower) if as_int else self.lower
            out["upper"] = int(self.upper) if as_int else self.upper
        else:
            out["categories"] = list(self.categories)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        unknown = set(data) - {"name", "kind", "lower", "upper", "categories"}
        if unknown:
            raise ValueError(f"column {data.get('name')!r}: unknown schema keys {sorted(unknown)}")
        cats = data.get("categories")
        return cls(
            name=data.get("name"),
            kind=data.get("kind"),
            lower=data.get("lower"),
            upper=data.get("upper"),
            categories=None if cats is None else tuple(cats),
        )


@dataclass(frozen=True, kw_only=True)
class Schema:
    """The public description of a table: its columns (in order) and optional target.

    ``from_release`` marks a schema released by :func:`jdp.data.dp_schema.infer_schema_dp`:
    :meth:`conform` drops the records holding a category outside it instead of raising, and
    ``fit_model`` warns when it is used without its ``SchemaRelease`` (see the module doc).
    """

    columns: tuple[Column, ...]
    target: str | None = None
    from_release: bool = False

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        if not cols:
            raise ValueError("expected a schema with at least one column")
        for c in cols:
            if not isinstance(c, Column):
                raise TypeError(f"expected Column entries, got {type(c).__name__}")
        names = [c.name for c in cols]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate column names in schema: {dup}")
        if self.target is not None:
            if self.target not in names:
                raise ValueError(f"target column {self.target!r} is not in the schema")
            if cols[names.index(self.target)].kind != "categorical":
                raise ValueError(f"target column {self.target!r} must be categorical")
        if not isinstance(self.from_release, bool):
            raise TypeError(f"expected from_release to be a bool, got {self.from_release!r}")
        object.__setattr__(self, "columns", cols)

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
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        if isinstance(data, dict) and "ledger" in data:
            raise ValueError(
                "this is a saved SchemaRelease: load it with jdp.data.dp_schema.load_schema "
                "(or SchemaRelease.load) so that its privacy cost is kept"
            )
        if not isinstance(data, dict) or "columns" not in data:
            raise ValueError("expected a schema object with a 'columns' list")
        return cls(
            columns=tuple(Column.from_dict(c) for c in data["columns"]),
            target=data.get("target"),
            from_release=data.get("from_release", False),
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

        A schema ``from_release`` drops the records holding a category outside its domain
        (one :class:`SuppressedCategoryWarning` naming the columns); any other schema raises.

        Raises:
          TypeError: ``data`` is not a DataFrame, or a column has the wrong dtype.
          ValueError: empty table or a single row (also after dropping), missing/extra/target
            column, NaN, inf, non-integer value in an integer column, category outside the
            domain (the message names the column, never the values).
        """
        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"expected a pandas DataFrame, got {type(data).__name__}")
        if len(data) < MIN_ROWS:
            raise ValueError(
                f"too few rows: expected at least {MIN_ROWS}" + private_detail(f"got {len(data)}")
            )
        if self.target is not None and self.target not in data.columns:
            raise ValueError(f"target column {self.target!r} is missing from the data")
        missing = [n for n in self.names if n not in data.columns]
        if missing:
            raise ValueError(f"column {missing[0]!r} of the schema is missing from the data")
        extra = [str(n) for n in data.columns if n not in self.names]
        if extra:
            raise ValueError(f"column {extra[0]!r} of the data is not in the schema")
        labels = {
            c.name: _category_values(c, data[c.name]) for c in self.columns if not c.is_numeric
        }
        keep = self._in_domain(labels, len(data))
        data = data.loc[keep]
        out = {}
        clipped = {}
        for col in self.columns:
            if col.is_numeric:
                out[col.name], n_clipped = _conform_numeric(col, data[col.name])
                if n_clipped:
                    clipped[col.name] = n_clipped
            else:
                out[col.name] = typed_labels(col, labels[col.name][keep])
        if clipped:
            detail = ", ".join(
                ("values" if not private_details_shown() else f"{n} value(s)")
                + f" of column {name!r} to [{self[name].lower:g}, {self[name].upper:g}]"
                for name, n in clipped.items()
            )
            warnings.warn(f"clipped {detail}", ClipWarning, stacklevel=2)
        frame = pd.DataFrame(out, index=pd.RangeIndex(len(data)))
        return Table(frame=frame, schema=self, clip_counts=clipped)

    def _in_domain(self, labels: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Mask of the ``n`` records whose every category is in the domain; raises unless the
        schema is ``from_release`` (then warns, naming the columns only)."""
        keep = np.ones(n, dtype=bool)
        bad = []
        for name, values in labels.items():
            domain = set(self[name].categories)
            inside = np.fromiter((v in domain for v in values), dtype=bool, count=n)
            if not inside.all():
                bad.append(name)
                keep &= inside
        if not bad:
            return keep
        if not self.from_release:
            raise ValueError(
                f"column {bad[0]!r} has values not in the schema's categories (not shown: "
                "they may be rare private values)"
            )
        if keep.sum() < MIN_ROWS:
            raise ValueError(
                f"expected at least {MIN_ROWS} rows whose categories are in the DP-released schema"
            )
        names = ", ".join(repr(name) for name in bad)
        warnings.warn(
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


def _conform_numeric(col: Column, series: pd.Series) -> tuple[np.ndarray, int]:
    if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
        raise TypeError(f"column {col.name!r}: expected a numeric dtype, got {series.dtype}")
    x = series.to_numpy(dtype=np.float64)
    n_nan = int(np.isnan(x).sum())
    if n_nan:
        raise ValueError(f"column {col.name!r} has {n_nan} NaN value(s)")
    n_inf = int(np.isinf(x).sum())
    if n_inf:
        raise ValueError(f"column {col.name!r} has {n_inf} infinite value(s)")
    if col.kind == "integer" and not np.all(x == np.round(x)):
        raise ValueError(f"column {col.name!r} is declared integer but has non-integer values")
    n_clipped = int(((x < col.lower) | (x > col.upper)).sum())
    x = np.clip(x, col.lower, col.upper)
    return (x.astype(np.int64) if col.kind == "integer" else x), n_clipped


def _category_values(col: Column, series: pd.Series) -> np.ndarray:
    """The values of a categorical column as Python objects, after the NaN and type checks."""
    if series.isna().any():
        raise ValueError(f"column {col.name!r} has {int(series.isna().sum())} missing value(s)")
    want_str = isinstance(col.categories[0], str)
    values = series.to_numpy(dtype=object)
    if want_str != all(isinstance(v, str) for v in values):
        kind = "string" if want_str else "non-string"
        raise TypeError(
            f"column {col.name!r}: expected {kind} categories, got dtype {series.dtype}"
        )
    return np.array([v.item() if isinstance(v, np.generic) else v for v in values], dtype=object)


def typed_labels(column: Column, values: np.ndarray) -> np.ndarray:
    """Category labels as the array type of their domain: bool, int64, or object (str)."""
    first = column.categories[0]
    if isinstance(first, bool):
        return np.asarray(values, dtype=object).astype(bool)
    if isinstance(first, int):
        return np.asarray(values, dtype=object).astype(np.int64)
    return np.asarray(values, dtype=object)


@dataclass(frozen=True, eq=False)
class Table:
    """A private table that conforms to its schema (build with :meth:`Schema.conform`).

    ``frame`` holds the clipped values (float64 / int64 / object), ``schema`` the public
    description; ``clip_counts`` the number of clipped values per column -- private, for the
    data holder's eyes only. ``len(table)`` is the private row count: a synthesizer must not
    release it except through an accounted mechanism.
    """

    frame: pd.DataFrame
    schema: Schema
    clip_counts: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.frame)


def infer_schema_nonprivate(data: pd.DataFrame, *, target: str | None = None) -> Schema:
    """Read a schema off ``data`` WITHOUT differential privacy (warns every time).

    Bounds are the observed min/max, domains the observed values: both reveal individual
    records (the max of a column is one person's value). Use only for public data or
    experiments; for private data declare the schema or use
    :func:`jdp.data.dp_schema.infer_schema_dp`.

    Floats become ``continuous``, integers ``integer``, everything else ``categorical``.
    """
    warnings.warn(
        "infer_schema_nonprivate reads bounds and categories off the data without differential "
        "privacy; any release built on this schema is NOT differentially private",
        NonPrivateSchemaWarning,
        stacklevel=2,
    )
    if not isinstance(data, pd.DataFrame) or len(data) == 0:
        raise ValueError("expected a non-empty pandas DataFrame")
    cols = []
    for name in data.columns:
        s = data[name]
        if (
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
    return Schema(columns=tuple(cols), target=target)
