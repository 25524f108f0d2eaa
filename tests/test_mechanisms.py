"""Contract tests for the numpy additive-noise mechanisms and row clipping."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from accounting import events as ev
from jdp.mechanisms import clip_rows, gaussian_mechanism, laplace_mechanism

N_DRAWS = 20_000


def _chi2_var_bounds(n: int, alpha: float = 1e-6) -> tuple[float, float]:
    """Two-sided bounds on s^2 / sigma^2 for n i.i.d. normal draws (chi-square, n-1 dof)."""
    return stats.chi2.ppf(alpha / 2, n - 1) / (n - 1), stats.chi2.ppf(1 - alpha / 2, n - 1) / (n - 1)


def test_gaussian_noise_has_claimed_scale_and_event():
    rng = np.random.default_rng(0)
    value = np.zeros(N_DRAWS)
    out, event = gaussian_mechanism(rng, value, l2_sensitivity=2.0, noise_multiplier=1.5)
    assert event == ev.GaussianDpEvent(noise_multiplier=1.5)
    ratio = out.var(ddof=1) / (1.5 * 2.0) ** 2
    lo, hi = _chi2_var_bounds(N_DRAWS)
    assert lo < ratio < hi
    # mean within a 5-sigma z bound of zero
    assert abs(out.mean()) < 5 * 3.0 / np.sqrt(N_DRAWS)


def test_laplace_noise_has_claimed_scale_and_event():
    rng = np.random.default_rng(1)
    out, event = laplace_mechanism(rng, np.zeros(N_DRAWS), l1_sensitivity=3.0, epsilon=0.5)
    assert event == ev.LaplaceDpEvent(noise_multiplier=2.0)
    # |Laplace(b)| is Exponential with mean b = 6; KS test against it
    assert stats.kstest(np.abs(out), stats.expon(scale=6.0).cdf).pvalue > 1e-6


def test_symmetric_noise_is_symmetric_with_iid_upper_triangle():
    rng = np.random.default_rng(2)
    d = 60
    out, _ = gaussian_mechanism(rng, np.zeros((d, d)), l2_sensitivity=1.0, noise_multiplier=1.0, symmetric=True)
    np.testing.assert_array_equal(out, out.T)
    upper = out[np.triu_indices(d)]
    lo, hi = _chi2_var_bounds(upper.size)
    assert lo < upper.var(ddof=1) < hi
    lap, _ = laplace_mechanism(rng, np.eye(d), l1_sensitivity=1.0, epsilon=1.0, symmetric=True)
    np.testing.assert_array_equal(lap, lap.T)


def test_same_rng_same_output_different_rng_different_noise():
    x = np.ones(5)
    a, _ = gaussian_mechanism(np.random.default_rng(7), x, l2_sensitivity=1.0, noise_multiplier=1.0)
    b, _ = gaussian_mechanism(np.random.default_rng(7), x, l2_sensitivity=1.0, noise_multiplier=1.0)
    c, _ = gaussian_mechanism(np.random.default_rng(8), x, l2_sensitivity=1.0, noise_multiplier=1.0)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_zero_noise_is_the_non_private_limit():
    x = np.arange(6.0).reshape(2, 3)
    out, event = gaussian_mechanism(np.random.default_rng(0), x, l2_sensitivity=1.0, noise_multiplier=0.0)
    np.testing.assert_array_equal(out, x)
    assert event.noise_multiplier == 0.0


def test_secure_noise_snaps_to_a_power_of_two_grid():
    out, _ = gaussian_mechanism(
        np.random.default_rng(3), np.zeros(100), l2_sensitivity=1.0, noise_multiplier=1.0, secure_noise=True
    )
    grid = 2.0 ** np.ceil(np.log2(2.0**-20))
    np.testing.assert_allclose(out / grid, np.round(out / grid), atol=0)


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
