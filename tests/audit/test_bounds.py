"""Epsilon lower bounds from attack outcomes: the rate bounds against exact binomial
quantiles, the rates-to-epsilon formula by hand, coverage on a mechanism whose epsilon is
known exactly, the held-out threshold choice, and the one-run bound (Steinke et al. 2023)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from jdp.audit.bounds import (
    binomial_upper,
    epsilon_from_rates,
    epsilon_lower_bound,
    one_run_epsilon_lower_bound,
    one_run_p_value,
)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (17, 1000), (999, 1000), (250, 250)])
def test_clopper_pearson_is_the_exact_binomial_bound(k, n):
    alpha = 0.025
    p = float(binomial_upper(k, n, alpha))
    if k == n:
        assert p == 1.0
        return
    # the exact upper bound is the p at which seeing <= k successes has probability alpha
    assert stats.binom.cdf(k, n, p) == pytest.approx(alpha, rel=1e-6)
    assert stats.binom.cdf(k, n, p * 0.999) > alpha  # and no smaller p is excluded


def test_bayesian_bound_is_the_jeffreys_posterior_quantile():
    k, n, alpha = 7, 200, 0.05
    assert float(binomial_upper(k, n, alpha, "bayesian")) == pytest.approx(
        stats.beta.ppf(0.95, 7.5, 193.5)
    )
    # Jeffreys is tighter than Clopper-Pearson here
    assert binomial_upper(k, n, alpha, "bayesian") < binomial_upper(k, n, alpha)


def test_epsilon_from_rates_by_hand():
    delta = 1e-3
    fpr, fnr = 0.05, 0.6
    expected = max(math.log((1 - delta - fnr) / fpr), math.log((1 - delta - fpr) / fnr))
    assert float(epsilon_from_rates(fpr, fnr, delta)) == pytest.approx(expected)
    # symmetric in the two error rates, zero at chance, infinite at a perfect test
    assert float(epsilon_from_rates(fnr, fpr, delta)) == pytest.approx(expected)
    assert float(epsilon_from_rates(0.5, 0.5, 0.0)) == 0.0
    assert float(epsilon_from_rates(0.0, 0.0, 0.0)) == math.inf
    # a test no better than chance gives 0, never a negative bound
    assert float(epsilon_from_rates(0.7, 0.7, 0.0)) == 0.0


def _randomized_response(rng, eps, trials):
    """Scores of eps-DP randomized response: 1 w.p. e^eps/(1+e^eps) with the canary in."""
    p_in = math.exp(eps) / (1 + math.exp(eps))
    return (rng.random(trials) < 1 - p_in).astype(float), (rng.random(trials) < p_in).astype(float)


def test_lower_bound_covers_the_true_epsilon():
    """Randomized response at eps = 1 has exactly eps = 1 (at delta = 0); a 95% lower bound
    may exceed it in at most 5% of runs. 40 runs: the 0.999 binomial quantile of 40 x 5%
    (7) bounds the number of exceedances. Without its confidence margin (confidence 0.02,
    the bound is then about the point estimate) it exceeds the truth far more often: the
    check can fail."""
    eps = 1.0
    over = 0
    bounds = []
    for seed in range(40):
        out, inn = _randomized_response(np.random.default_rng(seed), eps, 4000)
        b = epsilon_lower_bound(out, inn, delta=0.0)
        bounds.append(b.epsilon)
        over += b.epsilon > eps
    assert over <= stats.binom.ppf(0.999, 40, 0.05)
    no_margin = sum(
        epsilon_lower_bound(
            *_randomized_response(np.random.default_rng(seed), eps, 4000),
            delta=0.0,
            confidence=0.02,
        ).epsilon
        > eps
        for seed in range(40)
    )
    assert no_margin > stats.binom.ppf(0.999, 40, 0.05)
    # and the bound has power: the mean is close to the truth (CP margin at 3200 trials/side)
    assert 0.8 < np.mean(bounds) < eps


def test_threshold_chosen_on_held_out_trials():
    """Identical distributions (eps = 0): a bound whose threshold is chosen on the very
    trials it reports (select_fraction -> the whole set) overfits; the held-out one is 0
    in at least 95% of runs by the confidence statement (here: all 20)."""
    held_out = [
        epsilon_lower_bound(*np.random.default_rng(s).normal(size=(2, 2000)), delta=0.0).epsilon
        for s in range(20)
    ]
    assert sum(e > 0 for e in held_out) <= 2  # binom.ppf(0.999, 20, 0.05) = 4; we see far fewer
    b = epsilon_lower_bound(*np.random.default_rng(0).normal(size=(2, 2000)), delta=0.0)
    assert b.direction in (">=", "<=")
    assert b.trials == 4000


def test_bound_detects_a_gaussian_shift_and_reports_the_test():
    rng = np.random.default_rng(1)
    out, inn = rng.normal(0, 1, 100_000), rng.normal(1, 1, 100_000)
    b = epsilon_lower_bound(out, inn, delta=1e-5)
    # sigma = 1 (mu = 1) is about (3.9, 1e-5)-DP: the bound is positive and below it
    assert 1.0 < b.epsilon < 3.9
    assert b.direction == ">="
    assert b.fpr <= b.fpr_upper and b.fnr <= b.fnr_upper
    # the same data with the canary as a shift down: the "<=" direction is chosen
    assert epsilon_lower_bound(-out, -inn, delta=1e-5).direction == "<="


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"delta": -0.1}, "delta"),
        ({"delta": 1.0}, "delta < 1"),
        ({"delta": 0.0, "confidence": 1.0}, "confidence"),
        ({"delta": 0.0, "method": "magic"}, "method"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        epsilon_lower_bound(np.zeros(10), np.ones(10), **kwargs)


def test_bad_scores_raise():
    with pytest.raises(ValueError, match="1-D"):
        epsilon_lower_bound(np.zeros((5, 2)), np.zeros(5), delta=0.0)
    with pytest.raises(ValueError, match="NaN"):
        epsilon_lower_bound(np.r_[np.zeros(5), np.nan], np.zeros(6), delta=0.0)
    with pytest.raises(ValueError, match=">= 4"):
        epsilon_lower_bound(np.zeros(3), np.zeros(6), delta=0.0)


# -- one run -------------------------------------------------------------------------------


def test_one_run_p_value_pure_dp_is_the_binomial_tail():
    m, r, v, eps = 1000, 100, 70, 0.5
    q = math.exp(eps) / (1 + math.exp(eps))
    assert one_run_p_value(m, r, v, eps, 0.0) == pytest.approx(stats.binom.sf(v - 1, r, q))


def test_one_run_p_value_delta_term_by_hand():
    """f(v) + 2 m delta max_i (f(v - i) - f(v)) / i, the maximum taken by brute force."""
    m, r, v, eps, delta = 50, 20, 15, 1.0, 1e-4
    q = math.exp(eps) / (1 + math.exp(eps))

    def f(u):
        return stats.binom.sf(u - 1, r, q)

    expected = f(v) + 2 * m * delta * max((f(v - i) - f(v)) / i for i in range(1, v + 1))
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(expected)
    assert one_run_p_value(m, r, v, eps, delta) > one_run_p_value(m, r, v, eps, 0.0)


def test_one_run_bound_all_guesses_right():
    """r of r right at delta = 0: q^r = 0.05 at the bound, i.e. eps = logit(0.05^(1/r))."""
    r = 40
    q = 0.05 ** (1 / r)
    expected = math.log(q / (1 - q))
    assert one_run_epsilon_lower_bound(r, r, r, delta=0.0) == pytest.approx(expected, abs=1e-3)
    # chance-level guessing rejects nothing
    assert one_run_epsilon_lower_bound(1000, 100, 50, delta=1e-5) == 0.0
    with pytest.raises(ValueError, match="v <= r <= m"):
        one_run_p_value(10, 20, 5, 1.0, 0.0)
