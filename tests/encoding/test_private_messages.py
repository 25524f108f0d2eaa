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
def test_k_above_n_is_neither_refused_nor_reported(name):
    """``k`` above the private row count used to raise "too few rows for k=..." (hiding the
    count); whether it raises at all told the count's side of ``k``. Rule 7 (issue 24,
    item 2): no error and no warning, also when private details are shown."""
    run = K_ABOVE_N[name]
    for shown in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if shown:
                with show_private_details():
                    run(np.random.default_rng(1), _data())
            else:
                run(np.random.default_rng(1), _data())


def test_out_of_bounds_warning_does_not_count_the_values():
    """Whether any value is out of bounds is itself private (issue 24, item 3): by default
    no warning at all; the data holder sees it, with the count, on request."""
    x = np.random.default_rng(2).uniform(-1, 1, size=(N, 3))
    x[:OUTSIDE, 0] = 7.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp_pca_laplace(np.random.default_rng(3), x, 2, epsilon=1.0, lower=-1, upper=1)
    assert not any("outside the declared bounds" in str(w.message) for w in caught)
    with show_private_details(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp_pca_laplace(np.random.default_rng(3), x, 2, epsilon=1.0, lower=-1, upper=1)
    assert any(f"{OUTSIDE} values" in str(w.message) for w in caught)
