"""Counting queries with a sanity bound (DPGM Section 6.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jdp.eval.queries import (
    CountingQuery,
    InRange,
    InSet,
    query_error_summary,
    random_queries,
    relative_errors,
)


def test_hand_computed_errors_rescaling_and_sanity_bound():
    real = pd.DataFrame({"c": ["a"] * 6 + ["b"] * 4, "v": np.arange(10.0)})
    synthetic = pd.DataFrame({"c": ["a"] * 10 + ["b"] * 8 + ["z"] * 2, "v": np.arange(20.0) / 2})
    queries = [
        CountingQuery(atoms=(InSet(column="c", values=frozenset({"a"})),)),  # real 6, synth 10 -> 5
        CountingQuery(atoms=(InSet(column="c", values=frozenset({"z"})),)),  # real 0, synth 2 -> 1
        CountingQuery(
            atoms=(InRange(column="v", low=-np.inf, high=4.0),)
        ),  # real 5, synth 9 -> 4.5
    ]
    errors = relative_errors(queries, real, synthetic, sanity_fraction=0.1)  # s = 1 row
    assert errors == pytest.approx([1 / 6, 1 / 1, 0.5 / 5])
    # a larger sanity bound caps the weight of the small queries
    errors = relative_errors(queries, real, synthetic, sanity_fraction=0.8)  # s = 8 rows
    assert errors == pytest.approx([1 / 8, 1 / 8, 0.5 / 8])


def test_conjunction_and_disjunction():
    frame = pd.DataFrame({"x": [0.0, 1.0, 1.0, 0.0], "y": [0.0, 0.0, 1.0, 1.0]})
    atoms = (InRange(column="x", low=0.5, high=np.inf), InRange(column="y", low=0.5, high=np.inf))
    assert CountingQuery(atoms=atoms, combine="all").count(frame) == 1
    assert CountingQuery(atoms=atoms, combine="any").count(frame) == 3


def test_identical_and_duplicated_tables_have_zero_error(tables):
    train, _ = tables
    queries = random_queries(np.random.default_rng(0), train, 200)
    assert relative_errors(queries, train, train).max() == 0.0
    doubled = pd.concat([train, train], ignore_index=True)
    assert relative_errors(queries, train, doubled).max() == pytest.approx(0.0, abs=1e-12)


def test_random_queries_are_reproducible_and_well_formed(tables):
    train, _ = tables
    a = random_queries(np.random.default_rng(5), train, 300, max_atoms=3)
    b = random_queries(np.random.default_rng(5), train, 300, max_atoms=3)
    assert a == b
    assert {len(q.atoms) for q in a} == {1, 2, 3}
    for q in a:
        columns = [atom.column for atom in q.atoms]
        assert len(set(columns)) == len(columns)
        for atom in q.atoms:
            if isinstance(atom, InSet):  # a proper subset of a column with >= 2 values
                assert 0 < len(atom.values) < train[atom.column].nunique()
    counts = np.array([q.count(train) for q in a])
    assert counts.min() >= 0 and counts.max() <= len(train)
    assert len(np.unique(counts)) > 50  # the workload spans many selectivities


def test_breaking_dependence_raises_the_error_above_the_sampling_floor(tables, table_factory):
    """Conjunctive queries see the joint distribution: independent shuffles of the columns
    keep every 1-way count and lose the dependence, fresh samples only add noise. The floor's
    spread is measured over 10 fresh samples."""
    train, _ = tables
    rng = np.random.default_rng(11)
    queries = random_queries(rng, train, 300, max_atoms=3)
    floors = [
        relative_errors(queries, train, table_factory(rng, len(train))).mean() for _ in range(10)
    ]
    shuffled = pd.DataFrame({c: rng.permutation(train[c].to_numpy()) for c in train.columns})
    assert relative_errors(queries, train, shuffled).mean() > np.mean(floors) + 6 * np.std(
        floors, ddof=1
    )


def test_summary(tables):
    train, test = tables
    summary = query_error_summary(np.random.default_rng(0), train, test, n_queries=100)
    assert summary["n_queries"] == 100
    assert 0 <= summary["median"] <= summary["p90"]
    assert summary["mean"] > 0


def test_bad_input(tables):
    train, _ = tables
    with pytest.raises(ValueError, match="sanity_fraction > 0"):
        relative_errors([], train, train, sanity_fraction=0)
    with pytest.raises(ValueError, match="column 'x' of real is missing from synthetic"):
        relative_errors([], train, train.drop(columns="x"))
    with pytest.raises(ValueError, match="n_queries >= 1"):
        random_queries(np.random.default_rng(0), train, 0)
    with pytest.raises(ValueError, match="expected low < high for column 'x'"):
        InRange(column="x", low=1.0, high=1.0)
