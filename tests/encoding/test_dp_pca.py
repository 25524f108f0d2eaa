"""DP-PCA: Analyze Gauss, Lap-PCA, public PCA, and the DP means used for centring."""

from __future__ import annotations

import numpy as np
import pytest
from _encoding_stats import chi2_var_ratio_bounds, laplace_scale_bounds, spiked_data, upper_triangle
from scipy.linalg import subspace_angles
from sklearn.decomposition import PCA

from accounting import events as ev
from jdp.encoding.pca import (
    bounded_sum_count,
    clipped_sum_count,
    dp_mean_gaussian,
    dp_mean_laplace,
    dp_pca_gaussian,
    dp_pca_laplace,
    lap_pca_l1_sensitivity,
    noisy_scatter_gaussian,
    noisy_scatter_laplace,
    public_pca,
    scatter_sum,
)
from jdp.mechanisms.noise import gaussian_event, laplace_event
from jdp.verbosity import show_private_details


def _angle(result, x: np.ndarray, k: int) -> float:
    reference = PCA(k).fit(x).components_.T
    return float(subspace_angles(result.components, reference).max())


# -- non-private limit -------------------------------------------------------------------------


def test_large_epsilon_matches_sklearn_pca():
    rng = np.random.default_rng(0)
    x = spiked_data(rng, 3000, 12)
    gauss, ledger = dp_pca_gaussian(rng, x, 3, noise_multiplier=1e-9, centre="dp")
    assert _angle(gauss, x, 3) < 1e-6
    assert ledger.labels == ["dp-mean", "dp-pca"]
    # snapping's theorem needs lambda < B < 2^46 lambda: the noiseless limit is the textbook's
    lap, ledger = dp_pca_laplace(
        rng, x, 3, epsilon=1e12, lower=-1.0, upper=1.0, centre="dp", secure_noise=False
    )
    assert _angle(lap, x, 3) < 1e-6
    assert ledger.labels == ["dp-mean", "lap-pca"]
    public, ledger = public_pca(x, 3)
    assert _angle(public, x, 3) < 1e-9 and ledger.entries == ()
    # eigenvalues are those of the scatter sum: n times sklearn's (biased) covariance ones
    ref = PCA(3).fit(x).explained_variance_ * (len(x) - 1)
    np.testing.assert_allclose(public.eigenvalues, ref, rtol=1e-9)
    np.testing.assert_allclose(gauss.eigenvalues, ref, rtol=1e-4)


def test_components_sorted_orthonormal_and_transform_round_trips():
    rng = np.random.default_rng(1)
    x = spiked_data(rng, 500, 8)
    result, _ = dp_pca_gaussian(rng, x, 4, noise_multiplier=0.5, centre=np.zeros(8))
    np.testing.assert_allclose(result.components.T @ result.components, np.eye(4), atol=1e-12)
    assert np.all(np.diff(result.eigenvalues) <= 0)
    y = result.transform(x)
    np.testing.assert_allclose(result.transform(result.inverse_transform(y)), y, atol=1e-12)
    with pytest.raises(ValueError, match="read-only"):
        result.components[0, 0] = 1.0


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_error_shrinks_as_n_grows(mechanism):
    def mean_angle(n: int) -> float:
        angles = []
        for seed in range(4):
            rng = np.random.default_rng(seed)
            x = spiked_data(rng, n, 10)
            if mechanism == "gaussian":
                res, _ = dp_pca_gaussian(rng, x, 3, noise_multiplier=5.0, centre=np.zeros(10))
            else:
                res, _ = dp_pca_laplace(
                    rng, x, 3, epsilon=20.0, lower=-1, upper=1, centre=np.zeros(10)
                )
            angles.append(_angle(res, x, 3))
        return float(np.mean(angles))

    small, large = mean_angle(400), mean_angle(40_000)
    # noise is O(1) while the eigengap grows like n: 100x more rows should cut the error by far
    # more than 5x (it is ~100x in expectation once the angle is in the linear regime)
    assert large < small / 5, (small, large)
    assert large < 0.1


# -- sensitivity: random and adversarial neighbours -------------------------------------------


