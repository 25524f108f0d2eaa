"""DP schema release: log-histogram bounds and thresholded category discovery."""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import jdp.data.dp_schema as dps
from accounting import PrivacyLedger
from accounting import events as ev
from jdp.data.dp_schema import (
    DpSchemaWarning,
    SchemaRelease,
    bucket_index,
    dp_bounds,
    dp_categories,
    infer_schema_dp,
    load_schema,
    log_bucket_edges,
    pass_threshold,
    threshold_for,
)
from jdp.data.schema import Column, Schema, SuppressedCategoryWarning
from jdp.mechanisms.consistency import SHOW_FAILURE
from jdp.mechanisms.noise import (
    LAPLACE_RELEASE_CUT,
    laplace_event,
    laplace_mechanism,
    snapping_laplace_parameters,
)
from jdp.verbosity import show_private_details


def test_threshold_gives_exactly_delta():
    for eps, delta in ((0.1, 1e-6), (1.0, 1e-9), (3.0, 0.01)):
        tau = threshold_for(eps, delta)
        assert stats.laplace.sf(tau - 1, scale=1 / eps) == pytest.approx(delta, rel=1e-9)


def test_categories_keep_frequent_and_drop_singletons():
    rng = np.random.default_rng(2)
    values = ["a"] * 500 + ["b"] * 300 + ["rare"]
    cats, event = dp_categories(rng, values, epsilon=1.0, delta=1e-6)
    assert cats == ("a", "b") and event == ev.ComposedDpEvent(
        [ev.EpsilonDeltaDpEvent(epsilon=1.0, delta=1e-6), ev.NoiseCutDpEvent(LAPLACE_RELEASE_CUT)]
    )
    # a singleton passes the threshold with probability exactly delta: at delta = 0.3,
    # the pass rate over 2000 trials is within a 6-sigma binomial bound
    passes = sum(
        "rare" in dp_categories(rng, ["rare"], epsilon=1.0, delta=0.3)[0] for _ in range(2000)
    )
    assert abs(passes / 2000 - 0.3) < 6 * np.sqrt(0.3 * 0.7 / 2000)


@pytest.mark.parametrize("noise", dps.NOISES)
def test_infer_schema_dp_on_a_table(noise):
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
        noise=noise,
    )
    s = release.schema
    assert s.names == ["age", "w", "c", "label"] and s.target == "label"
    # "other" for suppressed values is added by default; the target keeps its labels
    assert s["c"].categories == ("x", "y", "z", "other") and s["label"].categories == ("no", "yes")
    assert 0 <= s["age"].lower < 25 and 72 < s["age"].upper <= 150
    assert s["w"].lower < 50 and 950 < s["w"].upper <= 1e6
    # the columns and the suppressed shares (SHARES_WEIGHT of a column) split epsilon and
    # the release spends all of it: (4, 1e-7) by basic composition of its entries
    if noise == "laplace":  # two categorical columns take delta 5e-8 each
        assert release.ledger.labels == [
            "dp-bounds:age",
            "dp-bounds:w",
            "dp-categories:c",
            "dp-categories:label",
            "dp-suppressed-shares",
        ]
        assert release.epsilon == pytest.approx(4.0)
    else:  # one joint release at 4 x 4 / 4.5, calibrated to within calibrate's rtol
        assert release.ledger.labels == ["dp-schema-histograms", "dp-suppressed-shares"]
        assert 0.999 * 4.0 <= release.epsilon <= 4.0
    assert release.delta == pytest.approx(1e-7)
    assert f"({release.epsilon:.4g}, 1e-07)-DP" in release.privacy_statement()


def test_infer_schema_dp_errors():
    rng = np.random.default_rng(4)
    data = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    with pytest.raises(ValueError, match="column 'b' has no declared kind"):
        infer_schema_dp(rng, data, epsilon=1, kinds={"a": "continuous"}, ranges={"a": (0, 1)})
    with pytest.raises(ValueError, match="column 'a': a coarse public range"):
        infer_schema_dp(rng, data[["a"]], epsilon=1, kinds={"a": "continuous"}, ranges={})
    share = 0.1 / (1 + dps.SHARES_WEIGHT)  # the column's share of epsilon
    for noise, tau in (
        ("laplace", threshold_for(share, 1e-7)),
        ("gaussian", dps.plan_joint_gaussian(epsilon=share, delta=1e-7, histograms=1,
                                             categorical=1).category_threshold()),
    ):  # fmt: skip
        fewest = dps.fewest_records(0.1, 1e-7)
        message = rf"'b': no category .* about {tau:.0f} records .* fewer than {fewest:.0f} at"
        with pytest.raises(ValueError, match=message):
            infer_schema_dp(
                rng, data[["b"]], epsilon=0.1, kinds={"b": "categorical"}, ranges={}, noise=noise
            )


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
        rng, data, epsilon=3.0, ranges={"x": (0, 100)}, target="label", suppressed="drop",
        kinds={"x": "continuous", "work": "categorical", "label": "categorical"},
    )  # fmt: skip


