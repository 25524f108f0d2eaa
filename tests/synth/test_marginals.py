"""DP independent marginals: neighbouring datasets, noise scale, accounting, sampling."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import PrivacyBudget
from accounting import events as ev
from accounting.compose import split_approximate
from jdp.data.quantile_scale import MIN_MAX
from jdp.data.schema import ClipWarning, Column, Schema
from jdp.mechanisms.noise import snapping_laplace_parameters
from jdp.random import key_from_seed
from jdp.synth import base, io
from jdp.synth.marginals import (
    Marginals,
    MarginalsConfig,
    cell_counts,
    coarse_cells,
    codec,
    codec_bins,
    column_probabilities,
    histogram_shapes,
    noise_multiplier,
    refined,
)
from jdp.verbosity import show_private_details

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)


@pytest.fixture(scope="module")
def rows3000(adult):
    """The first 3,000 Adult training rows."""
    return adult.train.iloc[:3000].reset_index(drop=True)


#: A declared public row count: the method alone, without a released count (``bins="auto"``
#: then gives its most cells).
DECLARED_ROWS = 10**6


def fit(key_seed, frame, schema, budget=BUDGET, **config):
    return base.fit_model(
        key_from_seed(key_seed),
        "marginals",
        frame,
        budget,
        MarginalsConfig(**config),
        schema=schema,
        rows=DECLARED_ROWS,
    )


def extreme_records(adult) -> list[dict]:
    """Adversarial extra records: every numeric column at (or far beyond) one bound, rare
    categories."""
    s = adult.schema
    rows = []
    for side, far in (("lower", -1e9), ("upper", 1e9)):
        row = {}
        for col in s.columns:
            if col.is_numeric:
                row[col.name] = far if col.kind == "continuous" else int(getattr(col, side))
            else:
                row[col.name] = col.categories[-1]
        rows.append(row)
    return rows


@pytest.mark.parametrize(
    "noise, conditioned", [("gaussian", True), ("laplace", True), ("gaussian", False)]
)
def test_neighbours_differ_only_in_accounted_noisy_counts(
    adult, rows3000, noise, conditioned, tmp_path
):
    """Fit on D and on D + one extreme record with the same key: everything public (schema,
    config, budget, ledger, parameter names and shapes, the released noise sd) is identical, and the noisy counts
    differ by exactly the change of the exact counts, which has L1 norm d and L2 norm sqrt(d)
    (the sensitivities the calibration assumes) -- for the Gaussian; the Laplace release
    (snapping) rounds to a grid, so there the counts differ only in the d cells that moved,
    by at most one grid step each."""
    d = len(adult.schema)
    for extra in extreme_records(adult):
        neighbour = pd.concat([rows3000, pd.DataFrame([extra])], ignore_index=True)
        with (  # far outside: clipped (a private bit: warned only to the data holder)
            show_private_details(),
            pytest.warns(ClipWarning, match=r"1 value\(s\) of column 'fnlwgt'"),
        ):
            m2 = fit(7, neighbour, adult.schema, noise=noise, condition_on_target=conditioned)
        m1 = fit(7, rows3000, adult.schema, noise=noise, condition_on_target=conditioned)
        assert m1.schema == m2.schema and m1.config == m2.config and m1.budget == m2.budget
        assert m1.ledger.to_dict() == m2.ledger.to_dict()
        assert m1.params.keys() == m2.params.keys() == {"noisy_counts", "noise_sd"}
        # the noise sd is public (the calibrated multiplier times the sensitivity)
        np.testing.assert_array_equal(m1.params["noise_sd"], m2.params["noise_sd"])
        diff = m2.params["noisy_counts"] - m1.params["noisy_counts"]
        if noise == "gaussian":
            assert np.abs(diff).sum() == pytest.approx(d, abs=1e-6)
            assert np.linalg.norm(diff) == pytest.approx(np.sqrt(d), abs=1e-6)
            assert np.allclose(diff, np.round(diff), atol=1e-6)  # same noise, counts moved by 1
        else:
            before, after = (
                np.concatenate([c.ravel() for c in _counts(adult.schema.conform(f), m1.config)])
                for f in (rows3000, neighbour)
            )
            moved = after != before
            grid = snapping_laplace_parameters(
                l1_sensitivity=float(d), epsilon=1.0 / noise_multiplier("laplace", PrivacyBudget(epsilon=1.0, delta=1e-5)),
                size=diff.size,
            ).grid  # fmt: skip
            assert moved.sum() == d and np.all(diff.ravel()[~moved] == 0)
            assert np.all(np.isin(np.abs(diff.ravel()[moved]), [0.0, grid]))
        # the saved artefact: model.json identical but for the digests, only the counts differ
        io.save(m1, tmp_path / "m1")
        io.save(m2, tmp_path / "m2")
        docs = [json.loads((tmp_path / m / "model.json").read_text()) for m in ("m1", "m2")]
        for doc in docs:
            del doc["params_sha256"], doc["digest"]
        assert docs[0] == docs[1]


def _counts(table, config):
    """The exact histograms of a conformed table (through the method's codec)."""
    return cell_counts(codec(table.schema, config).encode(table), table.schema, config)


@pytest.mark.parametrize("bins", [32, 5])
def test_random_neighbours_never_exceed_the_sensitivity(adult, rows3000, bins):
    """One cell of each released histogram: a column's, and at 5 cells each refined numeric
    column's fine one."""
    rng = np.random.default_rng(11)
    config = MarginalsConfig(bins=bins)
    histograms = len(histogram_shapes(adult.schema, config))
    assert histograms == len(adult.schema) + (6 if bins == 5 else 0)  # Adult's 6 numeric
    base_counts = np.concatenate(
        [c.ravel() for c in _counts(adult.schema.conform(rows3000), config)]
    )
    for _ in range(20):
        drop = int(rng.integers(len(rows3000)))
        removed = rows3000.drop(index=drop).reset_index(drop=True)
        counts = np.concatenate([c.ravel() for c in _counts(adult.schema.conform(removed), config)])
        delta = base_counts - counts
        assert np.abs(delta).sum() == histograms
        assert delta.min() == 0 and delta.max() == 1


@pytest.mark.parametrize(
    "noise, delta, event_cls",
    [
        ("gaussian", 1e-5, ev.GaussianDpEvent),
        ("laplace", 1e-5, ev.LaplaceDpEvent),
        ("laplace", 0.0, ev.LaplaceDpEvent),
    ],
)
def test_ledger_meets_the_budget_tightly(adult, rows3000, noise, delta, event_cls):
    model = fit(1, rows3000, adult.schema, PrivacyBudget(epsilon=1.0, delta=delta), noise=noise)
    (entry,) = model.ledger.entries
    # the ideal event (a Gaussian release carries its sampler's cut beside it; snapping none)
    assert isinstance(split_approximate(entry.event).rest, event_cls)
    assert entry.label == "marginals"
    # calibration uses the ledger's own figure (the best rigorous accountant's; pure Laplace
    # exactly): it lands within 1% of the target and never above it
    assert 0.99 <= model.epsilon() <= 1.0
    if delta == 0:
        assert entry.event == ev.LaplaceDpEvent(1.0)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_noise_has_the_calibrated_scale(noise):
    """One continuous column with many cells and an all-zero histogram except one cell: the
    noise on the empty cells must have the calibrated standard deviation (chi-square bound)."""
    n_cells = 4000
    schema = Schema(columns=(Column(name="x", kind="continuous", lower=0, upper=1),))
    frame = pd.DataFrame({"x": np.full(50, 0.99999)})
    model = fit(3, frame, schema, PrivacyBudget(epsilon=0.5, delta=1e-6), bins=n_cells, noise=noise)
    z = noise_multiplier(noise, PrivacyBudget(epsilon=0.5, delta=1e-6))
    noise_values = model.params["noisy_counts"][:-1]  # the last cell holds the 50 records
    sd = z * 1.0 * (np.sqrt(2) if noise == "laplace" else 1.0)  # d = 1: sensitivity 1
    ratio = noise_values.var(ddof=1) / sd**2
    k = len(noise_values) - 1
    # Laplace has excess kurtosis 3: var of s^2 is (2 + 3) sd^4 / n; use a normal 6-sigma bound
    spread = np.sqrt((2 + (3 if noise == "laplace" else 0)) / k)
    assert abs(ratio - 1) < 6 * spread
    assert abs(noise_values.mean()) < 6 * sd / np.sqrt(len(noise_values))


def test_high_epsilon_samples_match_the_marginals(adult, rows3000):
    """At epsilon = 1e4 the noise is negligible: each sampled column's category frequencies
    pass a chi-square goodness-of-fit test against the true marginal."""
    model = fit(5, rows3000, adult.schema, PrivacyBudget(epsilon=1e4, delta=1e-5))
    synth = base.sample_model(key_from_seed(6), model, 20_000)
    for name in ("workclass", "sex", "income", "race"):
        cats = adult.schema[name].categories
        true = rows3000[name].value_counts().reindex(cats, fill_value=0).to_numpy(float)
        got = synth[name].value_counts().reindex(cats, fill_value=0).to_numpy(float)
        keep = true > 0
        assert got[~keep].sum() <= 2  # cells empty in the data are (almost) never drawn
        expected = true[keep] / true[keep].sum() * got[keep].sum()
        assert stats.chisquare(got[keep], expected).pvalue > 1e-4
    assert synth["age"].between(17, 90).all() and synth["fnlwgt"].between(1, 2e6).all()


@pytest.mark.parametrize("conditioned", [True, False])
def test_conditioning_keeps_the_feature_label_relation(adult, rows3000, conditioned):
    """At epsilon = 1e4, P(sex = Male | income = >50K) of the synthetic data matches the real
    one when conditioned (6-sigma binomial bound), and falls to the unconditional share
    P(sex = Male) when not."""
    model = fit(
        9,
        rows3000,
        adult.schema,
        PrivacyBudget(epsilon=1e4, delta=1e-5),
        condition_on_target=conditioned,
    )
    synth = base.sample_model(key_from_seed(10), model, 20_000)
    rich = synth["income"] == ">50K"
    got = (synth.loc[rich, "sex"] == "Male").mean()
    want = (
        (rows3000.loc[rows3000["income"] == ">50K", "sex"] == "Male").mean()
        if conditioned
        else (rows3000["sex"] == "Male").mean()
    )
    assert abs(got - want) < 6 * np.sqrt(want * (1 - want) / rich.sum())
    assert (
        abs(
            (rows3000.loc[rows3000["income"] == ">50K", "sex"] == "Male").mean()
            - (rows3000["sex"] == "Male").mean()
        )
        > 0.1
    )


def test_probabilities_are_a_distribution_even_when_all_noise_is_negative():
    schema = Schema(columns=(Column(name="c", kind="categorical", categories=("a", "b", "c")),))
    model = base.FittedModel(
        method="marginals",
        params={"noisy_counts": np.array([-3.0, -1.0, -2.0])},
        schema=schema,
        config=MarginalsConfig(),
        budget=BUDGET,
        ledger=fit(0, pd.DataFrame({"c": ["a", "b"]}), schema).ledger,
    )
    (p,) = column_probabilities(model.params, model.schema, model.config)
    np.testing.assert_allclose(p, [1 / 3] * 3)


def test_noise_in_empty_cells_is_not_spread_over_the_range():
    """Issue 26: every record of a numeric column in one cell of 33; clipping the noisy counts
    at 0 puts about ``32 s / sqrt(2 pi)`` records of mass on the empty cells (``s`` the noise
    sd), spread over the whole public range. Norm-sub (the released distribution) keeps under
    a tenth of that."""
    schema = Schema(columns=(Column(name="x", kind="continuous", lower=0.0, upper=1000.0),))
    frame = pd.DataFrame({"x": np.full(2000, 3.0)})
    model = fit(3, frame, schema)
    (noisy,) = [np.asarray(model.params["noisy_counts"])]
    (p,) = column_probabilities(model.params, model.schema, model.config)
    occupied = int(np.argmax(noisy))
    clipped = np.maximum(noisy, 0) / np.maximum(noisy, 0).sum()
    assert 1 - clipped[occupied] > 0.01  # the old rule's spread is there to remove
    assert 1 - p[occupied] < 0.1 * (1 - clipped[occupied])


def test_a_conditioned_column_is_trimmed_to_the_support_of_its_pooled_classes():
    """Two classes, eight value cells, noise sd 10: a bulk of 15 per cell in cells 0-2 and a
    pair of 13s in cells 6-7 per class. Per class nothing is significant (bulk score 2.6
    against the Bonferroni level 2.99), so each class alone would keep the far pair (its
    cells flank each other, norm-sub has nothing to subtract: 37% of the class). Pooled, the
    bulk shows (3.7) and the pair does not (2.6 against 2.71): it goes in both classes."""
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0.0, upper=8.0),
            Column(name="y", kind="categorical", categories=("a", "b")),
        ),
        target="y",
    )
    row = [15.0, 15.0, 15.0, 0.0, 0.0, 0.0, 13.0, 13.0]
    config = MarginalsConfig(bins=8, refine=False, scale=MIN_MAX)
    frame = pd.DataFrame({"x": [1.0, 7.0], "y": ["a", "b"]})
    model = base.FittedModel(
        method="marginals",
        params={"noisy_counts": np.array(row + row + [100.0, 100.0]), "noise_sd": np.array([10.0])},
        schema=schema,
        config=config,
        budget=BUDGET,
        ledger=fit(0, frame, schema, bins=8, refine=False, scale=MIN_MAX).ledger,
    )
    p, _ = column_probabilities(model.params, model.schema, model.config)
    np.testing.assert_array_equal(p[:, 3:], 0.0)
    np.testing.assert_allclose(p[:, :3], 1 / 3)


