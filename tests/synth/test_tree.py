"""DP tree of marginals: sensitivities, the ledger, the compression, the selection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import PrivacyBudget
from accounting.compose import best_epsilon
from jdp.data.schema import Column, Schema
from jdp.mechanisms.consistency import AUTO_BINS
from jdp.random import key_from_seed
from jdp.synth import base
from jdp.synth.signal import MEAN_PRECISION
from jdp.synth.tree import (
    RARE_SDS,
    TreeConfig,
    _multipliers,
    auto_bins,
    codec,
    column_model,
    compressed_size,
    compression,
    counts,
    edge_scores,
    for_shape,
    multipliers,
    plan,
    released_statistics,
    sample_arrays,
)

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
SCHEMA = Schema(
    columns=(
        Column(name="a", kind="categorical", categories=("x", "y", "z")),
        Column(name="b", kind="categorical", categories=("x", "y", "z")),
        Column(name="c", kind="integer", lower=0, upper=3),
        Column(name="t", kind="categorical", categories=("n", "p")),
    ),
    target="t",
)


def frame(n: int, seed: int) -> pd.DataFrame:
    """``b`` copies ``a``; ``c`` and ``t`` are independent of everything."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z"], n)
    return pd.DataFrame(
        {"a": a, "b": a, "c": rng.integers(0, 4, n), "t": rng.choice(["n", "p"], n)}
    )


def fit(
    seed: int, data: pd.DataFrame, budget: PrivacyBudget = BUDGET, rows: float | None = None
) -> base.FittedModel:
    """A fit; ``rows`` declared public skips the shape rule's class counts."""
    return base.fit_model(
        key_from_seed(seed), "tree", data, budget, TreeConfig(bins=4), schema=SCHEMA, rows=rows
    )


@pytest.mark.parametrize("seed", range(3))
def test_each_edge_score_moves_by_at_most_one_between_neighbours(seed):
    """The exponential mechanism's utility has sensitivity 1: with the released one-ways
    fixed, adding any record moves every pair's L1 score by at most 1."""
    rng = np.random.default_rng(seed)
    sizes = [3, 4, 2, 5]
    cells = np.column_stack([rng.integers(0, s, 200) for s in sizes])
    one_way = [rng.normal(50, 20, s) for s in sizes]
    before = edge_scores(cells, sizes, one_way)
    for _ in range(20):
        extra = np.array([[rng.integers(0, s) for s in sizes]])
        after = edge_scores(np.vstack([cells, extra]), sizes, one_way)
        assert all(abs(after[p] - before[p]) <= 1 + 1e-9 for p in before)


def test_counts_of_a_pair_change_in_one_cell_per_record():
    cells = np.array([[0, 1], [2, 0]])
    added = np.vstack([cells, [[1, 1]]])
    diff = counts(added, [3, 2], 0, 1) - counts(cells, [3, 2], 0, 1)
    assert diff.sum() == 1 and (diff != 0).sum() == 1


def test_ledger_is_the_plan_and_meets_the_budget_tightly():
    model = fit(0, frame(300, 0), rows=300.0)
    assert model.ledger.labels == ["tree/one-way", "tree/selection", "tree/two-way"]
    z = multipliers(4, BUDGET, TreeConfig(bins=4))
    planned = best_epsilon(plan(4, z), BUDGET.delta).value
    assert model.epsilon() == pytest.approx(planned, rel=1e-9)
    assert 0.99 <= model.epsilon() <= 1.0 * (1 + 1e-9)


def test_pure_dp_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="needs delta > 0"):
        fit(0, frame(50, 0), PrivacyBudget(epsilon=1.0, delta=0.0))


def test_rare_cells_share_one_index_and_frequent_ones_keep_theirs():
    noisy = np.array([100.0, 2.0, 40.0, -5.0, 31.0])
    m = compression(noisy, sd=10.0)  # kept: >= 30
    assert RARE_SDS == 3.0
    np.testing.assert_array_equal(m, [0, 3, 1, 3, 2])
    np.testing.assert_array_equal(compression(np.array([50.0, 60.0]), 10.0), [0, 1])


def test_at_high_epsilon_the_copied_pair_is_an_edge_and_survives_sampling():
    """``b = a`` is the only dependence: the selection takes the pair, and the samples keep
    ``b = a`` (beside the independent pair ``a, c`` as a control)."""
    model = fit(1, frame(3000, 1), PrivacyBudget(epsilon=50.0, delta=1e-5))
    edges = {tuple(sorted(e)) for e in np.asarray(model.params["edges"]).tolist()}
    assert (0, 1) in edges
    out = base.sample_model(key_from_seed(2), model, 2000)
    assert (out["a"] == out["b"]).mean() > 0.95
    # a and c independent: a == "x" and c == 0 about 1/3 * 1/4 of rows (binomial 5 sd)
    share = ((out["a"] == "x") & (out["c"] == 0)).mean()
    assert abs(share - 1 / 12) < 5 * np.sqrt(1 / 12 * 11 / 12 / 2000)


