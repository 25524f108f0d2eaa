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
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from accounting.validation import check_count, check_positive

#: Default bytes per float64 chunk (the dominant temporary of a chunked pass).
DEFAULT_CHUNK_BYTES = 48 * 2**20

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class ScaledRows:
    """The matrix ``data[:, columns] / scale``, its rows made a block at a time.

    Slicing rows (``rows[start:stop]``, all :func:`iter_chunks` does) gives the float64 block
    ``data[start:stop][:, columns] / scale``: per element the same float64 division as in the
    whole copy ``data[:, columns] / scale``, so a sum over these blocks (:func:`chunked_sum`,
    which cuts at the same rows: :func:`chunk_rows` of the same width) equals the sum over the
    copy bit for bit, while only one block of it is ever held. A view, not new data: whatever
    a mechanism releases from it is what it would release from the copy (the same rows, the
    same statistic, the same noise).

    Attributes:
      data: ``(n, d)`` numeric matrix.
      scale: ``s > 0``, a public number (e.g. P3GM's row-norm bound).
      columns: ``(d,)`` boolean mask of the columns kept (None: all of them).
    """

    data: np.ndarray
    scale: float = 1.0
    columns: np.ndarray | None = None

    def __post_init__(self) -> None:
        if np.ndim(self.data) != 2:
            raise ValueError(f"expected data to be 2-D, got shape {np.shape(self.data)}")
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        if self.columns is not None:
            mask = np.asarray(self.columns)
            if mask.dtype != np.bool_ or mask.shape != (self.data.shape[1],):
                raise ValueError(
                    f"expected columns to be a boolean mask of shape ({self.data.shape[1]},), "
                    f"got dtype {mask.dtype} and shape {mask.shape}"
                )
            object.__setattr__(self, "columns", mask)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, number of columns kept)``."""
        n, d = self.data.shape
        return n, d if self.columns is None else int(np.count_nonzero(self.columns))

    @property
    def ndim(self) -> int:
        """Always 2."""
        return 2

    @property
    def dtype(self) -> np.dtype:
        """Always float64 (the dtype of every block)."""
        return np.dtype(np.float64)

    def __getitem__(self, rows: slice) -> np.ndarray:
        """The float64 block ``data[rows][:, columns] / scale`` (a new array)."""
        if not isinstance(rows, slice):
            raise TypeError(f"expected a slice of rows, got {rows!r}")
        block = np.asarray(self.data[rows], dtype=np.float64)
        if self.columns is not None:
            block = block[:, self.columns]
        return block / self.scale


#: A matrix the chunked sums read: an array, or rows made a block at a time.
Rows = np.ndarray | ScaledRows


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


def iter_chunks(x: Rows, *, rows: int | None = None) -> Iterator[np.ndarray]:
    """Yield consecutive row blocks of ``x`` as float64 arrays of at most ``rows`` rows
    (default :func:`chunk_rows` of its width)."""
    rows = chunk_rows(max(1, x.shape[1])) if rows is None else check_count("rows", rows, minimum=1)
    for start in range(0, x.shape[0], rows):
        yield np.asarray(x[start : start + rows], dtype=np.float64)


def finite_rows(x: np.ndarray) -> np.ndarray:
    """The rows of ``x`` whose entries are all finite (a per-record filter)."""
    keep = np.isfinite(x).all(axis=1)
    return x if keep.all() else x[keep]


def chunked_sum(
    fn: Callable[[np.ndarray], T],
    x: Rows,
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
) -> Rows:
    """Return ``x`` as a 2-D floating array (a :class:`ScaledRows` as it is) after checking
    its shape (and finiteness).

    Args:
      x: the matrix (records x features), or a :class:`ScaledRows`.
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
    arr = x if isinstance(x, ScaledRows) else np.asarray(x)
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
