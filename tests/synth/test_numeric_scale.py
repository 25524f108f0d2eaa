"""The one table adapter reads a config's ``scale``: released quantile knots for the numeric
columns that need them (their own key and share of the budget, the value counts that split it
and the knots first in the ledger), the method fitted on the rest, the knots kept in the model's
schema so sampling decodes through them; min-max (the default) spends nothing and changes
nothing."""

from __future__ import annotations

import dataclasses
import warnings

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from accounting.events import PureDpEvent
from jdp.data.quantile_scale import LOG, MIN_MAX, QUANTILES, NumericScale
from jdp.data.schema import Column, Schema
from jdp.synth import io
from jdp.synth.base import available_methods, fit_model, get_method, sample_model

SCHEMA = Schema(
    columns=(
        Column(name="amount", kind="continuous", lower=0.0, upper=1e5, point_masses=(0.0,)),
        Column(name="k", kind="integer", lower=0, upper=1),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    ),
    target="y",
)
BUDGET = PrivacyBudget(epsilon=4.0, delta=1e-5)


def _frame(n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    amount = np.where(rng.random(n) < 0.3, 0.0, np.round(rng.lognormal(7.5, 0.8, n), 2))
    return pd.DataFrame(
        {
            "amount": np.minimum(amount, 1e5),
            "k": rng.integers(0, 2, n),
            "y": rng.choice(["no", "yes"], n).astype(object),
        }
    )


@pytest.fixture(scope="module")
def fitted():
    """Marginals on released knots, its row count declared (no count release before them)."""
    config = get_method("marginals").make_config(None, scale=QUANTILES)
    return fit_model(
        jax.random.key(0), "marginals", _frame(), BUDGET, config, schema=SCHEMA, rows=10**6
    )


def test_every_shipped_method_takes_the_scale_measured_to_help_by_default():
    """Min-max, the public log scale on every column (marginals, the tree, ClustMix, DP-VAE) or
    on right-tailed columns only (P3GM's config and its other variants), or (dp-gan, whose
    samples are mapped through them) released knots, where each was measured to help."""
    from jdp.data.quantile_scale import TAILS
    from jdp.synth.dp_gan.config import KNOTS

    for name in available_methods():
        scale = get_method(name).make_config(None).scale
        expected = (
            KNOTS if name == "dp-gan"
            else LOG if name in ("marginals", "tree", "clustmix", "dp-vae")
            else TAILS if name in ("p3gm", "p3gm-ae", "pgm")
            else MIN_MAX
        )  # fmt: skip
        assert scale == expected, name


def test_quantiles_spend_their_share_first_and_the_ledger_meets_the_budget(fitted):
    from jdp.data.quantile_scale import COUNT_SHARE
    from jdp.mechanisms.noise import laplace_event

    labels = fitted.ledger.labels
    assert list(labels[:2]) == ["dp-counts:knots", "dp-quantiles"]
    assert fitted.ledger.entries[1].note == "knots of amount"  # k is 0/1: none
    share = QUANTILES.share * BUDGET.epsilon
    assert fitted.ledger.entries[0].event == laplace_event(COUNT_SHARE * share)
    assert fitted.ledger.entries[1].event == PureDpEvent(epsilon=(1 - COUNT_SHARE) * share)
    assert fitted.epsilon() <= BUDGET.epsilon * (1 + 1e-9) and fitted.budget == BUDGET


def test_the_knots_ledger_is_the_same_whatever_the_data_chose():
    """The split follows the released counts, the ledger does not: a table whose amount is
    mostly zeros gets a larger share for it (and a different release), and the same ledger."""
    from jdp.data.quantile_scale import scale_table
    from jdp.synth.signal import knot_releases

    frame = _frame()[["amount"]]
    thin = frame.assign(amount=np.where(np.arange(len(frame)) % 20 == 0, frame["amount"], 0.0))
    schema = Schema(columns=(SCHEMA["amount"], dataclasses.replace(SCHEMA["amount"], name="b")))
    scaled = [
        scale_table(
            jax.random.key(0), schema.conform(f.assign(b=frame["amount"])), BUDGET, QUANTILES
        )
        for f in (frame, thin)
    ]
    assert scaled[0].ledger.to_dict() == scaled[1].ledger.to_dict()
    assert scaled[0].rest == scaled[1].rest
    # the thin amount's knots weigh more noise against fewer records
    ratios = [{r.name: r.ratio for r in knot_releases(s.knots, QUANTILES.probs)} for s in scaled]
    assert ratios[1]["knots of amount"] > 4 * ratios[0]["knots of amount"]


def test_the_split_sums_to_the_budget_and_favours_thin_columns():
    from jdp.data.quantile_scale import split_knots_epsilon

    wide = Column(name="w", kind="continuous", lower=0.0, upper=1e5)
    narrow = Column(name="n", kind="integer", lower=0, upper=20)
    for counts in ([1000.0, 1000.0], [-5.0, 3e4], [50.0, 4e4], [0.0, 0.0]):
        parts = split_knots_epsilon(0.3, [wide, narrow], np.array(counts))
        assert parts.sum() == pytest.approx(0.3, rel=1e-12) and (parts > 0).all()
    same = split_knots_epsilon(0.3, [wide, wide], np.array([1000.0, 1000.0]))
    np.testing.assert_allclose(same, [0.15, 0.15])
    thin = split_knots_epsilon(0.3, [wide, wide], np.array([250.0, 4000.0]))
    np.testing.assert_allclose(thin[0] / thin[1], 4.0)  # sqrt(4000 / 250)
    # a count the noise put near zero or below weighs as the floor (the noise sd), not as 1:
    # without it the first column took 97% of the budget
    floored = split_knots_epsilon(0.3, [wide, wide], np.array([-500.0, 3e4]), floor=1500.0)
    np.testing.assert_allclose(
        floored, split_knots_epsilon(0.3, [wide, wide], np.array([1500.0, 3e4]))
    )
    assert floored[0] < 0.85 * 0.3


@pytest.mark.parametrize(
    "column, draw",
    [
        (Column(name="loss", kind="integer", lower=0, upper=4356), lambda r, n: r.normal(1900, 300, n)),
        (Column(name="gain", kind="integer", lower=0, upper=99999), lambda r, n: r.lognormal(8.9, 0.9, n)),
        (Column(name="amount", kind="continuous", lower=0.0, upper=1e5), lambda r, n: r.lognormal(7.5, 0.8, n)),
        (Column(name="age", kind="integer", lower=17, upper=90), lambda r, n: r.normal(38, 13, n)),
    ],
)  # fmt: skip
def test_knots_at_the_signal_threshold_put_the_median_in_the_interquartile_range(column, draw):
    """The no-signal rule's promise (``knot_releases``): at noise/signal 1 the released median
    lies in the interquartile range at least 4 times in 5; at 4 (a quarter of the budget) less
    than half the time. 300 releases each: the bounds are 3 binomial sds from 0.8 and 0.5."""
    from jdp.data.quantile_scale import KnotSpend
    from jdp.mechanisms.quantiles import dp_quantiles
    from jdp.synth.signal import knot_releases

    rng, n, trials = np.random.default_rng(7), 500, 300
    x = np.clip(
        np.round(draw(rng, n)) if column.is_integer_valued else draw(rng, n),
        column.lower,
        column.upper,
    )
    q1, q3 = np.quantile(x, [0.25, 0.75])
    at_one = knot_releases([KnotSpend(column, n, 1.0)], (0.5,))[0].ratio  # at epsilon 1
    for ratio, holds in ((1.0, lambda h: h >= 0.8 - 3 * np.sqrt(0.16 / trials)),
                         (4.0, lambda h: h <= 0.5 + 3 * np.sqrt(0.25 / trials))):  # fmt: skip
        eps = at_one / ratio
        hits = np.mean(
            [
                q1 <= dp_quantiles(rng, x, (0.5,), lower=column.lower, upper=column.upper,
                                   epsilon=eps, integer=column.is_integer_valued)[0][0] <= q3
                for _ in range(trials)
            ]
        )  # fmt: skip
        assert holds(hits), (column.name, ratio, hits)


def test_the_knots_stay_in_the_schema_and_sampling_decodes_through_them(fitted, tmp_path):
    amount = fitted.schema.columns[0]
    assert [p for p, _ in amount.quantiles] == list(QUANTILES.probs)
    assert SCHEMA.columns[0].quantiles == ()  # the declared schema is untouched
    loaded = io.load(io.save(fitted, tmp_path / "m"))
    assert loaded.schema == fitted.schema
    # the model's own CDF of the knotted column travels with it: the same draws after loading
    np.testing.assert_array_equal(loaded.params["value_cdf"], fitted.params["value_cdf"])
    out = sample_model(jax.random.key(1), loaded, 4000)
    pd.testing.assert_frame_equal(out, sample_model(jax.random.key(1), fitted, 4000))
    values = out["amount"][out["amount"] > 0]
    assert values.between(0, 1e5).all()
    # the bulk lies where the data is (real median ~1,800), not over the public range
    assert values.median() < 10_000


def test_public_scales_spend_nothing_and_leave_the_keys_alone():
    """Min-max and log read no data: the same ledger and the same noise draws (the key is
    split only to release knots); the log scale only moves the cells."""
    frame = _frame(500)
    method = get_method("marginals")
    fits = {
        scale: fit_model(
            jax.random.key(2),
            "marginals",
            frame,
            BUDGET,
            method.make_config(None, scale=scale),
            schema=SCHEMA,
        )
        for scale in (MIN_MAX, LOG)
    }
    plain, logged = fits[MIN_MAX], fits[LOG]
    assert not any(label.startswith("dp-quantiles") for label in plain.ledger.labels)
    assert plain.ledger.to_dict() == logged.ledger.to_dict()
    assert plain.schema == SCHEMA and logged.schema.columns[0].quantiles


def test_scale_validation():
    with pytest.raises(ValueError, match="share"):
        NumericScale(kind="quantiles", share=1.0)
    with pytest.raises(ValueError, match="kind in"):
        NumericScale(kind="sqrt")
    assert dataclasses.replace(QUANTILES, share=0.5).share == 0.5


def test_the_log_scale_is_public_and_gives_the_bulk_near_zero_its_share():
    """``"log"`` reads no data (no ledger entry, no key), and a long-tailed column whose
    values sit in the first percent of its declared range spreads over a fair part of the
    unit interval (min-max keeps it in the first 1.6%)."""
    from jdp.data.quantile_scale import LOG, log_knots, scale_table
    from jdp.data.scales import to_unit

    column = SCHEMA.columns[0]
    logged = log_knots(column)
    values = np.array([300.0, 1500.0])  # the bulk of _frame's amounts
    assert to_unit(column, values).max() < 0.016
    u = to_unit(logged, values)
    assert u[1] - u[0] > 0.1
    table, ledger, rest, _ = scale_table(None, SCHEMA.conform(_frame(100)), BUDGET, LOG)
    assert not ledger.entries and rest == BUDGET
    assert table.schema.columns[0] == logged and table.schema.columns[1] == SCHEMA.columns[1]
    narrow = Column(name="n", kind="integer", lower=0, upper=10)
    assert log_knots(narrow) == narrow


def test_the_log_scale_measures_a_signed_column_from_zero():
    """A column whose declared range holds zero is logged on both sides of zero (its origin),
    not from its lower bound: a centred column's middle half (creditcard's V20 on [-20, 20]:
    -0.21 to 0.13) took 0.85% of the unit interval on min-max, and on the log measured from
    -20 its whole bulk fell in one cell. Both sides mirror each other, zero maps to the
    middle, and an all-negative range is measured from its upper bound (the mirror of the
    positive one)."""
    from jdp.data.quantile_scale import log_knots
    from jdp.data.scales import to_unit

    signed = Column(name="v", kind="continuous", lower=-20.0, upper=20.0)
    logged = log_knots(signed)
    v = np.array([x for _, x in logged.quantiles])
    np.testing.assert_allclose(v, -v[::-1], rtol=1e-12)
    assert to_unit(logged, np.array([0.0]))[0] == pytest.approx(0.5, abs=1e-12)
    bulk = to_unit(logged, np.array([-0.21, 0.13]))
    assert bulk[1] - bulk[0] > 0.2
    positive = log_knots(Column(name="p", kind="continuous", lower=1.0, upper=100.0))
    negative = log_knots(Column(name="n", kind="continuous", lower=-100.0, upper=-1.0))
    x = np.array([1.5, 3.0, 10.0, 60.0])
    np.testing.assert_allclose(to_unit(negative, -x), 1.0 - to_unit(positive, x), atol=1e-12)


def test_the_tails_scale_logs_only_right_tailed_columns():
    """``"tails"`` reads no data and puts the log knots on a column whose declared lower bound
    is zero or more only: a signed or centred column keeps min-max."""
    from jdp.data.quantile_scale import TAILS, log_knots, right_tailed, scale_table

    signed = Column(name="v", kind="continuous", lower=-60.0, upper=30.0)
    above = Column(name="w", kind="continuous", lower=0.0, upper=1e5, point_masses=(5.0,))
    schema = Schema(columns=(*SCHEMA.columns, signed, above), target="y")
    frame = _frame(100).assign(v=0.5, w=5.0)
    table, ledger, rest, _ = scale_table(None, schema.conform(frame), BUDGET, TAILS)
    assert not ledger.entries and rest == BUDGET
    assert [right_tailed(c) for c in schema.columns] == [True, True, False, False, True]
    assert table.schema.columns[0] == log_knots(SCHEMA.columns[0])
    assert table.schema.columns[3] == signed and table.schema.columns[4] == log_knots(above)
    assert table.schema.columns[4] != above


def test_released_knots_beside_dp_sgd_keep_the_ledger_within_the_budget(tiny_config):
    """Knots of seven columns are too many parallel cases for the PLD accountant; the ledger
    once fell back to RDP for the whole and reported dp-GAN's fit over its budget (the fit
    raised). Basic composition of the knots with the PLD answer on the rest meets it, and the
    calibration after the knots (a prior) uses that rule too, so the fit spends the whole
    budget (it reported 0.95 when the calibration fell back to RDP)."""
    schema = Schema(
        columns=tuple(
            Column(name=f"x{j}", kind="continuous", lower=0.0, upper=100.0) for j in range(7)
        )
        + (Column(name="y", kind="categorical", categories=("no", "yes")),),
        target="y",
    )
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({f"x{j}": rng.exponential(5.0, 200) for j in range(7)})
    frame["y"] = rng.choice(["no", "yes"], 200).astype(object)
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    config = dataclasses.replace(tiny_config("dp-gan"), scale=QUANTILES)
    model = fit_model(jax.random.key(0), "dp-gan", frame, budget, config, schema=schema)
    knots = model.ledger.entries[model.ledger.labels.index("dp-quantiles")]
    assert knots.note == "knots of " + ", ".join(f"x{j}" for j in range(7))
    assert 0.99 * budget.epsilon <= model.epsilon() <= budget.epsilon * (1 + 1e-9)


def test_drawn_values_are_mapped_onto_the_knots_by_the_models_own_cdf():
    """``onto_knots`` through ``own_cdf`` of a reference draw of the same distribution: the
    mapped values' unit ranks are uniform within the Kolmogorov-Smirnov bound at ALPHA of the
    fresh draw plus the DKW bound of the reference's quantiles and the grid's step (unmapped,
    they are not); point masses stay; a constant column goes to the knots' median."""
    from scipy import stats

    from jdp.data.quantile_scale import CDF_DRAWS, CDF_POINTS, onto_knots, own_cdf
    from jdp.data.scales import to_unit

    alpha, n = 1e-3, 4000
    amount = dataclasses.replace(
        SCHEMA["amount"], quantiles=((0.25, 500.0), (0.5, 1500.0), (0.75, 4000.0))
    )
    flat = Column(name="flat", kind="continuous", lower=0.0, upper=10.0, quantiles=((0.5, 2.0),))
    schema = Schema(columns=(amount, flat))
    rng = np.random.default_rng(2)

    def draw(m: int) -> pd.DataFrame:
        """A model off the knots (on 0.85-0.99 of the unit scale), 20% at the mass 0."""
        x = np.where(rng.random(m) < 0.2, 0.0, rng.uniform(5_000.0, 6_400.0, m))
        return pd.DataFrame({"amount": x, "flat": np.full(m, 7.0)})

    cdf = own_cdf(schema, QUANTILES, draw(CDF_DRAWS))
    assert cdf.shape == (2, CDF_POINTS)
    before = draw(n)
    after = onto_knots(schema, QUANTILES, before, cdf)
    np.testing.assert_array_equal(after["amount"] == 0.0, before["amount"] == 0.0)
    values = after["amount"][after["amount"] > 0].to_numpy()
    bound = (
        stats.kstwo.ppf(1.0 - alpha, len(values))
        + np.sqrt(np.log(2.0 / alpha) / (2.0 * CDF_DRAWS))
        + 1.0 / (CDF_POINTS - 1)
    )
    assert stats.kstest(to_unit(amount, values), "uniform").statistic <= bound
    raw = before["amount"][before["amount"] > 0].to_numpy()
    assert stats.kstest(to_unit(amount, raw), "uniform").statistic > bound
    np.testing.assert_allclose(after["flat"], 2.0)
    assert own_cdf(schema, LOG, before).shape == (0, CDF_POINTS)  # public knots: none


def test_dp_gan_samples_follow_the_released_quantiles_whatever_its_generator(tiny_config):
    """A three-step generator knows nothing of the data; mapped through its own CDF onto the
    released knots, a long-tailed amount's synthetic CDF at each knot value is the knot's
    probability, within the KS bound at ALPHA of the 4,000 draws plus the DKW bound of the
    CDF's reference draws and its grid step (unmapped, it is not)."""
    from scipy import stats

    from jdp.data.quantile_scale import CDF_DRAWS, CDF_POINTS

    alpha, n = 1e-3, 4000
    schema = Schema(
        columns=(
            Column(name="amount", kind="continuous", lower=0.0, upper=1e5),
            Column(name="y", kind="categorical", categories=("no", "yes")),
        ),
        target="y",
    )
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {"amount": rng.lognormal(7.5, 0.8, n), "y": rng.choice(["no", "yes"], n).astype(object)}
    )
    config = tiny_config("dp-gan")
    assert config.scale.kind == "quantiles"
    model = fit_model(jax.random.key(3), "dp-gan", frame, BUDGET, config, schema=schema)
    assert model.ledger.entries[model.ledger.labels.index("dp-quantiles")].note == "knots of amount"
    knots = model.schema["amount"].quantiles
    bound = (
        stats.kstwo.ppf(1.0 - alpha, n)
        + np.sqrt(np.log(2.0 / alpha) / (2.0 * CDF_DRAWS))
        + 1.0 / (CDF_POINTS - 1)
    )
    unmapped = {k: v for k, v in model.params.items() if k != "value_cdf"}
    for params, within in ((model.params, True), (unmapped, False)):
        draws = sample_model(jax.random.key(4), dataclasses.replace(model, params=params), n)
        x = draws["amount"].to_numpy(dtype=np.float64)
        gaps = [abs(np.mean(x <= v) - p) for p, v in knots]
        assert (max(gaps) <= bound) == within


