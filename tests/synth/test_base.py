"""The synthesizer protocol: registry, checks around fit/sample, save/load, keys."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from jdp.data.schema import Column, Schema, Table
from jdp.random import key_from_seed, numpy_rng
from jdp.synth import base, io
from jdp.synth.estimator import Synthesizer
from jdp.verbosity import show_private_details

SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=0, upper=1),
        Column(name="c", kind="categorical", categories=("a", "b")),
    ),
    target="c",
)
FRAME = pd.DataFrame({"x": np.linspace(0, 1, 20), "c": ["a", "b"] * 10})


@dataclass(frozen=True, kw_only=True)
class ToyConfig:
    overspend: float = 1.0
    widths: tuple[int, ...] = (2, 3)


@dataclass(frozen=True)
class ToyCodec:
    """The conformed frame as it is, and drawn frames as they are."""

    schema: Schema

    def encode(self, data: Table) -> pd.DataFrame:
        return data.frame

    def decode(self, key, rows: pd.DataFrame) -> pd.DataFrame:
        return rows


def toy_fit(key, frame: pd.DataFrame, codec: ToyCodec, budget: PrivacyBudget, config: ToyConfig):
    """Release the sum of x (x in [0, 1]: L1 sensitivity 1 under add/remove) with Laplace
    noise; ``overspend > 1`` is a deliberately buggy method."""
    rng = numpy_rng(key)
    eps = budget.epsilon * config.overspend
    noisy = frame["x"].sum() + rng.laplace(0, 1 / eps)
    ledger = PrivacyLedger().record("toy", ev.LaplaceDpEvent(1 / eps))
    params = {
        "sum": np.array(noisy),
        "nested": {"w": np.arange(6.0).reshape(2, 3), "b": np.zeros(3)},
    }
    return params, ledger


def toy_sample(key, params, codec, config, n):
    rng = numpy_rng(key)
    return pd.DataFrame({"x": rng.random(n), "c": rng.choice(["a", "b"], n).astype(object)})


@pytest.fixture(autouse=True, scope="module")
def _toy_method():
    """Register the toy method for this module only (the registry is global: a method left
    behind would leak into the contract tests that run over every registered method)."""
    method = base.Method(
        name="toy", config_cls=ToyConfig, codec=lambda schema, config: ToyCodec(schema),
        fit_arrays=toy_fit, sample_arrays=toy_sample,
    )  # fmt: skip
    base.register(method)
    yield
    del base._REGISTRY["toy"]


class Toy(Synthesizer):
    method = "toy"


BUDGET = PrivacyBudget(epsilon=1.0, delta=0.0)


def test_registry_lookup_and_lazy_import():
    assert base.get_method("toy").config_cls is ToyConfig
    assert "marginals" in base.available_methods()
    with pytest.raises(ValueError, match="unknown synthesizer 'nope'"):
        base.get_method("nope")


def test_the_table_of_methods_names_what_each_module_registers():
    """Every name of :data:`METHODS` is registered by importing its module, its class there
    is the Synthesizer for it, and nothing but this module's toy is registered beside them."""
    import importlib

    from jdp.synth.registry import METHODS

    for name, (module, cls) in METHODS.items():
        assert base.get_method(name).name == name
        assert getattr(importlib.import_module(module), cls).method == name
    assert set(base._REGISTRY) == {*METHODS, "toy"}


