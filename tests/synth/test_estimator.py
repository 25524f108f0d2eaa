"""The scikit-learn-style layer: a DP schema release as schema, ``load``, ``get_params``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyLedger
from jdp.data.dp_schema import infer_schema_dp
from jdp.data.schema import SuppressedCategoryWarning, UnaccountedSchemaWarning
from jdp.synth.estimator import Synthesizer
from jdp.synth.marginals import Marginals
from jdp.synth.pca_gauss import PCAGauss


def _data_and_release(suppressed: str = "drop"):
    rng = np.random.default_rng(30)
    n = 2000
    df = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "c": rng.choice(["a", "b"], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )
    df.loc[3, "c"] = "Rare-Zq"
    release = infer_schema_dp(
        rng, df, epsilon=0.3, target="y", ranges={"x": (0, 1e9)}, suppressed=suppressed,
        kinds={"x": "continuous", "c": "categorical", "y": "categorical"},
    )  # fmt: skip
    return df, release


def test_release_is_charged_and_saved_with_the_model(tmp_path):
    """A SchemaRelease as schema: its entries open the ledger, the method gets what is left,
    the saved (and reloaded) model's ledger holds both, and a release that leaves nothing
    is refused with one clear line."""
    df, release = _data_and_release()
    m = len(release.ledger.entries)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedSchemaWarning)
        warnings.simplefilter("ignore", SuppressedCategoryWarning)
        synth = Marginals(epsilon=1.0, delta=1e-5, schema=release, seed=0).fit(df)
    assert synth.ledger_.entries[:m] == release.ledger.entries
    method_alone = PrivacyLedger(synth.ledger_.entries[m:])
    # calibrated against the release (PrivacyBudget.less): more than basic composition would
    # leave it, and the whole ledger at the budget
    assert method_alone.epsilon(1e-5 - release.delta) > 1.0 - release.epsilon
    assert 0.99 < synth.model_.epsilon() <= 1.0
    synth.save(tmp_path / "model")
    loaded = Synthesizer.load(tmp_path / "model")
    assert loaded.ledger_.to_dict() == synth.ledger_.to_dict()
    assert loaded.ledger_.labels[:m] == release.ledger.labels
    assert loaded.model_.epsilon() == pytest.approx(synth.model_.epsilon())
    with pytest.raises(ValueError, match="leave part of the budget"):  # the release spent ~0.3
        Marginals(epsilon=0.25, delta=1e-5, schema=release, seed=0).fit(df)


def test_load_gives_a_fitted_sampler_of_the_saved_method(tmp_path):
    df, release = _data_and_release("other")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuppressedCategoryWarning)
        synth = Marginals(epsilon=1.0, schema=release, seed=1, bins=8).fit(df)
    synth.save(tmp_path / "m")
    for cls in (Synthesizer, Marginals):
        loaded = cls.load(tmp_path / "m", seed=5)
        assert type(loaded) is Marginals and loaded.config == synth.config
        out = loaded.sample(50)
        assert list(out.columns) == ["x", "c", "y"] and len(out) == 50
        assert set(out["c"]) <= {"a", "b", "other"}
    # same seed, same draws; no seed: fresh entropy
    first = Synthesizer.load(tmp_path / "m", seed=5).sample(200)
    pd.testing.assert_frame_equal(first, Synthesizer.load(tmp_path / "m", seed=5).sample(200))
    assert not Synthesizer.load(tmp_path / "m").sample(200).equals(first)
    assert Synthesizer.load(tmp_path / "m").get_params()["bins"] == 8
    with pytest.raises(ValueError, match="holds a 'marginals' model, not 'pca-gauss'"):
        PCAGauss.load(tmp_path / "m")
    with pytest.raises(FileNotFoundError):
        Synthesizer.load(tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match="not fitted yet"):
        Marginals(epsilon=1.0).sample(3)


def test_get_params_are_the_constructor_arguments():
    _, release = _data_and_release()
    synth = Marginals(epsilon=0.5, delta=1e-6, schema=release, seed=3, bins=16)
    params = synth.get_params()
    assert params["epsilon"] == 0.5 and params["delta"] == 1e-6 and params["seed"] == 3
    assert params["schema"] is release and params["bins"] == 16
    assert set(params) == {"epsilon", "delta", "schema", "seed", "rows", *vars(synth.config)}
    copy = Marginals(**params)
    assert copy.get_params() == params and copy.config == synth.config
    assert not hasattr(copy, "model_")
    assert Marginals(epsilon=2.0).get_params(deep=False)["epsilon"] == 2.0
