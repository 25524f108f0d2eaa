"""The ``date`` column kind: declared ISO bounds, one conversion to day counts at the table
boundary (``Schema.conform``), integer behaviour everywhere else, and ``datetime64`` dates
back out of sampling."""

from __future__ import annotations

import datetime as dt
import json
import warnings

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.data.constraints import ForbiddenCombination, FunctionalDependency, Inequality
from jdp.data.dp_schema import infer_schema_dp
from jdp.data.read import read_csv
from jdp.data.schema import (
    ClipWarning,
    Column,
    Schema,
    date_to_days,
    draft_column,
    draft_schema,
)
from jdp.data.transforms import TableEncoder, numeric_column, numeric_values
from jdp.synth.base import fit_model, sample_model
from jdp.synth.conditions import Range, describe, parse_where
from jdp.verbosity import show_private_details

D2000 = 10957  # 2000-01-01 in days since 1970-01-01
D2024 = 20088  # 2024-12-31

HIRED = Column(name="hired", kind="date", lower="2000-01-01", upper="2024-12-31")
SCHEMA = Schema(
    columns=(
        HIRED,
        Column(name="grade", kind="categorical", categories=("a", "b")),
    )
)


def table(hired) -> pd.DataFrame:
    return pd.DataFrame({"hired": hired, "grade": ["a", "b", "a", "b"][: len(hired)]})


def test_bounds_are_stored_as_day_counts_from_any_date_type():
    assert (HIRED.lower, HIRED.upper) == (D2000, D2024)
    assert HIRED.is_numeric and HIRED.is_integer_valued
    same = Column(
        name="hired", kind="date", lower=dt.date(2000, 1, 1),
        upper=pd.Timestamp("2024-12-31 18:30"),  # a time of day is dropped
    )  # fmt: skip
    assert same == HIRED
    assert Column(name="hired", kind="date", lower=np.datetime64("2000-01-01"),
                  upper=dt.datetime(2024, 12, 31)) == HIRED  # fmt: skip
    assert date_to_days("1969-12-31T23:00") == -1  # truncated to its day, not rounded
    assert Column(name="n", kind="integer", lower=0, upper=9).is_integer_valued
    assert not Column(name="x", kind="continuous", lower=0, upper=9).is_integer_valued


def test_json_round_trip_keeps_the_kind_and_the_iso_bounds(tmp_path):
    col = Column(
        name="hired", kind="date", lower="2000-01-01", upper="2024-12-31",
        point_masses=("2010-06-01",), nullable=True,
    )  # fmt: skip
    schema = Schema(columns=(col, SCHEMA["grade"]))
    doc = schema.to_dict()
    assert doc["columns"][0] == {
        "name": "hired", "kind": "date", "lower": "2000-01-01", "upper": "2024-12-31",
        "point_masses": ["2010-06-01"], "nullable": True,
    }  # fmt: skip
    assert Schema.from_dict(json.loads(json.dumps(doc))) == schema
    schema.save(tmp_path / "schema.json")
    loaded = Schema.load(tmp_path / "schema.json")
    assert loaded == schema and loaded["hired"].kind == "date"
    assert '"lower": "2000-01-01"' in (tmp_path / "schema.json").read_text()


@pytest.mark.parametrize(
    "bound, error, match",
    [
        (10957, TypeError, "expected an ISO date"),  # JSON: a number is no date
        ("2000-13-01", ValueError, "expected an ISO date"),
        ("1600-01-01", ValueError, "range of datetime64"),
    ],
)
def test_json_refuses_bounds_that_are_not_dates(bound, error, match):
    doc = {"columns": [{"name": "hired", "kind": "date", "lower": bound, "upper": "2024-12-31"}]}
    with pytest.raises(error, match=match):
        Schema.from_dict(doc)


def test_conform_reads_datetime64_as_integer_day_counts():
    stamps = pd.to_datetime(
        ["2000-01-01", "2000-01-02 23:59", "2012-02-29", "2024-12-31"], format="ISO8601"
    )
    expected = [D2000, D2000 + 1, date_to_days("2012-02-29"), D2024]
    for hired in (stamps, stamps.astype("datetime64[s]"), stamps.tz_localize("Asia/Tokyo")):
        frame = SCHEMA.conform(table(hired)).frame
        assert frame["hired"].dtype == np.int64
        assert frame["hired"].tolist() == expected