def _neighbours(rng: np.random.Generator, d: int, scale: float) -> list[np.ndarray]:
    """Random rows of every size and adversarial ones (basis vectors, huge, box corners)."""
    rows = [rng.normal(size=d) * s for s in (0.01, 0.3, 1.0, 10.0, 1e6) for _ in range(20)]
    rows += [scale * np.eye(d)[j] for j in range(d)] + [-1e9 * np.eye(d)[0]]
    rows += [rng.choice([-1.0, 1.0], size=d) * scale for _ in range(20)]
    return rows


def test_analyze_gauss_sensitivity_never_exceeded_and_tight():
    rng = np.random.default_rng(2)
    d, clip = 6, 0.7
    x = rng.normal(size=(40, d))
    centre = rng.normal(size=d) * 0.1
    base = upper_triangle(scatter_sum(x, centre, l2_clip_norm=clip))
    changes = []
    for row in _neighbours(rng, d, clip):
        added = upper_triangle(scatter_sum(np.vstack([x, row]), centre, l2_clip_norm=clip))
        changes.append(np.linalg.norm(added - base))
    for i in range(len(x)):  # remove-one neighbours
        removed = upper_triangle(scatter_sum(np.delete(x, i, axis=0), centre, l2_clip_norm=clip))
        changes.append(np.linalg.norm(removed - base))
    assert max(changes) <= clip**2 * (1 + 1e-12)
    # the bound is attained (a row along a basis axis after centring)
    row = centre + clip * np.eye(d)[2]
    added = upper_triangle(scatter_sum(np.vstack([x, row]), centre, l2_clip_norm=clip))
    assert np.linalg.norm(added - base) == pytest.approx(clip**2, rel=1e-9)


def test_lap_pca_sensitivity_never_exceeded_and_tight():
    rng = np.random.default_rng(3)
    d = 5
    lower, upper = -np.arange(1.0, d + 1), np.arange(1.0, d + 1) * 2
    x = rng.uniform(lower, upper, size=(30, d))
    centre = rng.uniform(lower, upper)
    sens = lap_pca_l1_sensitivity(np.maximum(upper - centre, centre - lower))
    base = upper_triangle(scatter_sum(x, centre, lower=lower, upper=upper))
    rows = [rng.uniform(lower, upper) for _ in range(100)]
    rows += [np.where(rng.random(d) < 0.5, lower, upper) for _ in range(100)]  # box corners
    rows += [rng.normal(size=d) * 1e6]  # out of bounds: clipped
    changes = [
        np.abs(
            upper_triangle(scatter_sum(np.vstack([x, r]), centre, lower=lower, upper=upper)) - base
        ).sum()
        for r in rows
    ]
    changes += [
        np.abs(
            upper_triangle(scatter_sum(np.delete(x, i, 0), centre, lower=lower, upper=upper)) - base
        ).sum()
        for i in range(len(x))
    ]
    assert max(changes) <= sens * (1 + 1e-12)
    worst = np.where(upper - centre > centre - lower, upper, lower)  # the farthest corner
    added = upper_triangle(scatter_sum(np.vstack([x, worst]), centre, lower=lower, upper=upper))
    assert np.abs(added - base).sum() == pytest.approx(sens, rel=1e-9)


def test_dp_mean_statistics_sensitivity():
    rng = np.random.default_rng(4)
    d, clip = 4, 2.0
    x = rng.normal(size=(25, d)) * 3
    lower, upper = np.full(d, -1.0), np.full(d, 3.0)
    g_base, l_base = clipped_sum_count(x, clip), bounded_sum_count(x, lower, upper)
    g_sens, l_sens = np.sqrt(2) * clip, 2.0 * d + 1.0
    for row in _neighbours(rng, d, clip) + [upper, lower]:
        xx = np.vstack([x, row])
        assert np.linalg.norm(clipped_sum_count(xx, clip) - g_base) <= g_sens * (1 + 1e-12)
        assert np.abs(bounded_sum_count(xx, lower, upper) - l_base).sum() <= l_sens * (1 + 1e-12)
    xx = np.vstack([x, upper])  # a corner attains the L1 bound
    assert np.abs(bounded_sum_count(xx, lower, upper) - l_base).sum() == pytest.approx(l_sens)


