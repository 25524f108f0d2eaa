"""Errors and warnings of the encoding-phase algorithms never show the private row count or
counts over private records (issue 10, item 11); the data holder may opt in
(:func:`jdp.verbosity.show_private_details`, ``jdp fit --verbose``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from jdp.encoding.em import dp_em
from jdp.encoding.kmeans import dp_kernel_kmeans, dp_kmeans
from jdp.encoding.pca import dp_pca_gaussian, dp_pca_laplace
from jdp.verbosity import show_private_details

N = 137  # a distinctive private row count
K = 139  # more components/clusters than rows
OUTSIDE = 29  # a distinctive private count of out-of-bounds values


def _data() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, size=(N, 150))


K_ABOVE_N = {
    "dp_pca_gaussian": lambda rng, x: dp_pca_gaussian(rng, x, K, noise_multiplier=1.0),
    "dp_pca_laplace": lambda rng, x: dp_pca_laplace(rng, x, K, epsilon=1.0, lower=-1, upper=1),
    "dp_em": lambda rng, x: dp_em(rng, x, K, noise_multiplier=1.0, steps=1),
    "dp_kmeans": lambda rng, x: dp_kmeans(
        rng, x, K, noise_multiplier=1.0, steps=1, l2_clip_norm=1.0
    ),
    "dp_kernel_kmeans": lambda rng, x: dp_kernel_kmeans(
        rng, x, K, noise_multiplier=1.0, steps=1, gamma=1.0
    ),
}


@pytest.mark.parametrize("name", sorted(K_ABOVE_N))
def test_k_above_n_error_does_not_reveal_the_row_count(name):
    run = K_ABOVE_N[name]
    with pytest.raises(ValueError, match=f"too few rows for .*{K}") as info:
        run(np.random.default_rng(1), _data())
    assert str(N) not in str(info.value)
    with show_private_details(), pytest.raises(ValueError, match=f"{N} rows"):
        run(np.random.default_rng(1), _data())


def test_out_of_bounds_warning_does_not_count_the_values():
    x = np.random.default_rng(2).uniform(-1, 1, size=(N, 3))
    x[:OUTSIDE, 0] = 7.0
    with pytest.warns(UserWarning, match="outside the declared bounds") as caught:
        dp_pca_laplace(np.random.default_rng(3), x, 2, epsilon=1.0, lower=-1, upper=1)
    messages = " ".join(str(w.message) for w in caught)
    assert str(OUTSIDE) not in messages and str(N) not in messages
    with show_private_details(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp_pca_laplace(np.random.default_rng(3), x, 2, epsilon=1.0, lower=-1, upper=1)
    assert any(f"{OUTSIDE} values" in str(w.message) for w in caught)