def test_suppressed_categories_drop_their_records_without_echoing_them():
    """Records holding a value that DP discovery suppressed are dropped by a fixed public
    filter (the released categories) instead of raising; no message shows the values, and
    the warning that records were dropped appears only under show_private_details (issue 24,
    item 3: that such a record exists is private)."""
    rng = np.random.default_rng(5)
    data = _table_with_rare_values(rng)
    release = _release(rng, data)
    assert release.schema.from_release
    assert release.schema["work"].categories == ("Gov", "Private")
    assert release.schema["label"].categories == (0, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release.schema.conform(data)
    assert not any(w.category is SuppressedCategoryWarning for w in caught)
    with show_private_details(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = release.schema.conform(data)
    messages = [str(w.message) for w in caught]
    dropped = [str(w.message) for w in caught if w.category is SuppressedCategoryWarning]
    assert len(dropped) == 1 and "'work'" in dropped[0] and "'label'" in dropped[0]
    assert not any("Zyx" in m or re.search(r"\b907\b", m) for m in messages)
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
    assert [name for name, _ in loaded.clipped] == ["x"] and loaded.clipped == release.clipped
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


# -- range search ------------------------------------------------------------------------------


@pytest.mark.parametrize("lower, upper", [(0, 1e9), (-5, 100), (1e4, 1e6), (-1e3, -1)])
def test_log_bucket_edges_double_outwards_from_the_anchor(lower, upper):
    edges = log_bucket_edges(lower, upper)
    assert edges[0] == lower and edges[-1] == upper and np.all(np.diff(edges) > 0)
    c = min(max(0.0, lower), upper)
    # on either side of the anchor c, each bucket's far edge is twice as far from c as its
    # near edge (all but the two end buckets, which the range's ends may cut); the bucket
    # around c is symmetric
    d = edges - c
    for i, (near, far) in enumerate(itertools.pairwise(d)):
        if near * far > 0 and 0 < i < len(d) - 2:
            assert max(abs(near), abs(far)) / min(abs(near), abs(far)) == pytest.approx(2.0)
        if near < 0 < far:
            assert -near == pytest.approx(far)
    assert log_bucket_edges(lower, upper).tobytes() == edges.tobytes()  # data-free, fixed


def test_range_histogram_changes_by_one_in_one_bucket_on_adversarial_neighbours():
    """Sensitivity of the range search's histogram (docs/privacy.md, "DP range search"):
    adding any one record (random, at either bound, beyond them, exactly on a bucket edge, at
    the anchor, -0.0, the smallest float) changes the counts by 1 in exactly one bucket."""
    rng = np.random.default_rng(20)
    for lower, upper in ((0.0, 1e9), (-50.0, 50.0)):
        edges = log_bucket_edges(lower, upper)
        m = len(edges) - 1
        data = rng.uniform(lower, upper, 200) * rng.choice([1e-6, 1e-3, 1.0], 200)
        base = np.bincount(bucket_index(edges, data), minlength=m)
        extras = [lower, upper, lower - 1e12, upper + 1e12, 0.0, -0.0, 5e-324, -5e-324]
        extras += [*edges, *np.nextafter(edges, np.inf), *rng.uniform(lower, upper, 50)]
        for x in extras:
            diff = np.bincount(bucket_index(edges, np.append(data, x)), minlength=m) - base
            assert len(diff) == m and np.abs(diff).sum() == 1 and diff.max() == 1


def test_empty_buckets_pass_with_the_stated_probability():
    """A snapped count of 0 reaches :func:`pass_threshold` with probability exactly
    ``exp(-(k - 1/2) Lambda / lambda) / 2 <= failure / M`` (docs/privacy.md, "DP bounds"):
    checked within a 5-sigma binomial bound over 200,000 empty buckets at failure = 0.5."""
    rng = np.random.default_rng(21)
    m, eps, failure = 41, 0.5, 0.5
    params = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=eps, size=m)
    threshold = pass_threshold(params, m, failure)
    k = threshold / params.grid
    assert k == int(k)
    p = np.exp(-(k - 0.5) * params.grid / params.scale) / 2
    assert p <= failure / m < np.exp(-(k - 1.5) * params.grid / params.scale) / 2
    trials = 200_000
    noisy, event = laplace_mechanism(rng, np.zeros(trials), l1_sensitivity=1.0, epsilon=eps)
    assert event == laplace_event(eps)
    hits = int(np.sum(noisy >= threshold))
    assert abs(hits / trials - p) < 5 * np.sqrt(p * (1 - p) / trials)


def test_bounds_cover_the_data_and_a_sparse_column_keeps_the_coarse_range():
    """All records in one bucket: the bounds hold it, and empty buckets beyond add p / (1 - p)
    buckets on average (p the exact chance, at most EXTEND_CHANCE), plus MARGIN: over 300 draws
    the mean extension is within a 5-sigma bound of its geometric mean. A column too sparse for
    any bucket to pass keeps the coarse range and says so (signal False, nothing clipped)."""
    rng = np.random.default_rng(21)
    edges = log_bucket_edges(0, 1e9)
    data = np.full(5000, 50.0)
    k = int(bucket_index(edges, [50.0])[0])
    above = []
    for _ in range(300):
        bounds, event = dp_bounds(rng, data, lower=0, upper=1e9, epsilon=0.5)
        assert bounds.signal and bounds.lower <= 50 < bounds.upper
        above.append(int(np.searchsorted(edges, bounds.upper)) - (k + 1) - dps.MARGIN)
    # the chance that an empty bucket extends the bounds, exactly (pass_threshold's formula)
    params = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=0.5, size=len(edges) - 1)
    k = dps.pass_threshold(params, 1, dps.EXTEND_CHANCE) / params.grid
    p = np.exp(-(k - 0.5) * params.grid / params.scale) / 2
    assert p <= dps.EXTEND_CHANCE
    mean, var = p / (1 - p), p / (1 - p) ** 2
    assert min(above) >= 0 and abs(np.mean(above) - mean) < 5 * np.sqrt(var / 300)
    assert event == laplace_event(0.5)
    bounds, _ = dp_bounds(rng, data[:2], lower=0, upper=1e9, epsilon=1e-3)
    assert bounds == dps.DpBounds(0.0, 1e9, False, 0.0)


def test_noisy_clipped_share_is_the_share_outside_within_its_noise():
    """A tail beyond the bounds: the reported share ``(O + e_1) / (n + e_1 + e_2)`` is the
    true share ``r = O / n`` up to ``(e_1 (1 - r) - e_2 r) / n``, whose standard deviation is
    at most ``sqrt(v M) / n`` for ``M`` buckets of noise variance ``v = 2 lambda^2 +
    Lambda^2 / 12`` each (Laplace plus the snapping grid's rounding): within 5 of those."""
    rng = np.random.default_rng(30)
    # 100 records far out, beyond a gap of empty buckets: below the pass threshold (about
    # 210 at this epsilon) and out of the extension's reach
    x = np.concatenate([rng.uniform(10, 20, 20_000), rng.uniform(1.1e6, 1.8e6, 100)])
    eps = 0.05
    m = len(log_bucket_edges(0, 1e9)) - 1
    params = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=eps, size=m)
    sd = np.sqrt((2 * params.scale**2 + params.grid**2 / 12) * m) / len(x)
    for seed in range(5):
        bounds, _ = dp_bounds(np.random.default_rng(seed), x, lower=0, upper=1e9, epsilon=eps)
        true = np.mean((x < bounds.lower) | (x > bounds.upper))
        assert true == 100 / len(x)  # the tail is outside: not a check of 0 against 0
        assert abs(bounds.clipped - true) < 5 * sd


