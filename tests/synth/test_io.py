"""Model directory integrity (jdp.synth.io): digests verified on load, exclusive saves."""

from __future__ import annotations

import json
import multiprocessing
import shutil

import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.data.schema import Column, Schema
from jdp.random import key_from_seed
from jdp.synth import base, io

SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=0, upper=1),
        Column(name="c", kind="categorical", categories=("a", "b")),
    )
)
FRAME = pd.DataFrame({"x": np.linspace(0, 1, 40), "c": ["a", "b"] * 20})


def _model(seed: int, epsilon: float = 1.0) -> base.FittedModel:
    budget = PrivacyBudget(epsilon=epsilon, delta=0.0)
    return base.fit_model(key_from_seed(seed), "marginals", FRAME, budget, schema=SCHEMA)


@pytest.fixture(scope="module")
def models():
    return [_model(seed, epsilon=float(seed + 1)) for seed in range(4)]


def test_round_trip_stores_both_digests(tmp_path, models):
    path = io.save(models[0], tmp_path / "m")
    doc = json.loads((path / io.MODEL_FILE).read_text())
    assert doc["format_version"] == io.FORMAT_VERSION == 4
    assert len(doc["params_sha256"]) == len(doc["digest"]) == 64
    loaded = io.load(path)
    np.testing.assert_array_equal(loaded.params["noisy_counts"], models[0].params["noisy_counts"])
    assert loaded.ledger.to_dict() == models[0].ledger.to_dict()


def test_a_mismatched_pair_fails_to_load_naming_the_file(tmp_path, models):
    a, b = io.save(models[0], tmp_path / "a"), io.save(models[1], tmp_path / "b")
    shutil.copy(b / io.PARAMS_FILE, a / io.PARAMS_FILE)  # b's eps=2 params beside a's eps=1 ledger
    with pytest.raises(ValueError, match=r"params\.npz does not match the SHA-256") as info:
        io.load(a)
    assert str(a / io.PARAMS_FILE) in str(info.value)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["budget"].update(epsilon=0.1),
        lambda d: d["ledger"]["entries"].pop(),
        lambda d: d.update(method="mwem"),
        lambda d: d.update(params_sha256="0" * 64),
    ],
    ids=["budget", "ledger", "method", "params-digest"],
)
def test_an_edited_model_json_fails_to_load(tmp_path, models, edit):
    path = io.save(models[0], tmp_path / "m")
    doc = json.loads((path / io.MODEL_FILE).read_text())
    edit(doc)
    (path / io.MODEL_FILE).write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="does not match its digest") as info:
        io.load(path)
    assert str(path / io.MODEL_FILE) in str(info.value)


def test_the_digest_is_no_signature(tmp_path, models):
    """Honesty check for the docs: an editor who recomputes the digest is not detected."""
    path = io.save(models[0], tmp_path / "m")
    doc = json.loads((path / io.MODEL_FILE).read_text())
    doc["budget"]["epsilon"] = 0.5
    doc["digest"] = io._digest(doc)
    (path / io.MODEL_FILE).write_text(json.dumps(doc))
    assert io.load(path).budget.epsilon == 0.5


def test_truncated_params_and_corrupt_json_name_the_file(tmp_path, models):
    path = io.save(models[0], tmp_path / "m")
    data = (path / io.PARAMS_FILE).read_bytes()
    (path / io.PARAMS_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="params.npz does not match") as info:
        io.load(path)
    assert "pickle" not in str(info.value)
    (path / io.MODEL_FILE).write_text('{"format_version": 3, "method": ')
    with pytest.raises(ValueError, match=r"model\.json is not valid JSON") as info:
        io.load(path)
    assert str(path / io.MODEL_FILE) in str(info.value)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_older_format_models_are_refused_with_what_changed(tmp_path, models, version):
    # format 3 models would load but their configs lost the nested DP-SGD settings in 4
    path = io.save(models[0], tmp_path / "m")
    doc = json.loads((path / io.MODEL_FILE).read_text())
    doc["format_version"] = version
    (path / io.MODEL_FILE).write_text(json.dumps(doc))
    with pytest.raises(
        ValueError, match=f"format version {version}, this jdp reads version 4"
    ) as e:
        io.load(path)
    assert "dpsgd" in str(e.value) and "refit the model" in str(e.value)


def test_empty_path_and_non_empty_target_without_overwrite(tmp_path, models):
    with pytest.raises(ValueError, match="empty string"):
        io.save(models[0], "")
    with pytest.raises(ValueError, match="empty string"):
        io.load("")
    path = io.save(models[0], tmp_path / "m")
    before = (path / io.PARAMS_FILE).read_bytes()
    with pytest.raises(FileExistsError, match="not empty"):
        io.save(models[1], path, overwrite=False)
    assert (path / io.PARAMS_FILE).read_bytes() == before
    (tmp_path / "empty").mkdir()
    io.save(models[1], tmp_path / "empty", overwrite=False)  # an empty directory is fine


def _save_repeatedly(model, target, barrier, rounds, overwrite, results):
    barrier.wait()
    for _ in range(rounds):
        try:
            io.save(model, target, overwrite=overwrite)
            results.put("ok")
        except FileExistsError:
            results.put("exists")
        except Exception as exc:  # noqa: BLE001 -- report it, do not hang the parent
            results.put(f"{type(exc).__name__}: {exc}")


def _race(models, target, rounds, overwrite):
    ctx = multiprocessing.get_context("fork")  # children only save (numpy), no JAX
    barrier, results = ctx.Barrier(len(models)), ctx.Queue()
    procs = [
        ctx.Process(target=_save_repeatedly, args=(m, target, barrier, rounds, overwrite, results))
        for m in models
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in range(len(models) * rounds)]
    for p in procs:
        p.join(timeout=60)
    return outcomes


@pytest.mark.filterwarnings("ignore:os.fork")
def test_concurrent_saves_never_mix(tmp_path, models):
    """Four processes save four different models (eps 1..4) into one directory, 15 times
    each, all at once: every save succeeds and the directory always loads as ONE of them,
    parameters and ledger together. (Without the lock the renames race and saves fail;
    with saves written in place the pair came out mixed.)"""
    target = tmp_path / "m"
    outcomes = _race(models, target, rounds=15, overwrite=True)
    assert outcomes == ["ok"] * len(outcomes)
    loaded = io.load(target)
    (match,) = [m for m in models if m.budget == loaded.budget]
    np.testing.assert_array_equal(loaded.params["noisy_counts"], match.params["noisy_counts"])
    assert loaded.ledger.to_dict() == match.ledger.to_dict()
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != "m")
    assert leftovers == [".m.lock"]
    # without overwrite, exactly one of the concurrent saves into a new directory wins
    outcomes = _race(models, tmp_path / "new", rounds=1, overwrite=False)
    assert sorted(outcomes) == ["exists"] * 3 + ["ok"]
    io.load(tmp_path / "new")
