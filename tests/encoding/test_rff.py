"""The median heuristic for the RBF kernel's gamma, on public rows."""

from __future__ import annotations

import numpy as np
import pytest

from jdp.encoding.rff import CENTRE_NOISE, DIM_RANGE, dim_for_noise, median_heuristic_gamma


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


@pytest.mark.parametrize("rows,z", [(10_000, 23.6), (60_000, 44.5), (60_000, 194.5), (5_000, 3.0)])
def test_dim_for_noise_is_the_largest_d_whose_centre_noise_meets_the_target(rows, z):
    """Inside the range, ``D`` keeps a centre's noise norm ``z sqrt(D) k / rows`` at or below
    the target and ``D + 1`` would not; at the range's ends it is clipped."""
    k = 10
    dim = dim_for_noise(rows, k, z)
    norm = lambda d: z * np.sqrt(d) * k / rows
    assert DIM_RANGE[0] <= dim <= DIM_RANGE[1]
    if DIM_RANGE[0] < dim < DIM_RANGE[1]:
        assert norm(dim) <= CENTRE_NOISE < norm(dim + 1)
    elif dim == DIM_RANGE[0]:
        assert norm(dim + 1) > CENTRE_NOISE
    else:
        assert norm(dim) <= CENTRE_NOISE


def test_dim_for_noise_refuses_a_non_positive_row_count():
    with pytest.raises(ValueError, match="rows"):
        dim_for_noise(0.0, 10, 1.0)