def test_range_search_noise_matches_its_ledger_entry(monkeypatch):
    """The histogram is released by snapping at the column's share of epsilon (its event is
    the ledger entry, no cut), and the entries compose to epsilon exactly."""
    calls = []

    def recording(rng, value, **kwargs):
        noisy, event = real(rng, value, **kwargs)
        calls.append((value, noisy, event, kwargs))
        return noisy, event

    real = dps.laplace_mechanism
    monkeypatch.setattr(dps, "laplace_mechanism", recording)
    rng = np.random.default_rng(22)
    data = pd.DataFrame({"a": rng.normal(40, 5, 2000), "b": rng.exponential(100, 2000)})
    kinds = {"a": "continuous", "b": "continuous"}
    release = infer_schema_dp(
        rng, data, epsilon=0.6, kinds=kinds, ranges={"a": (0, 1e9), "b": (0, 1e9)},
        noise="laplace",
    )  # fmt: skip
    assert len(calls) == 2
    for (counts, noisy, event, kwargs), entry in zip(calls, release.ledger.entries):
        assert entry.event == event == ev.LaplaceDpEvent(noise_multiplier=pytest.approx(1 / 0.3))
        assert kwargs.get("secure_noise", True) and kwargs["epsilon"] == pytest.approx(0.3)
        grid = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=0.3, size=len(counts)).grid
        assert np.all(noisy / grid == np.round(noisy / grid))  # snapped: on the grid
    assert release.epsilon == pytest.approx(0.6)


def test_bounds_on_adult_age_at_epsilon_1_cover_the_ages_within_a_small_factor():
    """Regression (issue 17): at epsilon = 1 over Adult's 15 columns with the range [0, 1e9],
    age's bounds came out at 47-520 million. Now (age's share: epsilon = 1/15) every bucket
    holding ages passes its threshold except with probability < 1e-9 (computed below from
    the counts), so the bounds cover every age; above them lie one margin bucket and the
    empty buckets that extended them (fewer than 4 except with probability 0.2^4): the upper
    bound is below 2^5 times the largest age's bucket edge."""
    from jdp.data.datasets import load_dataset

    ages = load_dataset("adult").train["age"].to_numpy(dtype=np.float64)
    eps = 1 / 15
    edges = log_bucket_edges(0, 1e9)
    m = len(edges) - 1
    counts = np.bincount(bucket_index(edges, ages), minlength=m)
    full = np.flatnonzero(counts)
    params = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=eps, size=m)
    tau = pass_threshold(params, m, dps.RANGE_FAILURE)
    assert max(stats.laplace.cdf(tau + params.grid / 2 - counts[full], scale=params.scale)) < 1e-9
    for seed in range(5):
        bounds, event = dp_bounds(
            np.random.default_rng(seed), ages, lower=0, upper=1e9, epsilon=eps, integer=True
        )
        assert bounds.signal and bounds.lower <= ages.min() and ages.max() <= bounds.upper
        assert bounds.upper <= 2**5 * edges[full[-1] + 1]
        assert bounds.clipped < 0.01
    assert PrivacyLedger().record("dp-bounds:age", event).epsilon(1e-9) == pytest.approx(eps)


def test_a_long_tailed_count_is_covered_not_cut_at_its_median():
    """Issue 26: a count with 99% quantile 21.8 got bounds [-1, 1] at a per-column epsilon
    of 0.027. Same shape (97% zeros declared as a point mass, a geometric tail), same budget:
    the bounds stay inside the declared [0, 200] and cover at least 98% of the non-zero
    values on every one of 20 seeds."""
    rng = np.random.default_rng(8)
    n = 11_000
    tail = rng.geometric(0.12, n)
    counts = np.where(rng.random(n) < 0.97, 0, tail).astype(float)
    nonzero = counts[counts > 0]
    for seed in range(20):
        bounds, _ = dp_bounds(
            np.random.default_rng(seed), nonzero, lower=0, upper=200, epsilon=0.027, integer=True
        )
        outside = np.mean((nonzero < bounds.lower) | (nonzero > bounds.upper))
        assert 0 <= bounds.lower < bounds.upper <= 200 and outside <= 0.02, (seed, bounds)


def test_bounds_bad_arguments():
    rng = np.random.default_rng(24)
    with pytest.raises(ValueError, match="expected failure in"):
        dp_bounds(rng, np.ones(5), lower=0, upper=1, epsilon=1, failure=0)
    with pytest.raises(ValueError, match="expected lower < upper"):
        log_bucket_edges(3, 3)
    with pytest.raises(ValueError, match="epsilon"):
        dp_bounds(rng, np.ones(5), lower=0, upper=1, epsilon=0)


def test_declared_columns_cost_nothing_and_weak_bounds_are_named():
    """Columns given in ``declared`` are copied and take no budget (the rest share epsilon
    equally); a numeric column without signal keeps its coarse range, is named in a
    DpSchemaWarning and in :meth:`SchemaRelease.bounds_report`, and the shares survive a
    save/load round trip."""
    rng = np.random.default_rng(31)
    n = 3000
    few = np.full(n, np.nan)
    few[:2] = rng.uniform(0, 10, 2)  # at most 2 per bucket, below the threshold (11 at eps 1)
    data = pd.DataFrame({"x": rng.normal(50, 5, n), "few": few, "c": rng.choice(["a", "b"], n)})

    declared = [Column(name="c", kind="categorical", categories=("a", "b"))]
    with pytest.warns(DpSchemaWarning, match="few: no signal, coarse range kept"):
        release = infer_schema_dp(
            rng, data, epsilon=2.0, declared=declared,
            kinds={"x": "continuous", "few": "continuous"},
            ranges={"x": (0, 1e6), "few": (0, 1e6)}, nullable=["few"],
        )  # fmt: skip
    assert release.ledger.labels == ["dp-schema-histograms"]  # no categories: no shares
    assert 0.999 * 2.0 <= release.epsilon <= 2.0
    assert release.schema["c"] == declared[0]
    shares = dict(release.clipped)
    assert shares["few"] is None
    assert (release.schema["few"].lower, release.schema["few"].upper) == (0, 1e6)
    assert "few: bounds [0, 1e+06], no signal" in release.bounds_report()
    x = release.schema["x"]  # within the doubling buckets around the data (see dp_bounds)
    assert 0 <= shares["x"] < 0.01 and x.lower <= data["x"].min() < data["x"].max() <= x.upper
    # the data's top bucket, at most two empty buckets of tails here, and the margin
    assert x.upper < 2 ** (dps.MARGIN + 3) * data["x"].max()


