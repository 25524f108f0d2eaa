"""Marginals' refined numeric columns (``refine=True``): a fine histogram per numeric column,
pooled over the classes, decides where in its coarse cell a value falls
(jdp.synth.marginals.coarse_cells, refine_cells, fine_probabilities)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import PrivacyBudget
from jdp.data.quantile_scale import log_knots
from jdp.data.scales import from_unit
from jdp.data.schema import Column, Schema
from jdp.data.transforms import numeric_state, numeric_values
from jdp.random import key_from_seed
from jdp.synth import base
from jdp.synth.marginals import (
    MarginalsConfig,
    coarse_cells,
    fine_bins,
    histogram_shapes,
    refine_cells,
    refined,
)

ALPHA = 1e-3
COLUMNS = (
    log_knots(Column(name="amount", kind="continuous", lower=0.0, upper=1e5)),
    log_knots(Column(name="count", kind="integer", lower=0, upper=2500, point_masses=(0.0,))),
    Column(name="plain", kind="integer", lower=0, upper=99, nullable=True),
    Column(name="small", kind="integer", lower=0, upper=10, point_masses=(10.0,)),
    Column(name="minmax", kind="continuous", lower=-5.0, upper=5.0, point_masses=(0.0,)),
)


@pytest.mark.parametrize("bins", [2, 4, 5, 7, 11, 16, 17, 32])
@pytest.mark.parametrize("column", COLUMNS, ids=lambda c: c.name)
def test_every_value_falls_in_the_coarse_cell_of_its_fine_cell(column, bins):
    """The per-class histograms count a record's coarse cell, the fine one its fine cell: the
    two must agree for every value (masses and missing included), or one record could move
    cells of the coarse histograms that its fine cell does not account for."""
    rng = np.random.default_rng(bins)
    x = np.concatenate(
        [
            rng.uniform(column.lower, column.upper, 3000),
            np.exp(rng.uniform(0, np.log1p(column.upper - column.lower), 3000)) - 1 + column.lower,
            np.arange(column.lower, min(column.upper, column.lower + 200) + 1),
            [column.lower, column.upper, *column.point_masses, np.nan],
        ]
    )
    if column.kind == "integer":
        x = np.round(x)
    if not column.nullable:
        x = x[~np.isnan(x)]
    fine = fine_bins(bins)
    assert fine % bins == 0 and fine <= 32
    mapped = coarse_cells(column, bins, fine)[numeric_state(column, x, fine)]
    np.testing.assert_array_equal(mapped, numeric_state(column, x, bins))


def test_refine_cells_draws_each_fine_cell_by_its_share_within_the_coarse_cell():
    """Chi-square at ALPHA over the fine cells of each coarse cell."""
    group = np.array([2, 0, 0, 1, 0, 1, 3])
    shares = np.array([1.0, 0.2, 0.5, 0.9, 0.3, 0.1, 1.0])
    rng = np.random.default_rng(0)
    coarse = rng.integers(0, 4, 40_000)
    fine = refine_cells(rng, coarse, group, shares)
    np.testing.assert_array_equal(group[fine], coarse)
    for g in range(4):
        members = np.flatnonzero(group == g)
        seen = np.array([(fine == f).sum() for f in members])
        expected = shares[members] * (coarse == g).sum()
        if len(members) > 1:
            assert stats.chisquare(seen, expected).pvalue > ALPHA


def test_the_fine_histograms_are_in_the_sensitivity():
    """One more histogram per refined numeric column (none for a column whose cells are
    already its integers, or at 17 cells and more)."""
    schema = Schema(
        columns=(*COLUMNS, Column(name="y", kind="categorical", categories=("a", "b"))), target="y"
    )
    coarse = MarginalsConfig(bins=5)
    assert [c.name for c in refined(schema, coarse)] == [c.name for c in COLUMNS]
    assert len(histogram_shapes(schema, coarse)) == len(schema) + len(COLUMNS)
    assert refined(schema, MarginalsConfig(bins=17)) == ()
    assert refined(schema, dataclasses.replace(coarse, refine=False)) == ()


def test_a_long_tail_mean_is_kept_to_its_fine_cells():
    """German-like credit amounts on a public [0, 1e5] at 5 cells (each a decade of the log
    scale), with negligible noise. Refined, the synthetic mean differs from the real one by
    at most the mass-weighted width of the fine cells its values are drawn in, plus its
    sampling error (z at ALPHA). Unrefined (drawn on the coarse decade) it is further off
    than the refined one by more than both sampling errors together."""
    rng = np.random.default_rng(4)
    n = 4000
    frame = pd.DataFrame(
        {"amount": np.round(rng.lognormal(np.log(2300), 0.75, n)), "y": rng.choice(["a", "b"], n)}
    )
    schema = Schema(
        columns=(
            Column(name="amount", kind="continuous", lower=0.0, upper=1e5),
            Column(name="y", kind="categorical", categories=("a", "b")),
        ),
        target="y",
    )
    budget = PrivacyBudget(epsilon=1e4, delta=1e-5)
    z = stats.norm.ppf(1 - ALPHA / 2)
    error, sampling = {}, {}
    for refine in (True, False):
        config = MarginalsConfig(bins=5, refine=refine)
        model = base.fit_model(key_from_seed(1), "marginals", frame, budget, config, schema=schema)
        synthetic = base.sample_model(key_from_seed(2), model, n)["amount"]
        error[refine] = abs(synthetic.mean() - frame["amount"].mean())
        sampling[refine] = z * synthetic.std() / np.sqrt(n)
    col, fine = model.schema["amount"], fine_bins(5)
    edges = from_unit(col, np.arange(fine + 1) / fine)
    cells = numeric_state(col, numeric_values(frame["amount"]), fine)
    width = np.bincount(cells, minlength=fine) / n @ np.diff(edges)
    assert error[True] <= width + sampling[True]
    assert error[False] - error[True] > sampling[True] + sampling[False]
