"""Reading a user's table from CSV under a public schema."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from jdp.data.schema import Schema


def read_csv(path: str | Path, schema: Schema) -> pd.DataFrame:
    """Read a CSV of a table with this schema, with explicit missing-value handling.

    Only the schema's ``missing_values`` tokens (default: the empty field) are read as
    missing: pandas' default list (``"NA"``, ``"None"``, ``"null"``, ``"nan"``, ...) is off,
    so a category literally named ``"NA"`` stays a category. String-category columns are read
    as text (so that ``"1"`` stays a category), date columns as text too (ISO dates, which
    :meth:`~jdp.data.schema.Schema.conform` reads as days: ``20240229`` is the ISO basic
    form of 2024-02-29, not the number), everything else inferred; the schema's
    ``ignore`` columns are not read. Whether a missing value is allowed is checked later, by
    :meth:`~jdp.data.schema.Schema.conform` (``nullable`` columns). Raises a one-line error
    for a missing or unreadable file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    text_columns = {
        c.name: str
        for c in schema.columns
        if c.kind == "date" or (not c.is_numeric and isinstance(c.categories[0], str))
    }
    ignored = set(schema.ignore)
    try:
        return pd.read_csv(
            path,
            dtype=text_columns,
            skipinitialspace=True,
            keep_default_na=False,
            na_values=list(schema.missing_values),
            na_filter=bool(schema.missing_values),
            usecols=lambda name: name not in ignored,
        )
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read CSV {path}: {str(exc).splitlines()[0]}") from None
