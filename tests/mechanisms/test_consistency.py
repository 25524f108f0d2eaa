"""Norm-sub and pooled totals: the post-processing that keeps noise out of empty cells."""

from __future__ import annotations

import numpy as np
import pytest

from jdp.mechanisms.consistency import distribution, drop_isolated, norm_sub, pooled_totals


def bisection_theta(c: np.ndarray, total: float) -> float:
    """The ``theta`` with ``sum max(c - theta, 0) = total``, by bisection (an independent
    check of the sorted closed form)."""
    lo, hi = c.min() - total, c.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(c - mid, 0).sum() > total else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("seed", range(5))
def test_norm_sub_is_the_projection_onto_the_total(seed):
    rng = np.random.default_rng(seed)
    c = np.concatenate([rng.normal(0, 5, 40), rng.normal(300, 5, 3)])
    out = norm_sub(c, 800.0)
    np.testing.assert_allclose(out.sum(), 800.0, rtol=1e-12)
    np.testing.assert_allclose(out, np.maximum(c - bisection_theta(c, 800.0), 0), atol=1e-9)
    assert (out >= 0).all()


def test_norm_sub_never_raises_a_cell_when_the_positives_fall_short():
    """The projection's theta would be negative here and put mass on every empty cell."""
    c = np.array([10.0, 5.0, -3.0, -8.0])
    np.testing.assert_array_equal(norm_sub(c, 100.0), [10.0, 5.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="positive total"):
        norm_sub(c, 0.0)


def test_norm_sub_sends_noise_level_cells_to_zero_and_keeps_the_signal():
    """One cell holds ``n`` records, 63 are empty, noise sd ``s``: clipping keeps about
    ``63 s / sqrt(2 pi)`` spurious records; norm-sub to the true total keeps at most the
    noise on the signal cell's side (theta is at least the largest empty cell's excess
    share) -- here below a tenth of clipping's."""
    rng = np.random.default_rng(0)
    s, n = 20.0, 2000.0
    c = rng.normal(0, s, 64)
    c[0] += n
    clipped_spurious = np.maximum(c[1:], 0).sum()
    assert clipped_spurious > 0.5 * 63 * s / np.sqrt(2 * np.pi)  # the defect is there
    out = norm_sub(c, n)
    assert out[1:].sum() < 0.1 * clipped_spurious
    assert abs(out[0] - n) < 4 * s + out[1:].sum()


def test_pooled_totals_weigh_by_inverse_cell_count():
    est = pooled_totals([np.array([10.0, 20.0]), np.array([40.0, 50.0])], [1, 3])
    np.testing.assert_allclose(est, [(10 + 40 / 3) / (4 / 3), (20 + 50 / 3) / (4 / 3)])
    with pytest.raises(ValueError, match="one cell count per estimate"):
        pooled_totals([np.zeros(2)], [1, 2])


def test_a_lone_cell_within_three_noise_sds_is_dropped_and_a_strong_or_flanked_one_kept():
    kept = np.array([5.0, 0.0, 2.0, 0.0, 0.0, 1.5, 2.5, 0.0])
    noisy = np.array([5.0, -1.0, 2.9, -0.5, 0.1, 1.6, 2.6, -2.0])
    out = drop_isolated(kept, noisy, noise_sd=1.0)
    # cell 0: alone but 5 >= 3 sd; cell 2: alone, 2.9 < 3: dropped; cells 5-6 flank each other
    np.testing.assert_array_equal(out, [5.0, 0.0, 0.0, 0.0, 0.0, 1.5, 2.5, 0.0])


def test_distribution_drops_lone_spikes_only_among_the_ordered_cells():
    """Value cells first (ordered), then a point-mass cell that stands alone by position."""
    noisy = np.array([40.0, 35.0, 0.0, 0.0, 0.0, 2.5, 0.0, 2.0])
    p = distribution(noisy, total=79.5, ordered=7, noise_sd=1.0)
    assert p[5] == 0.0 and p[7] > 0.0  # the tail spike goes, the mass cell stays
    np.testing.assert_allclose(p.sum(), 1.0)
    np.testing.assert_allclose(distribution(noisy, 79.5), distribution(noisy, 79.5, ordered=0))
    np.testing.assert_allclose(distribution(-np.ones(3), 10.0), [1 / 3] * 3)
