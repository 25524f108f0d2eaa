"""Marginals' public-shape settings and its no-signal report: ``bins="auto"`` from a declared or
released row count (jdp.synth.marginals.auto_bins), the cells' mean values
(jdp.data.cells.cell_values) and the noise of a column's mean read off the released counts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import PrivacyBudget
from jdp.data.cells import cell_values, undiscretize
from jdp.data.schema import Column, Schema
from jdp.mechanisms.consistency import RARE_SDS
from jdp.random import key_from_seed
from jdp.synth import base
from jdp.synth.feasibility import ROW_COUNT_SHARE
from jdp.synth.marginals import (
    AUTO_BINS,
    MarginalsConfig,
    auto_bins,
    cell_noise_sd,
    codec,
    for_shape,
    noise_multiplier,
    noisy_row_count,
    released_statistics,
)
from jdp.synth.signal import MEAN_PRECISION

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
ALPHA = 1e-3
SCHEMA = Schema(
    columns=(
        Column(name="amount", kind="continuous", lower=0.0, upper=1000.0, point_masses=(0.0,)),
        Column(name="count", kind="integer", lower=0, upper=99, nullable=True),
        Column(name="y", kind="categorical", categories=("a", "b")),
    ),
    target="y",
)


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    count = pd.array(rng.integers(0, 10, n), dtype="Int64")
    count[rng.random(n) < 0.1] = pd.NA
    return pd.DataFrame(
        {
            "amount": np.where(rng.random(n) < 0.5, 0.0, rng.exponential(20.0, n)),
            "count": count,
            "y": rng.choice(["a", "b"], n),
        }
    )


def test_auto_bins_is_the_stated_rule_within_its_range():
    """round(rows per class / (RARE_SDS sd)) clamped to AUTO_BINS, sd the fit's cell noise for
    the histograms released at the rule's first answer: both numeric columns of SCHEMA get a
    fine histogram (refine) when their cells are coarser than fine_bins's, below 17 cells."""
    config = MarginalsConfig()
    z = noise_multiplier("gaussian", BUDGET)

    def rule(rows: float, histograms: int) -> int:
        sd = cell_noise_sd("gaussian", z, histograms)
        return int(np.clip(round(rows / 2 / (RARE_SDS * sd)), *AUTO_BINS))

    for rows in (10.0, 600.0, 2000.0, 1e7):
        first = rule(rows, len(SCHEMA))
        expected = rule(rows, len(SCHEMA) + 2 * (first <= AUTO_BINS[1] // 2))
        assert auto_bins(SCHEMA, config, BUDGET, rows) == expected
    assert auto_bins(SCHEMA, config, BUDGET, 10.0) == AUTO_BINS[0]
    assert auto_bins(SCHEMA, config, BUDGET, 1e7) == AUTO_BINS[1]
    # unconditioned: every row counts for each histogram (twice the rows per cell)
    plain = dataclasses.replace(config, condition_on_target=False)
    assert auto_bins(SCHEMA, plain, BUDGET, 600.0) == auto_bins(SCHEMA, config, BUDGET, 1200.0)
    # Laplace at delta = 0: sd = sqrt(2) d / epsilon (24 cells: nothing refined)
    pure = PrivacyBudget(epsilon=1.0, delta=0.0)
    laplace_sd = np.sqrt(2.0) * len(SCHEMA)
    assert cell_noise_sd("laplace", noise_multiplier("laplace", pure), 3) == laplace_sd
    assert auto_bins(SCHEMA, config, pure, 600.0) == round(300 / (RARE_SDS * laplace_sd)) == 24


def test_for_shape_needs_a_row_count_only_for_auto():
    config = MarginalsConfig()
    assert for_shape(config, SCHEMA, BUDGET, None) is None
    assert for_shape(config, SCHEMA, BUDGET, 1e7).bins == AUTO_BINS[1]
    fixed = MarginalsConfig(bins=8)
    assert for_shape(fixed, SCHEMA, BUDGET, None) is fixed
    with pytest.raises(ValueError, match="resolved from the row count"):
        codec(SCHEMA, config)


def test_fit_resolves_auto_from_a_declared_or_released_row_count():
    """A declared count spends nothing; otherwise the count is released first and the whole
    ledger still meets the budget. The saved config holds the resolved int."""
    frame = _frame(600)
    declared = base.fit_model(key_from_seed(0), "marginals", frame, BUDGET, schema=SCHEMA, rows=600)
    assert declared.ledger.labels == ["marginals"]
    assert declared.config.bins == auto_bins(SCHEMA, MarginalsConfig(), BUDGET, 600.0)
    released = base.fit_model(key_from_seed(0), "marginals", frame, BUDGET, schema=SCHEMA)
    assert released.ledger.labels == ["row count", "marginals"]
    assert isinstance(released.config.bins, int) and AUTO_BINS[0] <= released.config.bins
    # the count's share is subtracted by basic composition (jdp.synth.feasibility)
    assert 1.0 - 2 * ROW_COUNT_SHARE <= released.ledger.epsilon(BUDGET.delta) <= 1.0
    fixed = base.fit_model(
        key_from_seed(0), "marginals", frame, BUDGET, MarginalsConfig(bins=8), schema=SCHEMA
    )
    assert fixed.ledger.labels == ["marginals"] and fixed.config.bins == 8


@pytest.mark.parametrize("name", ["amount", "count"])
def test_cell_values_are_the_means_of_the_decoded_draws(name):
    """Each cell's value is the mean undiscretize draws in it (a z bound at ALPHA over 4000
    draws per cell, from the cell's own spread); masses give their value, missing NaN."""
    col = SCHEMA[name]
    bins = 8
    values = cell_values(col, bins)
    rng = np.random.default_rng(1)
    z = stats.norm.ppf(1 - ALPHA / 2)
    for cell, v in enumerate(values):
        draws = pd.Series(undiscretize(rng, col, np.full(4000, cell), bins)).astype(float)
        if np.isnan(v):
            assert draws.isna().all()
            continue
        spread = max(draws.std(), 1e-12)
        assert abs(draws.mean() - v) <= z * spread / np.sqrt(len(draws)) + 1e-9 * abs(v)
    tail = {"amount": [0.0], "count": [np.nan]}[name]  # the mass cell; the missing cell
    np.testing.assert_array_equal(values[-1:], tail)


def test_reported_mean_noise_is_the_spread_of_the_mean_over_releases():
    """The noise ``released_statistics`` reports for a column's mean is the standard
    deviation of ``sum h v / N`` over repeated releases of the same table (chi-square bound
    at ALPHA on 300 releases, with N the true count: the report's N is a noisy estimate of
    it, within a few percent at this size)."""
    frame = _frame(4000)
    model = base.fit_model(key_from_seed(2), "marginals", frame, BUDGET, schema=SCHEMA, rows=4000)
    (amount, count) = released_statistics(model)
    assert amount.name == "mean of amount (to within half)"
    assert count.name == "mean of count (to within half)"
    config, sd = model.config, float(model.params["noise_sd"][0])
    assert config.bins == AUTO_BINS[1]  # nothing refined: the coarse cells are the fine ones
    v = cell_values(model.schema["amount"], config.bins)  # the fitted schema: with its knots
    rng = np.random.default_rng(3)
    means = [(v @ rng.normal(0.0, sd, (2, v.size)).sum(axis=0)) / 4000 for _ in range(300)]
    ratio = np.var(means, ddof=1) / (amount.noise * noisy_row_count(model) / 4000) ** 2
    dof = len(means) - 1
    assert stats.chi2.ppf(ALPHA / 2, dof) / dof <= ratio <= stats.chi2.ppf(1 - ALPHA / 2, dof) / dof
    # the model's own mean (signal / MEAN_PRECISION above the lower bound 0) is within the
    # reported noise of the real one
    mean = amount.signal / MEAN_PRECISION
    assert abs(mean - frame["amount"].mean()) <= stats.norm.ppf(1 - ALPHA / 2) * amount.noise
