"""Time series as table rows: one record = one whole series of ``T`` steps of ``F`` values.

dp-GAN (Frigerio et al. 2019, Sec. 4) treats a series as one record, so its privacy unit is
the whole series (user-level privacy over the series, not one time step). A series becomes
one table row of ``T * F`` numeric columns, time-major (``t000_f0, t000_f1, t001_f0, ...``;
``t000, t001, ...`` when ``F = 1``), with public bounds declared by the data holder.

:func:`series_schema` builds the public schema; :func:`series_frame` checks and flattens the
series (every series must have the same ``(T, F)``; NaN or inf inside a series raises; no
message echoes a value, a position or a shape unless :mod:`jdp.verbosity` allows it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from accounting.validation import check_count
from jdp.data.schema import Column, Schema
from jdp.verbosity import private_detail


def series_columns(length: int, features: int = 1) -> tuple[str, ...]:
    """Column names of a flattened, time-major series of ``length`` steps."""
    check_count("length", length, minimum=1)
    check_count("features", features, minimum=1)
    if features == 1:
        return tuple(f"t{t:03d}" for t in range(length))
    return tuple(f"t{t:03d}_f{f}" for t in range(length) for f in range(features))


def series_schema(length: int, features: int = 1, *, lower: float, upper: float) -> Schema:
    """The public schema of series of ``length`` steps of ``features`` values in the
    declared bounds ``[lower, upper]`` (continuous columns, no target)."""
    cols = tuple(
        Column(name=name, kind="continuous", lower=float(lower), upper=float(upper))
        for name in series_columns(length, features)
    )
    return Schema(columns=cols)


def series_frame(series: Sequence[np.ndarray] | np.ndarray, schema: Schema) -> pd.DataFrame:
    """Rows of ``schema`` from series of shape ``(T,)`` or ``(T, F)`` each (or one array
    ``(n, T)`` / ``(n, T, F)``).

    Raises:
        ValueError: a series whose length or width differs from the schema's ``T * F``
            columns, or a non-finite value inside a series (nothing is echoed).
    """
    width = len(schema.columns)
    rows = []
    for s in series:
        a = np.asarray(s, dtype=np.float64)
        if a.size != width or a.ndim not in (1, 2):
            raise ValueError(
                f"expected every series to have the schema's {width} values (T steps x F "
                f"features, time-major); some series differ{private_detail(f'shape {a.shape}')}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError("expected finite values inside every series, got NaN or inf")
        rows.append(a.reshape(width))
    if not rows:
        raise ValueError("expected at least one series, got none")
    return pd.DataFrame(np.stack(rows), columns=list(schema.names))
