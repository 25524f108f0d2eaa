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
from jdp.data.quantile_scale import MIN_MAX, QUANTILES, NumericScale
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
    config = get_method("marginals").make_config(None, scale=QUANTILES)
    return fit_model(jax.random.key(0), "marginals", _frame(), BUDGET, config, schema=SCHEMA)


def test_every_shipped_method_takes_a_scale_defaulting_to_min_max():
    for name in available_methods():
        assert get_method(name).config_cls().scale == MIN_MAX, name


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
    out = sample_model(jax.random.key(1), loaded, 4000)
    values = out["amount"][out["amount"] > 0]
    assert values.between(0, 1e5).all()
    # the bulk lies where the data is (real median ~1,800), not over the public range
    assert values.median() < 10_000


def test_min_max_spends_nothing_and_fits_exactly_as_before():
    frame = _frame(500)
    method = get_method("marginals")
    plain = fit_model(jax.random.key(2), "marginals", frame, BUDGET, schema=SCHEMA)
    explicit = fit_model(
        jax.random.key(2), "marginals", frame, BUDGET, method.make_config(None, scale=MIN_MAX),
        schema=SCHEMA,
    )  # fmt: skip
    assert not any(label.startswith("dp-quantiles") for label in plain.ledger.labels)
    assert plain.ledger.to_dict() == explicit.ledger.to_dict()
    np.testing.assert_array_equal(plain.params["noisy_counts"], explicit.params["noisy_counts"])


def test_scale_validation():
    with pytest.raises(ValueError, match="share"):
        NumericScale(quantiles=True, share=1.0)
    with pytest.raises(TypeError, match="quantiles"):
        NumericScale(quantiles="yes")
    assert dataclasses.replace(QUANTILES, share=0.5).share == 0.5
