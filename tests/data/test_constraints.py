"""Declared functional dependencies: checked against the schema, enforced exactly."""

from __future__ import annotations

import pandas as pd
import pytest

from jdp.data.constraints import FunctionalDependency, enforce, violations
from jdp.data.schema import Column, Schema

SCHEMA = Schema(
    columns=(
        Column(
            name="education", kind="categorical", categories=("HS-grad", "Bachelors", "Masters")
        ),
        Column(name="education-num", kind="integer", lower=1, upper=16),
    )
)
CODEBOOK = FunctionalDependency(
    determinant="education",
    dependent="education-num",
    mapping={"HS-grad": 9, "Bachelors": 13, "Masters": 14},
)


def test_enforce_rewrites_the_dependent_column_and_counts_what_it_fixed():
    frame = pd.DataFrame(
        {"education": ["HS-grad", "Masters", "Bachelors"], "education-num": [9, 3, 13]}
    )
    assert violations(frame, [CODEBOOK]) == {"education -> education-num": 1}
    fixed = enforce(frame, [CODEBOOK])
    assert fixed["education-num"].tolist() == [9, 14, 13]
    assert fixed["education-num"].dtype == frame["education-num"].dtype
    assert violations(fixed, [CODEBOOK]) == {"education -> education-num": 0}
    assert frame["education-num"].tolist() == [9, 3, 13]  # the input is not modified


def test_check_refuses_a_mapping_that_does_not_fit_the_schema():
    CODEBOOK.check(SCHEMA)
    bad = [
        ({"determinant": "education", "dependent": "job", "mapping": {}}, "no column 'job'"),
        ({"determinant": "education", "dependent": "education", "mapping": {}}, "on itself"),
        ({"determinant": "education", "dependent": "education-num", "mapping": {"HS-grad": 9}}, "no value for 2"),
        (
            {"determinant": "education", "dependent": "education-num",
                 "mapping": {"HS-grad": 9, "Bachelors": 13, "Masters": 99}},
            "99 is outside",
        ),
    ]  # fmt: skip
    for fields, message in bad:
        with pytest.raises(ValueError, match=message):
            FunctionalDependency(**fields).check(SCHEMA)


def test_json_round_trip():
    assert FunctionalDependency.from_dict(CODEBOOK.to_dict()) == CODEBOOK
    with pytest.raises(ValueError, match="unknown constraint type"):
        FunctionalDependency.from_dict({"type": "inequality"})


def test_schema_carries_constraints_through_json_and_checks_them():
    schema = Schema(columns=SCHEMA.columns, constraints=(CODEBOOK,))
    assert Schema.from_json(schema.to_json()) == schema
    assert hash(schema) == hash(Schema.from_json(schema.to_json()))  # still hashable
    broken = {
        **schema.to_dict(),
        "constraints": [{**CODEBOOK.to_dict(), "mapping": [["HS-grad", 9]]}],
    }
    with pytest.raises(ValueError, match="no value for 2 categories"):
        Schema.from_dict(broken)


def test_adult_synthetic_rows_follow_the_declared_codebook():
    """Adult's schema declares education -> education-num (the codebook). A method that
    models the two columns apart (the DP marginals method draws them from separate noisy
    marginals) breaks it in most rows before enforcement; sample_model's rows never do."""
    from accounting import PrivacyBudget
    from jdp.data.datasets import load_adult
    from jdp.random import key_from_seed
    from jdp.synth.base import fit_model, get_method, sample_model

    adult = load_adult()
    train = adult.train.sample(4000, random_state=0)
    model = fit_model(
        key_from_seed(0),
        "marginals",
        train,
        PrivacyBudget(epsilon=1.0, delta=0.0),
        schema=adult.schema,
    )
    key = key_from_seed(1)
    raw = get_method("marginals").sample(key, model, 2000)
    assert violations(raw, adult.schema.constraints)["education -> education-num"] > 1000
    synthetic = sample_model(key, model, 2000)
    assert violations(synthetic, adult.schema.constraints) == {"education -> education-num": 0}
    pd.testing.assert_frame_equal(
        synthetic.drop(columns="education-num"), raw.drop(columns="education-num")
    )
