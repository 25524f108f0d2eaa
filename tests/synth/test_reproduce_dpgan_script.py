"""scripts/reproduce_dpgan.py: its settings come from public constants, the clipping decay
reaches its declared end point, and its distances behave as distances."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_dpgan.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("reproduce_dpgan", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.mark.parametrize("quick", [False, True])
def test_adult_settings_are_public_constants(script, quick):
    config = script.adult_config(quick)  # no data argument
    rows = script.ADULT_QUICK_ROWS if quick else script.ADULT_TRAIN_ROWS
    assert config.expected_batch_size == pytest.approx(config.sampling_prob * rows)
    assert script.ADULT_TRAIN_ROWS == 32_561  # UCI adult.data, documented


def test_clipping_decay_ends_at_the_declared_fraction(script):
    config = script.with_decay(script.adult_config(True))
    generator_steps = config.num_steps // config.n_critic
    assert config.clipping_decay**generator_steps == pytest.approx(script.DECAY_FINAL_FRACTION)


def test_dtw_is_zero_on_itself_and_at_most_the_l1_distance(script):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(24), rng.standard_normal(24)
    assert script.dtw(a, a) == 0.0
    assert 0.0 < script.dtw(a, b) <= np.abs(a - b).sum() + 1e-12
    shifted = np.roll(a, 1)
    assert script.dtw(a, shifted) < np.abs(a - shifted).sum()  # warping absorbs a shift


def test_sliced_wasserstein_separates_shifted_samples(script):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 2))
    near = script.sliced_wasserstein(x, x, np.random.default_rng(2))
    far = script.sliced_wasserstein(x, x + 1.0, np.random.default_rng(2))
    assert near == 0.0 and far > 0.5