def test_conform_reads_iso_strings_as_integer_day_counts(tmp_path):
    text = ["2000-01-01", "2000-01-02T23:59", "2012-02-29", "2024-12-31"]
    expected = [D2000, D2000 + 1, date_to_days("2012-02-29"), D2024]
    assert SCHEMA.conform(table(pd.Series(text, dtype=object))).frame["hired"].tolist() == expected
    assert SCHEMA.conform(table(pd.Series(text, dtype="str"))).frame["hired"].tolist() == expected
    # a CSV's date column is read as text, not guessed to be a number: 20000101 is the ISO
    # basic form of 2000-01-01
    path = tmp_path / "own.csv"
    path.write_text("hired,grade\n20000101,a\n2012-02-29,b\n")
    frame = SCHEMA.conform(read_csv(path, SCHEMA)).frame
    assert frame["hired"].tolist() == [D2000, date_to_days("2012-02-29")]


def test_out_of_range_dates_are_clipped_like_integers():
    hired = pd.to_datetime(["1999-06-30", "2010-01-01", "2031-01-01", "2024-12-31"])
    with show_private_details(), pytest.warns(ClipWarning) as caught:
        dated = SCHEMA.conform(table(hired))
    message = str(caught[0].message)
    assert "2 value(s) of column 'hired' to [2000-01-01, 2024-12-31]" in message
    as_days = [date_to_days(v) for v in hired]
    integer = Schema(columns=(Column(name="hired", kind="integer", lower=D2000, upper=D2024),
                              SCHEMA["grade"]))  # fmt: skip
    with show_private_details(), pytest.warns(ClipWarning):
        counted = integer.conform(table(as_days))
    assert dated.frame["hired"].tolist() == counted.frame["hired"].tolist()
    assert dated.frame["hired"].tolist() == [D2000, date_to_days("2010-01-01"), D2024, D2024]
    assert dated.clip_counts == counted.clip_counts == {"hired": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # whether anything was clipped is private: silent
        SCHEMA.conform(table(hired))


def test_values_that_are_not_dates_raise_naming_the_column_never_the_values():
    bad = table(pd.Series(["2001-02-03", "2001-02-30", "secret-value", None], dtype=object))
    with pytest.raises(ValueError) as info:
        SCHEMA.conform(bad)
    message = str(info.value)
    assert "column 'hired'" in message and "not dates" in message
    assert "2001-02-30" not in message and "secret-value" not in message
    assert "2 of them" not in message  # the count is private ...
    with show_private_details(), pytest.raises(ValueError, match=r"\(2 of them\)"):
        SCHEMA.conform(bad)  # ... shown to the data holder only
    with pytest.raises(TypeError, match="'hired': expected dates .* got dtype int64"):
        SCHEMA.conform(table([D2000, D2000 + 1]))  # day counts are not silently taken
    with pytest.raises(ValueError, match="'hired' has NaN or missing value"):
        SCHEMA.conform(table(pd.to_datetime(["2001-02-03", None])))  # not nullable


def test_nullable_date_keeps_missing_values():
    nullable = Column(name="hired", kind="date", lower="2000-01-01", upper="2024-12-31",
                      nullable=True)  # fmt: skip
    schema = Schema(columns=(nullable, SCHEMA["grade"]))
    frame = schema.conform(table(pd.to_datetime(["2001-02-03", None]))).frame
    assert frame["hired"].dtype == "Int64" and frame["hired"].isna().tolist() == [False, True]
    decoded = numeric_column(nullable, np.array([D2000 + 0.4, np.nan]), np.array([0, 1]))
    assert decoded.dtype == np.dtype("datetime64[ns]")
    assert str(decoded[0])[:10] == "2000-01-01" and np.isnat(decoded[1])


def test_encoding_round_trip_gives_the_dates_back():
    hired = pd.to_datetime(["2000-01-01", "2003-07-14", "2019-11-30", "2024-12-31"])
    data = SCHEMA.conform(table(hired))
    encoder = TableEncoder(SCHEMA)
    decoded = encoder.decode(encoder.encode(data))
    assert decoded["hired"].dtype == np.dtype("datetime64[ns]")
    assert decoded["hired"].tolist() == hired.tolist()
    assert numeric_values(decoded["hired"]).tolist() == data.frame["hired"].tolist()


def test_draft_of_a_datetime_column_is_a_date_with_null_bounds():
    draft = draft_column("hired", np.dtype("datetime64[ns]"))
    assert draft.kind == "date" and "time of day is dropped" in draft.reason
    assert draft_column("hired", pd.DatetimeTZDtype(tz="UTC")).kind == "date"
    frame = pd.DataFrame({"hired": pd.to_datetime(["2030-05-06"]), "grade": ["a"]})
    doc = draft_schema(frame)
    assert doc["columns"][0] == {"name": "hired", "kind": "date", "lower": None, "upper": None}
    assert "2030" not in json.dumps(doc)  # bounds are never read off the data
    # a date held as text is left to the data holder, with the advice to declare it
    text = draft_column("visit_date", np.dtype(object))
    assert text.kind is None and 'kind "date"' in text.reason


def test_infer_schema_dp_releases_date_bounds_on_day_counts():
    rng = np.random.default_rng(0)
    n = 3000
    hired = pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 2000, n), unit="D")
    frame = pd.DataFrame({"hired": hired, "grade": rng.choice(["a", "b"], n)})
    kinds = {"hired": "date", "grade": "categorical"}
    release = infer_schema_dp(
        np.random.default_rng(1), frame, epsilon=2.0, kinds=kinds,
        ranges={"hired": ("1900-01-01", "2100-12-31")},
    )  # fmt: skip
    col = release.schema["hired"]
    assert col.kind == "date" and "dp-schema-histograms" in release.ledger.labels
    assert col.lower == int(col.lower) and col.upper == int(col.upper)  # whole days
    days = np.array([date_to_days(v) for v in hired])
    inside = (days >= col.lower) & (days <= col.upper)
    assert inside.mean() > 0.95  # the bulk of the data
    assert date_to_days("1900-01-01") < col.lower  # tighter than the coarse range
    saved = release.to_dict()["schema"]["columns"][0]
    assert saved["lower"] == col.to_dict()["lower"] and saved["lower"][4] == "-"  # ISO text
    with pytest.raises(ValueError, match="'hired': expected its coarse range .* as dates"):
        infer_schema_dp(np.random.default_rng(1), frame, epsilon=2.0, kinds=kinds,
                        ranges={"hired": (0, 50_000)})  # fmt: skip


