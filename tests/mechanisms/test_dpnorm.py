"""DPNorm (DPGM Alg. 3), the one copy: the noisy histogram of per-example gradient norms in
the DP-SGD step (:func:`jdp.dpsgd.clip_schedules.dpnorm`). Bins ``C_{j-1} < ||g|| <= C_j``;
zero norms, norms above ``max_norm`` and masked (padding) examples are not counted, so one
record changes one count by at most 1 (L2 sensitivity 1, the event's)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jdp.dpsgd import clip_schedules as cs


@pytest.mark.parametrize(("max_norm", "n_bins"), [(1.0, 4), (10.0, 100), (3.0, 7)])
def test_histogram_counts_each_norm_in_its_bin_once(max_norm: float, n_bins: int) -> None:
    rng = np.random.default_rng(0)
    norms = np.concatenate(
        [rng.uniform(0.0, 1.5 * max_norm, size=500), [0.0, max_norm, 2.0 * max_norm]]
    )
    counts = np.asarray(
        cs.norm_histogram(jnp.asarray(norms), jnp.ones(norms.size, bool), max_norm, n_bins)
    )
    edges = np.linspace(0.0, max_norm, n_bins + 1)
    expected = np.histogram(norms[(norms > 0) & (norms <= max_norm)], edges)[0]
    # numpy's bins are [a, b) but the last; a tie at an edge is measure zero except max_norm
    assert counts.sum() == expected.sum() == np.sum((norms > 0) & (norms <= max_norm))
    assert counts[-1] >= 1  # max_norm itself lands in the last bin (C_{w-1} < C_w <= C_w)


def test_one_record_moves_one_count_by_at_most_one():
    """The sensitivity the event states: adding any record (any norm, padding or not)
    changes the histogram by a vector of L2 norm <= 1."""
    rng = np.random.default_rng(4)
    norms = jnp.asarray(rng.uniform(0.0, 12.0, 50))
    mask = jnp.ones(51, bool).at[-1].set(False)
    base = cs.norm_histogram(jnp.append(norms, 0.0), mask, 10.0, 20)
    for extra in [0.0, 1e-9, 0.5, 3.0, 10.0, 10.0 + 1e-6, 100.0, float("inf")]:
        with_it = cs.norm_histogram(jnp.append(norms, extra), jnp.ones(51, bool), 10.0, 20)
        assert float(jnp.linalg.norm(with_it - base)) <= 1.0


def test_dpnorm_finds_the_modal_norm():
    norms = jnp.asarray(np.random.default_rng(6).normal(7.07, 0.1, 5000))
    clip = cs.AdaptiveClip(max_norm=10.0, bins=100, noise_multiplier=2.0)
    bound = float(cs.dpnorm(jax.random.key(0), norms, jnp.ones(5000, bool), clip))
    assert 6.5 < bound < 7.7