# -- suppressed categories: drop or map to "other" ------------------------------------------------


def test_suppressed_values_map_to_other_and_are_counted():
    """``suppressed="other"``: every string feature column gets the category "other"; records
    holding a suppressed value keep their row with "other" in its place (no value echoed);
    the target and integer-category columns drop them as before."""
    rng = np.random.default_rng(25)
    data = _table_with_rare_values(rng)
    release = infer_schema_dp(
        rng, data, epsilon=3.0, ranges={"x": (0, 100)}, target="label", suppressed="other",
        kinds={"x": "continuous", "work": "categorical", "label": "categorical"},
    )  # fmt: skip
    assert release.other == "other" and release.other_columns() == ["work"]
    assert release.schema["work"].categories == ("Gov", "Private", "other")
    assert release.schema["label"].categories == (0, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release.conform(data)
    assert not any(w.category is SuppressedCategoryWarning for w in caught)  # private bit
    with show_private_details(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = release.conform(data)
    messages = [str(w.message) for w in caught if w.category is SuppressedCategoryWarning]
    assert any("'work'" in m and "'other'" in m for m in messages)  # mapped
    assert any("'label'" in m and "dropped" in m for m in messages)  # int labels: dropped
    assert not any("Zyx" in m or re.search(r"\b907\b", m) for m in messages)
    assert len(table) == len(data) - 1  # only the record with the suppressed label
    expected = data.drop(index=[9]).reset_index(drop=True)
    expected.loc[5, "work"] = "other"
    x = release.schema["x"]
    expected["x"] = expected["x"].clip(x.lower, x.upper)
    pd.testing.assert_frame_equal(table.frame, expected, check_dtype=False)
    # the mapping travels with the saved release; the default drops as before
    loaded = SchemaRelease.from_dict(release.to_dict())
    assert loaded == release and loaded.other == "other"
    assert (
        SchemaRelease(release.schema, release.ledger).conform(data).frame.shape[0] == len(data) - 2
    )
    with pytest.raises(ValueError, match="expected suppressed in"):
        infer_schema_dp(rng, data, epsilon=1, kinds={}, ranges={}, suppressed="keep")
    with pytest.raises(ValueError, match="'Gov' is a released category"):
        infer_schema_dp(
            rng, data[["work"]], epsilon=3.0, kinds={"work": "categorical"}, ranges={},
            suppressed="other", other_label="Gov",
        )  # fmt: skip


def test_other_records_reach_the_fit_and_are_counted_privately():
    """Through ``fit_model`` (hence ``jdp fit --schema`` and every Synthesizer) the "other"
    records are counted by the method like any category: a third of the rows hold values the
    release suppresses, and the model's marginal of "work" gives "other" about a third."""
    import jax

    from accounting import PrivacyBudget
    from jdp.synth.base import fit_model, sample_model

    rng = np.random.default_rng(26)
    n = 6000
    work = rng.choice(["Private", "Gov"], n).astype(object)
    rare = rng.random(n) < 1 / 3
    work[rare] = [f"rare-{i}" for i in range(int(rare.sum()))]  # each value held once
    data = pd.DataFrame({"x": rng.uniform(0, 10, n), "work": work})
    release = infer_schema_dp(
        rng, data, epsilon=2.0, ranges={"x": (0, 100)}, suppressed="other",
        kinds={"x": "continuous", "work": "categorical"},
    )  # fmt: skip
    assert release.schema["work"].categories == ("Gov", "Private", "other")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuppressedCategoryWarning)
        model = fit_model(
            jax.random.key(0), "marginals", data, PrivacyBudget(epsilon=4.0, delta=1e-5),
            schema=release,
        )  # fmt: skip
    assert model.ledger.labels[: len(release.ledger.entries)] == release.ledger.labels
    share = (sample_model(jax.random.key(1), model, 20_000)["work"] == "other").mean()
    # noise on ~6000 counts at epsilon ~2 is a few counts; sampling error sd ~ 0.0033
    assert abs(share - rare.mean()) < 0.03


def test_point_masses_and_nullable_columns_are_public_declarations():
    """Declared point masses are kept in the released schema and inside its bounds, and the
    bounds come from the other values; a nullable column's missing values are left out (a
    missing value in a column not declared nullable raises)."""
    rng = np.random.default_rng(27)
    n = 20_000
    gain = np.where(rng.random(n) < 0.9, 0.0, rng.lognormal(np.log(5000), 0.5, n)).round()
    hours = rng.normal(40, 5, n).round()
    hours[rng.random(n) < 0.1] = np.nan
    data = pd.DataFrame({"gain": gain, "hours": hours, "c": rng.choice(["a", "b", None], n)})
    kinds = {"gain": "integer", "hours": "integer", "c": "categorical"}
    release = infer_schema_dp(
        rng, data, epsilon=3.0, kinds=kinds, ranges={"gain": (0, 1e9), "hours": (0, 1e9)},
        point_masses={"gain": [0]}, nullable=["hours", "c"],
    )  # fmt: skip
    g, h, c = (release.schema[name] for name in ("gain", "hours", "c"))
    assert g.point_masses == (0.0,) and g.lower == 0
    # the bounds cover the non-mass values, within the few doubling buckets of dp_bounds
    # (core, extension and margin: a factor 2^4 in distance from the anchor, 0)
    nonzero = gain[gain > 0]
    assert np.quantile(nonzero, 0.999) < g.upper < 2**4 * nonzero.max()
    assert h.nullable and 0 <= h.lower <= np.nanmin(hours)
    assert np.nanmax(hours) <= h.upper < 2**4 * np.nanmax(hours)
    assert c.nullable and c.categories == ("a", "b", "other")
    with pytest.raises(ValueError, match="'hours' has NaN or infinite values"):
        infer_schema_dp(
            rng, data, epsilon=3.0, kinds=kinds, ranges={"gain": (0, 1e9), "hours": (0, 1e9)}
        )
    with pytest.raises(ValueError, match="'z' of point_masses/nullable is not in the data"):
        infer_schema_dp(rng, data, epsilon=3.0, kinds=kinds, ranges={}, nullable=["z"])


def test_integer_bounds_never_leave_the_declared_range():
    """Issue 26 saw count columns released with the lower bound -1. With the floor declared
    as the coarse range's lower end, released integer bounds stay inside that range even when
    97% of the values sit on the floor (tie-breaking jitter reaches below it)."""
    rng = np.random.default_rng(5)
    counts = np.where(rng.random(2000) < 0.97, 0, rng.integers(1, 20, 2000)).astype(float)
    for seed in range(20):
        bounds, _ = dps.dp_bounds(
            np.random.default_rng(seed), counts, lower=0, upper=20, epsilon=1.0, integer=True
        )
        assert 0 <= bounds.lower < bounds.upper <= 20, (seed, bounds)


def test_the_suppressed_shares_are_the_records_that_lose_a_value_within_their_noise(monkeypatch):
    """``infer_schema_dp`` releases the shares of records holding a suppressed category
    (mapped to "other" in a string feature column, dropped for the integer target) with one
    more share of epsilon: each record falls in one of three cells (adding one moves one
    count by 1), the noisy shares are the true ones within 5 sds of the Laplace and grid
    noise over ``n``, the report and the warning say them, and they survive save/load;
    ``report_suppressed=False`` releases nothing and splits epsilon as before."""
    calls = []

    def recording(rng, value, **kwargs):
        calls.append(np.asarray(value))
        return real(rng, value, **kwargs)

    real = dps.laplace_mechanism
    monkeypatch.setattr(dps, "laplace_mechanism", recording)
    rng = np.random.default_rng(31)
    n = 6000
    work = rng.choice(["Private", "Gov"], n).astype(object)
    rare = rng.random(n) < 0.2
    work[rare] = [f"rare-{i}" for i in range(int(rare.sum()))]
    label = rng.choice([0, 1], n)
    odd = rng.random(n) < 0.05
    label[odd] = 100 + np.arange(int(odd.sum()))
    data = pd.DataFrame({"x": rng.uniform(0, 10, n), "work": work, "label": label})
    kinds = {"x": "continuous", "work": "categorical", "label": "categorical"}
    with pytest.warns(DpSchemaWarning, match=r"hold a category the release suppressed"):
        release = infer_schema_dp(
            rng, data, epsilon=2.0, ranges={"x": (0, 100)}, target="label", kinds=kinds
        )
    eps = dps.SHARES_WEIGHT * 2.0 / (3 + dps.SHARES_WEIGHT)  # 3 columns and the shares
    assert release.ledger.labels[-1] == "dp-suppressed-shares"
    assert release.ledger.entries[-1].event == ev.LaplaceDpEvent(pytest.approx(1 / eps))
    cells = calls[-1]
    assert cells.sum() == n and cells[0] == odd.sum() and cells[1] == (rare & ~odd).sum()
    params = snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=eps, size=3)
    sd = np.sqrt((2 * params.scale**2 + params.grid**2 / 12) * 3) / n  # over the true n
    assert abs(release.suppressed.dropped - odd.mean()) < 5 * sd
    assert abs(release.suppressed.mapped - (rare & ~odd).mean()) < 5 * sd
    assert "mapped to 'other'" in release.bounds_report()
    assert SchemaRelease.from_dict(release.to_dict()) == release
    # a neighbour without one mapped record: one cell moves by one
    gone = int(np.flatnonzero(rare & ~odd)[0])
    infer_schema_dp(
        np.random.default_rng(0), data.drop(index=gone), epsilon=2.0, ranges={"x": (0, 100)},
        target="label", kinds=kinds,
    )  # fmt: skip
    assert np.abs(calls[-1] - cells).sum() == 1
    plain = infer_schema_dp(
        rng, data, epsilon=2.0, ranges={"x": (0, 100)}, target="label", kinds=kinds,
        report_suppressed=False,
    )  # fmt: skip
    assert plain.suppressed is None and "dp-suppressed-shares" not in plain.ledger.labels
    assert 0.999 * 2.0 <= plain.ledger.entries[0].event.epsilon <= 2.0  # all to the histograms


