"""``jdp account dpsgd``: statement, JSON, calibration, one-line errors."""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

from accounting import events as ev
from accounting.builders import dpsgd_event
from accounting.calibrate import calibrate, calibrate_noise_multiplier
from accounting.compose import best_epsilon, compute_epsilon
from accounting.relations import REPLACE_ONE
from jdp.cli import main
from jdp.cli.account import account_dpsgd
from jdp.dpsgd.noise import noise_cut

BASE = ["account", "dpsgd", "--sampling-prob", "0.01", "--steps", "10000", "--delta", "1e-5"]


def test_readme_command_prints_a_privacy_statement(capsys):
    assert main(BASE + ["--noise-multiplier", "1.1"]) == 0
    out = capsys.readouterr().out
    # by default the ledger's figure: the tightest rigorous accountant, named
    bound = best_epsilon(dpsgd_event(1.1, 0.01, 10000), 1e-5)
    assert f"({bound.value:.4g}, 1e-05)-differential privacy" in out
    assert bound.value <= compute_epsilon(dpsgd_event(1.1, 0.01, 10000), 1e-5, accountant="rdp")
    title = {"rdp": "RDP", "pld": "PLD"}[bound.accountant]
    assert f"tightest of the rigorous accountants, as the ledger reports: {title}]" in out
    assert "add/remove-one" in out


def test_json_has_the_required_fields(capsys):
    assert main(BASE + ["--noise-multiplier", "1.1", "--json", "--accountant", "rdp"]) == 0
    out = capsys.readouterr().out.strip()
    data = json.loads(out)  # exactly one JSON object
    assert {
        "epsilon",
        "delta",
        "noise_multiplier",
        "sampling_prob",
        "steps",
        "accountant",
    } <= data.keys()
    assert (
        data["noise_multiplier"] == 1.1 and data["steps"] == 10000 and data["accountant"] == "rdp"
    )
    assert data["epsilon"] == pytest.approx(compute_epsilon(dpsgd_event(1.1, 0.01, 10000), 1e-5))


