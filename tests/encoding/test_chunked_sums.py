"""Chunked sums: chunking never changes a released statistic, and memory stays bounded."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from jdp.encoding.em import em_statistics, initial_mixture
from jdp.encoding.kmeans import lloyd_statistics
from jdp.encoding.pca import scatter_sum
from jdp.mechanisms import suffstats
from jdp.mechanisms.suffstats import check_data_matrix, chunked_sum


def test_chunked_sum_is_independent_of_the_chunking():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1001, 7)).astype(np.float32)
    exact = x.astype(np.float64).T @ x.astype(np.float64)
    for rows in (1, 13, 1000, 5000):
        np.testing.assert_allclose(chunked_sum(lambda c: c.T @ c, x, rows=rows), exact, rtol=1e-12)
    parts = chunked_sum(lambda c: (c.sum(0), np.array(float(len(c)))), x, rows=100)
    np.testing.assert_allclose(parts[0], x.astype(np.float64).sum(0), rtol=1e-10)
    assert parts[1] == 1001


def test_statistics_are_sums_over_records():
    # each released statistic of a concatenation is the sum of the parts' statistics, which is
    # what lets per-host partial sums be reduced before the noise is added once
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(50, 4)), rng.normal(size=(70, 4))
    both = np.vstack([a, b])
    m = initial_mixture(rng, 3, 4, covariance_type="full")
    centres = rng.normal(size=(3, 4))
    statistics = (
        lambda x: (scatter_sum(x, np.zeros(4), l2_clip_norm=1.0),),
        lambda x: em_statistics(x, m, l2_clip_norm=1.0),
        lambda x: lloyd_statistics(x, centres, l2_clip_norm=1.0),
    )
    for stats in statistics:
        for s_ab, s_a, s_b in zip(stats(both), stats(a), stats(b), strict=True):
            np.testing.assert_allclose(s_ab, s_a + s_b, atol=1e-12)


def test_chunked_passes_need_bounded_extra_memory(monkeypatch):
    # a 30k x 60 float32 table is 7 MB, 14 MB as float64; with 0.5 MB chunks every pass
    # (DP-PCA, DP-EM, Lloyd) must stay within a few chunks of extra memory, whatever n is
    monkeypatch.setattr(suffstats, "DEFAULT_CHUNK_BYTES", 2**19)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30_000, 60)).astype(np.float32)
    mixture = initial_mixture(rng, 3, 60, covariance_type="full")
    centres = rng.normal(size=(10, 60))
    for run in (
        lambda: scatter_sum(x, np.zeros(60), l2_clip_norm=1.0),
        lambda: em_statistics(x, mixture, l2_clip_norm=1.0),
        lambda: lloyd_statistics(x, centres, l2_clip_norm=1.0),
    ):
        tracemalloc.start()
        run()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 4 * 2**20, peak / 2**20


def test_check_data_matrix_messages():
    with pytest.raises(TypeError, match="numeric array"):
        check_data_matrix(np.array([["a"]]))
    with pytest.raises(ValueError, match="at least one row"):
        check_data_matrix(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="expected x to be finite, got 2 NaN/inf entries"):
        check_data_matrix(np.array([[np.nan, np.inf, 1.0]]))
    assert check_data_matrix(np.arange(6).reshape(2, 3)).dtype == np.float64


def test_secure_noise_reaches_every_release():
    # with secure_noise every release goes through jdp.mechanisms.noise' clamp-and-round: a Gaussian
    # release lies on the grid of the smallest power of two >= its noise scale, a Laplace one
    # on the snapping grid of its calibrated scale, both within the public clamp bound
    from jdp.encoding.em import noisy_em_statistics
    from jdp.encoding.kmeans import noisy_lloyd_step
    from jdp.encoding.pca import (
        lap_pca_l1_sensitivity,
        noisy_scatter_gaussian,
        noisy_scatter_laplace,
    )
    from jdp.mechanisms.noise import (
        DEFAULT_MAX_RECORDS,
        power_of_two_at_least,
        snapping_laplace_parameters,
    )

    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 3)) * 0.3
    z = 2.0  # every Gaussian release below has noise scale z * sensitivity = 2 (C = 1)
    gaussian = [
        noisy_scatter_gaussian(rng, x, np.zeros(3), noise_multiplier=z, secure_noise=True)[0],
        *noisy_em_statistics(
            rng,
            x,
            initial_mixture(rng, 2, 3),
            noise_multiplier=z,
            l2_clip_norm=1.0,
            secure_noise=True,
        )[0],
        *noisy_lloyd_step(
            rng, x, rng.normal(size=(2, 3)), noise_multiplier=z, l2_clip_norm=1.0, secure_noise=True
        )[2],
    ]
    laplace = noisy_scatter_laplace(
        rng, x, np.zeros(3), epsilon=1.0, lower=-2, upper=2, secure_noise=True
    )[0]
    snapping = snapping_laplace_parameters(
        l1_sensitivity=lap_pca_l1_sensitivity(np.full(3, 2.0)), epsilon=1.0, size=6
    )
    releases = [(v, power_of_two_at_least(z), DEFAULT_MAX_RECORDS) for v in gaussian]
    for values, grid, bound in releases + [(laplace, snapping.grid, snapping.bound)]:
        np.testing.assert_array_equal(values / grid, np.round(values / grid))
        assert np.all(np.abs(values) <= bound)
