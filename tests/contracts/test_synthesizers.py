"""One contract, every registered synthesizer (DESIGN section 3, "Tests").

For each method of :func:`jdp.synth.base.available_methods`, fitted with a tiny config on a
tiny table with every column kind:

* the ledger composes to at most the budget (``pgm``, non-private by design, is instead
  refused under any finite budget);
* the ledger's events do not depend on the data: a neighbouring table (one extreme record
  added) gives the same ledger with the same key (the record/replay of every mechanism's
  release lives in the methods' own tests);
* save/load round trip: the loaded model samples the same rows with the same key;
* the sample has the schema's columns in order, its dtypes (float64 continuous, int64
  integer), numbers within the public bounds and categories within the schema's.

A new method must add its tiny config to :data:`TINY` (a few seconds per method).
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.data.schema import Column, Schema
from jdp.synth import io
from jdp.synth.base import FittedModel, available_methods, fit_model, get_method, sample_model

SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=0.0, upper=1.0),
        Column(name="k", kind="integer", lower=0, upper=5),
        Column(name="c", kind="categorical", categories=("a", "b", "c")),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    ),
    target="y",
)
N = 60
BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
NON_PRIVATE = frozenset({"pgm"})
_P3GM_FAMILY = {
    "latent_dim": 2,
    "n_components": 2,
    "em_iterations": 2,
    "hidden": 4,
    "epochs": 0.1,
    "sampling_prob": 0.1,
    "expected_batch_size": 6.0,  # q N for the declared N = 60
    "dpsgd_method": "general",
}
#: The tiny config of every registered method (fields of its config class).
TINY: dict[str, dict] = {
    "marginals": {"bins": 4},
    "pca-gauss": {"n_components": 2},
    "p3gm": _P3GM_FAMILY,
    "p3gm-ae": _P3GM_FAMILY,
    "dp-vae": _P3GM_FAMILY,
    "pgm": _P3GM_FAMILY,
    "dp-gan": {
        "latent_dim": 2,
        "generator_hidden": (4,),
        "critic_hidden": (4,),
        "n_critic": 2,
        "generator_batch_size": 4,
        "sampling_prob": 0.1,
        "expected_batch_size": 6.0,
        "steps": 3,
        "epochs": None,
        "dpsgd_method": "general",
    },
    "clustmix": {"n_clusters": 1, "mixture_size": 10, "cluster_steps": 2, "kip_steps": 0},
    "dpgm": {
        "n_clusters": 1,
        "kmeans_iterations": 2,
        "kmeans_share": 0.5,
        "rff_dim": 8,
        "hidden": 4,
        "latent_dim": 2,
        "sampling_prob": 0.1,
        "steps": 3,
        "epochs": None,
        "clip_bins": 10,
    },
    "mwem": {"iterations": 3, "n_queries": 20, "bins": 4},
}
METHODS = available_methods()


def _table(n: int = N, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.uniform(0, 1, n),
            "k": rng.integers(0, 6, n),
            "c": rng.choice(["a", "b", "c"], n).astype(object),
            "y": rng.choice(["no", "yes"], n).astype(object),
        }
    )


def _fit(method: str, frame: pd.DataFrame, key: jax.Array) -> FittedModel:
    """``fit_model`` for private methods; the registered ``fit`` itself for non-private ones
    (``fit_model`` refuses those under a finite budget)."""
    m = get_method(method)
    config = m.make_config(None, **TINY[method])
    if method in NON_PRIVATE:
        return m.fit(key, SCHEMA.conform(frame), BUDGET, config)
    return fit_model(key, method, frame, BUDGET, config, schema=SCHEMA)


@pytest.fixture(scope="module", params=METHODS)
def fitted(request) -> tuple[str, FittedModel]:
    method = request.param
    assert method in TINY, f"add a tiny config for {method!r} to TINY"
    return method, _fit(method, _table(), jax.random.key(1))


def test_every_method_has_a_tiny_config():
    assert set(METHODS) <= set(TINY)


def test_ledger_meets_the_budget_or_is_refused(fitted):
    method, model = fitted
    assert model.ledger.entries, "a fit records at least one event"
    if method in NON_PRIVATE:
        assert model.ledger.epsilon(BUDGET.delta) == np.inf
        config = get_method(method).make_config(None, **TINY[method])
        with pytest.raises(RuntimeError, match="over the budget"):
            fit_model(jax.random.key(1), method, _table(), BUDGET, config, schema=SCHEMA)
        return
    assert model.ledger.epsilon(BUDGET.delta) <= BUDGET.epsilon * (1 + 1e-9)
    assert model.budget == BUDGET and model.method == method


def test_ledger_does_not_depend_on_the_data(fitted):
    """A neighbour (one extreme record added) gets the same ledger and parameter layout."""
    method, model = fitted
    extreme = pd.DataFrame([{"x": 1.0, "k": 5, "c": "c", "y": "yes"}])
    other = _fit(method, pd.concat([_table(), extreme], ignore_index=True), jax.random.key(1))
    assert other.ledger.to_dict() == model.ledger.to_dict()
    assert set(io.flatten_params(other.params)) == set(io.flatten_params(model.params))


def test_save_load_round_trip_samples_the_same_rows(fitted, tmp_path):
    method, model = fitted
    loaded = io.load(io.save(model, tmp_path / method))
    assert loaded.config == model.config and loaded.schema == model.schema
    assert loaded.ledger.to_dict() == model.ledger.to_dict()
    key = jax.random.key(5)
    pd.testing.assert_frame_equal(sample_model(key, loaded, 40), sample_model(key, model, 40))


def test_sample_has_the_schemas_columns_dtypes_and_domains(fitted):
    _, model = fitted
    out = sample_model(jax.random.key(6), model, 200)
    assert list(out.columns) == SCHEMA.names and len(out) == 200
    for col in SCHEMA.columns:
        values = out[col.name]
        if col.kind == "continuous":
            assert values.dtype == np.float64
        elif col.kind == "integer":
            assert values.dtype == np.int64
        else:
            assert set(values) <= set(col.categories), col.name
            continue
        assert values.between(col.lower, col.upper).all(), col.name
