"""ClustMix's mixing mechanisms (jdp.mechanisms.mixing): the strict mechanism's sensitivity
against random and adversarial neighbours, its noise scale, and the paper's Eq. 8 calibration
against accounting's GDP conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting import compute_epsilon
from accounting import events as ev
from accounting.accountants.gdp import delta_for_epsilon
from jdp.mechanisms.mixing import (
    bucket_groups,
    group_sums,
    mix,
    mixing_sensitivity,
    paper_mix,
    paper_mu,
    paper_noise_std,
)
from jdp.mechanisms.noise import gaussian_event

D = 6
SALT = b"public-salt-0123"


def _records(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 1.0, (n, D))


def _sums_by_bucket(x: np.ndarray, n_buckets: int) -> np.ndarray:
    """All group sums of ``x`` under the per-record bucket rule (one cluster, public count)."""
    group = bucket_groups(x, SALT, np.full(x.shape[0], n_buckets))
    return group_sums(x, group, n_buckets)


def _check_neighbours(sums: np.ndarray, other: np.ndarray) -> float:
    """Assert at most one group differs; return the L2 norm of the whole difference."""
    changed = np.flatnonzero(np.any(np.abs(sums - other) > 1e-12, axis=1))
    assert changed.size <= 1, f"one record changed {changed.size} groups"
    return float(np.linalg.norm(sums - other))


def test_removing_any_record_changes_one_group_by_at_most_the_sensitivity():
    """Random neighbours: remove each record in turn; duplicates included."""
    x = _records(120)
    x[7] = x[3]  # a duplicate record shares its twin's bucket
    base = _sums_by_bucket(x, 9)
    bound = mixing_sensitivity(D)
    for i in range(x.shape[0]):
        norm = _check_neighbours(base, _sums_by_bucket(np.delete(x, i, axis=0), 9))
        assert 0 < norm <= bound * (1 + 1e-12)


def test_adversarial_records_attain_but_never_exceed_the_sensitivity():
    """Adversarial neighbours: every corner of the box (norm sqrt(D)/2 once centred) and the
    box centre (norm 0), added to the dataset; the corners attain the bound exactly."""
    x = _records(80, seed=1)
    base = _sums_by_bucket(x, 5)
    bound = mixing_sensitivity(D)
    corners = np.array([[(k >> j) & 1 for j in range(D)] for k in range(2**D)], dtype=float)
    norms = [
        _check_neighbours(base, _sums_by_bucket(np.vstack([x, r]), 5))
        for r in np.vstack([corners, np.full((1, D), 0.5)])
    ]
    assert max(norms) == pytest.approx(bound, rel=1e-12)  # tight: sqrt(D)/2
    assert max(norms) <= bound * (1 + 1e-12)
    assert min(norms) == 0.0  # the centre adds nothing to a centred sum


def test_positional_chunking_would_break_the_one_group_property():
    """Why groups are per-record buckets: cutting one fixed permutation into consecutive groups
    of l (the paper's grouping) shifts every later group when one record is removed, so the
    check used above fails on it."""
    x = _records(60, seed=2)
    l = 5

    def chunked(rows: np.ndarray) -> np.ndarray:
        group = np.arange(rows.shape[0]) // l
        group[group >= rows.shape[0] // l] = -1
        return group_sums(rows, group, x.shape[0] // l)

    with pytest.raises(AssertionError, match="changed"):
        _check_neighbours(chunked(x), chunked(np.delete(x, 0, axis=0)))


def test_bucket_groups_are_per_record_seeded_and_balanced():
    x = _records(6000, seed=3)
    counts = np.full(x.shape[0], 8)
    a = bucket_groups(x, SALT, counts)
    assert np.array_equal(a, bucket_groups(x, SALT, counts))  # deterministic in the salt
    assert not np.array_equal(a, bucket_groups(x, b"another-salt", counts))
    assert np.array_equal(a[100:], bucket_groups(x[100:], SALT, counts[100:]))  # per record
    # uniform over the 8 buckets: chi-square at p > 1e-6
    observed = np.bincount(a, minlength=8)
    assert stats.chisquare(observed).pvalue > 1e-6
    zero = counts.copy()
    zero[:10] = 0
    assert np.all(bucket_groups(x, SALT, zero)[:10] == -1)


def test_mix_without_noise_is_the_group_mean_and_noise_has_the_claimed_scale():
    x = _records(50, seed=4)
    group = bucket_groups(x, SALT, np.full(50, 4))
    sizes = np.bincount(group, minlength=4).astype(float)
    exact, event = mix(np.random.default_rng(0), x, group, sizes, noise_multiplier=0.0)
    means = np.array([x[group == g].mean(axis=0) for g in range(4)])
    assert np.allclose(exact, means) and event == gaussian_event(0.0) == ev.GaussianDpEvent(0.0)
    # noise on the sums ~ N(0, (z sqrt(D)/2)^2): with unit divisors and centre records the
    # output minus 1/2 is pure noise; chi-square bound on its sample variance
    z, groups = 1.7, 4000
    centre = np.full((groups, D), 0.5)
    out, event = mix(
        np.random.default_rng(1), centre, np.arange(groups), np.ones(groups), noise_multiplier=z
    )
    assert event == gaussian_event(z)
    noise = (out - 0.5).ravel() / (z * mixing_sensitivity(D))
    dof = noise.size
    lo, hi = stats.chi2.ppf([1e-6, 1 - 1e-6], dof)
    assert lo <= float(np.sum(noise**2)) <= hi


def test_mix_rejects_bad_input():
    x = _records(10)
    group = np.zeros(10, dtype=np.int64)
    with pytest.raises(ValueError, match="inside the public box"):
        mix(np.random.default_rng(0), x + 1.0, group, np.ones(1), noise_multiplier=1.0)
    with pytest.raises(TypeError, match="public encoding"):
        mix(np.random.default_rng(0), x.astype(object), group, np.ones(1), noise_multiplier=1.0)
    with pytest.raises(ValueError, match="finite"):
        bad = x.copy()
        bad[0, 0] = np.nan
        mix(np.random.default_rng(0), bad, group, np.ones(1), noise_multiplier=1.0)
    with pytest.raises(ValueError, match="positive public divisors"):
        mix(np.random.default_rng(0), x, group, np.zeros(1), noise_multiplier=1.0)
    with pytest.raises(ValueError, match="group ids"):
        mix(np.random.default_rng(0), x, group + 3, np.ones(1), noise_multiplier=1.0)


def _eq8_delta(epsilon: float, sigma: float, l: int, c: int, d: int) -> float:
    """The paper's Eq. 8 written out as printed."""
    root = math.sqrt(c * d)
    a = -epsilon * l * sigma / root
    b = root / (2 * l * sigma)
    return stats.norm.cdf(a + b) - math.exp(epsilon) * stats.norm.cdf(a - b)


@pytest.mark.parametrize(
    "epsilon, delta, l, c, d",
    [
        (1.0, 1e-5, 118, 10, 784),
        (0.2, 1e-5, 20, 10, 784),
        (1.0, 1 / 32561, 30, 2, 14),
        (3.0, 1e-3, 5, 4, 2),
    ],
)
def test_paper_eq8_round_trip_through_accounting(epsilon, delta, l, c, d):
    sigma = paper_noise_std(epsilon, delta, mixture_size=l, n_classes=c, n_features=d)
    assert _eq8_delta(epsilon, sigma, l, c, d) == pytest.approx(delta, rel=1e-6)
    mu = paper_mu(sigma, mixture_size=l, n_classes=c, n_features=d)
    assert delta_for_epsilon(mu, epsilon) == pytest.approx(delta, rel=1e-6)
    # 10% less noise would break the target: sigma is the smallest that meets it
    assert _eq8_delta(epsilon, 0.9 * sigma, l, c, d) > delta


def test_eq8_at_mnist_settings_gives_the_noise_the_issue_quotes():
    """eps = 1, delta = 1e-5, l = 118, C = 10, D = 784: per-feature std near 2.8."""
    sigma = paper_noise_std(1.0, 1e-5, mixture_size=118, n_classes=10, n_features=784)
    assert 2.7 < sigma < 2.9


def test_paper_mix_is_the_gaussian_mechanism_at_the_papers_mu():
    x = _records(40, seed=5)
    groups = np.random.default_rng(0).permutation(40)[:36].reshape(6, 6)
    sigma = paper_noise_std(1.0, 1e-5, mixture_size=6, n_classes=2, n_features=D)
    out, event = paper_mix(np.random.default_rng(0), x, groups, noise_std=sigma, n_classes=2)
    mu = paper_mu(sigma, mixture_size=6, n_classes=2, n_features=D)
    assert event == gaussian_event(1.0 / mu)
    assert compute_epsilon(event, 1e-5, accountant="gdp") == pytest.approx(1.0, rel=1e-9)
    assert out.shape == (6, D)
    # noise std sigma around the group means: chi-square on the residuals
    res = (out - x[groups].mean(axis=1)).ravel() / sigma
    lo, hi = stats.chi2.ppf([1e-6, 1 - 1e-6], res.size)
    assert lo <= float(np.sum(res**2)) <= hi
    with pytest.raises(ValueError, match="at most one group"):
        paper_mix(np.random.default_rng(0), x, np.zeros((2, 3), int), noise_std=1.0, n_classes=2)
