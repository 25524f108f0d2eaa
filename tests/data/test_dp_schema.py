"""DP schema release: exponential-mechanism quantiles and thresholded category discovery."""

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
    SchemaRelease,
    bucket_index,
    dp_bounds,
    dp_categories,
    dp_quantile,
    dp_range,
    infer_schema_dp,
    load_schema,
    log_bucket_edges,
    threshold_for,
)
from jdp.data.schema import Schema, SuppressedCategoryWarning
from jdp.mechanisms.noise import LAPLACE_RELEASE_CUT, laplace_event
from jdp.verbosity import show_private_details


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
    assert cats == ("a", "b") and event == ev.ComposedDpEvent(
        [ev.EpsilonDeltaDpEvent(epsilon=1.0, delta=1e-6), ev.NoiseCutDpEvent(LAPLACE_RELEASE_CUT)]
    )
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
    # "other" for suppressed values is added by default; the target keeps its labels
    assert s["c"].categories == ("x", "y", "z", "other") and s["label"].categories == ("no", "yes")
    assert 0 <= s["age"].lower < 25 and 72 < s["age"].upper <= 150
    assert s["w"].lower < 50 and 950 < s["w"].upper <= 1e6
    assert release.ledger.labels == [
        "dp-bounds:age",
        "dp-bounds:w",
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
    """All records in one bucket: the range is that bucket unless an empty bucket passes,
    which happens with probability 1 - (1 - failure/M)^(M-1) (checked within a 5-sigma
    binomial bound over 3000 trials at failure = 0.5)."""
    rng = np.random.default_rng(21)
    edges = log_bucket_edges(0, 1e9)
    m = len(edges) - 1
    data = np.full(5000, 50.0)
    k = int(bucket_index(edges, [50.0])[0])
    hits = 0
    for _ in range(3000):
        (lo, hi), event = dp_range(rng, data, lower=0, upper=1e9, epsilon=0.5, failure=0.5)
        hits += (lo, hi) != (edges[k], edges[k + 1])
    p = 1 - (1 - 0.5 / m) ** (m - 1)
    assert abs(hits / 3000 - p) < 5 * np.sqrt(p * (1 - p) / 3000)
    assert event == laplace_event(0.5, secure_noise=False)
    # no bucket passes: the bucket of largest noisy count (report noisy max), never the whole
    # coarse range
    lo, hi = dp_range(rng, data[:2], lower=0, upper=1e9, epsilon=1e-3)[0]
    i = int(np.searchsorted(edges, lo))
    assert edges[i] == lo and edges[i + 1] == hi
    # a sparse column (its mode bucket holds 300 records, the threshold at epsilon 0.03 is
    # 331: no bucket passes) gets the scale of its mode by report noisy max, in about 99% of
    # draws (measured over 1000 at this epsilon); 200 draws with a binomial margin
    sparse = np.random.default_rng(5).lognormal(np.log(3000), 0.3, 400)
    found = 0
    for _ in range(200):
        lo, hi = dp_range(rng, sparse, lower=0, upper=1e9, epsilon=0.03)[0]
        found += lo <= np.median(sparse) <= hi and hi - lo < 3000
    assert found >= 0.9 * 200


def test_range_search_noise_matches_its_ledger_entry(monkeypatch):
    """The Laplace noise the range search draws has the scale of the event recorded in the
    ledger (KS test), and the column's entry composes to its share of epsilon exactly."""
    calls = []

    def recording(rng, value, **kwargs):
        noisy, event = real(rng, value, **kwargs)
        calls.append((value, noisy, event))
        return noisy, event

    real = dps.laplace_mechanism
    monkeypatch.setattr(dps, "laplace_mechanism", recording)
    rng = np.random.default_rng(22)
    data = pd.DataFrame({"a": rng.normal(40, 5, 2000), "b": rng.exponential(100, 2000)})
    kinds = {"a": "continuous", "b": "continuous"}
    release = infer_schema_dp(
        rng, data, epsilon=0.6, kinds=kinds, ranges={"a": (0, 1e9), "b": (0, 1e9)}
    )
    assert len(calls) == 2
    for (counts, noisy, event), entry in zip(calls, release.ledger.entries):
        assert entry.event == ev.ComposedDpEvent([event, ev.PureDpEvent(0.1), ev.PureDpEvent(0.1)])
        laplace, cut = event.events  # the textbook sampler and its cut
        assert laplace == ev.LaplaceDpEvent(noise_multiplier=pytest.approx(10.0))
        assert cut == ev.NoiseCutDpEvent(LAPLACE_RELEASE_CUT)
        assert (
            stats.kstest(noisy - counts, stats.laplace(scale=laplace.noise_multiplier).cdf).pvalue
            > 1e-4
        )
    assert release.epsilon == pytest.approx(0.6)


def test_bounds_on_adult_age_at_epsilon_1_land_near_the_truth():
    """Regression (issue 17): at epsilon = 1 over Adult's 15 columns with the range [0, 1e9],
    age's bounds came out at 47-520 million. Now (age's share: epsilon = 1/15, a third each
    for the range search and the two quantiles):

    * the range search returns the buckets holding the data, [14.9, 119.2): it fails only if
      an empty bucket passes (probability <= failure = 1e-3) or a data bucket misses its
      threshold (probability computed below from its count, < 1e-9);
    * each quantile's rank is within r = 0.1 n of q n except with probability
      p <= (B - A) / l exp(-epsilon_q r / 4) (docs/privacy.md, "DP range search"), with l the
      length of the outputs within r / 2 ranks, bounded below from the sorted ages; asserted
      < 1e-6 here, so the tolerance is the mechanism's, not a guess;
    * so the bounds are within a factor 1.7 of the true 1% and 99% quantiles (17, 74).
    """
    from jdp.data.datasets import load_dataset

    ages = load_dataset("adult").train["age"].to_numpy(dtype=np.float64)
    n, eps = len(ages), 1 / 15
    eps_r = eps_q = eps / 3
    edges = log_bucket_edges(0, 1e9)
    m = len(edges) - 1
    counts = np.bincount(bucket_index(edges, ages), minlength=m)
    full = np.flatnonzero(counts)
    tau = np.log(m / (2 * dps.RANGE_FAILURE)) / eps_r
    assert max(stats.laplace.cdf(tau - counts[full], scale=1 / eps_r)) < 1e-9
    bounds, event = dp_bounds(
        np.random.default_rng(23), ages, lower=0, upper=1e9, epsilon=eps, integer=True
    )
    a, b = bounds.search_range
    assert (a, b) == (edges[full[0]], edges[full[-1] + 1])
    assert (a, b) == pytest.approx((14.9, 119.2), abs=0.1)
    x = np.sort(ages)
    r = 0.1 * n
    for q, t in ((0.01, bounds.lower), (0.99, bounds.upper)):
        # outputs with |rank - q n| <= r / 2 cover at least [x_(lo) + 1/2, x_(hi) - 1/2] (jitter)
        # plus [b-ward tail] when q n + r / 2 >= n, and [a, x_(1) - 1/2] when q n - r / 2 <= 0
        lo_rank, hi_rank = int(np.ceil(q * n - r / 2)), int(np.floor(q * n + r / 2))
        length = x[min(hi_rank, n) - 1] - x[max(lo_rank, 1) - 1] - 1
        length += (b - x[-1] - 0.5) * (hi_rank >= n) + (x[0] - 0.5 - a) * (lo_rank <= 0)
        assert (b - a) / length * np.exp(-eps_q * r / 4) < 1e-6
        # the output t is in [t_int - 1, t_int + 1] (rounded outwards), its rank k(t) among
        # the jittered ages between #(age < t - 1.5) and #(age < t + 1.5)
        assert np.sum(x < t + 1.5) >= q * n - r and np.sum(x < t - 1.5) <= q * n + r
    assert a <= bounds.lower and bounds.upper <= np.ceil(b)
    true_lo, true_hi = np.quantile(ages, [0.01, 0.99])
    assert 1 / 1.7 < bounds.lower / true_lo < 1.7 and 1 / 1.7 < bounds.upper / true_hi < 1.7
    laplace, *quantile_events = event.events
    assert laplace.events[0].noise_multiplier == pytest.approx(1 / eps_r)
    assert [e.epsilon for e in quantile_events] == pytest.approx([eps_q, eps_q])
    assert PrivacyLedger().record("dp-bounds:age", event).epsilon(1e-9) == pytest.approx(eps)


def test_bounds_bad_arguments():
    rng = np.random.default_rng(24)
    with pytest.raises(ValueError, match="expected 0 <= range_fraction < 1"):
        dp_bounds(rng, np.ones(5), lower=0, upper=1, epsilon=1, range_fraction=1)
    with pytest.raises(ValueError, match="expected failure in"):
        dp_range(rng, np.ones(5), lower=0, upper=1, epsilon=1, failure=0)
    with pytest.raises(ValueError, match="expected lower < upper"):
        log_bucket_edges(3, 3)
    # range_fraction = 0: the quantiles alone, on the coarse range
    bounds, event = dp_bounds(
        rng, np.arange(100.0), lower=0, upper=100, epsilon=2, range_fraction=0
    )
    assert bounds.search_range == (0.0, 100.0)
    assert event == ev.ComposedDpEvent([ev.PureDpEvent(1.0), ev.PureDpEvent(1.0)])


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
    assert model.ledger.labels[:2] == release.ledger.labels
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
    nonzero = gain[gain > 0]
    assert np.quantile(nonzero, 0.9) < g.upper < 4 * np.quantile(nonzero, 0.99)  # not 0
    assert h.nullable and 20 < h.lower < 35 and 45 < h.upper < 60
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