# -- the events equal the noise actually used --------------------------------------------------


def test_gaussian_noise_matches_event():
    rng = np.random.default_rng(5)
    d, clip, z = 120, 0.5, 3.0
    x = rng.normal(size=(200, d))
    centre = np.zeros(d)
    noisy, event = noisy_scatter_gaussian(rng, x, centre, noise_multiplier=z, l2_clip_norm=clip)
    noise = noisy - scatter_sum(x, centre, l2_clip_norm=clip)
    np.testing.assert_array_equal(noise, noise.T)
    assert event == gaussian_event(z)
    sigma = event.events[0].noise_multiplier * clip**2  # re-derived from the event
    entries = upper_triangle(noise)
    lo, hi = chi2_var_ratio_bounds(entries.size)
    assert lo < np.mean(entries**2) / sigma**2 < hi


def test_laplace_noise_matches_event():
    rng = np.random.default_rng(6)
    d, eps = 120, 0.5
    lower, upper = np.zeros(d), np.ones(d)
    x = rng.uniform(size=(100, d))
    centre = np.full(d, 0.25)
    # the textbook sampler's scale (snapping's, with its rounding: the contract test)
    noisy, event = noisy_scatter_laplace(
        rng, x, centre, epsilon=eps, lower=lower, upper=upper, secure_noise=False
    )
    noise = noisy - scatter_sum(x, centre, lower=lower, upper=upper)
    np.testing.assert_array_equal(noise, noise.T)
    assert event == laplace_event(eps, secure_noise=False)
    scale = event.events[0].noise_multiplier * lap_pca_l1_sensitivity(np.full(d, 0.75))
    lo, hi = laplace_scale_bounds(d * (d + 1) // 2)
    assert lo < np.mean(np.abs(upper_triangle(noise))) / scale < hi


def test_dp_mean_events_and_limits():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(2000, 3)) * 0.5
    mean, event = dp_mean_gaussian(rng, x, noise_multiplier=1e-9, l2_clip_norm=1.0)
    np.testing.assert_allclose(mean, x.mean(0), atol=1e-9)
    assert event == gaussian_event(1e-9)
    mean, event = dp_mean_laplace(rng, x, epsilon=1e12, lower=-1, upper=1, secure_noise=False)
    np.testing.assert_allclose(mean, x.mean(0), atol=1e-9)
    assert event == laplace_event(1e12, secure_noise=False)
    _, event = dp_mean_laplace(rng, x, epsilon=1.0, lower=-1, upper=1)  # snapping: exact
    assert event == ev.LaplaceDpEvent(1.0)


# -- bad input and tiny epsilon -----------------------------------------------------------------


def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(10, 4))
    # a non-finite record and k above the (private) row count are not refused on the DP
    # paths: rule 7, tests/encoding/test_any_row_count.py (the record is dropped, k = 20 > 10
    # rows fits); public_pca (public data) keeps both checks
    bad = x.copy()
    bad[3, 1] = np.nan
    res, _ = dp_pca_gaussian(rng, bad, 2, noise_multiplier=1.0)
    assert np.all(np.isfinite(res.components))
    bad[3, 1] = np.inf
    res, _ = dp_pca_laplace(rng, bad, 2, epsilon=1.0, lower=-5, upper=5)
    assert np.all(np.isfinite(res.components))
    with pytest.raises(ValueError, match="expected x_public to be finite, got 1 NaN/inf"):
        public_pca(bad, 2)
    res, _ = dp_pca_gaussian(rng, np.ones((10, 30)), 20, noise_multiplier=1.0)
    assert res.components.shape == (30, 20)
    with pytest.raises(ValueError, match="too few rows for k=20"):
        public_pca(np.ones((10, 30)), 20)
    with pytest.raises(ValueError, match="expected k <= number of features 4"):
        dp_pca_gaussian(rng, x, 5, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="expected k >= 1, got 0"):
        public_pca(x, 0)
    with pytest.raises(ValueError, match="2-D"):
        dp_pca_gaussian(rng, x[0], 1, noise_multiplier=1.0)
    with pytest.raises(ValueError, match=r"expected centre of shape \(4,\)"):
        dp_pca_gaussian(rng, x, 2, noise_multiplier=1.0, centre=np.zeros(3))
    with pytest.raises(ValueError, match="zero-variance feature"):
        dp_pca_laplace(rng, x, 2, epsilon=1.0, lower=[0, 0, 0, 1], upper=[1, 1, 1, 1])
    with pytest.raises(ValueError, match="expected noise_multiplier >= 0"):
        dp_pca_gaussian(rng, x, 2, noise_multiplier=-1.0)
    with pytest.raises(ValueError, match="expected epsilon > 0"):
        dp_pca_laplace(rng, x, 2, epsilon=0.0, lower=-5, upper=5)
    result, _ = public_pca(x, 2)
    with pytest.raises(ValueError, match="expected x to have 4 columns, got 3"):
        result.transform(x[:, :3])
    with pytest.raises(ValueError, match="centre to be None, an array or 'dp'"):
        dp_pca_gaussian(rng, x, 2, noise_multiplier=1.0, centre="mean")


