"""Size-constrained clustering (jdp.encoding.constrained_gmm): every cluster >= l_min, clear
errors when impossible, the k-means fallback, and strict mode's DP centres + per-record
assignment."""

from __future__ import annotations

import numpy as np
import pytest

from accounting import compute_epsilon
from jdp.encoding.constrained_gmm import (
    assign_to_centres,
    constrained_gmm,
    constrained_kmeans,
    dp_cluster_centres,
    dp_cluster_event,
    size_constrained_assignment,
)


def _blobs(sizes: tuple[int, ...], seed: int = 0, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Tight, well separated blobs of the given sizes inside [0, 1]^d, and their labels."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.15] * d, [0.85] * d, [0.15] * (d - 1) + [0.85], [0.5] * d])
    x = np.vstack([rng.normal(centres[j], 0.02, (s, d)) for j, s in enumerate(sizes)])
    return np.clip(x, 0, 1), np.repeat(np.arange(len(sizes)), sizes)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_cluster_holds_at_least_l_min_even_with_a_tiny_blob(seed):
    # unconstrained, the 4-record blob would be its own cluster
    x, _ = _blobs((120, 100, 4), seed=seed)
    for fit in (constrained_gmm, constrained_kmeans):
        result = fit(np.random.default_rng(seed), x, 3, 30)
        assert result.sizes.min() >= 30 and result.sizes.sum() == x.shape[0]
        assert result.labels.shape == (x.shape[0],)


def test_gmm_recovers_separated_blobs_when_the_constraint_is_slack():
    x, truth = _blobs((80, 70, 60))
    result = constrained_gmm(np.random.default_rng(0), x, 3, 10)
    assert result.algorithm == "gmm"
    # each found cluster is one true blob
    for j in range(3):
        assert len(np.unique(truth[result.labels == j])) == 1
    assert np.all(result.variances < 0.01)


def test_assignment_keeps_the_unconstrained_optimum_when_it_is_feasible_and_repairs_cheaply():
    rng = np.random.default_rng(0)
    cost = rng.uniform(0, 1, (40, 4))
    free = np.argmin(cost, axis=1)
    sizes = np.bincount(free, minlength=4)
    assert np.array_equal(size_constrained_assignment(cost, int(sizes.min())), free)
    # cluster 3 is everyone's worst choice: it is filled with exactly l_min records, those
    # with the smallest extra cost
    cost[:, 3] += 10.0
    z = size_constrained_assignment(cost, 6)
    assert np.bincount(z, minlength=4).min() >= 6 and np.sum(z == 3) == 6
    extra = cost[:, 3] - cost[np.arange(40), np.argmin(cost[:, :3], axis=1)]
    moved = np.flatnonzero(z == 3)
    assert set(moved) == set(np.argsort(extra)[:6])


def test_impossible_l_min_raises_one_clear_error():
    x, _ = _blobs((10, 10))
    for fit in (constrained_gmm, constrained_kmeans):
        with pytest.raises(ValueError, match="impossible"):
            fit(np.random.default_rng(0), x, 3, 7)  # 21 > 20 records
    with pytest.raises(ValueError, match="impossible"):
        size_constrained_assignment(np.zeros((5, 2)), 3)
    with pytest.raises(ValueError, match="l_min >= 1"):
        constrained_gmm(np.random.default_rng(0), x, 2, 0)


def test_timeout_falls_back_to_constrained_kmeans():
    x, _ = _blobs((50, 50, 10))
    result = constrained_gmm(np.random.default_rng(0), x, 3, 20, timeout_s=0.0)
    assert result.algorithm == "kmeans" and result.sizes.min() >= 20


@pytest.mark.parametrize("algorithm", ["kmeans", "em"])
def test_dp_centres_spend_their_plan_and_assignment_is_per_record(algorithm):
    x, _ = _blobs((200, 200))
    centres, ledger = dp_cluster_centres(
        np.random.default_rng(0), x, 2, algorithm=algorithm, noise_multiplier=2.0, steps=3
    )
    assert centres.shape == (2, 3) and np.all((0 <= centres) & (centres <= 1))
    plan = dp_cluster_event(algorithm, 2.0, 3)
    assert ledger.epsilon(1e-5) == pytest.approx(
        compute_epsilon(plan, 1e-5, accountant="best"), rel=1e-9
    )
    labels = assign_to_centres(centres, x)
    # a record's cluster depends on that record and the released centres only
    keep = np.random.default_rng(1).random(x.shape[0]) < 0.5
    assert np.array_equal(assign_to_centres(centres, x[keep]), labels[keep])
    with pytest.raises(ValueError, match="algorithm"):
        dp_cluster_centres(
            np.random.default_rng(0), x, 2, algorithm="gmm", noise_multiplier=1.0, steps=1
        )