def test_save_load_sample_identical(adult, rows3000, tmp_path):
    model = fit(8, rows3000, adult.schema)
    io.save(model, tmp_path / "m")
    loaded = io.load(tmp_path / "m")
    assert loaded.schema == model.schema and loaded.config == model.config
    assert loaded.ledger.to_dict() == model.ledger.to_dict()
    key = key_from_seed(99)
    pd.testing.assert_frame_equal(
        base.sample_model(key, loaded, 500), base.sample_model(key, model, 500)
    )


def test_estimator_layer(adult, rows3000):
    a = Marginals(epsilon=1, delta=1e-5, schema=adult.schema, seed=4).fit(rows3000)
    b = Marginals(epsilon=1, delta=1e-5, schema=adult.schema, seed=4).fit(rows3000)
    pd.testing.assert_frame_equal(a.sample(100), b.sample(100))
    # the row count for bins="auto" (jdp.synth.feasibility), then the histograms
    assert a.ledger_.labels == ["row count", "marginals"]
    # the model's schema is the declared one with the public log scale's knots
    assert a.schema_.names == adult.schema.names and all(
        dataclasses.replace(c, quantiles=()) == d
        for c, d in zip(a.schema_.columns, adult.schema.columns, strict=True)
    )
    c = Marginals(epsilon=1, delta=1e-5, schema=adult.schema).fit(rows3000)  # OS entropy
    assert not np.array_equal(c.model_.params["noisy_counts"], a.model_.params["noisy_counts"])
    assert Marginals(epsilon=1, bins=8, schema=adult.schema).config.bins == 8


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(epsilon=0), ValueError, "expected epsilon > 0, got 0"),
        (dict(epsilon=-1), ValueError, "expected epsilon > 0, got -1"),
        (dict(delta=1.0), ValueError, "delta in"),
        (dict(bins=1), ValueError, "expected bins >= 2"),
        (dict(noise="cauchy"), ValueError, "noise in"),
        (dict(nonsense=1), TypeError, "nonsense"),
    ],
)
def test_bad_arguments_raise(adult, kwargs, err, match):
    with pytest.raises(err, match=match):
        Marginals(schema=adult.schema, **{"epsilon": 1, **kwargs})