def test_calibration(capsys):
    assert main(BASE + ["--target-epsilon", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # calibrated with the reported rule (best) to within 1% of the target; RDP is above it
    rdp_eps = compute_epsilon(dpsgd_event(data["noise_multiplier"], 0.01, 10000), 1e-5)
    assert data["calibrated"] and 0.99 * 3 <= data["epsilon"] <= 3 < rdp_eps
    assert data["accountant"] == "best"


def test_gdp_is_labelled_an_approximation(capsys):
    assert main(BASE + ["--noise-multiplier", "1.1", "--accountant", "gdp"]) == 0
    captured = capsys.readouterr()
    assert "APPROXIMATION" in captured.out
    warned = [line for line in captured.err.splitlines() if "APPROXIMATION" in line]
    assert warned and all(line.startswith("jdp account: warning: ") for line in warned)


def _dpsgd_args(sampling_prob: str = "0.1", steps: str = "10", delta: str = "1e-5") -> list[str]:
    """``jdp account dpsgd`` at noise multiplier 1 with the given flags."""
    flags = {"--sampling-prob": sampling_prob, "--steps": steps, "--delta": delta}
    return ["account", "dpsgd", "--noise-multiplier", "1", *sum(flags.items(), ())]


@pytest.mark.parametrize(
    "args,needle",
    [
        (BASE + ["--noise-multiplier", "-1"], "noise_multiplier"),
        (BASE + ["--noise-multiplier", "nan"], "noise_multiplier"),
        (_dpsgd_args(sampling_prob="2"), "sampling_prob"),
        (_dpsgd_args(steps="-3"), "steps"),
        (_dpsgd_args(delta="1"), "delta"),
        (_dpsgd_args(steps="x"), "--steps"),
        (BASE + ["--noise-multiplier", "1", "--target-epsilon", "1"], "not allowed"),
        (BASE, "required"),
        (BASE + ["--noise-multiplier", "1", "--accountant", "moments"], "--accountant"),
    ],
)
def test_bad_arguments_exit_nonzero_with_one_line(args, needle, capsys):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    assert code != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


# One DP-SGD event for every caller (issue 10, item 1): the CLI, the calibration helper and
# ``jdp.dpsgd.train.train`` agree on epsilon for a given z, and on z for a given target, under both
# sampling schemes (z = noise std / C everywhere).
PLAN = {"sampling_prob": 0.25, "steps": 3, "dataset_size": 20}


def _config(sampling: str, **noise):
    from jdp.dpsgd import DPSGDConfig

    return DPSGDConfig(
        l2_clip_norm=1.0,
        sampling_prob=PLAN["sampling_prob"],
        expected_batch_size=PLAN["sampling_prob"] * PLAN["dataset_size"],
        steps=PLAN["steps"],
        sampling=sampling,
        **noise,
    )


def _tiny_train(sampling: str, **noise):
    import jax
    import jax.numpy as jnp
    import optax

    from jdp.dpsgd import train

    x = np.linspace(-1.0, 1.0, PLAN["dataset_size"], dtype=np.float32)[:, None]
    return train(
        jax.random.key(0),
        lambda w, ex, key: jnp.sum((ex["x"] * w - 1.0) ** 2),
        jnp.zeros(1),
        optax.sgd(0.1),
        {"x": x},
        _config(sampling, **noise),
    )


def _cli(capsys, sampling: str, *noise: str) -> dict:
    args = ["account", "dpsgd", "--sampling-prob", str(PLAN["sampling_prob"])]
    args += ["--steps", str(PLAN["steps"]), "--delta", "1e-5", "--sampling", sampling]
    args += ["--dataset-size", str(PLAN["dataset_size"]), "--params", "1", "--json", *noise]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_cli_calibration_and_train_agree(sampling, capsys):
    reported = _cli(capsys, sampling, "--noise-multiplier", "1.1")
    trained = _tiny_train(sampling, noise_multiplier=1.1)
    assert trained.noise_multiplier == reported["noise_multiplier"] == 1.1
    assert reported["epsilon"] == pytest.approx(trained.ledger.epsilon(1e-5), rel=1e-12)

    calibrated = _cli(capsys, sampling, "--target-epsilon", "4")
    z = calibrate_noise_multiplier(
        target_epsilon=4.0,
        target_delta=1e-5,
        sampling_prob=PLAN["sampling_prob"],
        steps=PLAN["steps"],
        sampling=sampling,
        dataset_size=PLAN["dataset_size"],
        noise_cut=noise_cut(jnp.zeros(1)),  # the one parameter of the tiny model
    )
    trained = _tiny_train(sampling, target_epsilon=4.0, target_delta=1e-5)
    assert calibrated["noise_multiplier"] == z == trained.noise_multiplier
    assert 0.99 * 4 <= trained.ledger.epsilon(1e-5) <= 4
    # the three paths report one figure: the CLI, the ledger, the progress bar's last value
    config = _config(sampling, target_epsilon=4.0, target_delta=1e-5)
    cut = noise_cut(jnp.zeros(1))
    last = config.epsilon_after(PLAN["steps"], z, PLAN["dataset_size"], noise_cut=cut)
    assert calibrated["epsilon"] == trained.ledger.epsilon(1e-5) == last <= 4


def test_without_replacement_full_batch_is_a_gaussian_of_sensitivity_2c():
    # q = 1: every step releases sum_i clip(g_i) + N(0, (z C)^2); replacing one record moves
    # the sum by up to 2C, so each step is a Gaussian with multiplier z / 2 (replace-one).
    z, steps = 3.0, 4
    result = account_dpsgd(
        noise_multiplier=z,
        sampling_prob=1.0,
        steps=steps,
        delta=1e-5,
        sampling="without_replacement",
        dataset_size=50,
    )
    closed_form = compute_epsilon(
        ev.SelfComposedDpEvent(ev.GaussianDpEvent(z / 2), steps),
        1e-5,
        neighboring_relation=REPLACE_ONE,
    )
    assert result["epsilon"] == pytest.approx(closed_form, rel=1e-3)


def test_gdp_approximation_is_refused_for_calibration(capsys):
    # The CLT approximation can under-report epsilon (6.01 vs PLD 7.05 at q = 0.1, z = 1,
    # T = 100), so a noise level calibrated with it need not meet the target.
    code = main(BASE + ["--target-epsilon", "3", "--accountant", "gdp"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "approximation" in err
    with pytest.raises(ValueError, match="gdp_clt"):
        calibrate(
            lambda s: dpsgd_event(s, 0.1, 100),
            target_epsilon=3.0,
            target_delta=1e-5,
            accountant="gdp_clt",
        )


def test_gdp_report_warns_that_it_can_under_report(capsys):
    args = ["account", "dpsgd", "--noise-multiplier", "1", "--sampling-prob", "0.1"]
    args += ["--steps", "100", "--delta", "1e-5", "--json"]
    assert main(args + ["--accountant", "gdp"]) == 0
    captured = capsys.readouterr()
    assert "jdp account: warning: " in captured.err and "under-report" in captured.err
    approx = json.loads(captured.out)
    assert main(args + ["--accountant", "pld"]) == 0
    bound = json.loads(capsys.readouterr().out)
    assert approx["approximation"] and approx["epsilon"] < bound["epsilon"]
