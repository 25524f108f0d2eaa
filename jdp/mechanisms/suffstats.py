"""Sums over records in bounded-memory chunks, and the checks on the data matrices they read.

Every statistic the encoding-phase mechanisms (:mod:`jdp.encoding.pca`, :mod:`jdp.encoding.em`,
:mod:`jdp.encoding.kmeans`) release is a *sum over records* ``sum_i f(x_i)``. Computing it chunk by
chunk keeps the extra memory at one float64 chunk plus the (small) accumulator, whatever the
number of rows: a 1M x 784 float32 table is read 8k rows (about 50 MB in float64) at a
time. The per-chunk partial sums are plain arrays that add, so the same code can later
reduce them across devices or hosts before the noise is added once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np

from accounting.validation import check_count

#: Default bytes per float64 chunk (the dominant temporary of a chunked pass).
DEFAULT_CHUNK_BYTES = 48 * 2**20

T = TypeVar("T")


def chunk_rows(n_cols: int, *, chunk_bytes: int | None = None) -> int:
    """Rows per chunk so that one float64 chunk of ``n_cols`` columns fits ``chunk_bytes``
    (default: the module's ``DEFAULT_CHUNK_BYTES``, read at call time)."""
    check_count("n_cols", n_cols, minimum=1)
    chunk_bytes = (
        DEFAULT_CHUNK_BYTES
        if chunk_bytes is None
        else check_count("chunk_bytes", chunk_bytes, minimum=1)
    )
    return max(1, chunk_bytes // (8 * n_cols))


def iter_chunks(x: np.ndarray, *, rows: int | None = None) -> Iterator[np.ndarray]:
    """Yield consecutive row blocks of ``x`` as float64 copies of at most ``rows`` rows."""
    rows = chunk_rows(max(1, x.shape[1])) if rows is None else check_count("rows", rows, minimum=1)
    for start in range(0, x.shape[0], rows):
        yield np.asarray(x[start : start + rows], dtype=np.float64)


def chunked_sum(fn: Callable[[np.ndarray], T], x: np.ndarray, *, rows: int | None = None) -> T:
    """``sum over chunks c of fn(c)``, where ``fn`` returns an array or a tuple of arrays.

    ``fn`` must itself be a sum over the rows of its chunk (that is what makes the result
    independent of the chunking, and a sum over records with a per-record sensitivity).
    """
    total = None
    for chunk in iter_chunks(x, rows=rows):
        part = fn(chunk)
        if total is None:
            total = (
                [np.array(p, dtype=np.float64) for p in part]
                if isinstance(part, tuple)
                else np.array(part, dtype=np.float64)
            )
        elif isinstance(part, tuple):
            for acc, p in zip(total, part, strict=True):
                acc += p
        else:
            total += part
    if total is None:
        raise ValueError("expected at least one row, got an empty data matrix")
    return tuple(total) if isinstance(total, list) else total


def check_data_matrix(x: object, *, name: str = "x", n_cols: int | None = None) -> np.ndarray:
    """Return ``x`` as a 2-D floating array after checking shape and finiteness.

    Raises:
      TypeError: ``x`` is not numeric.
      ValueError: not 2-D, no rows, a column count other than ``n_cols``, or NaN/inf entries.
    """
    arr = np.asarray(x)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"expected {name} to be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"expected {name} to be 2-D (records x features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"expected {name} to have at least one row and column, got shape {arr.shape}"
        )
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"expected {name} to have {n_cols} columns, got {arr.shape[1]}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    bad = chunked_sum(lambda c: np.array(float(np.count_nonzero(~np.isfinite(c)))), arr)
    if bad:
        raise ValueError(f"expected {name} to be finite, got {int(bad)} NaN/inf entries")
    return arr
