"""scripts/reproduce_p3gm.py: the sampling rate comes from public constants, and the Fig. 7
learning-curve loop runs exactly the DP-SGD steps its ledger accounts (issue 10, item 14)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import pytest

from jdp.synth.p3gm import model as P

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_p3gm.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("reproduce_p3gm", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the script's dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_sampling_rate_is_the_public_batch_over_the_documented_size(script):
    # Adult's training file (UCI adult.data) is documented at 32,561 rows; Table IV's batch 200
    assert script.PUBLIC_TRAIN_ROWS["adult"] == 32_561
    for name, quick in [("adult", False), ("adult", True), ("credit", False), ("mnist", True)]:
        config = script.config_for(name, quick)  # no data-derived argument
        batch = (script.QUICK if quick else script.SETTINGS)[name]["batch"]
        assert config.sampling_prob == batch / script.public_train_rows(name, quick)


@pytest.mark.parametrize("quick", [False, True])
def test_learning_curve_loop_runs_exactly_the_accounted_steps(script, monkeypatch, quick):
    config = script.config_for("adult", quick)
    ((label, event),) = P.single_phase_events(config, "sgd", 1.0)  # what the ledger charges
    assert label == "dp-sgd" and event.count == config.steps
    calls = []

    def fake_decoding_phase(key, x, fixed, layout, cfg, variant, z, *, trainable, steps):
        calls.append(steps)
        return {"step": len(calls)}, None

    monkeypatch.setattr(script.P, "decoding_phase", fake_decoding_phase)
    seen = []
    script.train_by_epoch(
        jax.random.key(0), None, {}, None, config, "p3gm", 1.0, lambda e, t: seen.append(e)
    )
    assert sum(calls) == event.count and len(calls) == round(config.epochs) == len(seen)
    assert max(calls) - min(calls) <= 1
    assert sum(script.epoch_steps(config)) == config.steps