# -- the joint Gaussian release (docs/privacy.md, "Joint Gaussian schema release") ---------------


def _joint_cells(histograms: list[dps.Histogram], plan: dps.JointGaussian) -> dict:
    """Every histogram's counts as the joint release weights them, keyed by (histogram,
    cell): buckets by index, values by value."""
    out = {}
    for i, h in enumerate(histograms):
        cells, counts = dps.histogram_counts(h)
        keys = range(len(counts)) if cells is None else cells
        out |= {(i, k): plan.weight_of(h) * c for k, c in zip(keys, counts)}
    return out


def test_joint_histograms_move_by_at_most_one_per_column_on_adversarial_neighbours():
    """Sensitivity of the joint release: adding any one record changes each histogram in at
    most one cell by 1 (by w, the target's weight, in the target's), so the common cells move
    by at most sqrt(k - 1 + w^2) in L2 (the plan's sensitivity), and a value only the new
    record holds is a new cell of weighted count exactly 1 or w (at most one per categorical
    column). Records: existing values, new values, missing values, a point mass, the bounds,
    beyond them, on bucket edges; "d" is the target."""
    rng = np.random.default_rng(40)
    n = 300
    frame = pd.DataFrame({
        "x": rng.exponential(50, n), "k": rng.integers(0, 30, n).astype(float),
        "c": rng.choice(["a", "b", "c"], n), "d": rng.choice([1, 2, 3], n),
    })  # fmt: skip
    frame.loc[:9, "x"] = np.nan
    kinds = {"x": "continuous", "k": "integer", "c": "categorical", "d": "categorical"}
    ranges = {"x": (0, 1e6), "k": (-5, 100)}
    masses = {"k": (0,)}

    def histograms(data):
        return [
            dps._histogram(data[n], n, kinds[n], ranges, masses.get(n, ()), n == "d") for n in kinds
        ]

    plan = dps.plan_joint_gaussian(
        epsilon=1.0, delta=1e-6, histograms=4, categorical=2, target=True
    )
    w = plan.target_weight
    assert w**2 / plan.sensitivity**2 == pytest.approx(dps.TARGET_SHARE)  # the target's share
    assert plan.sensitivity**2 == pytest.approx(3 + w**2)
    base = _joint_cells(histograms(frame), plan)
    edges = log_bucket_edges(0, 1e6)
    extras = [
        {"x": np.nan, "k": 0.0, "c": "zz", "d": 9},  # new values in both categorical columns
        {"x": 0.0, "k": -5.0, "c": "a", "d": 1},
        {"x": 1e12, "k": 100.0, "c": None, "d": 2},
        *({"x": e, "k": 7.0, "c": "b", "d": 3} for e in edges[::5]),
        *({"x": np.nextafter(e, np.inf), "k": 3.0, "c": "new", "d": 3} for e in edges[1::7]),
    ]
    for extra in extras:
        grown = _joint_cells(histograms(pd.concat([frame, pd.DataFrame([extra])])), plan)
        common = [grown[key] - base[key] for key in base]
        new = {key: grown[key] for key in grown.keys() - base.keys()}
        assert all(min(abs(d - v) for v in (0.0, 1.0, w)) < 1e-9 for d in common)
        assert np.linalg.norm(common) <= plan.sensitivity * (1 + 1e-12)
        assert all(c == (w if key[0] == 3 else 1.0) for key, c in new.items())
        assert len(new) <= 2  # two categorical columns
        per_histogram = [
            sum(grown[k] - base.get(k, 0) for k in grown if k[0] == i) for i in range(4)
        ]
        assert all(d in (0.0, 1.0) for d in per_histogram[:3])
        assert per_histogram[3] == pytest.approx(0.0) or per_histogram[3] == pytest.approx(w)


