"""P3GM reads its encoded rows without copies of their size (issue 29 item 4), and fits
exactly what it fitted from the copies: DP-PCA and the DP mean on ``x[:, keep] / b`` a block
at a time, DP-SGD gathering its batches from the float64 rows and rounding them to float32."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from accounting import PrivacyBudget
from jdp.encoding import pca
from jdp.synth.configs import apply_overrides
from jdp.synth.p3gm import model as P
from jdp.synth.p3gm import phases as Ph
from jdp.synth.p3gm.config import P3GMConfig
from jdp.synth.p3gm.privacy import calibrate_noise

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
TINY = apply_overrides(
    P3GMConfig(),
    {
        "latent_dim": 3,
        "hidden": 8,
        "decoder_init_steps": 4,
        "dpsgd": {"epochs": None, "steps": 3, "sampling_prob": 0.02, "expected_batch_size": 8.0},
        "performance": {"clipping": "general"},
    },
)


@pytest.fixture(scope="module")
def arrays(adult, small):
    codec = P.codec(adult.schema, TINY)
    return codec.encode(adult.schema.conform(small)), codec


@pytest.mark.parametrize("excludes_target", [False, True])
def test_dp_pca_reads_the_divided_rows_without_a_copy(arrays, excludes_target):
    x, codec = arrays
    config = dataclasses.replace(TINY, latent_excludes_target=excludes_target)
    noise = calibrate_noise(
        config, "p3gm", BUDGET, noise_cut=Ph.sgd_noise_cut(config, "p3gm", codec.layout)
    )
    fixed, _ = Ph.encoding_phase(
        np.random.default_rng(0), x, codec.row_norm_bound, config, noise, codec.target_coords
    )
    keep = np.ones(x.shape[1], dtype=bool)
    if excludes_target:
        keep[slice(*codec.target_coords)] = False
    result, _ = pca.dp_pca_gaussian(  # the same first draws: the DP mean, then the scatter
        np.random.default_rng(0),
        x[:, keep].astype(np.float64) / codec.row_norm_bound,  # float32 rows, float64 division
        config.latent_dim,
        noise_multiplier=noise["pca"],
        centre="dp",
        l2_clip_norm=config.pca_clip_norm,
    )
    np.testing.assert_array_equal(fixed["projection"]["components"][keep], result.components)
    np.testing.assert_array_equal(fixed["projection"]["centre"][keep], result.centre)
    assert not fixed["projection"]["components"][~keep].any()


def test_dpsgd_on_float64_rows_is_dpsgd_on_their_float32_copy(arrays):
    # the cast sits in the decoding phase's one loss, shared by the variants: P3GM's checks it
    x, codec = arrays
    fixed, _ = Ph.encoding_phase(
        np.random.default_rng(0), x, codec.row_norm_bound, TINY, None, codec.target_coords
    )
    fits = [
        Ph.decoding_phase(jax.random.key(1), rows, fixed, codec.layout, TINY, "p3gm", 1.0)
        for rows in (x.astype(np.float64), x.astype(np.float32))
    ]
    (params, ledger), (params32, ledger32) = fits
    assert ledger.labels == ledger32.labels
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(params32)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
