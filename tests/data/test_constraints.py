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