def test_joint_levels_hold_their_probability_with_snapping():
    """A count of 0 with the plan's snapped Gaussian noise reaches ``level(p)`` with probability
    between the exact bounds ``Q((t +- g/2) / sigma)`` (``Q`` the normal survival function),
    the upper one being ``p``: checked within a 5-sigma binomial bound over 100,000 draws."""
    plan = dps.plan_joint_gaussian(epsilon=1.0, delta=1e-6, histograms=4, categorical=2)
    grid = dps.power_of_two_at_least(plan.sigma)
    draws = 100_000
    zeros = np.zeros(draws)
    noisy, _ = dps.gaussian_mechanism(
        np.random.default_rng(41), zeros, l2_sensitivity=2.0, secure_noise=True,
        noise_multiplier=plan.noise_multiplier,
    )  # fmt: skip
    for p in (0.3, 0.05):
        t = plan.level(p)
        rate = np.mean(noisy >= t)
        hi = stats.norm.sf((t - grid / 2) / plan.sigma)
        lo = stats.norm.sf((t + grid / 2) / plan.sigma)
        assert hi == pytest.approx(p)
        sd = np.sqrt(p * (1 - p) / draws)
        assert lo - 5 * sd <= rate <= hi + 5 * sd
    # a value of count 1 passes the category threshold with at most tau / c
    q = plan.new_key_tail / plan.categorical
    assert stats.norm.sf((plan.category_threshold() - 1 - grid / 2) / plan.sigma) == pytest.approx(
        q
    )


def test_joint_release_spends_its_plan_and_a_new_value_passes_rarely():
    """The plan meets (epsilon, delta) with the ledger's own rule and the release records it;
    a value held by one record passes with the plan's probability (simulated at a large
    delta, where it is measurable: 4,000 releases, 5-sigma)."""
    from accounting.compose import best_epsilon

    plan = dps.plan_joint_gaussian(epsilon=1.0, delta=0.2, histograms=2, categorical=2)
    assert 0.999 <= plan.epsilon <= 1.0
    assert best_epsilon(plan.event(), 0.2).value == pytest.approx(plan.epsilon)
    assert plan.new_key_tail == pytest.approx(0.2 / (2 * (1 + np.e)))
    column = dps.Histogram(None, pd.Series(["a"] * 100 + ["lone"]))
    numbers = dps.Histogram(log_bucket_edges(0, 10), np.full(101, 5.0))
    rng = np.random.default_rng(42)
    runs = 4000
    passes = 0
    for _ in range(runs):
        (cats, bounds), event = dps.dp_joint_histograms(rng, [column, numbers], plan)
        passes += "lone" in cats
        assert "a" in cats and bounds.lower <= 5 <= bounds.upper
    assert event == ev.EpsilonDeltaDpEvent(epsilon=plan.epsilon, delta=0.2)
    grid = dps.power_of_two_at_least(plan.sigma)
    p_hi = plan.new_key_tail / 2
    p_lo = stats.norm.sf((plan.category_threshold() - 1 + grid / 2) / plan.sigma)
    sd = np.sqrt(p_hi * (1 - p_hi) / runs)
    assert p_lo - 5 * sd <= passes / runs <= p_hi + 5 * sd


def test_joint_release_needs_fewer_records_than_one_laplace_release_per_column():
    """The design claim: on a 15-column table at a schema epsilon of 0.3 (Adult's shape, nine
    categorical columns) a category needs less than half the records to pass."""
    k, cat, eps = 15, 9, 0.3
    eps_col = eps / (k + dps.SHARES_WEIGHT)
    laplace = threshold_for(eps_col, dps.DEFAULT_DELTA / cat)
    plan = dps.plan_joint_gaussian(
        epsilon=eps_col * k, delta=dps.DEFAULT_DELTA, histograms=k, categorical=cat
    )
    assert plan.category_threshold() < 0.5 * laplace


@pytest.mark.parametrize(("epsilon", "delta"), [(0.3, 1e-7), (1.0, 1e-6), (0.05, 1e-9)])
def test_no_release_passes_below_the_group_privacy_bound(epsilon, delta):
    """``fewest_records`` is where group privacy caps the pass probability of a value that only
    ``c`` records hold at 1/2; a release whose threshold (about where such a value passes half
    the time) lay below it would contradict its own guarantee. The joint release's stays above
    it for every width. One column's Laplace release nearly meets it: its threshold ``1 +
    ln(1 / (2 delta)) / epsilon`` exceeds the bound by at most ``1 + ln(1 / (e^epsilon - 1)) /
    epsilon`` records (``ln(1 + x) >= ln x``), so the bound is tight up to that gap."""
    bound = dps.fewest_records(epsilon, delta)
    cap = delta * np.expm1(bound * epsilon) / np.expm1(epsilon)  # group privacy at c = bound
    assert cap == pytest.approx(0.5, rel=1e-9)
    for k, cat in ((1, 1), (15, 9), (21, 14)):
        plan = dps.plan_joint_gaussian(epsilon=epsilon, delta=delta, histograms=k, categorical=cat)
        assert plan.category_threshold() >= bound
    gap = threshold_for(epsilon, delta) - bound
    assert 0 <= gap <= 1 + np.log(1 / np.expm1(epsilon)) / epsilon


