"""The encoding-phase mechanisms are defined for every number of rows, 0 included (DESIGN
section 2, rule 7; issue 24, item 2): under add/remove-one neighbours the row count is
private, so no DP path may refuse, warn or branch on it. A fit on 0 rows or on fewer rows
than clusters/components returns results of the right shapes and the same ledger as on many
rows; non-finite rows are dropped from every released sum (as if absent) instead of raising.
The non-DP helper :func:`public_pca` keeps its checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from jdp.encoding.constrained_gmm import assign_to_centres, dp_cluster_centres
from jdp.encoding.em import dp_em, em_statistics, initial_mixture
from jdp.encoding.kmeans import (
    assign_clusters,
    dp_kernel_kmeans,
    dp_kmeans,
    lloyd_statistics,
)
from jdp.encoding.pca import (
    dp_mean_gaussian,
    dp_mean_laplace,
    dp_pca_gaussian,
    dp_pca_laplace,
    public_pca,
    scatter_sum,
)
from jdp.mechanisms.suffstats import check_data_matrix, chunked_sum

D, K = 4, 3
ROWS = (0, 1, K - 1, K, 40)  # none, fewer than k, exactly k, many


def _rows(n: int) -> np.ndarray:
    return np.random.default_rng(n).uniform(0.0, 1.0, size=(n, D))


RUNS = {
    "dp_kmeans": lambda rng, x: dp_kmeans(
        rng, x, K, noise_multiplier=1.0, steps=2, l2_clip_norm=1.0
    ),
    "dp_kernel_kmeans": lambda rng, x: dp_kernel_kmeans(
        rng, x, K, noise_multiplier=1.0, steps=2, gamma=1.0, n_components=8
    ),
    "dp_em_diag": lambda rng, x: dp_em(rng, x, K, noise_multiplier=1.0, steps=2),
    "dp_em_full": lambda rng, x: dp_em(
        rng, x, K, noise_multiplier=1.0, steps=2, covariance_type="full"
    ),
    "dp_pca_gaussian": lambda rng, x: dp_pca_gaussian(rng, x, K, noise_multiplier=1.0),
    "dp_pca_gaussian_dp_centre": lambda rng, x: dp_pca_gaussian(
        rng, x, K, noise_multiplier=1.0, centre="dp"
    ),
    "dp_pca_laplace": lambda rng, x: dp_pca_laplace(rng, x, K, epsilon=1.0, lower=0, upper=1),
    "dp_pca_laplace_dp_centre": lambda rng, x: dp_pca_laplace(
        rng, x, K, epsilon=1.0, lower=0, upper=1, centre="dp"
    ),
}


def _shapes(result: object) -> list[tuple[int, ...]]:
    """The shapes of the released arrays of a k-means, EM or PCA result."""
    if hasattr(result, "centres"):
        return [result.centres.shape]
    if hasattr(result, "mixture"):
        m = result.mixture
        return [m.weights.shape, m.means.shape, m.covariances.shape]
    return [result.components.shape, result.eigenvalues.shape, result.centre.shape]


def _arrays(result: object) -> list[np.ndarray]:
    if hasattr(result, "centres"):
        return [result.centres]
    if hasattr(result, "mixture"):
        m = result.mixture
        return [m.weights, m.means, m.covariances]
    return [result.components, result.eigenvalues, result.centre]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_any_row_count_fits_with_the_same_ledger(name):
    """n = 0, n < k, n = k and n >> k: no error, no warning, finite results of the same
    shapes, and the same ledger (labels, events, notes) -- so a neighbour of a table with k
    rows (k - 1 rows) fits exactly as it does."""
    run = RUNS[name]
    shapes, ledgers = set(), []
    for n in ROWS:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result, ledger = run(np.random.default_rng(7), _rows(n))
        shapes.add(tuple(_shapes(result)))
        assert all(np.all(np.isfinite(a)) for a in _arrays(result)), (name, n)
        ledgers.append(ledger.to_dict())
    assert len(shapes) == 1
    assert all(ledger == ledgers[-1] for ledger in ledgers)


def test_dp_means_on_no_rows():
    rng = np.random.default_rng(0)
    empty = np.zeros((0, D))
    mean, event = dp_mean_gaussian(rng, empty, noise_multiplier=1.0)
    assert mean.shape == (D,) and np.all(np.isfinite(mean)) and np.linalg.norm(mean) <= 1 + 1e-12
    assert event == dp_mean_gaussian(rng, _rows(40), noise_multiplier=1.0)[1]
    mean, event = dp_mean_laplace(rng, empty, epsilon=1.0, lower=0.0, upper=1.0)
    assert mean.shape == (D,) and np.all((mean >= 0) & (mean <= 1))


def test_noise_free_limit_on_no_rows_keeps_the_public_start():
    """With no rows and no noise every released sum is exactly zero: k-means keeps its public
    initial centres (no noisy count reaches 1), EM's M-step gets a valid mixture."""
    init = _rows(K) - 0.5
    res, _ = dp_kmeans(
        np.random.default_rng(0), np.zeros((0, D)), K, noise_multiplier=0.0, steps=2,
        l2_clip_norm=1.0, init=init,
    )  # fmt: skip
    np.testing.assert_array_equal(res.centres, init)
    em, _ = dp_em(np.random.default_rng(0), np.zeros((0, D)), K, noise_multiplier=0.0, steps=2)
    assert np.all(em.mixture.weights > 0) and np.isclose(em.mixture.weights.sum(), 1.0)