def _fresh_python(code: str) -> list[str]:
    """The stdout lines of ``code`` run in a new interpreter (nothing imported before)."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return run.stdout.split("\n")


def test_registry_finds_every_name_of_a_package_in_a_fresh_process():
    """A package registering several names (``jdp.synth.p3gm``: four variants) is found from
    any of them, with nothing imported beforehand."""
    out = _fresh_python(
        "from jdp.synth.base import get_method, available_methods\n"
        "print(get_method('dp-vae').name, get_method('pca-gauss').name)\n"
        "print(' '.join(available_methods()))"
    )
    assert out[0] == "dp-vae pca-gauss"
    assert set(out[1].split()) >= {"marginals", "pca-gauss", "p3gm", "p3gm-ae", "dp-vae", "pgm"}


def test_registry_lets_import_errors_of_a_method_module_propagate(tmp_path, monkeypatch):
    """A method module that fails to import raises its own error, never 'unknown synthesizer'."""
    import sys

    import jdp.synth

    (tmp_path / "broken_method.py").write_text("import not_a_module_anywhere\n")
    monkeypatch.setattr(jdp.synth, "__path__", [*jdp.synth.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "jdp.synth.broken_method", raising=False)
    table = {**base.METHODS, "broken-method": ("jdp.synth.broken_method", "Broken")}
    monkeypatch.setattr(base, "METHODS", table)
    with pytest.raises(ModuleNotFoundError, match="not_a_module_anywhere"):
        base.get_method("broken-method")


def test_fit_checks_the_ledger_against_the_budget():
    model = base.fit_model(key_from_seed(0), "toy", FRAME, BUDGET, schema=SCHEMA)
    assert model.epsilon() == pytest.approx(1.0)
    with pytest.raises(RuntimeError, match="over the budget"):
        base.fit_model(
            key_from_seed(0), "toy", FRAME, BUDGET, ToyConfig(overspend=1.5), schema=SCHEMA
        )


def test_fit_needs_a_schema_and_a_budget():
    with pytest.raises(ValueError, match="a schema is required"):
        base.fit_model(key_from_seed(0), "toy", FRAME, BUDGET)
    with pytest.raises(TypeError, match="PrivacyBudget"):
        base.fit_model(key_from_seed(0), "toy", FRAME, 1.0, schema=SCHEMA)
    with pytest.raises(TypeError, match="expects a ToyConfig"):
        base.fit_model(key_from_seed(0), "toy", FRAME, BUDGET, config={"a": 1}, schema=SCHEMA)


def test_delta_at_least_one_over_n_warns_the_data_holder_only():
    """n is private, so whether delta >= 1/n is too (issue 24, item 3): the warning appears
    only under show_private_details, where it may state 1/n."""
    budget = PrivacyBudget(epsilon=1.0, delta=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", base.DeltaWarning)
        base.fit_model(key_from_seed(0), "toy", FRAME, budget, schema=SCHEMA)
    with show_private_details(), pytest.warns(base.DeltaWarning, match=r"delta=0.1 >= 1/n = 0.05"):
        base.fit_model(key_from_seed(0), "toy", FRAME, budget, schema=SCHEMA)


def test_save_load_round_trip_without_pickle(tmp_path):
    model = base.fit_model(key_from_seed(3), "toy", FRAME, BUDGET, schema=SCHEMA)
    path = io.save(model, tmp_path / "model")
    doc = json.loads((path / io.MODEL_FILE).read_text())
    assert doc["method"] == "toy" and doc["config"]["widths"] == [2, 3]
    loaded = io.load(path)
    assert loaded.config == model.config  # the list came back as a tuple
    assert loaded.schema == model.schema and loaded.budget == model.budget
    assert loaded.ledger.to_dict() == model.ledger.to_dict()
    np.testing.assert_array_equal(loaded.params["nested"]["w"], model.params["nested"]["w"])
    key = key_from_seed(5)
    pd.testing.assert_frame_equal(
        base.sample_model(key, loaded, 50), base.sample_model(key, model, 50)
    )
    with np.load(path / io.PARAMS_FILE, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["nested/b", "nested/w", "sum"]


def test_save_rejects_object_arrays_and_bad_names(tmp_path):
    model = base.fit_model(key_from_seed(3), "toy", FRAME, BUDGET, schema=SCHEMA)
    bad = base.FittedModel(
        "toy", {"x": np.array([{"a": 1}], dtype=object)}, SCHEMA, ToyConfig(), BUDGET, model.ledger
    )
    with pytest.raises(TypeError, match="not a numeric array"):
        io.save(bad, tmp_path / "a")
    bad = base.FittedModel("toy", {"a/b": np.zeros(1)}, SCHEMA, ToyConfig(), BUDGET, model.ledger)
    with pytest.raises(ValueError, match="parameter names"):
        io.save(bad, tmp_path / "b")
    with pytest.raises(FileNotFoundError, match="no saved model"):
        io.load(tmp_path / "missing")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _crash(*args, **kwargs):
    raise OSError("disk full")


@pytest.mark.parametrize("step", ["params", "json", "swap"])
def test_save_is_atomic_a_crash_leaves_the_old_model(tmp_path, monkeypatch, step):
    """A save that fails while writing either file, or while swapping the directories in,
    leaves the previous model whole (or none) and no temporary directory behind."""
    old = base.fit_model(key_from_seed(3), "toy", FRAME, BUDGET, schema=SCHEMA)
    new = base.fit_model(key_from_seed(4), "toy", FRAME, BUDGET, schema=SCHEMA)
    target = io.save(old, tmp_path / "model")
    (target / "notes.txt").write_text("kept")
    if step == "params":
        monkeypatch.setattr(io.Path, "write_bytes", _crash)
    elif step == "json":
        monkeypatch.setattr(io.Path, "write_text", _crash)
    else:
        real = io.os.replace
        calls = []

        def replace(src, dst):  # the second rename (new -> target) fails
            calls.append(dst)
            if len(calls) == 2:
                _crash()
            return real(src, dst)

        monkeypatch.setattr(io.os, "replace", replace)
    with pytest.raises(OSError, match="disk full"):
        io.save(new, target)
    monkeypatch.undo()
    if target.exists():
        loaded = io.load(target)
        np.testing.assert_array_equal(loaded.params["sum"], old.params["sum"])
        assert (target / "notes.txt").read_text() == "kept"
    else:
        assert step == "swap"  # the old model was renamed aside: none at the target
    leftovers = [
        p.name
        for p in tmp_path.iterdir()
        if p.name.startswith(".model.") and p.name != ".model.lock"
    ]
    assert leftovers == [] or step == "swap"
    # a later save succeeds and keeps the other files of the directory
    io.save(new, target)
    np.testing.assert_array_equal(io.load(target).params["sum"], new.params["sum"])
    assert step == "swap" or (target / "notes.txt").read_text() == "kept"
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is a file"):
        io.save(new, tmp_path / "file")


def test_sample_checks_n_and_the_output():
    model = base.fit_model(key_from_seed(3), "toy", FRAME, BUDGET, schema=SCHEMA)
    with pytest.raises(ValueError, match="expected n >= 1, got 0"):
        base.sample_model(key_from_seed(1), model, 0)


def test_keys():
    k1, k2 = key_from_seed(7), key_from_seed(7)
    assert np.array_equal(jax.random.key_data(k1), jax.random.key_data(k2))
    # typed and legacy keys of the same seed give the same numpy stream
    a = numpy_rng(jax.random.key(7)).random(3)
    b = numpy_rng(jax.random.PRNGKey(7)).random(3)
    np.testing.assert_array_equal(a, b)
    # no seed: fresh OS entropy, so two keys differ (collision probability 2**-63)
    assert not np.array_equal(
        jax.random.key_data(key_from_seed(None)), jax.random.key_data(key_from_seed(None))
    )
    with pytest.raises(ValueError, match="expected seed >= 0"):
        key_from_seed(-1)


def test_estimator_layer_seed_and_errors(tmp_path):
    est = Toy(epsilon=1.0, delta=0.0, schema=SCHEMA.to_dict(), seed=1)
    with pytest.raises(RuntimeError, match="not fitted"):
        est.sample(3)
    est.fit(FRAME)
    first = est.sample(4)
    again = Toy(epsilon=1.0, delta=0.0, schema=SCHEMA, seed=1).fit(FRAME)
    pd.testing.assert_frame_equal(again.sample(4), first)
    assert not est.sample(4).equals(first)  # each sample call draws a fresh key
    SCHEMA.save(tmp_path / "s.json")
    assert Toy(epsilon=1.0, schema=tmp_path / "s.json", delta=0.0).schema == SCHEMA
    with pytest.raises(ValueError, match="a schema is required"):
        Toy(epsilon=1.0, delta=0.0).fit(FRAME)
    assert Toy(epsilon=1.0, delta=0.0).fit(SCHEMA.conform(FRAME)).ledger_.labels == ["toy"]


def test_package_exports_resolve():
    import jdp
    from jdp.synth.marginals import Marginals

    assert jdp.Marginals is Marginals and jdp.Schema is Schema
    for name in jdp.__all__:
        assert getattr(jdp, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        jdp.Nope  # noqa: B018


def test_every_registered_method_has_an_exported_synthesizer_class():
    import jdp

    exported = {
        getattr(jdp, name).method
        for name in jdp.__all__
        if isinstance(getattr(jdp, name), type)
        and issubclass(getattr(jdp, name), Synthesizer)
        and getattr(jdp, name) is not Synthesizer
    }
    from jdp.synth.registry import METHODS

    assert exported == set(METHODS) == set(base.available_methods()) - {"toy"}
    assert {"P3GM", "P3GMAE", "DPVAE", "PGM", "PCAGauss", "Marginals"} <= set(jdp.__all__)


def test_import_jdp_is_light():
    """``import jdp`` loads neither JAX nor a synthesizer (they load on first use)."""
    out = _fresh_python(
        "import sys, jdp\n"
        "print(sorted(m for m in ('jax', 'flax', 'optax', 'jdp.synth.base') if m in sys.modules))"
    )
    assert out[0] == "[]"


def test_fit_model_charges_a_dp_schema_release_to_the_budget():
    """A schema released with DP from the same data is part of the model's ledger, and a
    method that does not calibrate against it (pure-DP PCA-Gauss) is fitted on what remains
    of the budget (basic composition, exact for its pure ledger)."""
    from jdp.data.dp_schema import infer_schema_dp

    rng = np.random.default_rng(11)
    n = 3000
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "c": rng.choice(["a", "b"], n)})
    release = infer_schema_dp(
        rng,
        df,
        epsilon=0.4,
        kinds={"x": "continuous", "c": "categorical"},
        ranges={"x": (0, 100)},
        target="c",
        delta=1e-7,
    )
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    model = base.fit_model(jax.random.key(0), "pca-gauss", df, budget, schema=release)
    assert model.ledger.labels[: len(release.ledger.entries)] == release.ledger.labels
    assert model.budget == budget
    # release (0.4, 1e-7) + pca-gauss on the remaining (0.6, 1e-5 - 1e-7), not on the whole
    # epsilon = 1 (where it spends 0.92); the composed total is within the budget
    method_alone = PrivacyLedger(model.ledger.entries[len(release.ledger.entries) :])
    assert 0.5 < method_alone.epsilon(1e-5 - 1e-7) <= 0.6
    assert 0.6 < model.epsilon() <= 1.0
    with pytest.raises(ValueError, match="leave part of the budget"):
        base.fit_model(
            jax.random.key(0),
            "pca-gauss",
            df,
            PrivacyBudget(epsilon=0.3, delta=1e-5),
            schema=release,
        )


@pytest.mark.parametrize("method", ["dp-gan", "clustmix"])
def test_a_method_that_calibrates_against_the_release_spends_the_whole_budget(
    tiny_config, method
):
    """dp-GAN and strict ClustMix calibrate against what was spent
    (``Method.calibrates_prior``): the release and their plan compose under the best
    accountant to the whole budget (within calibration's rtol), their own entries alone spend
    more than the basic-composition remainder 0.6, and the figure agrees with the ledger
    rebuilt from its saved JSON."""
    from jdp.data.dp_schema import infer_schema_dp

    rng = np.random.default_rng(11)
    n = 3000
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "c": rng.choice(["a", "b"], n)})
    release = infer_schema_dp(
        rng, df, epsilon=0.4, kinds={"x": "continuous", "c": "categorical"},
        ranges={"x": (0, 100)}, target="c", delta=1e-7,
    )  # fmt: skip
    assert base.get_method(method).calibrates_prior
    assert not base.get_method("pca-gauss").calibrates_prior
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    model = base.fit_model(
        jax.random.key(0), method, df, budget, tiny_config(method), schema=release
    )
    assert 0.99 * budget.epsilon <= model.epsilon() <= budget.epsilon
    method_alone = PrivacyLedger(model.ledger.entries[len(release.ledger.entries) :])
    assert method_alone.epsilon(1e-5 - 1e-7) > 0.6
    assert PrivacyLedger.from_json(model.ledger.to_json()).epsilon(1e-5) == model.epsilon()


def _rare_value_release(tmp_path=None):
    """A table whose column ``c`` holds one record of a rare value, and a DP schema release
    of it (which suppresses that value)."""
    from jdp.data.dp_schema import infer_schema_dp

    rng = np.random.default_rng(12)
    n = 3000
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "c": rng.choice(["a", "b"], n)})
    df.loc[7, "c"] = "Rare-Qq"
    release = infer_schema_dp(
        rng, df, epsilon=0.4, kinds={"x": "continuous", "c": "categorical"},
        ranges={"x": (0, 100)}, target="c",
    )  # fmt: skip
    assert release.schema["c"].categories == ("a", "b")
    return df, release


def test_suppressed_category_goes_through_the_dp_schema_path_without_echo():
    """Regression: a record holding a category that DP discovery suppressed made fit raise
    with the rare value in the message; on the DP-schema path it is dropped, and no message
    shows it."""
    df, release = _rare_value_release()
    # under show_private_details, so that the (private) SuppressedCategoryWarning is raised too
    with show_private_details(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = base.fit_model(
            jax.random.key(0), "marginals", df, PrivacyBudget(epsilon=1.0, delta=1e-5),
            schema=release,
        )  # fmt: skip
    assert model.ledger.labels[: len(release.ledger.entries)] == release.ledger.labels
    assert caught and not any("Rare-Qq" in str(w.message) for w in caught)


def test_synthesizer_fitted_with_a_schema_release_carries_its_cost(tmp_path):
    """``Synthesizer(schema=release)`` (the object, its dict, or its saved file) opens the
    model's ledger with the release's entries, and the model's epsilon includes them."""
    from jdp.data.schema import UnaccountedSchemaWarning
    from jdp.synth.marginals import Marginals

    df, release = _rare_value_release()
    release.save(tmp_path / "release.json")
    m = len(release.ledger.entries)
    for schema in (release, release.to_dict(), tmp_path / "release.json"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnaccountedSchemaWarning)
            synth = Marginals(epsilon=1.0, delta=1e-5, schema=schema, seed=0).fit(df)
        assert synth.ledger_.entries[:m] == release.ledger.entries
        method_alone = PrivacyLedger(synth.ledger_.entries[m:])
        assert method_alone.labels == ["row count", "marginals"]
        # marginals calibrates against the release: more than basic composition leaves it,
        # and the whole ledger lands at the budget
        assert method_alone.epsilon(1e-5 - release.delta) > 1.0 - release.epsilon
        eps = synth.model_.epsilon()
        assert eps > method_alone.epsilon(1e-5) and 0.99 < eps <= 1.0
    table = release.schema.conform(df.drop(index=7))
    model = base.fit_model(
        jax.random.key(1), "marginals", table, PrivacyBudget(epsilon=1.0, delta=1e-5),
        schema=release,
    )  # fmt: skip
    assert model.ledger.labels[:m] == release.ledger.labels
    with pytest.raises(ValueError, match="conformed to another schema"):
        base.fit_model(
            jax.random.key(1), "marginals", SCHEMA.conform(FRAME), BUDGET, schema=release
        )


def test_bare_schema_of_a_release_warns_that_its_cost_is_missing(tmp_path):
    """``schema=release.schema`` (or its saved file, or a Table conformed to it) leaves the
    release's cost out of the ledger: fit says so."""
    from jdp.data.schema import UnaccountedSchemaWarning
    from jdp.synth.marginals import Marginals

    df, release = _rare_value_release()
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    with pytest.warns(UnaccountedSchemaWarning, match="SchemaRelease"):
        model = base.fit_model(jax.random.key(0), "marginals", df, budget, schema=release.schema)
    assert model.ledger.labels == ["row count", "marginals"]
    release.schema.save(tmp_path / "bare.json")
    with pytest.warns(UnaccountedSchemaWarning, match="SchemaRelease"):
        Marginals(epsilon=1.0, schema=tmp_path / "bare.json", seed=0).fit(df)
    table = release.schema.conform(df.drop(index=7))
    with pytest.warns(UnaccountedSchemaWarning, match="SchemaRelease"):
        base.fit_model(jax.random.key(0), "marginals", table, budget)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedSchemaWarning)
        base.fit_model(jax.random.key(0), "marginals", FRAME, budget, schema=SCHEMA)