def test_gaussian_needs_delta(adult, rows3000):
    with pytest.raises(ValueError, match="needs delta > 0"):
        fit(0, rows3000, adult.schema, PrivacyBudget(epsilon=1.0, delta=0.0), noise="gaussian")


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        MarginalsConfig().bins = 3


@pytest.mark.parametrize("conditioned, refine", [(True, True), (False, False)])
def test_cell_counts_count_each_record_once_per_histogram(adult, rows3000, conditioned, refine):
    """The histograms, counted a column at a time (issue 29 item 4), are the records' counts
    per (class, cell) of each feature and per fine cell of each refined column."""
    schema = adult.schema
    config = MarginalsConfig(bins=8, condition_on_target=conditioned, refine=refine)
    cells = codec(schema, config).encode(schema.conform(rows3000))
    fine = codec_bins(config)
    coarse = [coarse_cells(c, 8, fine)[cells[:, j]] for j, c in enumerate(schema.columns)]
    label = coarse[schema.names.index(schema.target)]
    expected = []
    for j, shape in enumerate(histogram_shapes(schema, config)[: len(schema.columns)]):
        counts = np.zeros(shape)
        np.add.at(counts, (label, coarse[j]) if len(shape) == 2 else coarse[j], 1.0)
        expected.append(counts)
    for col in refined(schema, config):
        expected.append(np.bincount(cells[:, schema.names.index(col.name)]).astype(float))
    got = cell_counts(cells, schema, config)
    assert len(got) == len(expected) == len(histogram_shapes(schema, config))
    assert (len(got) > len(schema.columns)) == refine
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, np.pad(e, (0, g.size - e.size)) if e.ndim == 1 else e)
