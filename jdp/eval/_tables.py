"""Input checks shared by the evaluation modules.

Every evaluation function compares tables that must describe the same columns with the same
kinds. The checks here turn bad input into one-line errors that name the table and column.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd


def is_categorical(series: pd.Series) -> bool:
    """A column is categorical unless its dtype is numeric (booleans count as categorical)."""
    return pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series)


def check_tables(
    tables: Mapping[str, pd.DataFrame], *, target: str | None = None
) -> dict[str, bool]:
    """Validate tables that must share columns; return ``{column: is_categorical}``.

    The first table fixes the column order. Raises ``TypeError`` for a non-DataFrame and
    ``ValueError`` for an empty table, a missing target, a missing or extra column, NaN or
    inf, or a column that is numeric in one table and categorical in another.
    """
    if not tables:
        raise ValueError("expected at least one table")
    for name, frame in tables.items():
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"expected {name} to be a pandas DataFrame, got {type(frame).__name__}")
        if len(frame) == 0 or frame.shape[1] == 0:
            raise ValueError(
                f"expected {name} to have at least one row and one column, got shape {frame.shape}"
            )
        if target is not None and target not in frame.columns:
            raise ValueError(f"target column {target!r} is missing from {name}")
        if frame.columns.has_duplicates:
            dup = frame.columns[frame.columns.duplicated()][0]
            raise ValueError(f"column {dup!r} appears twice in {name}")
    (first_name, first), *rest = tables.items()
    for name, frame in rest:
        missing = [c for c in first.columns if c not in frame.columns]
        if missing:
            raise ValueError(f"column {missing[0]!r} of {first_name} is missing from {name}")
        extra = [c for c in frame.columns if c not in first.columns]
        if extra:
            raise ValueError(f"column {extra[0]!r} of {name} is not in {first_name}")
    kinds: dict[str, bool] = {}
    for column in first.columns:
        column_kinds = {}
        for name, frame in tables.items():
            series = frame[column]
            n_missing = int(series.isna().sum())
            if n_missing:
                raise ValueError(f"column {column!r} of {name} contains NaN ({n_missing} rows)")
            column_kinds[name] = is_categorical(series)
            if not column_kinds[name]:
                n_inf = int(np.isinf(series.to_numpy(dtype=float)).sum())
                if n_inf:
                    raise ValueError(f"column {column!r} of {name} contains inf ({n_inf} rows)")
        if len(set(column_kinds.values())) > 1:
            numeric = [n for n, k in column_kinds.items() if not k]
            categorical = [n for n, k in column_kinds.items() if k]
            raise ValueError(
                f"column {column!r} is numeric in {numeric[0]} but categorical in {categorical[0]}"
            )
        kinds[column] = column_kinds[first_name]
    return kinds


def categories(column: str, tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The sorted union of a categorical column's values (as strings) over ``tables``."""
    values: set[str] = set()
    for frame in tables.values():
        values.update(frame[column].astype(str).unique().tolist())
    return sorted(values)


def category_codes(series: pd.Series, cats: list[str]) -> np.ndarray:
    """Integer codes of ``series`` (compared as strings) in ``cats``; every value must occur."""
    codes = pd.Categorical(series.astype(str), categories=cats).codes.astype(np.int64)
    if (codes < 0).any():
        raise ValueError(f"column {series.name!r} has a value outside its categories")
    return codes
