"""DP-EM Gaussian mixtures: non-private limit, sensitivities, noise = event, robustness."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _encoding_stats import chi2_var_ratio_bounds
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from accounting import events as ev
from jdp.encoding.em import (
    Mixture,
    dp_em,
    em_statistics,
    initial_mixture,
    noisy_em_statistics,
    sample,
)
from jdp.mechanisms.noise import gaussian_event


def _blobs(rng: np.random.Generator, n: int, d: int = 4, k: int = 3) -> np.ndarray:
    centres = np.array([[0.5, 0.0, 0.0, 0.0], [-0.4, 0.3, 0.0, 0.0], [0.0, -0.5, 0.2, 0.0]])[:k, :d]
    x = (
        centres[rng.integers(k, size=n)]
        + rng.normal(size=(n, d)) * np.array([0.08, 0.05, 0.1, 0.03])[:d]
    )
    return np.clip(x, -0.49, 0.49)  # every row has norm < 1 = C


def _sklearn_from(mixture: Mixture, steps: int) -> GaussianMixture:
    cov = mixture.covariances
    precisions = 1.0 / cov if mixture.covariance_type == "diag" else np.linalg.inv(cov)
    return GaussianMixture(
        mixture.n_components,
        covariance_type=mixture.covariance_type,
        weights_init=mixture.weights,
        means_init=mixture.means,
        precisions_init=precisions,
        max_iter=steps,
        tol=0.0,
        reg_covar=1e-6,
    )


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_large_epsilon_matches_sklearn_em_from_the_same_start(covariance_type):
    rng = np.random.default_rng(0)
    x = _blobs(rng, 3000)
    init = initial_mixture(rng, 3, 4, covariance_type=covariance_type)
    result, ledger = dp_em(
        rng,
        x,
        3,
        noise_multiplier=1e-10,
        steps=30,
        covariance_type=covariance_type,
        init=init,
        diagnostic_x=x,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = _sklearn_from(init, 30).fit(x)
    assert result.log_likelihood[-1] == pytest.approx(reference.score(x), rel=1e-6)
    np.testing.assert_allclose(result.mixture.weights, reference.weights_, atol=1e-6)
    np.testing.assert_allclose(result.mixture.means, reference.means_, atol=1e-6)
    assert len(ledger.entries) == 30 and set(ledger.labels) == {"dp-em"}


def test_large_epsilon_close_to_sklearn_default_fit():
    rng = np.random.default_rng(1)
    x = _blobs(rng, 3000)
    reference = GaussianMixture(3, covariance_type="diag", random_state=0).fit(x).score(x)
    # a data-independent random start needs no privacy; sklearn's k-means start does
    best = max(
        dp_em(np.random.default_rng(s), x, 3, noise_multiplier=1e-10, steps=60, diagnostic_x=x)[
            0
        ].log_likelihood[-1]
        for s in range(3)
    )
    assert abs(best - reference) < 0.03 * abs(reference)


def test_log_likelihood_error_shrinks_as_n_grows():
    def gap(n: int) -> float:
        gaps = []
        for seed in range(3):
            rng = np.random.default_rng(seed)
            x, held_out = _blobs(rng, n), _blobs(rng, 5000)
            init = initial_mixture(np.random.default_rng(100 + seed), 3, 4)
            private, _ = dp_em(rng, x, 3, noise_multiplier=0.5, steps=10, init=init)
            exact, _ = dp_em(rng, x, 3, noise_multiplier=0.0, steps=10, init=init)
            gaps.append(
                exact.mixture.log_prob(held_out).mean() - private.mixture.log_prob(held_out).mean()
            )
        return float(np.median(gaps))  # a lost component is a heavy tail: use the median

    small, large = gap(1000), gap(20_000)
    assert large < small / 5, (small, large)
    assert large < 0.05


# -- sensitivity -------------------------------------------------------------------------------


def _random_mixture(rng: np.random.Generator, k: int, d: int, covariance_type: str) -> Mixture:
    a = rng.normal(size=(k, d, d)) * 0.3
    full = a @ a.transpose(0, 2, 1) + 0.05 * np.eye(d)
    cov = np.diagonal(full, axis1=1, axis2=2).copy() if covariance_type == "diag" else full
    w = rng.random(k) + 0.1
    return Mixture(
        weights=w / w.sum(),
        means=rng.normal(size=(k, d)) * 0.5,
        covariances=cov,
        covariance_type=covariance_type,
    )


def _neighbour_problem(seed: int, k: int, d: int, n: int, clip: float, covariance_type: str):
    """``(rng, mixture, x, em_statistics(x))`` for a sensitivity search."""
    rng = np.random.default_rng(seed)
    mixture = _random_mixture(rng, k, d, covariance_type)
    x = rng.normal(size=(n, d))
    return rng, mixture, x, em_statistics(x, mixture, l2_clip_norm=clip)


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_em_statistics_sensitivity_never_exceeded_and_tight(covariance_type):
    k, d, clip = 4, 5, 0.8
    rng, mixture, x, base = _neighbour_problem(2, k, d, 30, clip, covariance_type)
    bounds = (1.0, clip, clip**2)
    candidates = [rng.normal(size=d) * s for s in (0.01, 0.5, 2.0, 1e5) for _ in range(25)]
    candidates += [clip * sign * np.eye(d)[j] for j in range(d) for sign in (-1, 1)]
    candidates += [mixture.means[j] for j in range(k)]  # sit on a component: one-hot r
    worst = [0.0, 0.0, 0.0]
    for row in candidates:
        new = em_statistics(np.vstack([x, row]), mixture, l2_clip_norm=clip)
        for i in range(3):
            worst[i] = max(worst[i], float(np.linalg.norm(new[i] - base[i])))
    for i in range(len(x)):
        new = em_statistics(np.delete(x, i, 0), mixture, l2_clip_norm=clip)
        for j in range(3):
            worst[j] = max(worst[j], float(np.linalg.norm(new[j] - base[j])))
    for w, b in zip(worst, bounds, strict=True):
        assert w <= b * (1 + 1e-12)
    # tightness: a record far out along an axis, where one component takes all responsibility
    far = initial_mixture(rng, 1, d, covariance_type=covariance_type, l2_clip_norm=clip)
    row = clip * np.eye(d)[0] * 10
    b1, n1 = (
        em_statistics(x, far, l2_clip_norm=clip),
        em_statistics(np.vstack([x, row]), far, l2_clip_norm=clip),
    )
    for i, b in enumerate(bounds):
        assert np.linalg.norm(n1[i] - b1[i]) == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_noise_matches_event(covariance_type):
    rng = np.random.default_rng(3)
    k, d, clip, z = 6, 30, 0.5, 2.0
    mixture = _random_mixture(rng, k, d, covariance_type)
    x = rng.normal(size=(100, d))
    exact = em_statistics(x, mixture, l2_clip_norm=clip)
    noisy, event = noisy_em_statistics(rng, x, mixture, noise_multiplier=z, l2_clip_norm=clip)
    assert isinstance(event, ev.ComposedDpEvent) and len(event.events) == 3
    for e_i, sens, a, b in zip(event.events, (1.0, clip, clip**2), noisy, exact, strict=True):
        assert e_i == gaussian_event(z)  # the Gaussian and its sampler's cut
        sigma = e_i.events[0].noise_multiplier * sens  # sigma re-derived from the event
        noise = (a - b).ravel()
        lo, hi = chi2_var_ratio_bounds(noise.size)
        assert lo < np.mean(noise**2) / sigma**2 < hi, (sens, np.mean(noise**2) / sigma**2)


def test_ledger_has_one_entry_per_iteration():
    rng = np.random.default_rng(4)
    _, ledger = dp_em(rng, _blobs(rng, 200), 3, noise_multiplier=1.5, steps=7)
    assert len(ledger.entries) == 7
    expected = ev.ComposedDpEvent([gaussian_event(1.5)] * 3)
    assert all(e.event == expected for e in ledger.entries)
    assert ledger.entries[-1].note == "iteration 7 of 7"


# -- robustness ----------------------------------------------------------------------------------


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_tiny_epsilon_and_degenerate_data_give_a_valid_mixture(covariance_type):
    rng = np.random.default_rng(5)
    x = _blobs(rng, 100)
    x[:, 3] = 0.2  # a zero-variance feature
    for z in (1e8, 1e-10):
        result, _ = dp_em(rng, x, 3, noise_multiplier=z, steps=5, covariance_type=covariance_type)
        m = result.mixture
        assert np.all(np.isfinite(m.means)) and m.weights.sum() == pytest.approx(1.0)
        cov = m.covariances if covariance_type == "full" else m.covariances[:, :, None] * np.eye(4)
        assert np.all(np.linalg.eigvalsh(cov) >= 1e-6 * (1 - 1e-9))
        assert np.all(np.linalg.norm(m.means, axis=1) <= 1.0 + 1e-12)
        assert np.all(np.isfinite(m.log_prob(x)))
        assert sample(rng, m, 50).shape == (50, 4)


def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(6)
    x = _blobs(rng, 20)
    # a non-finite record and K above the (private) row count are not refused: rule 7,
    # tests/encoding/test_any_row_count.py (the record is dropped; K = 30 > 20 rows fits)
    bad = x.copy()
    bad[0, 0] = np.nan
    res, _ = dp_em(rng, bad, 2, noise_multiplier=1.0, steps=1)
    assert np.all(np.isfinite(res.mixture.means))
    res, _ = dp_em(rng, x, 30, noise_multiplier=1.0, steps=1)
    assert res.mixture.means.shape == (30, 4)
    with pytest.raises(ValueError, match="expected x to have at least one row and column"):
        dp_em(rng, x[:, :0], 2, noise_multiplier=1.0, steps=1)
    with pytest.raises(ValueError, match="expected steps >= 1, got 0"):
        dp_em(rng, x, 2, noise_multiplier=1.0, steps=0)
    with pytest.raises(ValueError, match="covariance_type"):
        dp_em(rng, x, 2, noise_multiplier=1.0, steps=1, covariance_type="tied")
    with pytest.raises(ValueError, match="expected init with 2 components, 4 features"):
        dp_em(rng, x, 2, noise_multiplier=1.0, steps=1, init=initial_mixture(rng, 2, 3))
    with pytest.raises(ValueError, match="expected diagnostic_x to have 4 columns, got 2"):
        dp_em(rng, x, 2, noise_multiplier=1.0, steps=1, diagnostic_x=x[:, :2])
    with pytest.raises(ValueError, match="expected noise_multiplier >= 0"):
        dp_em(rng, x, 2, noise_multiplier=-1.0, steps=1)
    with pytest.raises(ValueError, match="positive mixture weights"):
        Mixture(
            weights=np.array([0.5, 0.6]),
            means=np.zeros((2, 1)),
            covariances=np.ones((2, 1)),
            covariance_type="diag",
        )


def test_sampler_matches_mixture_moments():
    rng = np.random.default_rng(7)
    m = _random_mixture(rng, 3, 2, "full")
    n = 200_000
    y = sample(rng, m, n)
    mean = m.weights @ m.means
    second = sum(
        w * (c + np.outer(mu, mu))
        for w, mu, c in zip(m.weights, m.means, m.covariances, strict=True)
    )
    cov = second - np.outer(mean, mean)
    # z-bound on each coordinate mean (6 standard errors)
    assert np.all(np.abs(y.mean(0) - mean) < 6 * np.sqrt(np.diag(cov) / n))
    np.testing.assert_allclose(np.cov(y.T), cov, atol=6 * np.sqrt(2.0 / n) * np.diag(cov).max() * 3)
    # the rows are shuffled, not grouped by component
    assert sample(rng, m, 0).shape == (0, 2)


def test_calibrated_entry_point_meets_the_target_and_event_matches_ledger():
    from accounting.compose import compute_epsilon
    from jdp.encoding.em import dp_em_calibrated, dp_em_event

    rng = np.random.default_rng(8)
    _, ledger = dp_em_calibrated(
        rng, _blobs(rng, 300), 3, target_epsilon=2.0, target_delta=1e-5, steps=10
    )
    eps = ledger.epsilon(1e-5)  # calibrated to the figure the ledger reports (best)
    assert 0.99 * 2.0 <= eps <= 2.0 and ledger.epsilon(1e-5, accountant="rdp") >= eps
    z = ledger.entries[0].event.events[0].events[0].noise_multiplier
    assert compute_epsilon(dp_em_event(z, 10), 1e-5, accountant="best") == pytest.approx(eps)


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_optimised_adversarial_neighbour_stays_within_sensitivity(covariance_type):
    # an optimiser searches for the added record that moves each statistic most
    from scipy.optimize import minimize

    d, clip = 3, 0.7
    rng, mixture, x, base = _neighbour_problem(9, 3, d, 20, clip, covariance_type)
    for i, bound in enumerate((1.0, clip, clip**2)):

        def neg_change(row: np.ndarray, i: int = i) -> float:
            new = em_statistics(np.vstack([x, row]), mixture, l2_clip_norm=clip)[i]
            return -float(np.linalg.norm(new - base[i]))

        best = min(
            minimize(
                neg_change, rng.normal(size=d) * s, method="Nelder-Mead", options={"maxiter": 300}
            ).fun
            for s in (0.1, 1.0, 10.0)
            for _ in range(2)
        )
        assert -best <= bound * (1 + 1e-9)
        assert -best > 0.5 * bound  # the search does find large changes
