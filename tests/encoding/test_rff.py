"""The median heuristic for the RBF kernel's gamma, on public rows."""

from __future__ import annotations

import numpy as np
import pytest

from jdp.encoding.rff import median_heuristic_gamma


def test_median_heuristic_gamma_scales_as_one_over_the_squared_distance():
    x = np.random.default_rng(0).uniform(size=(500, 4))
    gamma = median_heuristic_gamma(np.random.default_rng(1), x)
    assert gamma == pytest.approx(median_heuristic_gamma(np.random.default_rng(1), 3.0 * x) * 9)
    pairs = x[:, None, :] - x[None, :, :]
    exact = 1.0 / np.median(np.sum(pairs**2, axis=-1)[np.triu_indices(len(x), 1)])
    assert 0.8 * exact < gamma < 1.25 * exact  # 2,000 random pairs estimate the median


def test_median_heuristic_gamma_checks_its_pair_count():
    with pytest.raises(ValueError, match="pairs"):
        median_heuristic_gamma(np.random.default_rng(0), np.zeros((3, 2)), pairs=0)
