"""``jdp account dpsgd``: statement, JSON, calibration, one-line errors."""

from __future__ import annotations

import json

import pytest

from accounting import events as ev
from accounting.compose import compute_epsilon
from jdp.cli import main

BASE = ["account", "dpsgd", "--sampling-prob", "0.01", "--steps", "10000", "--delta", "1e-5"]


def test_readme_command_prints_a_privacy_statement(capsys):
    assert main(BASE + ["--noise-multiplier", "1.1"]) == 0
    out = capsys.readouterr().out
    eps = compute_epsilon(ev.dpsgd_event(1.1, 0.01, 10000), 1e-5)
    assert f"({eps:.4g}, 1e-05)-differential privacy" in out
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
    assert data["epsilon"] == pytest.approx(compute_epsilon(ev.dpsgd_event(1.1, 0.01, 10000), 1e-5))


def test_calibration(capsys):
    assert main(BASE + ["--target-epsilon", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["calibrated"] and 0.99 * 3 <= data["epsilon"] <= 3


def test_gdp_is_labelled_an_approximation(capsys):
    assert main(BASE + ["--noise-multiplier", "1.1", "--accountant", "gdp"]) == 0
    assert "APPROXIMATION" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,needle",
    [
        (BASE + ["--noise-multiplier", "-1"], "noise_multiplier"),
        (BASE + ["--noise-multiplier", "nan"], "noise_multiplier"),
        (
            [
                "account",
                "dpsgd",
                "--noise-multiplier",
                "1",
                "--sampling-prob",
                "2",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "sampling_prob",
        ),
        (
            [
                "account",
                "dpsgd",
                "--noise-multiplier",
                "1",
                "--sampling-prob",
                "0.1",
                "--steps",
                "-3",
                "--delta",
                "1e-5",
            ],
            "steps",
        ),
        (
            [
                "account",
                "dpsgd",
                "--noise-multiplier",
                "1",
                "--sampling-prob",
                "0.1",
                "--steps",
                "10",
                "--delta",
                "1",
            ],
            "delta",
        ),
        (
            [
                "account",
                "dpsgd",
                "--noise-multiplier",
                "1",
                "--sampling-prob",
                "0.1",
                "--steps",
                "x",
                "--delta",
                "1e-5",
            ],
            "--steps",
        ),
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
