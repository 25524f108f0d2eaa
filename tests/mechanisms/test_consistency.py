"""Norm-sub and pooled totals: the post-processing that keeps noise out of empty cells."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from jdp.mechanisms.consistency import (
    RAKE_FLOOR,
    SHOW_FAILURE,
    distribution,
    drop_isolated,
    norm_sub,
    pooled_totals,
    rake,
    support,
    window_reach,
)


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


def binomial_ceiling(p: float, draws: int) -> float:
    """``p`` plus three binomial standard deviations of a share over ``draws`` draws."""
    return p + 3 * np.sqrt(p * (1 - p) / draws)


def test_window_reach_takes_a_thin_spread_tail_and_skips_a_gap():
    """Six cells of 1.5 sds each beyond two empty ones: no cell stands out alone, their sum
    (9 sds over sqrt(6)) does; the reach goes to the window's far end. Noise-free counts show
    any excess over the floor."""
    beyond = np.array([0.0, 0.0, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 0.0, 0.0])
    level = -NormalDist().inv_cdf(SHOW_FAILURE / 55)
    assert 9 / np.sqrt(6) > level > 1.5  # the premise: only the sum is significant
    assert window_reach(beyond, 1.0) == 8
    assert window_reach(beyond, 1.0, floor=9.0) == 0
    assert window_reach(np.array([0.0, 0.1]), 0.0) == 2
    assert window_reach(np.array([]), 1.0) == 0


def simulated(true: np.ndarray, sd: float, ordered: int, draws: int) -> np.ndarray:
    """:func:`distribution` of ``draws`` noisy releases of ``true`` (fixed key)."""
    rng = np.random.default_rng(0)
    return np.stack([
        distribution(true + rng.normal(0, sd, true.size), true.sum(), ordered=ordered, noise_sd=sd)
        for _ in range(draws)
    ])  # fmt: skip


def test_distribution_keeps_noise_out_of_a_far_empty_tail():
    """A zero-inflated column: a point mass, a bulk in the first five of 18 ordered cells,
    the rest empty (spambase's word frequencies on their public [0, 100]). The bulk stands
    out (about 11 sds), so mass beyond it can only come from a window of pure noise that
    :func:`window_reach` takes: at most :data:`SHOW_FAILURE` of releases. Norm-sub and the
    lone-cell rule alone left noise there in 63% of them."""
    true = np.zeros(19)
    true[:5], true[18] = [200.0, 150.0, 120.0, 80.0, 50.0], 1500.0
    draws = 400
    p = simulated(true, 28.0, 18, draws)
    assert np.mean(p[:, 8:18].sum(axis=1) > 0) <= binomial_ceiling(SHOW_FAILURE, draws)


def test_distribution_keeps_a_thin_tail_its_window_shows():
    """The same bulk with a tail of 2.5 sds per cell over cells 8-13: a window score of about
    6 sds, above the Bonferroni level (3.3); the tail keeps mass in nearly every release."""
    sd = 28.0
    true = np.zeros(19)
    true[:5], true[8:14], true[18] = [200.0, 150.0, 120.0, 80.0, 50.0], 2.5 * sd, 1500.0
    draws = 200
    p = simulated(true, sd, 18, draws)
    assert np.mean(p[:, 8:14].sum(axis=1) > 0) >= 0.95


def test_support_seeds_at_the_best_window_not_the_largest_cell():
    """A spread bulk of modest cells and one larger lone spike far away: the seed is the
    bulk's window (its sum stands out more), and the spike is not reached."""
    noisy = np.array([1.8, 2.2, 1.9, 2.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.8, 0.0])
    np.testing.assert_array_equal(support(noisy, 1.0), np.arange(12) < 4)


def test_the_mass_a_cut_removes_stays_with_the_ordered_cells():
    """A point mass of 1,500 beside a bulk of 300 and a tail of 60 spread over ten cells (6
    each, far below the noise sd of 28: the support cuts it). The point mass's share stays
    the true 1500 / 1860 within three standard errors of the mean over the releases; with the
    cut's shortfall spread over every cell, it took the tail's share too (0.844 here)."""
    true = np.zeros(19)
    true[:5], true[8:18], true[18] = [100.0, 80.0, 60.0, 40.0, 20.0], 6.0, 1500.0
    draws = 200
    shares = simulated(true, 28.0, 18, draws)[:, 18]
    assert abs(shares.mean() - 1500 / true.sum()) < 3 * shares.std() / np.sqrt(draws)


@pytest.mark.parametrize("seed", range(3))
def test_rake_meets_both_margins_and_keeps_the_tables_odds_ratios(seed):
    """IPF rescales rows and columns only, so every 2x2 cross-product ratio of its seed (the
    normalised table plus the floor's independent table) survives (Deming & Stephan 1940)."""
    rng = np.random.default_rng(seed)
    joint = rng.gamma(1.0, 1.0, (5, 7)) * 40
    rows, cols = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(7))
    out = rake(joint, rows, cols)
    np.testing.assert_allclose(out.sum(axis=1), rows, atol=1e-9)
    np.testing.assert_allclose(out.sum(axis=0), cols, atol=1e-9)

    def odds(t: np.ndarray) -> np.ndarray:
        return t[:-1, :-1] * t[1:, 1:] / (t[:-1, 1:] * t[1:, :-1])

    seed_table = joint / joint.sum() + RAKE_FLOOR * np.outer(rows, cols)
    np.testing.assert_allclose(odds(out), odds(seed_table), rtol=1e-9)


def test_rake_leaves_a_table_with_those_margins_and_fills_an_empty_row():
    """A table that already has the margins comes back (to the floor's weight); a row the
    table left empty gets its margin on every column, and a zero margin stays zero."""
    t = np.array([[0.1, 0.2, 0.0], [0.3, 0.0, 0.4]])
    np.testing.assert_allclose(rake(t, t.sum(axis=1), t.sum(axis=0)), t, atol=1e-5)
    joint = np.array([[3.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 5.0]])
    rows, cols = np.array([0.4, 0.2, 0.4]), np.array([0.3, 0.3, 0.4])
    out = rake(joint, rows, cols)
    np.testing.assert_allclose(out.sum(axis=1), rows, atol=1e-9)
    assert (out[1] > 0).all()
    np.testing.assert_allclose(out.sum(axis=0), cols, atol=1e-9)
    zero = rake(joint, np.array([0.5, 0.0, 0.5]), cols)
    assert (zero[1] == 0).all()
    with pytest.raises(ValueError, match="non-negative"):
        rake(-joint, rows, cols)
    with pytest.raises(ValueError, match="table"):
        rake(joint[:2], rows, cols)
