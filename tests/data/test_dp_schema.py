"""DP schema release: exponential-mechanism quantiles and thresholded category discovery."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import events as ev
from jdp.data.dp_schema import (
    SchemaRelease,
    dp_categories,
    dp_quantile,
    infer_schema_dp,
    load_schema,
    threshold_for,
)
from jdp.data.schema import Schema, SuppressedCategoryWarning


def em_log_density(
    values: np.ndarray, q: float, eps: float, lower: float, upper: float, grid: np.ndarray
) -> np.ndarray:
    """Log density of the quantile mechanism's output at ``grid``, computed independently of
    the implementation: density(t) proportional to exp(-eps |#{x < t} - q n| / 2) on [lower, upper]."""
    x = np.sort(np.clip(values, lower, upper))
    below = np.searchsorted(x, grid, side="right")
    u = -np.abs(below - q * len(x))
    # normaliser: integral over [lower, upper] of exp(eps u / 2), piecewise constant
    points = np.concatenate([[lower], x, [upper]])
    k = np.arange(len(points) - 1)
    log_terms = np.log(np.maximum(np.diff(points), 1e-300)) - eps * np.abs(k - q * len(x)) / 2
    log_z = np.logaddexp.reduce(log_terms[np.diff(points) > 0])
    return eps * u / 2 - log_z


@pytest.mark.parametrize("q", [0.01, 0.5, 0.99])
def test_quantile_density_ratio_is_bounded_on_adversarial_neighbours(q):
    """For D and D plus one record (at either bound, at the median, or a duplicate), the
    output densities differ by at most a factor exp(eps) everywhere on a fine grid."""
    eps, lower, upper = 0.7, 0.0, 100.0
    data = np.random.default_rng(0).uniform(20, 60, size=40)
    grid = np.linspace(lower, upper, 20_001)[1:-1]
    for extra in (lower, upper, 1e9, -1e9, np.median(data), data[3]):
        ld1 = em_log_density(data, q, eps, lower, upper, grid)
        ld2 = em_log_density(np.append(data, extra), q, eps, lower, upper, grid)
        assert np.max(np.abs(ld1 - ld2)) <= eps + 1e-9


def test_quantile_is_accurate_at_high_epsilon_and_stays_in_range():
    rng = np.random.default_rng(1)
    data = rng.normal(50, 10, size=2000)
    for q in (0.05, 0.5, 0.95):
        value, event = dp_quantile(rng, data, q, lower=0, upper=100, epsilon=10.0)
        assert event == ev.PureDpEvent(10.0)
        # utility gap r ranks costs a factor exp(-5 r); 20 ranks is beyond any plausible draw
        assert abs(np.mean(data < value) - q) <= 20 / len(data)
    values = [dp_quantile(rng, data, 0.5, lower=0, upper=100, epsilon=1e-3)[0] for _ in range(50)]
    assert min(values) >= 0 and max(values) <= 100


def test_quantile_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="expected epsilon > 0"):
        dp_quantile(rng, np.ones(3), 0.5, lower=0, upper=1, epsilon=0)
    with pytest.raises(ValueError, match="q in"):
        dp_quantile(rng, np.ones(3), 1.5, lower=0, upper=1, epsilon=1)
    with pytest.raises(ValueError, match="lower < upper"):
        dp_quantile(rng, np.ones(3), 0.5, lower=1, upper=1, epsilon=1)


def test_threshold_gives_exactly_delta():
    for eps, delta in ((0.1, 1e-6), (1.0, 1e-9), (3.0, 0.01)):
        tau = threshold_for(eps, delta)
        assert stats.laplace.sf(tau - 1, scale=1 / eps) == pytest.approx(delta, rel=1e-9)


def test_categories_keep_frequent_and_drop_singletons():
    rng = np.random.default_rng(2)
    values = ["a"] * 500 + ["b"] * 300 + ["rare"]
    cats, event = dp_categories(rng, values, epsilon=1.0, delta=1e-6)
    assert cats == ("a", "b") and event == ev.EpsilonDeltaDpEvent(epsilon=1.0, delta=1e-6)
    # a singleton passes the threshold with probability exactly delta: at delta = 0.3,
    # the pass rate over 2000 trials is within a 6-sigma binomial bound
    passes = sum(
        "rare" in dp_categories(rng, ["rare"], epsilon=1.0, delta=0.3)[0] for _ in range(2000)
    )
    assert abs(passes / 2000 - 0.3) < 6 * np.sqrt(0.3 * 0.7 / 2000)