def test_reported_mean_noise_is_the_spread_of_the_one_way_mean_over_releases():
    """The no-signal report names ``c``'s mean with noise ``s sqrt(sum v_c^2) / N``: the
    standard deviation of ``sum_c h_c v_c / N`` over one-way releases of noise sd ``s``
    (chi-square bound at ALPHA on 300 draws, ``N`` the true count; the report divides by the
    noisy total, within a few percent at 4,000 rows); and the model's own mean (its signal
    over MEAN_PRECISION, lower bound 0) is within the z bound of that noise of the real one."""
    alpha, n = 1e-3, 4000
    data = frame(n, 1)
    model = fit(2, data)
    (release,) = released_statistics(model)
    assert release.name == "mean of c (to within half)"
    sd = float(model.params["sd"][0])
    v = np.arange(4.0)  # one cell per integer of c
    rng = np.random.default_rng(3)
    means = v @ rng.normal(0.0, sd, (4, 300)) / n
    ratio = np.var(means, ddof=1) / (release.noise * base.noisy_row_count(model) / n) ** 2
    dof = len(means) - 1
    assert stats.chi2.ppf(alpha / 2, dof) / dof <= ratio <= stats.chi2.ppf(1 - alpha / 2, dof) / dof
    z = stats.norm.ppf(1 - alpha / 2)
    assert abs(release.signal / MEAN_PRECISION - data["c"].mean()) <= z * release.noise


def test_every_sampled_column_follows_its_one_way_whatever_the_two_way_tables_say():
    """The edges' tables give the dependence, the one-ways each column's distribution: with
    every two-way table replaced by one that puts all its mass in its first cell, each
    sampled column still follows its one-way distribution (chi-square goodness of fit at
    ALPHA; a cell the one-way leaves empty is never drawn). Before the tables were raked,
    every child came out as its first cell."""
    alpha, n = 1e-3, 4000
    model = fit(2, frame(3000, 1))
    config = model.config
    one_way, sd, _, probs = column_model(model.params, SCHEMA, config)
    small = [compressed_size(compression(h, sd)) for h in one_way]
    edges = np.asarray(model.params["edges"]).reshape(-1, 2).tolist()
    starts = np.cumsum([0] + [small[i] * small[j] for i, j in edges])[:-1]
    spiked = np.zeros_like(model.params["two_way"])
    spiked[starts] = 3000.0
    params = {**model.params, "two_way": spiked}
    cells = sample_arrays(key_from_seed(3), params, codec(SCHEMA, config), config, n)
    for i, p in enumerate(probs):
        observed = np.bincount(cells[:, i], minlength=p.size)
        assert observed[p == 0].sum() == 0
        _, pvalue = stats.chisquare(observed[p > 0], n * p[p > 0])
        assert pvalue > alpha, (SCHEMA.names[i], observed, n * p)


def test_auto_bins_is_the_noise_rule_and_a_fit_resolves_it_from_the_declared_rows():
    """``round(rows / (RARE_SDS z_1 sqrt(d)))`` within AUTO_BINS; ``None`` until a row count
    is known; a fit with a declared count spends nothing more and keeps the resolved int."""
    config = TreeConfig()
    sd = multipliers(4, BUDGET, config)["one-way"] * 2.0
    for rows in (10.0, 3000.0, 1e7):
        expected = int(np.clip(round(rows / (RARE_SDS * sd)), *AUTO_BINS))
        assert auto_bins(SCHEMA, BUDGET, config, rows) == expected
    assert auto_bins(SCHEMA, BUDGET, config, 1e7) == AUTO_BINS[1]
    assert for_shape(config, SCHEMA, BUDGET, None) is None
    assert for_shape(TreeConfig(bins=4), SCHEMA, BUDGET, None).bins == 4
    with pytest.raises(ValueError, match="resolved from the row count"):
        codec(SCHEMA, config)
    _multipliers.cache_clear()
    model = base.fit_model(
        key_from_seed(0), "tree", frame(3000, 1), BUDGET, config, schema=SCHEMA, rows=3000
    )
    assert _multipliers.cache_info().misses == 1  # the cells and the noise: one search
    assert model.config.bins == auto_bins(SCHEMA, BUDGET, config, 3000.0)
    assert model.ledger.labels == ["tree/one-way", "tree/selection", "tree/two-way"]