def test_joint_release_replays_on_a_neighbour():
    """The record/replay contract (:mod:`jdp.mechanisms.tape`): the schema depends on the data
    only through its releases, so a release recorded on a table and replayed on a neighbour
    gives the same schema, with no fingerprint mismatch."""
    from jdp.mechanisms.tape import Tape, recording, replaying

    rng = np.random.default_rng(43)
    n = 2000
    data = pd.DataFrame({"x": rng.normal(50, 5, n), "c": rng.choice(["a", "b"], n)})
    neighbour = pd.concat([data, pd.DataFrame([{"x": 1e5, "c": "lone"}])], ignore_index=True)
    kinds = {"x": "continuous", "c": "categorical"}
    args = {"epsilon": 2.0, "kinds": kinds, "ranges": {"x": (0, 1e6)}}
    tape = Tape()
    with recording(tape):
        first = infer_schema_dp(np.random.default_rng(0), data, **args)
    with replaying(tape):
        second = infer_schema_dp(np.random.default_rng(0), neighbour, **args)
    assert second == first and len(tape) == 2  # the joint histograms and the shares


def test_a_thin_tail_towards_the_anchor_is_kept_and_a_cut_one_is_named():
    """A tail too thin for the noise (15% of the values spread over seven doubling buckets,
    as crx's A2 at a schema epsilon of 0.3, noise sd 36): towards the anchor (0) the bounds
    reach it in every one of 200 releases (a negative noisy count of an empty bucket no
    longer cancels the tail's: the raw sum's 95% bound let 3-5% of releases cut it), and the
    release's 95% upper bound on the share outside covers the true share in at least 95%
    (minus a 5-sigma binomial allowance; a normal approximation). The same tail on the far
    side may be cut, and infer_schema_dp then names the column with that bound instead of
    reporting about 0% outside."""
    rng = np.random.default_rng(44)
    tail = np.exp(rng.uniform(np.log(12), np.log(1500), 65))
    x = np.concatenate([rng.uniform(1600, 6000, 370), tail])
    plan = dps.plan_joint_gaussian(epsilon=0.12, delta=1e-7, histograms=1, categorical=0)
    h = dps.Histogram(log_bucket_edges(0, 1e5), x)
    covered, kept = 0, 0
    for _ in range(200):
        ((bounds,), _) = dps.dp_joint_histograms(rng, [h], plan)
        true = np.mean((x < bounds.lower) | (x > bounds.upper))
        covered += true <= bounds.clipped_bound
        kept += bounds.lower == 0
    assert kept == 200
    assert covered / 200 >= 0.95 - 5 * np.sqrt(0.05 * 0.95 / 200)
    far = np.concatenate([rng.uniform(20, 60, 370), 60 * tail])  # the tail above the bulk
    with pytest.warns(DpSchemaWarning, match=r"a: .*up to \d+% .*at 95%"):
        release = infer_schema_dp(
            np.random.default_rng(3), pd.DataFrame({"a": far}), epsilon=0.12,
            kinds={"a": "continuous"}, ranges={"a": (0, 1e6)},
        )  # fmt: skip
    assert np.mean(far > release.schema["a"].upper) > 0.05  # cut, and said so
    assert "at 95%" in release.bounds_report()
    assert SchemaRelease.from_dict(release.to_dict()) == release


def test_both_halves_of_a_signed_column_are_covered():
    """A centred column puts its negative and positive halves in doubling buckets on either
    side of 0, with the near-empty buckets of tiny values between them (creditcard's V20 on
    5,000 rows: these counts). When only the negative half's peak passes and its growth stops
    at the empty band, the bounds once ended at 0 with 40% of the values outside; now each
    side grows while the counts beyond it show more than TAIL_TOLERANCE (noise-free counts
    here, so the check is exact)."""
    edges = log_bucket_edges(-20.0, 20.0)
    half = [1, 7, 11, 46, 132, 556, 992, 715, 293, 152, 61, 38, 23, 9, 4, 0, 0, 3]
    positive = [1, 0, 1, 0, 1, 3, 11, 23, 29, 68, 132, 213, 352, 439, 339, 207, 101, 30, 6, 1]
    counts = np.zeros(len(edges) - 1)
    counts[: len(half)] = half
    counts[len(counts) - len(positive) :] = positive
    bounds = dps.bounds_from_counts(counts, edges, 900.0, 300.0, integer=False, count_sd=0.0)
    inside = (edges[:-1] >= bounds.lower) & (edges[1:] <= bounds.upper)
    below = counts[edges[1:] <= bounds.lower].sum() / counts.sum()
    above = counts[edges[:-1] >= bounds.upper].sum() / counts.sum()
    assert below <= dps.TAIL_TOLERANCE and above <= dps.TAIL_TOLERANCE
    assert bounds.lower < 0 < bounds.upper and counts[inside].sum() / counts.sum() > 0.96
    assert bounds.clipped == pytest.approx(below + above)


