"""DPNorm's histogram (DPGM Alg. 3) has a host copy (numpy, over data rows, for DP k-means)
and a device copy (JAX, over per-example gradient norms inside the jitted DP-SGD step).
They must be one rule: the same bins ``C_{j-1} < ||.|| <= C_j``, zero norms and norms above
``max_norm`` not counted, and the same modal edge."""

import jax.numpy as jnp
import numpy as np
import pytest

from jdp.dpsgd import clip_schedules as cs
from jdp.encoding.kmeans import norm_histogram


@pytest.mark.parametrize(("max_norm", "n_bins"), [(1.0, 4), (10.0, 100), (3.0, 7)])
def test_host_and_device_histograms_are_one_rule(max_norm: float, n_bins: int) -> None:
    rng = np.random.default_rng(0)
    norms = np.concatenate(
        [
            rng.uniform(0.0, 1.5 * max_norm, size=500),  # some above max_norm
            [0.0, max_norm, 2.0 * max_norm],  # zero, the top edge, beyond it
        ]
    )
    # rows whose L2 norm is exactly ``norms`` (one non-zero coordinate)
    rows = np.zeros((norms.size, 3))
    rows[:, 1] = norms
    host = norm_histogram(rows, max_norm=max_norm, n_bins=n_bins)
    mask = np.ones(norms.size, dtype=bool)
    device = cs.norm_histogram(jnp.asarray(norms, jnp.float32), jnp.asarray(mask), max_norm, n_bins)
    np.testing.assert_array_equal(host, np.asarray(device, np.float64))
    assert host.sum() == np.sum((norms > 0) & (norms <= max_norm))