def test_infer_schema_dp_on_a_table():
    rng = np.random.default_rng(3)
    n = 5000
    data = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "w": rng.uniform(0, 1000, n),
            "c": rng.choice(["x", "y", "z"], n),
            "label": rng.choice(["no", "yes"], n),
        }
    )
    release = infer_schema_dp(
        rng,
        data,
        epsilon=4.0,
        kinds={"age": "integer", "w": "continuous", "c": "categorical", "label": "categorical"},
        ranges={"age": (0, 150), "w": (0, 1e6)},
        target="label",
    )
    s = release.schema
    assert s.names == ["age", "w", "c", "label"] and s.target == "label"
    assert s["c"].categories == ("x", "y", "z") and s["label"].categories == ("no", "yes")
    assert 0 <= s["age"].lower < 25 and 72 < s["age"].upper <= 150
    assert s["w"].lower < 50 and 950 < s["w"].upper <= 1e6
    assert release.ledger.labels == [
        "dp-quantiles:age",
        "dp-quantiles:w",
        "dp-categories:c",
        "dp-categories:label",
    ]
    # each column gets epsilon / 4; two categorical columns add delta 1e-7 each; at that
    # delta the quantiles compose purely, so epsilon is exactly the total
    assert release.epsilon == pytest.approx(4.0) and release.delta == pytest.approx(2e-7)
    assert "(4, 2e-07)-DP" in release.privacy_statement()


def test_infer_schema_dp_errors():
    rng = np.random.default_rng(4)
    data = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    with pytest.raises(ValueError, match="column 'b' has no declared kind"):
        infer_schema_dp(rng, data, epsilon=1, kinds={"a": "continuous"}, ranges={"a": (0, 1)})
    with pytest.raises(ValueError, match="column 'a': a coarse public range"):
        infer_schema_dp(rng, data[["a"]], epsilon=1, kinds={"a": "continuous"}, ranges={})
    with pytest.raises(ValueError, match="column 'b': no category passed"):
        infer_schema_dp(rng, data[["b"]], epsilon=0.1, kinds={"b": "categorical"}, ranges={})


def _table_with_rare_values(rng: np.random.Generator, n: int = 3000) -> pd.DataFrame:
    """Frequent categories plus one record each of two rare, identifying values."""
    data = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "work": rng.choice(["Private", "Gov"], n),
            "label": rng.choice([0, 1], n),
        }
    )
    data.loc[5, "work"] = "Never-worked-Zyx"
    data.loc[9, "label"] = 907
    return data


def _release(rng: np.random.Generator, data: pd.DataFrame):
    return infer_schema_dp(
        rng, data, epsilon=3.0, ranges={"x": (0, 100)}, target="label",
        kinds={"x": "continuous", "work": "categorical", "label": "categorical"},
    )  # fmt: skip


def test_suppressed_categories_drop_their_records_without_echoing_them():
    """Records holding a value that DP discovery suppressed are dropped by a fixed public
    filter (the released categories) instead of raising; no message shows the values."""
    rng = np.random.default_rng(5)
    data = _table_with_rare_values(rng)
    release = _release(rng, data)
    assert release.schema.from_release
    assert release.schema["work"].categories == ("Gov", "Private")
    assert release.schema["label"].categories == (0, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = release.schema.conform(data)
    messages = [str(w.message) for w in caught]
    dropped = [str(w.message) for w in caught if w.category is SuppressedCategoryWarning]
    assert len(dropped) == 1 and "'work'" in dropped[0] and "'label'" in dropped[0]
    assert not any("Zyx" in m or "907" in m for m in messages)
    assert len(table) == len(data) - 2
    expected = data.drop(index=[5, 9]).reset_index(drop=True)
    x = release.schema["x"]
    expected["x"] = expected["x"].clip(x.lower, x.upper)  # released bounds clip, as declared ones
    pd.testing.assert_frame_equal(table.frame, expected, check_dtype=False)


def test_release_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(6)
    release = _release(rng, _table_with_rare_values(rng, 500))
    path = tmp_path / "release.json"
    release.save(path)
    loaded = SchemaRelease.load(path)
    assert loaded == release and loaded.ledger.to_dict() == release.ledger.to_dict()
    assert loaded.epsilon == pytest.approx(release.epsilon) and loaded.delta == release.delta
    assert load_schema(path) == release
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.json"]  # no temporary left
    release.schema.save(tmp_path / "bare.json")
    assert load_schema(tmp_path / "bare.json") == release.schema
    with pytest.raises(ValueError, match="a bare schema, without the ledger"):
        SchemaRelease.load(tmp_path / "bare.json")
    with pytest.raises(ValueError, match="saved SchemaRelease"):
        Schema.load(path)
    with pytest.raises(FileNotFoundError, match="schema file not found"):
        load_schema(tmp_path / "nowhere.json")