def test_knots_without_signal_are_named_before_the_method_is_fitted():
    """A column whose value part is a few records weighs more noise than signal: the fit says
    so (``NoSignalWarning`` naming its knots) before the method's own fit starts; a full column
    at the same budget is not named."""
    from jdp.synth.signal import NoSignalWarning

    frame = _frame()
    frame["amount"] = np.where(np.arange(len(frame)) % 200 == 0, frame["amount"], 0.0)

    def boom(*args):
        raise RuntimeError("the fit started")

    method = dataclasses.replace(get_method("marginals"), fit_arrays=boom)
    config = method.make_config(None, scale=QUANTILES)
    key = jax.random.key(0)
    with (
        pytest.warns(NoSignalWarning, match="knots of amount") as caught,
        pytest.raises(RuntimeError, match="the fit started"),
    ):
        method.fit(key, SCHEMA.conform(frame), BUDGET, config, rows=10**6)
    assert "knots of amount" in [r.name for r in caught[0].message.releases]
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoSignalWarning)
        with pytest.raises(RuntimeError, match="the fit started"):
            method.fit(key, SCHEMA.conform(_frame()), BUDGET, config, rows=10**6)


def test_a_budget_too_small_to_count_splits_the_knots_by_their_buckets():
    """Below what the snapping mechanism can release, the counts are not released (no
    ``dp-counts`` entry, the public cap in their place), the split follows the buckets alone
    and the knots still spend their part."""
    from jdp.data.quantile_scale import COUNT_SHARE, scale_table
    from jdp.synth.signal import knot_releases

    tiny = PrivacyBudget(epsilon=1e-9, delta=1e-12)
    scaled = scale_table(jax.random.key(0), SCHEMA.conform(_frame(200)), tiny, QUANTILES)
    assert list(scaled.ledger.labels) == ["dp-quantiles"]
    knots = scaled.ledger.entries[0].event
    assert knots == PureDpEvent(epsilon=(1 - COUNT_SHARE) * QUANTILES.share * tiny.epsilon)
    assert [r.ratio >= 1 for r in knot_releases(scaled.knots, QUANTILES.probs)] == [True]
