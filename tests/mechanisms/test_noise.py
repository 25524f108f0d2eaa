"""The numpy noise mechanisms beyond the shared contract (tests/contracts/test_mechanisms.py):
the Laplace law, the snapping mechanism, row clipping, argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting import events as ev
from jdp.mechanisms.noise import (
    DEFAULT_MAX_RECORDS,
    GAUSSIAN_RELEASE_CUT,
    LAPLACE_CUT,
    LAPLACE_RELEASE_CUT,
    MAX_RELEASE_SIZE,
    NORMAL_CUT,
    box_muller,
    clip_rows,
    full_precision_uniform,
    gaussian_event,
    gaussian_mechanism,
    laplace_mechanism,
    power_of_two_at_least,
    snapping_epsilon,
    snapping_laplace_parameters,
    standard_normal,
)

N_DRAWS = 20_000


def test_textbook_laplace_noise_has_the_laplace_distribution_and_its_cut_is_charged():
    # the scale, seeds, event and limits of every mechanism: tests/contracts/test_mechanisms.py
    rng = np.random.default_rng(1)
    out, event = laplace_mechanism(
        rng, np.zeros(N_DRAWS), l1_sensitivity=3.0, epsilon=0.5, secure_noise=False
    )
    assert event == ev.ComposedDpEvent(
        [ev.LaplaceDpEvent(noise_multiplier=2.0), ev.NoiseCutDpEvent(LAPLACE_RELEASE_CUT)]
    )
    # |Laplace(b)| is Exponential with mean b = 6; KS test against it
    assert stats.kstest(np.abs(out), stats.expon(scale=6.0).cdf).pvalue > 1e-6


def _snapping_chi2_statistic(
    out: np.ndarray, x: float, scale: float, grid: float
) -> tuple[float, int]:
    """Pearson chi-square of snapped outputs against the law of ``round_grid(x + Lap(scale))``:
    ``P(k grid) = F((k + 1/2) grid - x) - F((k - 1/2) grid - x)``; cells with expected count < 5
    are pooled into the two tails. Returns ``(statistic, degrees of freedom)``."""
    k = np.round(out / grid).astype(np.int64)
    lap = stats.laplace(loc=x, scale=scale)
    cells = np.arange(k.min(), k.max() + 1)
    p = lap.cdf((cells + 0.5) * grid) - lap.cdf((cells - 0.5) * grid)
    p[0], p[-1] = lap.cdf((cells[0] + 0.5) * grid), lap.sf((cells[-1] - 0.5) * grid)
    observed = np.bincount(k - k.min(), minlength=cells.size).astype(np.float64)
    expected = p * out.size
    keep = expected >= 5
    lo, hi = np.argmax(keep), keep.size - 1 - np.argmax(keep[::-1])
    obs = np.concatenate([[observed[: lo + 1].sum()], observed[lo + 1 : hi], [observed[hi:].sum()]])
    exp = np.concatenate([[expected[: lo + 1].sum()], expected[lo + 1 : hi], [expected[hi:].sum()]])
    return float(((obs - exp) ** 2 / exp).sum()), obs.size - 1


def test_snapping_laplace_has_the_calibrated_scale_on_its_grid():
    """Mironov's snapping: the released values follow ``round_Lambda(x + Lap(lambda))`` exactly
    (chi-square against the exact discretised law, bound at p = 1e-6, fixed seed) with the
    calibrated ``lambda`` and ``Lambda`` the smallest power of two >= ``lambda``."""
    params = snapping_laplace_parameters(l1_sensitivity=3.0, epsilon=0.5, size=N_DRAWS)
    assert params.grid / 2 < params.scale <= params.grid and math.log2(params.grid).is_integer()
    x = 0.3 * params.grid  # off the grid: the rounding is exercised
    out, event = laplace_mechanism(
        np.random.default_rng(11),
        np.full(N_DRAWS, x),
        l1_sensitivity=3.0,
        epsilon=0.5,
        secure_noise=True,
    )
    assert event == ev.LaplaceDpEvent(noise_multiplier=2.0)
    np.testing.assert_array_equal(out / params.grid, np.round(out / params.grid))
    statistic, dof = _snapping_chi2_statistic(out, x, params.scale, params.grid)
    assert statistic < stats.chi2.isf(1e-6, dof)
    # the same bound rejects a 25% larger scale: the test has power
    wrong = params.grid * np.round(
        (x + np.random.default_rng(11).laplace(0.0, 1.25 * params.scale, N_DRAWS)) / params.grid
    )
    statistic, dof = _snapping_chi2_statistic(wrong, x, params.scale, params.grid)
    assert statistic > stats.chi2.isf(1e-6, dof)


def test_snapping_laplace_clamps_to_the_public_bound_before_and_after_the_noise():
    params = snapping_laplace_parameters(l1_sensitivity=2.0, epsilon=1.0, size=6)
    assert params.bound == DEFAULT_MAX_RECORDS * 2.0  # public: records bound x sensitivity
    value = np.array([-1e300, -params.bound, -1.0, 0.0, 5.0, 1e300])
    out, _ = laplace_mechanism(
        np.random.default_rng(12), value, l1_sensitivity=2.0, epsilon=1.0, secure_noise=True
    )
    assert np.all(np.abs(out) <= params.bound)
    on_grid = out / params.grid == np.round(out / params.grid)
    assert np.all(on_grid | (np.abs(out) == params.bound))
    # an input far outside is clamped to B first, so its release is within the noise of +-B
    assert out[-1] > params.bound - 40 * params.scale and out[0] < -params.bound + 40 * params.scale
    sym, _ = laplace_mechanism(
        np.random.default_rng(13),
        np.eye(4),
        l1_sensitivity=1.0,
        epsilon=1.0,
        symmetric=True,
        secure_noise=True,
    )
    grid = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=1.0, size=10).grid
    np.testing.assert_array_equal(sym, sym.T)
    np.testing.assert_array_equal(sym / grid, np.round(sym / grid))


def test_snapping_event_epsilon_covers_the_floating_point_cost():
    """Mironov 2012, Thm. 1: the snapped release costs ``(Delta + 12 m B eta) / lambda + 2 m eta``
    over ``m`` coordinates, more than ``Delta / lambda``. The mechanism calibrates ``lambda``
    so that this is at most the event's epsilon; the textbook ``lambda = Delta / eps`` would
    overshoot it."""
    for sensitivity, epsilon, size in [(3.0, 0.5, 1), (1.0, 1.0, 5050), (40.0, 0.01, 10**6)]:
        params = snapping_laplace_parameters(l1_sensitivity=sensitivity, epsilon=epsilon, size=size)
        spent = snapping_epsilon(
            l1_sensitivity=sensitivity, scale=params.scale, bound=params.bound, size=size
        )
        assert sensitivity / params.scale < spent <= epsilon
        assert spent > epsilon * (1 - 1e-12)  # calibrated, not wasteful
        naive = snapping_epsilon(
            l1_sensitivity=sensitivity, scale=sensitivity / epsilon, bound=params.bound, size=size
        )
        assert naive > epsilon
    with pytest.raises(ValueError, match="lambda < B < 2\\*\\*46"):
        snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=1e8, size=1)


def test_full_precision_uniform_reaches_below_the_53_bit_grid():
    """``U*`` of the snapping mechanism: every double in (0, 1) with probability equal to its
    spacing, so values in a small binade have mantissa bits below ``2**-53`` (a 53-bit
    ``rng.random()`` only returns multiples of ``2**-53``); ``P(U < 2**-j) = 2**-j``."""
    u = full_precision_uniform(np.random.default_rng(14), (200_000,))
    assert np.all((u > 0) & (u < 1))
    small = u[u < 2.0**-8]
    assert not np.all(small * 2.0**53 == np.round(small * 2.0**53))
    for j in (1, 2, 4, 8):
        p = 2.0**-j
        assert abs(np.mean(u < p) - p) < 5 * np.sqrt(p * (1 - p) / u.size)


def test_gaussian_secure_noise_is_rounded_and_clamped_with_an_unchanged_event():
    """The Gaussian ``secure_noise`` is a mitigation without a proof (module docstring): the
    release is rounded to the power-of-two grid >= sigma and clamped to the public bound; the
    event is the plain Gaussian one."""
    value = np.array([0.0, 1.0, 1e300, -1e300])
    out, event = gaussian_mechanism(
        np.random.default_rng(3), value, l2_sensitivity=1.5, noise_multiplier=1.0, secure_noise=True
    )
    assert event == gaussian_event(1.0)
    grid, bound = power_of_two_at_least(1.5), DEFAULT_MAX_RECORDS * 1.5
    assert grid == 2.0 and np.all(np.abs(out) <= bound)
    np.testing.assert_array_equal(out[:2] / grid, np.round(out[:2] / grid))
    assert out[2] == bound or out[2] > bound - 10 * 1.5


def test_clip_rows_bounds_norms_and_keeps_small_rows():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(500, 7)) * rng.exponential(3.0, size=(500, 1))
    clipped = clip_rows(x, 1.5)
    norms = np.linalg.norm(clipped, axis=1)
    assert np.all(norms <= 1.5 * (1 + 1e-12))
    small = np.linalg.norm(x, axis=1) <= 1.5
    np.testing.assert_array_equal(clipped[small], x[small])
    # direction is preserved
    big = ~small
    cos = np.sum(clipped[big] * x[big], axis=1) / (norms[big] * np.linalg.norm(x[big], axis=1))
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clip_rows(x, np.inf), x)
    np.testing.assert_array_equal(clip_rows(np.zeros((2, 3)), 1.0), np.zeros((2, 3)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"l2_sensitivity": 0.0, "noise_multiplier": 1.0}, "l2_sensitivity > 0"),
        ({"l2_sensitivity": 1.0, "noise_multiplier": -1.0}, "noise_multiplier >= 0"),
        ({"l2_sensitivity": float("nan"), "noise_multiplier": 1.0}, "l2_sensitivity"),
        ({"l2_sensitivity": 1.0, "noise_multiplier": float("inf")}, "noise_multiplier"),
    ],
)
def test_gaussian_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_mechanism(np.random.default_rng(0), np.zeros(3), **kwargs)


def test_laplace_and_clip_bad_arguments_raise():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="epsilon > 0"):
        laplace_mechanism(rng, np.zeros(3), l1_sensitivity=1.0, epsilon=0.0)
    with pytest.raises(ValueError, match="square matrix"):
        laplace_mechanism(rng, np.zeros((2, 3)), l1_sensitivity=1.0, epsilon=1.0, symmetric=True)
    with pytest.raises(ValueError, match="l2_clip_norm > 0"):
        clip_rows(np.zeros((2, 2)), -1.0)
    with pytest.raises(TypeError, match="l2_sensitivity"):
        gaussian_mechanism(rng, np.zeros(3), l2_sensitivity="1", noise_multiplier=1.0)


def test_host_normal_is_standard_normal():
    """Kolmogorov-Smirnov at a fixed seed (bound p > 1e-6) and the first four moments within
    6 standard errors of N(0, 1)'s."""
    x = standard_normal(np.random.default_rng(7), (400_001,))
    assert x.shape == (400_001,) and x.dtype == np.float64
    assert stats.kstest(x, "norm").pvalue > 1e-6
    n = x.size
    for k, (moment, var) in enumerate([(0.0, 1.0), (1.0, 2.0), (0.0, 15.0), (3.0, 96.0)], 1):
        assert abs(np.mean(x**k) - moment) < 6 * np.sqrt(var / n), k


