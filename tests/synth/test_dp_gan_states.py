"""dp-GAN's state counts (jdp.synth.dp_gan with jdp.synth.states): the release sits in the
ledger beside DP-SGD within the budget, and sampling draws the point masses with the released
frequencies (a binomial bound)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import PrivacyBudget
from jdp.data.schema import Column, Schema
from jdp.dpsgd.noise import noise_cut
from jdp.mechanisms.noise import gaussian_event
from jdp.synth.base import fit_model, sample_model
from jdp.synth.dp_gan.model import calibrate_noise, codec, fit_arrays, init_state
from jdp.synth.states import state_counts

from .test_dp_gan import CONFIG

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
SCHEMA = Schema(
    columns=(
        Column(name="gain", kind="integer", lower=0, upper=100, point_masses=(0,)),
        Column(name="age", kind="continuous", lower=0.0, upper=1.0),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    ),
    target="y",
)
CODEC = codec(SCHEMA, CONFIG)
ALPHA = 1e-3

#: A declared public row count: the method alone, without the shape rule's count release.
DECLARED_ROWS = 10**6


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "gain": np.where(rng.random(n) < 0.9, 0, rng.integers(1, 101, n)),
            "age": rng.random(n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


@pytest.fixture(scope="module")
def model():
    """One fit through the method on a table with a point-mass column, shared."""
    return fit_model(
        jax.random.key(0), "dp-gan", SCHEMA.conform(_frame(50)), BUDGET, CONFIG, rows=DECLARED_ROWS
    )


def test_state_counts_and_dpsgd_share_the_budget(model):
    """With a point-mass column the ledger is ``dp-sgd`` then ``dp-gan-state-counts`` (the
    counts' Gaussian at the jointly calibrated multiplier) and meets the budget (not far
    below it); the DP-SGD run gets more noise than it would alone; without state blocks the
    ledger is DP-SGD alone (``test_dp_gan.py::test_fit_meets_the_budget_and_names_the_path``)."""
    x = CODEC.encode(_frame(50))
    assert CODEC.state_blocks and model.ledger.labels == ["dp-sgd", "dp-gan-state-counts"]
    init_key = jax.random.split(jax.random.key(0), 5)[0]  # fit_arrays' first key
    critic, _ = init_state(init_key, CONFIG, CODEC.layout)
    cut, dp = noise_cut(critic), CONFIG.dpsgd
    z = calibrate_noise(dp, BUDGET, noise_cut=cut, state_share=CONFIG.state_share)
    assert model.ledger.entries[0].event == dp.event(z.sgd, len(x), noise_cut=cut)
    assert model.ledger.entries[1].event == gaussian_event(z.states)
    eps = model.ledger.epsilon(BUDGET.delta)
    assert BUDGET.epsilon * 0.99 <= eps <= BUDGET.epsilon * (1 + 1e-9)
    alone = calibrate_noise(dp, BUDGET, noise_cut=cut, state_share=None)
    assert z.sgd > alone.sgd and alone.states is None
    assert model.params["state_counts"].shape == (1, 2)
    # non-private limit: the exact counts, no noise
    params, _ = fit_arrays(jax.random.key(0), x, CODEC, None, CONFIG)
    np.testing.assert_array_equal(
        params["state_counts"], state_counts(np.zeros(len(x), int), 1, x, CODEC.state_blocks)
    )


@pytest.mark.parametrize("share", [0.3, 0.8])
def test_sampled_zero_share_is_the_released_one(model, share):
    """End to end (fit, set released counts, sample, decode): the number of exact zeros is
    within the binomial z-bound at ALPHA of ``n * share``, whatever the (barely trained)
    generator makes; without the matching the generator's own share is far off (0.3 and
    0.8 cannot both be near it; checked by removing the ``match_state_counts`` call)."""
    counts = np.array([[1000.0 * (1 - share), 1000.0 * share]])
    released = dataclasses.replace(model, params={**model.params, "state_counts": counts})
    n = 3000
    zeros = int((sample_model(jax.random.key(3), released, n)["gain"] == 0).sum())
    bound = stats.norm.ppf(1 - ALPHA / 2) * np.sqrt(n * share * (1 - share))
    assert abs(zeros - n * share) <= bound