def test_statistics_of_an_empty_matrix_are_zero_sums_of_the_right_shape():
    empty = np.zeros((0, D))
    centres = _rows(K)
    counts, sums = lloyd_statistics(empty, centres, l2_clip_norm=1.0)
    assert counts.shape == (K,) and sums.shape == (K, D) and not counts.any() and not sums.any()
    for cov in ("diag", "full"):
        mixture = initial_mixture(np.random.default_rng(0), K, D, covariance_type=cov)
        n, s, q = em_statistics(empty, mixture, l2_clip_norm=1.0)
        width = D if cov == "diag" else D * (D + 1) // 2
        assert (n.shape, s.shape, q.shape) == ((K,), (K, D), (K, width))
        assert not (n.any() or s.any() or q.any())
    assert scatter_sum(empty, np.zeros(D)).shape == (D, D)
    total = chunked_sum(lambda c: (c.sum(axis=0), np.array(float(len(c)))), empty)
    assert total[0].shape == (D,) and total[1] == 0.0


def test_non_finite_rows_are_dropped_as_if_absent():
    """A row with a NaN or inf entry contributes nothing to any released sum: the same key
    gives exactly the release of the table without it (no error, no warning)."""
    x = _rows(30)
    bad = np.vstack([x[:10], [[np.nan, 0.1, 0.2, 0.3]], x[10:], [[0.0, np.inf, 0.0, 0.0]]])
    for name in sorted(RUNS):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got, ledger = RUNS[name](np.random.default_rng(3), bad)
        want, want_ledger = RUNS[name](np.random.default_rng(3), x)
        for a, b in zip(_arrays(got), _arrays(want), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
        assert ledger.to_dict() == want_ledger.to_dict()


def test_public_checks_stay():
    """What the DP paths still refuse is public: the column count, the dtype, ``k`` above
    the (public) number of features for PCA. The non-DP :func:`public_pca` keeps its row
    checks."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="expected k <= number of features 4"):
        dp_pca_gaussian(rng, np.zeros((0, D)), 5, noise_multiplier=1.0)
    with pytest.raises(TypeError, match="numeric array"):
        dp_kmeans(rng, np.array([["a"]]), 1, noise_multiplier=1.0, steps=1, l2_clip_norm=1.0)
    with pytest.raises(ValueError, match="2-D"):
        dp_em(rng, np.zeros(4), 1, noise_multiplier=1.0, steps=1)
    with pytest.raises(ValueError, match="too few rows for k=3"):
        public_pca(_rows(2), 3)
    with pytest.raises(ValueError, match="at least one row"):
        check_data_matrix(np.zeros((0, D)))
    assert check_data_matrix(np.zeros((0, D)), private=True).shape == (0, D)


def test_assignment_of_no_rows_is_empty():
    res, _ = RUNS["dp_kernel_kmeans"](np.random.default_rng(0), _rows(10))
    assert assign_clusters(res, np.zeros((0, D))).shape == (0,)
    centres, _ = dp_cluster_centres(
        np.random.default_rng(0), np.zeros((0, D)), K, noise_multiplier=1.0, steps=2
    )
    assert centres.shape == (K, D) and np.all((centres >= 0) & (centres <= 1))
    assert assign_to_centres(centres, np.zeros((0, D))).shape == (0,)
