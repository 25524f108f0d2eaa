"""Conditional sampling by rejection: exact draws, checked conditions, a bounded search."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.data.schema import Column, Schema
from jdp.random import key_from_seed
from jdp.synth.base import fit_model, sample_model
from jdp.synth.conditions import Range, matches, parse_where, sample_where

SCHEMA = Schema(
    columns=(
        Column(name="colour", kind="categorical", categories=("red", "green", "blue")),
        Column(name="size", kind="integer", lower=0, upper=9),
        Column(name="weight", kind="continuous", lower=0.0, upper=1.0),
    )
)


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    n = 2000
    frame = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], size=n, p=[0.6, 0.3, 0.1]),
            "size": rng.integers(0, 10, size=n),
            "weight": rng.uniform(size=n),
        }
    )
    return fit_model(
        key_from_seed(0), "marginals", frame, PrivacyBudget(epsilon=2.0, delta=0.0), schema=SCHEMA
    )


def test_parse_where_checks_every_condition_against_the_schema():
    """Equalities, ranges (several on one column combine) and a mapping of equalities; every
    bad condition named with its reason."""
    assert parse_where(["colour=green", " size = 3"], SCHEMA) == {"colour": "green", "size": 3}
    assert parse_where(["size > 2", "size<=4", "colour=green"], SCHEMA) == {
        "size": Range(((">", 2.0), ("<=", 4.0))),
        "colour": "green",
    }
    assert parse_where({"size": 3, "colour": "red"}, SCHEMA) == {"size": 3, "colour": "red"}
    for item, message in [
        ("colour", "expected a condition COLUMN=VALUE"),
        (">3", "expected a condition"),
        ("shape=round", "no column 'shape'"),
        ("shape>1", "no column 'shape'"),
        ("colour=purple", "'purple' is not a category of 'colour'"),
        ("colour>red", "'colour' is categorical: only colour=VALUE applies"),
        ("size=big", "'size' holds integers"),
        ("size=2.5", "'size' holds integers"),
        ("size=10", "outside 'size'"),
        ("size>big", "'big' is not a number"),
        ("weight<=light", "'light' is not a number"),
        ("size>9", "no value of 'size' within its bounds"),
        ("weight<0", "no value of 'weight' within its bounds"),
        ("weight=0.5", "'weight' is continuous"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_where([item], SCHEMA)
    for twice in (["size=1", "size=2"], ["size=1", "size>0"]):
        with pytest.raises(ValueError, match="twice"):
            parse_where(twice, SCHEMA)


def test_kept_rows_are_the_matching_rows_of_the_models_own_draws(model):
    """Rejection keeps exactly the matching rows of the rounds' draws, in order: each kept
    row is an unmodified draw from the model, so the kept rows are draws from the model
    conditioned on the event."""
    key = key_from_seed(1)
    where = {"colour": "blue", "size": 4}
    out = sample_where(key, model, 30, where, batch_rows=500)
    assert len(out) == 30 and matches(out, where).all()
    draws = pd.concat(
        [sample_model(jax.random.fold_in(key, i), model, 500) for i in range(40)],
        ignore_index=True,
    )
    expected = draws[matches(draws, where)].iloc[:30].reset_index(drop=True)
    pd.testing.assert_frame_equal(out, expected)


def test_a_condition_too_rare_for_the_draw_limit_fails_with_the_acceptance_rate(model):
    with pytest.raises(ValueError, match=r"only \d+ of 500 synthetic rows satisfy colour=red"):
        sample_where(
            key_from_seed(2), model, 10_000, {"colour": "red"}, max_draws=500, batch_rows=500
        )
    with pytest.raises(ValueError, match="expected n >= 1"):
        sample_where(key_from_seed(2), model, 0, {"colour": "red"})


def test_jdp_sample_where(model, tmp_path, capsys):
    from jdp.cli import main
    from jdp.synth.io import save

    directory = save(model, tmp_path / "model")
    out = tmp_path / "blue.csv"
    argv = ["sample", "--model", str(directory), "-n", "40", "--seed", "3", "--out", str(out)]
    assert main([*argv, "--where", "colour=blue", "--where", "size=2"]) == 0
    frame = pd.read_csv(out)
    assert len(frame) == 40 and (frame["colour"] == "blue").all() and (frame["size"] == 2).all()
    capsys.readouterr()
    assert main([*argv, "--where", "colour=purple"]) == 2
    err = capsys.readouterr().err.strip()
    assert "'purple' is not a category of 'colour'" in err and len(err.splitlines()) == 1