def test_constraints_and_conditions_on_dates():
    left = Column(name="left", kind="date", lower="2000-01-01", upper="2030-12-31")
    count = Column(name="count", kind="integer", lower=0, upper=9)
    Schema(columns=(HIRED, left), constraints=(Inequality(left="hired", right="left"),))
    with pytest.raises(ValueError, match="compared only with another date"):
        Schema(columns=(HIRED, count), constraints=(Inequality(left="count", right="hired"),))
    with pytest.raises(ValueError, match="'hired' is a date column"):
        Schema(columns=(HIRED, count), constraints=(ForbiddenCombination(values={"hired": 0}),))
    with pytest.raises(ValueError, match="'hired' is a date column"):
        Schema(columns=(HIRED, count), constraints=(
            FunctionalDependency(determinant="count", dependent="hired", mapping={}),
        ))  # fmt: skip
    where = parse_where(["hired>=2010-01-01", "hired<2012-06-30"], SCHEMA)
    assert where["hired"] == Range(
        ((">=", pd.Timestamp("2010-01-01")), ("<", pd.Timestamp("2012-06-30")))
    )
    assert describe(where) == "hired>=2010-01-01, hired<2012-06-30"
    assert parse_where({"hired": "2010-01-01"}, SCHEMA) == {"hired": pd.Timestamp("2010-01-01")}
    with pytest.raises(ValueError, match="outside 'hired'"):
        parse_where("hired=2030-01-01", SCHEMA)
    with pytest.raises(ValueError, match="'hired' holds dates"):
        parse_where("hired>=soon", SCHEMA)


def test_marginals_fit_and_sample_give_dates_inside_the_declared_bounds():
    rng = np.random.default_rng(0)
    n = 500
    start = pd.Timestamp("2008-01-01") + pd.to_timedelta(rng.integers(0, 3000, n), unit="D")
    frame = pd.DataFrame({"hired": start, "grade": rng.choice(["a", "b"], n)})
    schema = Schema(
        columns=(
            Column(name="hired", kind="date", lower="2005-01-01", upper="2020-12-31"),
            SCHEMA["grade"],
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small table: the no-signal note is not tested here
        model = fit_model(jax.random.key(0), "marginals", frame, PrivacyBudget(epsilon=1.0),
                          schema=schema)  # fmt: skip
    assert model.schema["hired"].kind == "date"
    out = sample_model(jax.random.key(1), model, 400)
    assert out["hired"].dtype == np.dtype("datetime64[ns]")
    assert out["hired"].min() >= pd.Timestamp("2005-01-01")
    assert out["hired"].max() <= pd.Timestamp("2020-12-31")
    assert (out["hired"] == out["hired"].dt.normalize()).all()  # whole days
    assert out["hired"].nunique() > 10
    # the same key draws the same dates
    assert sample_model(jax.random.key(1), model, 400)["hired"].equals(out["hired"])
