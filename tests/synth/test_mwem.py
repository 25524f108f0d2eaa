"""MWEM (jdp.synth.mwem): the pure-DP ledger meets the budget, it learns the workload (beats
the uniform start, near-exact at a huge epsilon), its selection picks the worst-answered
query, and bad input is refused in one line."""

from __future__ import annotations

import re

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget, compute_epsilon
from jdp.data.schema import Column, Schema
from jdp.synth.base import fit_model, sample_model
from jdp.synth.mwem import (
    MWEMConfig,
    domain_cells,
    mwem,
    mwem_event,
    pure_epsilon_for,
    random_workload,
)

SHAPE = (2, 2, 2, 2)


def _skewed_histogram(n: int = 2000, seed: int = 0) -> np.ndarray:
    """Counts over 16 cells of 4 binary columns, concentrated on a few cells."""
    p = np.random.default_rng(seed).dirichlet(np.full(16, 0.3))
    return np.random.default_rng(seed + 1).multinomial(n, p).astype(np.float64)


def _error(queries, hist, dist, n):
    return float(np.mean(np.abs(queries @ hist - n * (queries @ dist))))


def test_ledger_is_pure_and_meets_the_budget():
    hist = _skewed_histogram()
    queries = random_workload(np.random.default_rng(0), SHAPE, 30, 2)
    _, _, ledger = mwem(np.random.default_rng(1), hist, queries, epsilon=0.7, iterations=12)
    assert ledger.labels == ["mwem-size"] + ["mwem-round"] * 12
    pure = compute_epsilon(ledger.event, 0.0)  # delta = 0: basic composition of pure events
    assert pure == pytest.approx(0.7, rel=1e-12)
    assert ledger.epsilon(1e-5) <= 0.7 * (1 + 1e-12)
    # the data-free plan is the ledger's event (under the ledger's rule: the best accountant,
    # here PLD, whose grid search agrees to ~1e-11 on the two equal nestings of the events)
    assert compute_epsilon(mwem_event(0.7, 12), 1e-5, accountant="best") == pytest.approx(
        ledger.epsilon(1e-5), rel=1e-9
    )


def test_pure_epsilon_for_an_approximate_budget_uses_the_budget():
    """With delta > 0 MWEM runs at a larger pure epsilon whose composed ledger (the best
    accountant's figure, what the ledger reports) meets the budget within calibrate's
    tolerance (and never above it)."""
    budget = PrivacyBudget(epsilon=0.5, delta=1e-5)
    pure = pure_epsilon_for(budget, 30)
    assert pure > 0.5
    eps = compute_epsilon(mwem_event(pure, 30), 1e-5, accountant="best")
    assert 0.5 * (1 - 2e-3) <= eps <= 0.5 * (1 + 1e-12)
    assert pure_epsilon_for(PrivacyBudget(epsilon=0.5, delta=0.0), 30) == 0.5


def test_learns_the_workload():
    """At a huge epsilon MWEM answers the workload almost exactly; at a moderate one it
    still beats the uniform distribution it starts from (same noisy size)."""
    hist = _skewed_histogram()
    n = hist.sum()
    queries = random_workload(np.random.default_rng(2), SHAPE, 40, 3).astype(float)
    uniform = np.full(16, 1 / 16)
    exact, n_hat, _ = mwem(
        np.random.default_rng(3), hist, queries, epsilon=1e5, iterations=40, replays=30
    )
    assert abs(n_hat - n) < 1
    assert _error(queries, hist, exact, n) < 0.05 * _error(queries, hist, uniform, n)
    noisy, _, _ = mwem(np.random.default_rng(4), hist, queries, epsilon=1.0, iterations=10)
    assert _error(queries, hist, noisy, n) < _error(queries, hist, uniform, n)


def test_selection_prefers_the_worst_answered_query():
    """One round at a large epsilon measures the query the uniform start answers worst: the
    distribution then moves mass into its cells."""
    hist = np.zeros(16)
    hist[5] = 1000.0
    queries = np.eye(16)  # query i counts cell i; the uniform start misses cell 5 the most
    dist, _, _ = mwem(np.random.default_rng(0), hist, queries, epsilon=1e3, iterations=1, replays=1)
    assert int(np.argmax(dist)) == 5


def test_domain_cells_enumerate_the_mixed_radix():
    cells = domain_cells((2, 3))
    np.testing.assert_array_equal(cells, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]])


def test_bad_input_is_one_line():
    wide = Schema(
        columns=tuple(Column(name=f"b{j}", kind="integer", lower=0, upper=1) for j in range(20))
    )
    frame = pd.DataFrame(np.zeros((5, 20), dtype=int), columns=wide.names)
    with pytest.raises(
        ValueError,
        match=re.escape("MWEM needs a domain of at most max_domain=65536 cells, got 1048576"),
    ):
        fit_model(
            jax.random.key(0), "mwem", frame, PrivacyBudget(epsilon=1.0, delta=1e-5), schema=wide
        )
    with pytest.raises(ValueError, match=re.escape("expected a (N,) histogram and (Q, N) queries")):
        mwem(np.random.default_rng(0), np.zeros(4), np.zeros((3, 5)), epsilon=1.0, iterations=2)
    with pytest.raises(ValueError, match="expected iterations >= 1"):
        MWEMConfig(iterations=0)


def test_table_round_trip_keeps_the_schema():
    schema = Schema(
        columns=(
            Column(name="a", kind="integer", lower=0, upper=1),
            Column(name="c", kind="categorical", categories=("x", "y", "z")),
            Column(name="v", kind="continuous", lower=0.0, upper=2.0),
        )
    )
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 2, 200),
            "c": rng.choice(["x", "y"], 200),
            "v": rng.uniform(0, 2, 200),
        }
    )
    model = fit_model(
        jax.random.key(0), "mwem", frame, PrivacyBudget(epsilon=5.0, delta=1e-5),
        MWEMConfig(iterations=10, n_queries=50, bins=4), schema=schema,
    )  # fmt: skip
    rows = sample_model(jax.random.key(1), model, 300)
    assert list(rows.columns) == ["a", "c", "v"] and set(rows["a"]) <= {0, 1}
    assert rows["v"].between(0, 2).all()
    # "z" never occurs in the data: MWEM learns it is rare
    assert (rows["c"] == "z").mean() < 1 / 3
