"""ScaledRows: the DP mean and DP-PCA read ``x[:, keep] / b`` a block at a time, and release
exactly (bit for bit) what they release from the divided copy (issue 29 item 4)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from jdp.encoding import pca
from jdp.mechanisms import suffstats
from jdp.mechanisms.suffstats import ScaledRows, check_data_matrix, iter_chunks

SCALE = 2.5


def _data(rng: np.random.Generator) -> np.ndarray:
    """1000 x 7 rows, some above the clip norm after scaling, one with a NaN (dropped)."""
    x = rng.random((1000, 7)) * rng.choice([1.0, 10.0], size=(1000, 1))
    x[17, 3] = np.nan
    return x


@pytest.mark.parametrize("keep", [None, np.array([True, False, True, True, False, True, True])])
def test_releases_from_scaled_rows_are_those_of_the_divided_copy(keep, monkeypatch):
    x = _data(np.random.default_rng(0))
    copy = (x if keep is None else x[:, keep]) / SCALE
    rows = ScaledRows(data=x, scale=SCALE, columns=keep)
    assert rows.shape == copy.shape
    monkeypatch.setattr(suffstats, "DEFAULT_CHUNK_BYTES", 8 * copy.shape[1] * 300)  # 4 blocks
    for block, expected in zip(iter_chunks(rows), iter_chunks(copy), strict=True):
        np.testing.assert_array_equal(block, expected)
    centre = np.full(copy.shape[1], 0.2)
    for stat in (
        lambda m: pca.clipped_sum_count(m, 1.0),
        lambda m: pca.scatter_sum(m, centre, l2_clip_norm=1.0),
        lambda m: pca.dp_mean_gaussian(np.random.default_rng(1), m, noise_multiplier=1.0)[0],
    ):
        np.testing.assert_array_equal(stat(rows), stat(copy))
    got, ledger = pca.dp_pca_gaussian(
        np.random.default_rng(2), rows, 3, noise_multiplier=1.0, centre="dp"
    )
    want, want_ledger = pca.dp_pca_gaussian(
        np.random.default_rng(2), copy, 3, noise_multiplier=1.0, centre="dp"
    )
    for a, b in ((got.components, want.components), (got.centre, want.centre)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got.eigenvalues, want.eigenvalues)
    assert ledger.labels == want_ledger.labels


def test_scaled_rows_hold_one_block_not_a_copy(monkeypatch):
    x = np.random.default_rng(3).random((20_000, 50))  # 8 MB
    monkeypatch.setattr(suffstats, "DEFAULT_CHUNK_BYTES", 2**18)
    rows = ScaledRows(data=x, scale=SCALE)
    tracemalloc.start()
    pca.dp_pca_gaussian(np.random.default_rng(0), rows, 5, noise_multiplier=1.0, centre="dp")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < x.nbytes / 4


def test_scaled_rows_checks():
    x = np.ones((4, 3))
    rows = ScaledRows(data=x, scale=2.0, columns=np.array([True, False, True]))
    assert (rows.shape, rows.ndim, rows.dtype) == ((4, 2), 2, np.float64)
    assert check_data_matrix(rows, private=True) is rows
    np.testing.assert_array_equal(rows[1:3], np.full((2, 2), 0.5))
    assert rows[4:].shape == (0, 2)
    with pytest.raises(TypeError, match="slice of rows"):
        rows[0]
    with pytest.raises(ValueError, match="scale > 0"):
        ScaledRows(data=x, scale=0.0)
    with pytest.raises(ValueError, match="boolean mask of shape"):
        ScaledRows(data=x, columns=np.array([0, 2]))
    with pytest.raises(ValueError, match="2-D"):
        ScaledRows(data=np.ones(3))
    with pytest.raises(ValueError, match="at least one row and column"):
        check_data_matrix(ScaledRows(data=x, columns=np.zeros(3, bool)), private=True)
