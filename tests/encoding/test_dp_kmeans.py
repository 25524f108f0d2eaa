"""DP k-means, random Fourier features and DPNorm."""

from __future__ import annotations

import numpy as np
import pytest
from _encoding_stats import chi2_var_ratio_bounds
from sklearn.cluster import KMeans

from accounting import events as ev
from jdp.encoding.kmeans import (
    assign_clusters,
    clustering_accuracy,
    dp_kernel_kmeans,
    dp_kmeans,
    lloyd_statistics,
    noisy_lloyd_step,
)
from jdp.encoding.rff import RFF_MAX_NORM, draw_rff
from jdp.mechanisms.noise import gaussian_event


def _rings(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two concentric rings: not linearly separable, easy for an RBF kernel."""
    y = rng.integers(2, size=n)
    angle = rng.uniform(0, 2 * np.pi, size=n)
    radius = np.where(y == 0, 0.3, 1.0) + rng.normal(scale=0.03, size=n)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1), y


def _blobs(
    rng: np.random.Generator, n: int, k: int = 4, d: int = 6
) -> tuple[np.ndarray, np.ndarray]:
    centres = np.eye(d)[:k] * 0.8
    y = rng.integers(k, size=n)
    return centres[y] + rng.normal(scale=0.12, size=(n, d)), y


# -- random Fourier features ------------------------------------------------------------------


def test_rff_approximates_rbf_kernel_and_norm_bounds():
    rng = np.random.default_rng(0)
    fm = draw_rff(rng, 3, 20_000, gamma=0.7)
    x = rng.normal(size=(6, 3))
    z = fm(x)
    exact = np.exp(-0.7 * np.sum((x[:, None] - x[None]) ** 2, axis=-1))
    # each kernel estimate is a mean of D i.i.d. terms bounded by 2 in magnitude: 6 sd < 6*sqrt(2/D)
    assert np.abs(z @ z.T - exact).max() < 6 * np.sqrt(2.0 / 20_000)
    norms = np.linalg.norm(
        draw_rff(rng, 3, 8, gamma=5.0)(rng.normal(size=(20_000, 3)) * 10), axis=1
    )
    assert norms.max() <= RFF_MAX_NORM * (1 + 1e-12)  # worst case sqrt(2), for any input
    assert norms.max() > 1.1  # ...and the expectation bound 1 (DPGM Thm. 2) is not a max


# -- non-private limit and the noise -------------------------------------------------------------


def test_large_epsilon_matches_sklearn_kmeans_on_the_same_rff_features():
    rng = np.random.default_rng(1)
    x, y = _rings(rng, 1500)
    fm = draw_rff(rng, 2, 100, gamma=4.0)
    public = _rings(np.random.default_rng(99), 2)[0]
    result, ledger = dp_kernel_kmeans(
        rng,
        x,
        2,
        noise_multiplier=1e-10,
        steps=30,
        gamma=4.0,
        feature_map=fm,
        l2_clip_norm=RFF_MAX_NORM,
        init_public=public,
    )
    z = fm(x)
    reference = KMeans(2, init=fm(public), n_init=1, max_iter=30, tol=0.0, algorithm="lloyd").fit(z)
    ours = assign_clusters(result, x)
    acc_ours, acc_ref = clustering_accuracy(y, ours), clustering_accuracy(y, reference.labels_)
    assert clustering_accuracy(reference.labels_, ours) > 0.999  # same partition
    assert abs(acc_ours - acc_ref) < 0.005
    assert len(ledger.entries) == 30


def test_kernel_beats_plain_on_rings_and_plain_matches_sklearn():
    rng = np.random.default_rng(2)
    x, y = _rings(rng, 2000)
    public = _rings(np.random.default_rng(7), 2)[0]
    kernel, _ = dp_kernel_kmeans(
        rng, x, 2, noise_multiplier=1e-10, steps=20, gamma=4.0, init_public=public
    )
    plain, _ = dp_kmeans(rng, x, 2, noise_multiplier=1e-10, steps=20, l2_clip_norm=2.0, init=public)
    reference = KMeans(2, init=public, n_init=1, max_iter=20, tol=0.0, algorithm="lloyd").fit(x)
    assert clustering_accuracy(reference.labels_, assign_clusters(plain, x)) > 0.999
    assert clustering_accuracy(y, assign_clusters(kernel, x)) > 0.95
    assert clustering_accuracy(y, assign_clusters(plain, x)) < 0.7


def test_accuracy_at_moderate_epsilon_improves_with_n():
    def mean_acc(n: int) -> float:
        accs = []
        for seed in range(4):
            rng = np.random.default_rng(seed)
            x, y = _blobs(rng, n)
            init = np.eye(6)[:4] * 0.5  # public, data-independent
            res, _ = dp_kmeans(
                rng, x, 4, noise_multiplier=3.0, steps=10, l2_clip_norm=1.5, init=init
            )
            accs.append(clustering_accuracy(y, assign_clusters(res, x)))
        return float(np.mean(accs))

    small, large = mean_acc(60), mean_acc(20_000)
    assert large > 0.98 and large > small + 0.1, (small, large)


# -- sensitivity and noise ------------------------------------------------------------------------


def test_lloyd_statistics_sensitivity_never_exceeded_and_tight():
    rng = np.random.default_rng(3)
    k, d, clip = 5, 4, 1.3
    centres = rng.normal(size=(k, d))
    x = rng.normal(size=(40, d)) * 2
    base = lloyd_statistics(x, centres, l2_clip_norm=clip)
    rows = [rng.normal(size=d) * s for s in (0.01, 1.0, 100.0, 1e8) for _ in range(30)] + list(
        centres * 1e3
    )
    worst_n = worst_s = 0.0
    for r in rows:
        n, s = lloyd_statistics(np.vstack([x, r]), centres, l2_clip_norm=clip)
        worst_n, worst_s = (
            max(worst_n, np.linalg.norm(n - base[0])),
            max(worst_s, np.linalg.norm(s - base[1])),
        )
    for i in range(len(x)):
        n, s = lloyd_statistics(np.delete(x, i, 0), centres, l2_clip_norm=clip)
        worst_n, worst_s = (
            max(worst_n, np.linalg.norm(n - base[0])),
            max(worst_s, np.linalg.norm(s - base[1])),
        )
    assert worst_n <= 1.0 + 1e-12 and worst_s <= clip * (1 + 1e-12)
    assert worst_n == pytest.approx(1.0) and worst_s == pytest.approx(clip)  # tight (huge rows)


def test_lloyd_noise_matches_event():
    rng = np.random.default_rng(5)
    k, d, clip, z = 8, 400, 0.9, 2.5
    centres = rng.normal(size=(k, d))
    x = rng.normal(size=(300, d))
    exact_n, exact_s = lloyd_statistics(x, centres, l2_clip_norm=clip)
    _, event, (noisy_n, noisy_s) = noisy_lloyd_step(
        rng, x, centres, noise_multiplier=z, l2_clip_norm=clip
    )
    assert event == ev.ComposedDpEvent([gaussian_event(z)] * 2)
    sigma_s = event.events[1].events[0].noise_multiplier * clip  # re-derived from the event
    lo, hi = chi2_var_ratio_bounds(k * d)
    assert lo < np.mean((noisy_s - exact_s) ** 2) / sigma_s**2 < hi
    noise_n = noisy_n - exact_n
    lo, hi = chi2_var_ratio_bounds(k, alpha=1e-4)
    assert lo < np.mean(noise_n**2) / event.events[0].events[0].noise_multiplier ** 2 < hi


# -- robustness -----------------------------------------------------------------------------------


def test_tiny_epsilon_gives_valid_centres():
    rng = np.random.default_rng(7)
    x, _ = _blobs(rng, 100)
    x[:, 5] = 0.0  # zero-variance feature
    for res, _ in (
        dp_kmeans(rng, x, 4, noise_multiplier=1e8, steps=3, l2_clip_norm=1.0),
        dp_kernel_kmeans(rng, x, 4, noise_multiplier=1e8, steps=3, gamma=1.0, n_components=16),
    ):
        assert np.all(np.isfinite(res.centres))
        assert np.all(np.linalg.norm(res.centres, axis=1) <= res.l2_clip_norm * (1 + 1e-12))
        labels = assign_clusters(res, x)
        assert labels.shape == (100,) and labels.min() >= 0 and labels.max() < 4


def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(8)
    x, _ = _blobs(rng, 10)
    # a non-finite record and k above the (private) row count are not refused: rule 7,
    # tests/encoding/test_any_row_count.py (the record is dropped; k = 11 > 10 rows fits)
    bad = x.copy()
    bad[1, 1] = np.inf
    res, _ = dp_kmeans(rng, bad, 2, noise_multiplier=1.0, steps=1, l2_clip_norm=1.0)
    assert np.all(np.isfinite(res.centres))
    res, _ = dp_kernel_kmeans(rng, x, 11, noise_multiplier=1.0, steps=1, gamma=1.0)
    assert res.centres.shape == (11, 200)
    with pytest.raises(TypeError, match="expected x to be a numeric array"):
        dp_kmeans(rng, x.astype(str), 2, noise_multiplier=1.0, steps=1, l2_clip_norm=1.0)
    with pytest.raises(ValueError, match=r"expected init of shape \(2, 6\)"):
        dp_kmeans(rng, x, 2, noise_multiplier=1.0, steps=1, l2_clip_norm=1.0, init=np.zeros((2, 5)))
    with pytest.raises(ValueError, match="expected gamma > 0"):
        dp_kernel_kmeans(rng, x, 2, noise_multiplier=1.0, steps=1, gamma=0.0)
    res, _ = dp_kernel_kmeans(rng, x, 2, noise_multiplier=1.0, steps=1, gamma=1.0, n_components=8)
    with pytest.raises(ValueError, match="expected x to have 6 columns, got 5"):
        assign_clusters(res, x[:, :5])
    with pytest.raises(ValueError, match="expected a feature map for 5 inputs"):
        dp_kernel_kmeans(
            rng, x[:, :5], 2, noise_multiplier=1.0, steps=1, gamma=1.0, feature_map=res.feature_map
        )
    with pytest.raises(ValueError, match="equal length"):
        clustering_accuracy(np.zeros(3), np.zeros(4))


def test_clustering_accuracy_uses_the_best_matching():
    assert clustering_accuracy(
        np.array([0, 0, 1, 1, 2]), np.array([5, 5, 3, 3, 3])
    ) == pytest.approx(0.8)


def test_calibrated_kmeans_meets_the_target_and_event_matches_ledger():
    from accounting.compose import compute_epsilon
    from jdp.encoding.kmeans import dp_kmeans_calibrated, dp_kmeans_event

    rng = np.random.default_rng(9)
    _, ledger = dp_kmeans_calibrated(
        rng,
        _blobs(rng, 100)[0],
        3,
        target_epsilon=0.5,
        target_delta=1e-5,
        steps=20,
        l2_clip_norm=1.0,
    )
    eps = ledger.epsilon(1e-5)  # calibrated to the figure the ledger reports (best)
    assert 0.99 * 0.5 <= eps <= 0.5 and ledger.epsilon(1e-5, accountant="rdp") >= eps
    z = ledger.entries[0].event.events[0].events[0].noise_multiplier
    assert compute_epsilon(dp_kmeans_event(z, 20), 1e-5, accountant="best") == pytest.approx(eps)
