"""The one table adapter reads a config's ``scale``: released quantile knots for the numeric
columns that need them (their own key and share of the budget, ``dp-quantiles:<column>``
entries first in the ledger), the method fitted on the rest, the knots kept in the model's
schema so sampling decodes through them; min-max (the default) spends nothing and changes
nothing."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.data.quantile_scale import LOG, MIN_MAX, QUANTILES, NumericScale
from jdp.data.schema import Column, Schema
from jdp.mechanisms.quantiles import quantiles_event
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
    """Min-max, the public log scale on every column (marginals, ClustMix, DP-VAE) or on
    right-tailed columns only (tree; P3GM's config and its other variants), or (dp-gan, whose
    samples are mapped through them) released knots, where each was measured to help."""
    from jdp.data.quantile_scale import TAILS

    for name in available_methods():
        scale = get_method(name).make_config(None).scale
        expected = (
            QUANTILES if name == "dp-gan"
            else LOG if name in ("marginals", "clustmix", "dp-vae")
            else TAILS if name in ("tree", "p3gm", "p3gm-ae", "pgm")
            else MIN_MAX
        )  # fmt: skip
        assert scale == expected, name


def test_quantiles_spend_their_share_first_and_the_ledger_meets_the_budget(fitted):
    labels = fitted.ledger.labels
    assert labels[0] == "dp-quantiles:amount" and "dp-quantiles:k" not in labels  # 0/1: none
    # one column needs knots: it gets the whole share
    expected = quantiles_event(QUANTILES.share * BUDGET.epsilon, len(QUANTILES.probs))
    assert fitted.ledger.entries[0].event == expected
    assert fitted.epsilon() <= BUDGET.epsilon * (1 + 1e-9) and fitted.budget == BUDGET


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
    table, ledger, rest = scale_table(None, SCHEMA.conform(_frame(100)), BUDGET, LOG)
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
    table, ledger, rest = scale_table(None, schema.conform(frame), BUDGET, TAILS)
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
    assert sum(label.startswith("dp-quantiles") for label in model.ledger.labels) == 7
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
    assert config.scale == QUANTILES
    model = fit_model(jax.random.key(3), "dp-gan", frame, BUDGET, config, schema=schema)
    assert "dp-quantiles:amount" in model.ledger.labels
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
