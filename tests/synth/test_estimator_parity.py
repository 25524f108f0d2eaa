"""The Python estimators behave as the command line does: the default row count, refusals
before a draw too large for memory, no silent overwrite, ``where`` conditions with ranges,
the fitted dtypes, options in the signature, a required epsilon."""

from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pandas as pd
import pytest

import jdp
from jdp.cli import main
from jdp.data.schema import Column, Schema
from jdp.synth import base, estimator
from jdp.synth.estimator import Synthesizer
from jdp.synth.marginals import Marginals

SCHEMA = Schema(
    columns=(
        Column(name="colour", kind="categorical", categories=("red", "green", "blue")),
        Column(name="size", kind="integer", lower=0, upper=9),
        Column(name="weight", kind="continuous", lower=0.0, upper=1.0),
    )
)


def _frame(n: int = 2000) -> pd.DataFrame:
    """Rows of ``SCHEMA`` held in the narrower dtypes a user may have: category, int32,
    float32."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "colour": pd.Categorical(
                rng.choice(["red", "green", "blue"], size=n, p=[0.6, 0.3, 0.1]),
                categories=["red", "green", "blue"],
            ),
            "size": rng.integers(0, 10, size=n).astype(np.int32),
            "weight": rng.uniform(size=n).astype(np.float32),
        }
    )


@pytest.fixture(scope="module")
def synth() -> Marginals:
    return Marginals(epsilon=2.0, delta=0.0, schema=SCHEMA, seed=0).fit(_frame())


@pytest.fixture
def no_noisy_count(monkeypatch):
    method = base.get_method("marginals")
    monkeypatch.setitem(base._REGISTRY, "marginals", dataclasses.replace(method, noisy_rows=None))


# -- 1. n defaults to the released noisy row count, as `jdp sample` without -n --------------


def test_sample_without_n_draws_the_noisy_row_count_as_the_cli_does(synth, tmp_path, capsys):
    noisy = base.noisy_row_count(synth.model_)
    assert base.rows_to_sample(synth.model_, None) == noisy
    assert len(synth.sample()) == noisy
    synth.save(tmp_path / "m")
    out = tmp_path / "s.csv"
    assert main(["sample", "--model", str(tmp_path / "m"), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == noisy == len(pd.read_csv(out))


def test_without_a_noisy_count_python_is_told_to_pass_n(synth, no_noisy_count):
    with pytest.raises(ValueError, match=r"releases no noisy row count: .*\(n=N\)"):
        synth.sample()
    with pytest.raises(ValueError, match=r"\(-n N\)"):
        base.rows_to_sample(synth.model_, None, hint="-n N")
    assert len(synth.sample(7)) == 7


@pytest.mark.parametrize(
    "n, err, match",
    [
        (True, TypeError, "expected n to be an integer, got True"),
        (2.5, TypeError, "expected n to be an integer"),
        ("10", TypeError, "expected n to be an integer"),
        (0, ValueError, "expected n >= 1, got 0"),
        (-3, ValueError, "expected n >= 1, got -3"),
    ],
)
def test_n_must_be_a_positive_integer(synth, n, err, match):
    key = synth._key
    with pytest.raises(err, match=match):
        synth.sample(n)
    assert synth._key is key  # a refused call draws nothing and consumes no key


# -- 2. an output larger than memory is refused before it is allocated ----------------------


def test_a_draw_larger_than_memory_is_refused_after_one_chunk(synth, monkeypatch):
    drawn = []
    sample_model = base.sample_model

    def spy(key, model, n):
        drawn.append(n)
        return sample_model(key, model, n)

    monkeypatch.setattr(base, "sample_model", spy)
    monkeypatch.setattr(estimator, "available_memory", lambda: 1000)
    n = base.SAMPLE_CHUNK_ROWS + 1
    with pytest.raises(ValueError, match=rf"sample\(n={n}\) would take about .* 1.0 KB is avail"):
        synth.sample(n)
    assert drawn == [base.SAMPLE_CHUNK_ROWS]  # the first chunk only: nothing allocated for n
    with pytest.raises(ValueError, match=r"jdp\.synth\.base\.sample_chunks"):
        synth.sample(10**12)


def test_chunks_are_gathered_into_one_table_equal_to_their_concatenation(synth):
    key = jdp.key_from_seed(3)
    chunks = list(base.sample_chunks(key, synth.model_, 25, chunk_rows=10))
    gathered = estimator._gather(iter(chunks), 25)
    pd.testing.assert_frame_equal(gathered, pd.concat(chunks, ignore_index=True))
    assert estimator._gather(iter(chunks[:1]), 10) is chunks[0]
    big = synth.sample(base.SAMPLE_CHUNK_ROWS + 3)
    assert len(big) == base.SAMPLE_CHUNK_ROWS + 3 and big.index.equals(pd.RangeIndex(len(big)))
    assert big["colour"].notna().all() and big["size"].between(0, 9).all()


def test_available_memory_is_a_positive_byte_count():
    assert estimator.available_memory() > 0


# -- 3. save refuses a non-empty directory unless overwrite=True ----------------------------


def test_save_refuses_an_existing_model_unless_overwrite(synth, tmp_path):
    path = synth.save(tmp_path / "m")
    other = Marginals(epsilon=0.5, delta=0.0, schema=SCHEMA, seed=1).fit(_frame(500))
    with pytest.raises(FileExistsError, match="not empty.*pass overwrite=True"):
        other.save(path)
    assert Synthesizer.load(path).budget.epsilon == 2.0  # the first model is untouched
    other.save(path, overwrite=True)
    assert Synthesizer.load(path).budget.epsilon == 0.5


# -- 4. where: equality and ranges, through the CLI's parser --------------------------------


def test_where_with_ranges_yields_only_matching_rows(synth):
    out = synth.sample(60, where="size>=7")
    assert len(out) == 60 and (out["size"] >= 7).all()
    out = synth.sample(60, where=["size>2", "size<=4", "colour=green", "weight<0.5"])
    assert len(out) == 60 and out["size"].isin([3, 4]).all()
    assert (out["colour"] == "green").all() and (out["weight"] < 0.5).all()
    out = synth.sample(40, where={"colour": "blue", "size": 3})
    assert len(out) == 40 and (out["colour"] == "blue").all() and (out["size"] == 3).all()
    assert isinstance(out["colour"].dtype, pd.CategoricalDtype)


def test_jdp_sample_where_takes_a_range(synth, tmp_path, capsys):
    synth.save(tmp_path / "m")
    out = tmp_path / "big.csv"
    argv = ["sample", "--model", str(tmp_path / "m"), "-n", "30", "--out", str(out)]
    assert main([*argv, "--where", "size>=8", "--where", "colour=red"]) == 0
    frame = pd.read_csv(out)
    assert len(frame) == 30 and (frame["size"] >= 8).all() and (frame["colour"] == "red").all()
    capsys.readouterr()
    assert main([*argv, "--where", "colour<red"]) == 2
    assert "'colour' is categorical" in capsys.readouterr().err
    assert main(["sample", "--help"]) == 0
    assert "COLUMN>=V" in capsys.readouterr().out


# -- 5. the fitted frame's dtypes come back -------------------------------------------------


def test_sample_returns_the_fitted_frames_dtypes(synth, tmp_path):
    assert synth.dtypes_ == {"colour": "category", "size": "int32", "weight": "float32"}
    out = synth.sample(50)
    assert out["colour"].dtype == pd.CategoricalDtype(["red", "green", "blue"])
    assert out["size"].dtype == np.int32 and out["weight"].dtype == np.float32
    # a saved model holds no dtypes: a loaded one samples the schema's
    loaded = Synthesizer.load(synth.save(tmp_path / "m"))
    assert loaded.dtypes_ == {}
    dtypes = loaded.sample(5).dtypes
    assert not isinstance(dtypes["colour"], pd.CategoricalDtype)
    assert dtypes["size"] == np.int64 and dtypes["weight"] == np.float64


def test_an_integer_dtype_too_narrow_for_the_bounds_is_not_restored():
    schema = Schema(columns=(Column(name="k", kind="integer", lower=0, upper=1000),))
    frame = pd.DataFrame({"k": np.random.default_rng(1).integers(0, 100, 500).astype(np.int8)})
    synth = Marginals(epsilon=1.0, delta=0.0, schema=schema, seed=0).fit(frame)
    assert synth.dtypes_ == {"k": "int8"} and synth.sample(20)["k"].dtype == np.int64


# -- 6. options in the signature; unknown ones named ----------------------------------------


def test_signature_lists_the_methods_options():
    params = inspect.signature(jdp.P3GM).parameters
    assert params["epsilon"].default is inspect.Parameter.empty
    assert params["delta"].default == 1e-5 and params["latent_dim"].default == 10
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert "n_components" in params and "config" not in params
    assert list(inspect.signature(Marginals).parameters)[5:] == [
        f.name for f in dataclasses.fields(Marginals(epsilon=1.0).config)
    ]
    assert "Options" in jdp.P3GM.__doc__ and "latent_dim" in jdp.P3GM.__doc__
    assert jdp.P3GM.__doc__.startswith("P3GM, scikit-learn style")


def test_a_method_default_that_departs_from_its_config_class_holds_everywhere():
    """DP-VAE shares P3GM's config class but not its default scale: the default config, the
    estimator's config and its signature all carry DP-VAE's; a config the caller passes is
    taken as it is; a default for a field the class lacks is refused at registration."""
    from jdp.data.quantile_scale import LOG, TAILS
    from jdp.synth.base import get_method
    from jdp.synth.p3gm import P3GMConfig

    vae = get_method("dp-vae")
    assert P3GMConfig().scale == TAILS and vae.make_config(None).scale == LOG
    assert jdp.DPVAE(epsilon=1.0).config.scale == LOG
    assert inspect.signature(jdp.DPVAE).parameters["scale"].default == LOG
    assert inspect.signature(jdp.P3GM).parameters["scale"].default == TAILS
    assert vae.make_config(P3GMConfig()).scale == TAILS
    with pytest.raises(ValueError, match=r"defaults for unknown fields \['scal'\]"):
        dataclasses.replace(vae, defaults=(("scal", LOG),))


def test_an_unknown_option_names_the_valid_ones():
    with pytest.raises(TypeError, match=r"unknown option 'latnt_dim'.*'latent_dim'"):
        jdp.P3GM(epsilon=1.0, latnt_dim=3)


def test_a_class_defined_before_its_method_registers_gets_its_signature_later(monkeypatch):
    class Later(Synthesizer):
        """A user's class."""

        method = "later-method"

    assert "epsilon" in inspect.signature(Later).parameters  # Synthesizer.__init__'s
    assert Later.__doc__ == "A user's class."
    method = dataclasses.replace(base.get_method("marginals"), name="later-method")
    monkeypatch.setitem(base._REGISTRY, "later-method", method)
    assert "bins" in inspect.signature(Later).parameters and "Options" in Later.__doc__


# -- 7. epsilon is required ----------------------------------------------------------------


def test_missing_epsilon_says_why():
    with pytest.raises(TypeError, match="needs epsilon=.*a privacy budget is a decision"):
        Marginals(schema=SCHEMA)
    with pytest.raises(TypeError, match="needs epsilon"):
        jdp.P3GM(delta=1e-5)
