"""The logic behind scripts/reproduce_dpgan.py, in the library: its settings come from public
constants (:mod:`jdp.synth.dp_gan.paper`), the clipping decay reaches its declared end point,
and its distances (:mod:`jdp.eval.distances`) behave as distances."""

from __future__ import annotations

import numpy as np
import pytest

from jdp.data.datasets import PUBLIC_SIZES
from jdp.eval.distances import dtw, sliced_wasserstein
from jdp.synth.dp_gan import paper


@pytest.mark.parametrize("quick", [False, True])
def test_adult_settings_are_public_constants(quick):
    config = paper.adult_config(quick)  # no data argument
    rows = paper.ADULT_QUICK_ROWS if quick else PUBLIC_SIZES["adult"].train
    assert config.dpsgd.expected_batch_size == pytest.approx(config.dpsgd.sampling_prob * rows)
    assert PUBLIC_SIZES["adult"].train == 32_561  # UCI adult.data, documented


def test_clipping_decay_ends_at_the_declared_fraction():
    config = paper.with_decay(paper.adult_config(True))
    generator_steps = config.dpsgd.num_steps // config.n_critic
    assert config.clipping_decay**generator_steps == pytest.approx(paper.DECAY_FINAL_FRACTION)


def test_dtw_is_zero_on_itself_and_at_most_the_l1_distance():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(24), rng.standard_normal(24)
    assert dtw(a, a) == 0.0
    assert 0.0 < dtw(a, b) <= np.abs(a - b).sum() + 1e-12
    shifted = np.roll(a, 1)
    assert dtw(a, shifted) < np.abs(a - shifted).sum()  # warping absorbs a shift


def test_sliced_wasserstein_separates_shifted_samples():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 2))
    near = sliced_wasserstein(x, x, np.random.default_rng(2))
    far = sliced_wasserstein(x, x + 1.0, np.random.default_rng(2))
    assert near == 0.0 and far > 0.5