def test_host_normal_is_cut_at_its_stated_radius_and_the_cut_is_charged():
    """Issue 24 item 1 on the numpy side: the sampler's support is read off its transform (the
    smallest full-precision uniform, 2^-1022, gives radius sqrt(2044 ln 2) = 37.64 >=
    NORMAL_CUT, so the charged tail exp(-NORMAL_CUT^2 / 2) per pair is at least the true one),
    every Gaussian release carries the cut for MAX_RELEASE_SIZE coordinates, and larger
    releases are refused."""
    r = np.hypot(*box_muller(np.array([2.0**-1022]), np.array([0.3])))
    assert r == pytest.approx(np.sqrt(2044 * np.log(2)), rel=1e-12) and NORMAL_CUT <= r
    assert full_precision_uniform(np.random.default_rng(0), (10_000,)).min() > 0
    assert np.hypot(*box_muller(np.ones(1), np.zeros(1))) == 0.0
    assert GAUSSIAN_RELEASE_CUT == (MAX_RELEASE_SIZE // 2) * np.exp(-0.5 * NORMAL_CUT**2) < 1e-290
    _, event = gaussian_mechanism(np.random.default_rng(0), np.zeros(3), l2_sensitivity=1.0,
                                  noise_multiplier=2.0)  # fmt: skip
    assert (
        event
        == gaussian_event(2.0)
        == ev.ComposedDpEvent([ev.GaussianDpEvent(2.0), ev.NoiseCutDpEvent(GAUSSIAN_RELEASE_CUT)])
    )
    huge = np.broadcast_to(0.0, (2**21, 2**20))  # 2^41 coordinates, no memory
    with pytest.raises(ValueError, match="at most 1099511627776 coordinates"):
        gaussian_mechanism(np.random.default_rng(0), huge, l2_sensitivity=1.0, noise_multiplier=1.0)
    assert LAPLACE_RELEASE_CUT == MAX_RELEASE_SIZE * np.exp(-LAPLACE_CUT) > 0
    assert -np.log(2.0**-1022) > LAPLACE_CUT  # the textbook Laplace's floor, the same uniform
