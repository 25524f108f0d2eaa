"""Declared constraints (functional dependencies, forbidden combinations, inequalities):
checked against the schema, carried through its JSON, enforced on every synthetic draw."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from jdp.data.constraints import (
    ForbiddenCombination,
    FunctionalDependency,
    Inequality,
    admissible,
    constraint_from_dict,
    enforce,
    violations,
)
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


HOUSEHOLD = Schema(
    columns=(
        Column(name="relationship", kind="categorical", categories=("Husband", "Wife", "Child")),
        Column(name="sex", kind="categorical", categories=("Female", "Male")),
        Column(name="age", kind="integer", lower=0, upper=9),
        Column(name="years", kind="integer", lower=0, upper=9),
    )
)
FEMALE_HUSBAND = ForbiddenCombination(values={"relationship": "Husband", "sex": "Female"})
YEARS_WITHIN_AGE = Inequality(left="years", right="age")


def test_forbidden_combination_and_inequality_round_trip_through_the_schema_json():
    schema = dataclasses.replace(HOUSEHOLD, constraints=(FEMALE_HUSBAND, YEARS_WITHIN_AGE))
    assert schema.to_dict()["constraints"] == [
        {"type": "forbidden_combination", "values": {"relationship": "Husband", "sex": "Female"}},
        {"type": "less_equal", "left": "years", "right": "age"},
    ]
    assert Schema.from_json(schema.to_json()) == schema
    assert hash(Schema.from_json(schema.to_json())) == hash(schema)
    for data, message in [
        ({"type": "bogus"}, "unknown constraint type 'bogus'"),
        (
            {**FEMALE_HUSBAND.to_dict(), "extra": 1},
            r"unknown forbidden_combination fields: \['extra'\]",
        ),
        ({"type": "forbidden_combination", "values": [1]}, "expected values to be an object"),
        ({**YEARS_WITHIN_AGE.to_dict(), "strict": True}, "unknown less_equal fields"),
    ]:
        with pytest.raises((TypeError, ValueError), match=message):
            constraint_from_dict(data)
        with pytest.raises(ValueError, match="bad constraint"):
            Schema.from_dict({**HOUSEHOLD.to_dict(), "constraints": [data]})


def test_schema_refuses_unknown_columns_and_values_naming_every_problem():
    bad = ForbiddenCombination(values={"job": "Clerk", "sex": "Femal", "age": 10, "years": 2.5})
    with pytest.raises(ValueError) as info:
        dataclasses.replace(HOUSEHOLD, constraints=(bad, Inequality(left="sex", right="age")))
    message = str(info.value)
    assert message.startswith("2 problems:")
    for part in [
        "no column 'job'",
        "'Femal' is not a category of 'sex'",
        "10 is outside 'age'",
        "'years' holds integers, got 2.5",
        "inequality sex <= age: 'sex' is categorical",
    ]:
        assert part in message
    for constraint, message in [
        (ForbiddenCombination(values={}), "at least one"),
        (ForbiddenCombination(values=(("sex", "Male"), ("sex", "Female"))), "named twice"),
        (Inequality(left="age", right="age"), "must differ"),
        (Inequality(left="age", right="shoe"), "no column 'shoe'"),
    ]:
        with pytest.raises(ValueError, match=message):
            dataclasses.replace(HOUSEHOLD, constraints=(constraint,))
    continuous = Schema(columns=(Column(name="w", kind="continuous", lower=0.0, upper=1.0),))
    with pytest.raises(ValueError, match="'w' is continuous"):
        dataclasses.replace(continuous, constraints=(ForbiddenCombination(values={"w": 0.5}),))
    with pytest.raises(ValueError, match="no row can meet it"):
        Schema(
            columns=(
                Column(name="a", kind="integer", lower=5, upper=9),
                Column(name="b", kind="continuous", lower=0.0, upper=4.0),
            ),
            constraints=(Inequality(left="a", right="b"),),
        )


def test_violations_and_admissible_count_forbidden_rows_and_broken_inequalities():
    frame = pd.DataFrame(
        {
            "relationship": ["Husband", "Husband", "Wife", "Husband"],
            "sex": ["Female", "Male", "Female", None],
            "age": [5, 5, 5, 5],
            "years": [6, 5, np.nan, 1],
        }
    )
    constraints = [FEMALE_HUSBAND, YEARS_WITHIN_AGE]
    assert violations(frame, constraints) == {
        "not (relationship=Husband, sex=Female)": 1,
        "years <= age": 1,
    }
    assert admissible(frame, constraints).tolist() == [False, True, True, True]
    pd.testing.assert_frame_equal(enforce(frame, constraints), frame)  # nothing to rewrite


@pytest.fixture(scope="module")
def household_model():
    """marginals on rows where female husbands and years > age are common: the method draws
    each column from its own noisy marginal, so its raw rows break both constraints often."""
    from accounting import PrivacyBudget
    from jdp.random import key_from_seed
    from jdp.synth.base import fit_model

    rng = np.random.default_rng(0)
    n = 2000
    frame = pd.DataFrame(
        {
            "relationship": rng.choice(["Husband", "Wife", "Child"], size=n),
            "sex": rng.choice(["Female", "Male"], size=n),
            "age": rng.integers(0, 10, size=n),
            "years": rng.integers(0, 10, size=n),
        }
    )
    budget = PrivacyBudget(epsilon=2.0, delta=0.0)
    return fit_model(key_from_seed(0), "marginals", frame, budget, schema=HOUSEHOLD)


def test_sample_model_returns_n_rows_none_breaking_the_constraints(household_model):
    """The same fitted model without the constraints draws female husbands and years > age
    in many rows; with them, sample_model returns exactly n rows and none, and its rows are
    the admissible rows of the model's own draws in order (rejection, no repair)."""
    from jdp.random import key_from_seed
    from jdp.synth.base import sample_chunks, sample_model
    from jdp.synth.conditions import sample_where

    constraints = (FEMALE_HUSBAND, YEARS_WITHIN_AGE)
    constrained = dataclasses.replace(
        household_model, schema=dataclasses.replace(HOUSEHOLD, constraints=constraints)
    )
    key = key_from_seed(1)
    raw = sample_model(key, household_model, 500)
    counts = violations(raw, constraints)
    assert counts["not (relationship=Husband, sex=Female)"] > 50 and counts["years <= age"] > 100
    out = sample_model(key, constrained, 500)
    assert len(out) == 500
    assert violations(out, constraints) == dict.fromkeys(counts, 0)
    kept = raw[admissible(raw, constraints)].reset_index(drop=True)
    pd.testing.assert_frame_equal(out.iloc[: len(kept)], kept)
    assert not out.iloc[len(kept) :].reset_index(drop=True).equals(kept.iloc[: 500 - len(kept)])
    first, second = sample_chunks(key, constrained, 600, chunk_rows=300)
    assert len(first) == len(second) == 300 and admissible(first, constraints).all()
    # chunk 0's redraws have a key stream of their own, not chunk 1's fold_in(key, 1)
    head = sample_model(key, household_model, 300)
    redrawn = first.iloc[admissible(head, constraints).sum() :].iloc[:20]
    assert not redrawn.reset_index(drop=True).equals(second.iloc[:20])
    husbands = sample_where(key, constrained, 50, {"relationship": "Husband"}, batch_rows=100)
    assert len(husbands) == 50 and (husbands["sex"] == "Male").all()


def test_constraints_no_row_can_meet_fail_with_the_acceptance_rate(household_model):
    from jdp.random import key_from_seed
    from jdp.synth.base import sample_model

    every_row = (
        ForbiddenCombination(values={"sex": "Female"}),
        ForbiddenCombination(values={"sex": "Male"}),
    )
    impossible = dataclasses.replace(
        household_model, schema=dataclasses.replace(HOUSEHOLD, constraints=every_row)
    )
    with pytest.raises(
        ValueError,
        match=r"only 0 of 3000 synthetic rows satisfy the schema's constraints "
        r"\(not \(sex=Female\), not \(sex=Male\)\) \(acceptance 0\); asked for 3",
    ):
        sample_model(key_from_seed(2), impossible, 3)