def test_out_of_bounds_values_are_clipped_with_a_warning():
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, size=(50, 3))
    x[0, 0] = 7.0
    with (  # whether a value is out of bounds is private: shown on request (issue 24)
        show_private_details(),
        pytest.warns(UserWarning, match="outside the declared bounds were clipped"),
    ):
        dp_pca_laplace(rng, x, 2, epsilon=1.0, lower=-1, upper=1)


def test_tiny_epsilon_gives_valid_output():
    rng = np.random.default_rng(10)
    x = spiked_data(rng, 50, 6)
    x[:, 5] = 0.0  # a zero-variance feature is fine for the Gaussian path
    for result, _ in (
        dp_pca_gaussian(rng, x, 3, noise_multiplier=1e8, centre="dp"),
        dp_pca_laplace(rng, x, 3, epsilon=1e-8, lower=-1, upper=1, centre="dp", secure_noise=False),
    ):
        assert np.all(np.isfinite(result.components)) and np.all(result.eigenvalues >= 0)
        np.testing.assert_allclose(result.components.T @ result.components, np.eye(3), atol=1e-9)
        assert np.all(np.abs(result.centre) <= 1.0)


def test_calibrated_entry_point_meets_the_target_and_event_matches_ledger():
    from accounting.compose import compute_epsilon
    from jdp.encoding.pca import dp_pca_gaussian_calibrated, dp_pca_gaussian_event

    rng = np.random.default_rng(11)
    x = spiked_data(rng, 300, 5)
    _, ledger = dp_pca_gaussian_calibrated(
        rng, x, 2, target_epsilon=1.0, target_delta=1e-5, centre="dp"
    )
    eps = ledger.epsilon(1e-5)  # calibrated to the figure the ledger reports (best)
    assert 0.99 * 1.0 <= eps <= 1.0 and ledger.epsilon(1e-5, accountant="rdp") >= eps
    z = ledger.entries[1].event.events[0].noise_multiplier
    assert compute_epsilon(
        dp_pca_gaussian_event(z, dp_centre=True), 1e-5, accountant="best"
    ) == pytest.approx(eps)


def test_dp_mean_noise_matches_event():
    # all-zero rows: the released sum is pure noise and the count (1000) is almost exact,
    # so mean * 1000 recovers the sum's noise up to a relative 1e-5
    rng = np.random.default_rng(12)
    x = np.zeros((1000, 2000))
    mean, event = dp_mean_gaussian(rng, x, noise_multiplier=1e-3, l2_clip_norm=2.0)
    sigma = event.events[0].noise_multiplier * np.sqrt(2.0) * 2.0
    lo, hi = chi2_var_ratio_bounds(2000)
    assert lo < np.mean((mean * 1000) ** 2) / sigma**2 < hi
    mean, event = dp_mean_laplace(rng, x, epsilon=1e6, lower=-1.0, upper=1.0, secure_noise=False)
    scale = event.events[0].noise_multiplier * (2000 * 1.0 + 1.0)  # Delta_1 = ||h||_1 + 1
    lo, hi = laplace_scale_bounds(2000)
    assert lo < np.mean(np.abs(mean * 1000)) / scale < hi
