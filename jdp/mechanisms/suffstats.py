"""Sums over records in bounded-memory chunks, and the checks on the data matrices they read.

Every statistic the encoding-phase mechanisms (:mod:`jdp.encoding.pca`, :mod:`jdp.encoding.em`,
:mod:`jdp.encoding.kmeans`) release is a *sum over records* ``sum_i f(x_i)``. Computing it chunk by
chunk keeps the extra memory at one float64 chunk plus the (small) accumulator, whatever the
number of rows: a 1M x 784 float32 table is read 8k rows (about 50 MB in float64) at a
time. The per-chunk partial sums are plain arrays that add, so the same code can later
reduce them across devices or hosts before the noise is added once.

Under add/remove-one neighbours the number of rows is private, so a DP path reads it
nowhere (DESIGN rule 7): a sum over no rows is the zero array of the statistic's shape (the
number of columns is public), and a record with a NaN or infinite entry is dropped from the
sums (``drop_nonfinite``: its contribution is zero, exactly as if it were absent, a function
of that record alone; cf. the non-finite gradients of :mod:`jdp.dpsgd.clipping`). The checks of
:func:`check_data_matrix` with ``private=True`` are on public properties only.
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


def finite_rows(x: np.ndarray) -> np.ndarray:
    """The rows of ``x`` whose entries are all finite (a per-record filter)."""
    keep = np.isfinite(x).all(axis=1)
    return x if keep.all() else x[keep]


def chunked_sum(
    fn: Callable[[np.ndarray], T],
    x: np.ndarray,
    *,
    rows: int | None = None,
    drop_nonfinite: bool = False,
) -> T:
    """``sum over chunks c of fn(c)``, where ``fn`` returns an array or a tuple of arrays.

    ``fn`` must itself be a sum over the rows of its chunk (that is what makes the result
    independent of the chunking, and a sum over records with a per-record sensitivity), and
    must accept a chunk of no rows: a matrix without rows gives ``fn`` of an empty
    ``(0, m)`` float64 chunk, the zero sum of the right shape (never an error: the row count
    is private). ``drop_nonfinite``: rows with a NaN or infinite entry are removed from each
    chunk before ``fn`` sees it (the released statistics' rule, see the module docstring).
    """
    total = None
    chunks = iter_chunks(x, rows=rows)
    if x.shape[0] == 0:
        chunks = iter([np.zeros((0, x.shape[1]))])
    for chunk in chunks:
        part = fn(finite_rows(chunk) if drop_nonfinite else chunk)
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
    return tuple(total) if isinstance(total, list) else total


def check_data_matrix(
    x: object, *, name: str = "x", n_cols: int | None = None, private: bool = False
) -> np.ndarray:
    """Return ``x`` as a 2-D floating array after checking its shape (and finiteness).

    Args:
      x: the matrix (records x features).
      name: its name in error messages.
      n_cols: the expected (public) number of columns.
      private: ``x`` holds private records read by a DP path: only public properties are
        checked (numeric dtype, 2-D, at least one column, ``n_cols``); any number of rows,
        0 included, is accepted, and non-finite entries are left for the released sums to
        drop (``chunked_sum(..., drop_nonfinite=True)``), since refusing either would make
        the fit depend on the private data (DESIGN rule 7). ``False`` (public data, non-DP
        helpers): also at least one row and only finite entries.

    Raises:
      TypeError: ``x`` is not numeric.
      ValueError: not 2-D, no column, a column count other than ``n_cols``; unless
        ``private``: no rows, or NaN/inf entries.
    """
    arr = np.asarray(x)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"expected {name} to be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"expected {name} to be 2-D (records x features), got shape {arr.shape}")
    if arr.shape[1] == 0 or (arr.shape[0] == 0 and not private):
        raise ValueError(
            f"expected {name} to have at least one row and column, got shape {arr.shape}"
        )
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"expected {name} to have {n_cols} columns, got {arr.shape[1]}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if private:
        return arr
    bad = chunked_sum(lambda c: np.array(float(np.count_nonzero(~np.isfinite(c)))), arr)
    if bad:
        raise ValueError(f"expected {name} to be finite, got {int(bad)} NaN/inf entries")
    return arr