def test_a_target_left_with_one_class_is_named_in_a_warning():
    """A released target whose minority class did not pass the threshold (creditcard-paper's
    fraud class at eps 0.3: 4.4% of records dropped) leaves a schema whose fits generate one
    class: the warning names the target and the fix (its categories are public). A target
    whose classes all pass gets no such warning. Post-processing of the released categories."""
    rng = np.random.default_rng(7)
    n = 3000
    x = rng.uniform(0, 10, n)
    kinds = {"x": "continuous", "label": "categorical"}
    rare = pd.DataFrame({"x": x, "label": np.where(np.arange(n) < 30, 1, 0)})
    with pytest.warns(DpSchemaWarning, match=r"target 'label': only 0 passed"):
        release = infer_schema_dp(
            rng, rare, epsilon=0.2, ranges={"x": (0, 100)}, target="label", kinds=kinds
        )
    assert release.schema["label"].categories == (0,)
    even = rare.assign(label=np.arange(n) % 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release = infer_schema_dp(
            rng, even, epsilon=0.2, ranges={"x": (0, 100)}, target="label", kinds=kinds
        )
    assert release.schema["label"].categories == (0, 1)
    assert not any("target 'label'" in str(w.message) for w in caught)


def test_a_weighted_target_passes_a_new_value_with_its_plan_probability():
    """The target's histogram, weighted by w, is read off at sigma / w: a value only one record
    holds in the target passes its threshold with probability between the exact bounds
    ``Q((w (t - 1) -+ g/2) / sigma)``, the upper one ``tau / c`` (4,000 releases at a large
    delta, 5-sigma), and its threshold is below an unweighted plan's."""
    plan = dps.plan_joint_gaussian(epsilon=1.0, delta=0.2, histograms=4, categorical=2,
                                   target=True)  # fmt: skip
    w, grid = plan.target_weight, dps.power_of_two_at_least(plan.sigma)
    unweighted = dps.plan_joint_gaussian(epsilon=1.0, delta=0.2, histograms=4, categorical=2)
    assert plan.category_threshold(w) < unweighted.category_threshold()
    target = dps.Histogram(None, pd.Series(["a"] * 100 + ["b"] * 40 + ["lone"]), target=True)
    other = dps.Histogram(None, pd.Series(["x"] * 141))
    numbers = [dps.Histogram(log_bucket_edges(0, 10), np.full(141, 5.0))] * 2
    rng = np.random.default_rng(43)
    runs, passes = 4000, 0
    for _ in range(runs):
        (cats, _, _, _), _ = dps.dp_joint_histograms(rng, [target, other, *numbers], plan)
        passes += "lone" in cats
        assert {"a", "b"} <= set(cats)
    t = plan.category_threshold(w)
    p_hi = stats.norm.sf((w * (t - 1) - grid / 2) / plan.sigma)
    p_lo = stats.norm.sf((w * (t - 1) + grid / 2) / plan.sigma)
    assert p_hi == pytest.approx(plan.new_key_tail / 2)
    sd = np.sqrt(p_hi * (1 - p_hi) / runs)
    assert p_lo - 5 * sd <= passes / runs <= p_hi + 5 * sd
    with pytest.raises(ValueError, match="at most one the target's"):
        dps.dp_joint_histograms(rng, [target, target, *numbers], plan)


@pytest.mark.parametrize("noise", dps.NOISES)
def test_a_released_target_keeps_its_minority_class(noise):
    """A 30-column table of 5,000 rows whose target's minority class holds 5% (creditcard's
    frauds at P3GM's sampling: 4.4%): at a schema epsilon of 0.3 an equal split needs about
    520 records (Gaussian) or 1,600 (Laplace) for a class to pass, so the minority's records
    were dropped; with the target's third of the histograms' budget (about 165 and 160) both
    classes pass in each of 10 releases (each fails with probability under 1e-3), and no
    record is lost."""
    rng = np.random.default_rng(45)
    n, k = 5000, 29
    frame = pd.DataFrame({f"v{i}": rng.normal(size=n) for i in range(k)})
    frame["label"] = np.where(np.arange(n) < 250, "fraud", "legit")
    kinds = {**{f"v{i}": "continuous" for i in range(k)}, "label": "categorical"}
    ranges = {f"v{i}": (-20.0, 20.0) for i in range(k)}
    for seed in range(10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DpSchemaWarning)
            release = infer_schema_dp(
                np.random.default_rng(seed), frame, epsilon=0.3, kinds=kinds, ranges=ranges,
                target="label", noise=noise,
            )  # fmt: skip
        assert release.schema["label"].categories == ("fraud", "legit")
        assert len(release.conform(frame)) == n
    assert release.epsilon <= 0.3 * (1 + 1e-9)


def test_a_loose_range_does_not_walk_the_bounds_out():
    """A standard normal column (5,000 rows) in a coarse range of [-1e9, 1e9] with the noise
    of a 30-column joint release: a side of the bounds lands beyond 2^(MARGIN + 3) times the
    data's extent only when pure noise passes the core's threshold (RANGE_FAILURE), shows a
    window (SHOW_FAILURE) or extends the tails three times (EXTEND_CHANCE^3): at most the sum
    of those, plus a 5-sigma binomial allowance, over 600 sides. The plain noisy sum of all
    buckets beyond, tested one bucket at a time, walked 36% of the sides out (to 1e7-1e8)."""
    rng = np.random.default_rng(46)
    x = rng.normal(0, 1, 5000)
    plan = dps.plan_joint_gaussian(epsilon=0.3, delta=1e-7, histograms=30, categorical=0)
    h = dps.Histogram(log_bucket_edges(-1e9, 1e9), x)
    reach = 2 ** (dps.MARGIN + 3) * np.abs(x).max()
    far = 0
    for _ in range(10):
        results, _ = dps.dp_joint_histograms(rng, [h] * 30, plan)
        for bounds in results:
            assert bounds.lower <= x.min() and x.max() <= bounds.upper
            far += (bounds.lower < -reach) + (bounds.upper > reach)
    p = dps.RANGE_FAILURE + SHOW_FAILURE + dps.EXTEND_CHANCE**3
    assert far / 600 <= p + 5 * np.sqrt(p * (1 - p) / 600)


def test_a_share_within_its_noise_is_reported_by_its_bound_only():
    """A released clipped share below the 1.645 sd that separate it from its 95% bound is
    noise (a loose range sums dozens of empty buckets outside: creditcard's V20 was reported
    "about 10.0% outside" with about 0 true); the report then gives the bound alone, and a
    share that stands out keeps its figure."""
    assert not dps.share_shows(0.10, 0.223) and dps.share_shows(0.10, 0.15)
    assert not dps.share_shows(0.0, 0.0)
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=-15.0, upper=30.0),
            Column(name="y", kind="continuous", lower=0.0, upper=1.0),
        )
    )
    release = SchemaRelease(
        schema, PrivacyLedger(), clipped=(("x", 0.10), ("y", 0.10)),
        clipped_bound=(("x", 0.223), ("y", 0.15)),
    )  # fmt: skip
    x, y = release.bounds_report().splitlines()
    assert "too small for the noise to show (at most 22.3% at 95%)" in x and "10.0" not in x
    assert "about 10.0% of its values outside them (noisy; at most 15.0% at 95%)" in y
