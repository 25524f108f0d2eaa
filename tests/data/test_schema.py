"""Schema declaration, JSON round trip, and conform(): every bad input names its column."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from jdp.data.schema import (
    ClipWarning,
    Column,
    NonPrivateSchemaWarning,
    Schema,
    infer_schema_nonprivate,
)
from jdp.verbosity import show_private_details

SCHEMA = Schema(
    columns=(
        Column(name="age", kind="integer", lower=17, upper=90),
        Column(name="income", kind="continuous", lower=0.0, upper=1e5),
        Column(name="color", kind="categorical", categories=("red", "green", "blue")),
        Column(name="label", kind="categorical", categories=(0, 1)),
    ),
    target="label",
)


def frame(**overrides: list) -> pd.DataFrame:
    base = {
        "age": [20, 35, 61],
        "income": [100.5, 2e4, 9.9e4],
        "color": ["red", "blue", "green"],
        "label": [0, 1, 1],
    }
    base.update(overrides)
    return pd.DataFrame(base)


def test_json_round_trip(tmp_path):
    path = tmp_path / "s.json"
    SCHEMA.save(path)
    assert Schema.load(path) == SCHEMA
    assert Schema.from_json(SCHEMA.to_json()) == SCHEMA
    assert SCHEMA.features == ["age", "income", "color"]


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(name="a", kind="continuous", lower=1, upper=1), ValueError, "lower < upper"),
        (dict(name="a", kind="continuous", lower=0, upper=float("inf")), ValueError, "finite"),
        (dict(name="a", kind="continuous", lower=0), TypeError, "upper bound"),
        (dict(name="a", kind="integer", lower=0.5, upper=3), ValueError, "integer lower"),
        (dict(name="a", kind="categorical", categories=()), ValueError, "non-empty"),
        (dict(name="a", kind="categorical", categories=("x", "x")), ValueError, "duplicate"),
        (dict(name="a", kind="categorical", categories=("x", 1)), TypeError, "mix"),
        (dict(name="a", kind="categorical", categories=(1.5,)), TypeError, "str, int or bool"),
        (dict(name="a", kind="ordinal"), ValueError, "kind"),
    ],
)
def test_bad_columns_raise(kwargs, err, match):
    with pytest.raises(err, match=match):
        Column(**kwargs)


def test_bad_schemas_raise():
    a = Column(name="a", kind="continuous", lower=0, upper=1)
    with pytest.raises(ValueError, match="duplicate"):
        Schema(columns=(a, a))
    with pytest.raises(ValueError, match="'zz' is not in the schema"):
        Schema(columns=(a,), target="zz")
    with pytest.raises(ValueError, match="must be categorical"):
        Schema(columns=(a,), target="a")
    with pytest.raises(ValueError, match="unknown schema keys"):
        Schema.from_dict(
            {"columns": [{"name": "a", "kind": "integer", "lower": 0, "upper": 1, "x": 1}]}
        )


def test_conform_returns_typed_frame_without_clipping():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = SCHEMA.conform(frame())
    assert list(table.frame.columns) == SCHEMA.names
    assert table.frame["age"].dtype == np.int64
    assert table.frame["income"].dtype == np.float64
    assert table.clip_counts == {} and len(table) == 3


def test_out_of_bounds_values_clip_and_are_counted():
    """Values out of bounds are clipped and counted on the Table; whether any were is private
    (issue 24, item 3), so the warning appears only under show_private_details."""
    data = frame(age=[5, 35, 200], income=[-1.0, 2e4, 5e4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = SCHEMA.conform(data)
    with (
        show_private_details(),
        pytest.warns(
            ClipWarning, match=r"2 value\(s\) of column 'age'.*1 value\(s\) of column 'income'"
        ),
    ):
        SCHEMA.conform(data)
    assert table.clip_counts == {"age": 2, "income": 1}
    assert table.frame["age"].tolist() == [17, 35, 90]
    assert table.frame["income"].tolist() == [0.0, 2e4, 5e4]


@pytest.mark.parametrize(
    "data, err, match",
    [
        (frame(income=[1.0, np.nan, 3.0]), ValueError, "column 'income' has NaN or missing value"),
        (frame(income=[1.0, np.inf, 3.0]), ValueError, "column 'income' has infinite value"),
        (frame(color=["red", "pink", "blue"]), ValueError, "column 'color' has values not in"),
        (frame(color=["red", None, "blue"]), ValueError, "column 'color' has missing value"),
        (frame(age=["20", "35", "61"]), TypeError, "column 'age': expected a numeric dtype"),
        (frame(age=[True, False, True]), TypeError, "column 'age': expected a numeric dtype"),
        (frame(color=[1, 2, 3]), TypeError, "column 'color': expected string categories"),
        (frame(label=["0", "1", "1"]), TypeError, "column 'label': expected non-string"),
        (frame(label=[0, 2, 1]), ValueError, "column 'label' has values not in"),
        (frame(age=[20.5, 35, 61]), ValueError, "column 'age' is declared integer"),
        (frame().drop(columns="label"), ValueError, "target column 'label' is missing"),
        (frame().drop(columns="color"), ValueError, "column 'color' of the schema is missing"),
        (frame().assign(extra=1), ValueError, "column 'extra' of the data is not in the schema"),
        (frame().to_numpy(), TypeError, "expected a pandas DataFrame"),
    ],
)
def test_bad_data_raises_naming_the_column(data, err, match):
    with pytest.raises(err, match=match):
        SCHEMA.conform(data)


@pytest.mark.parametrize(
    "data, secret",
    [(frame(color=["red", "Mauve-7", "blue"]), "Mauve-7"), (frame(label=[0, 7, 1]), "7")],
)
def test_unknown_category_error_names_the_column_but_never_the_value(data, secret):
    """A value outside a declared domain may be one person's rare value: the error names the
    column and says what is wrong, and shows neither the value nor how many there are."""
    with pytest.raises(ValueError, match="values not in the schema's categories") as info:
        SCHEMA.conform(data)
    assert secret not in str(info.value) and not any(ch.isdigit() for ch in str(info.value))


def test_save_is_atomic_and_keeps_the_release_mark(tmp_path, monkeypatch):
    """``save`` writes a temporary file and renames it over the target: a failed write leaves
    the previous file intact and no temporary file behind."""
    import os

    path = tmp_path / "s.json"
    released = Schema(columns=SCHEMA.columns, target="label", from_release=True)
    released.save(path)
    assert Schema.load(path) == released and Schema.load(path).from_release
    assert '"from_release"' not in SCHEMA.to_json()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        SCHEMA.save(path)
    assert Schema.load(path) == released
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_column_order_of_data_does_not_matter():
    shuffled = frame()[["label", "color", "age", "income"]]
    assert list(SCHEMA.conform(shuffled).frame.columns) == SCHEMA.names


def test_infer_schema_nonprivate_warns_and_reads_the_data():
    with pytest.warns(NonPrivateSchemaWarning, match="NOT differentially private"):
        schema = infer_schema_nonprivate(frame(), target="label")
    assert schema["age"] == Column(name="age", kind="integer", lower=20, upper=61)
    assert schema["income"].kind == "continuous"
    assert schema["color"].categories == ("blue", "green", "red")
    assert schema.target == "label" and schema["label"].categories == (0, 1)


# -- point masses, nullable columns, ignored columns, all problems at once -----------------


def test_point_masses_nullable_ignore_round_trip_through_json(tmp_path):
    schema = Schema(
        columns=(
            Column(name="gain", kind="integer", lower=0, upper=99_999, point_masses=[0]),
            Column(name="x", kind="continuous", lower=0, upper=1, nullable=True),
            Column(name="c", kind="categorical", categories=("NA", "b"), nullable=True),
        ),
        missing_values=("", "?"),
        ignore=("id",),
    )
    assert schema["gain"].point_masses == (0.0,)
    text = schema.to_json()
    assert '"point_masses": [0]' in text and '"nullable": true' in text and '"ignore"' in text
    assert Schema.from_json(text) == schema
    schema.save(tmp_path / "s.json")
    assert Schema.load(tmp_path / "s.json") == schema
    assert "point_masses" not in SCHEMA.to_json() and "missing_values" not in SCHEMA.to_json()


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"kind": "integer", "point_masses": (0.5,)}, ValueError, "integer point masses"),
        ({"kind": "integer", "point_masses": (100,)}, ValueError, "outside the bounds"),
        ({"kind": "integer", "point_masses": (0, 0)}, ValueError, "point mass 0 is listed twice"),
        ({"kind": "integer", "point_masses": ("0",)}, TypeError, "finite point mass"),
        ({"kind": "integer", "point_masses": 0}, TypeError, "list of numbers"),
        ({"kind": "integer", "nullable": "yes"}, TypeError, "nullable to be a bool"),
    ],
)
def test_bad_point_masses_raise(kwargs, err, match):
    with pytest.raises(err, match=match):
        Column(name="a", lower=0, upper=10, **kwargs)
    with pytest.raises(ValueError, match="categorical column takes no point_masses"):
        Column(name="a", kind="categorical", categories=("x",), point_masses=(0,))


def test_duplicate_category_is_named():
    with pytest.raises(ValueError, match="column 'a': duplicate category 'y' in its list"):
        Column(name="a", kind="categorical", categories=("x", "y", "z", "y"))


def test_schema_file_reports_every_bad_column_at_once():
    data = {
        "target": "label",
        "columns": [
            {"name": "a", "kind": "continuous", "lower": 1, "upper": 0},
            {"name": "b", "kind": "categorical", "categories": ["x", "x"]},
            {"name": "c", "kind": "integer", "lower": 0, "upper": 5},
            {"name": "d", "kind": "real"},
        ],
    }
    with pytest.raises(ValueError) as info:
        Schema.from_dict(data)
    first = str(info.value).splitlines()[0]
    assert first.startswith("3 problems: column 'a': expected lower < upper")
    assert "column 'b': duplicate category 'x'" in first and "column 'd': expected kind" in first
    good = {"name": "label", "kind": "categorical", "categories": [0, 1], "nullable": True}
    with pytest.raises(ValueError, match="target column 'label' must not be nullable"):
        Schema.from_dict({"target": "label", "columns": [good]})


def test_conform_reports_every_bad_column_at_once():
    data = frame(income=[1.0, np.inf, 3.0], color=["red", "pink", "blue"]).drop(columns="age")
    data["extra"] = 1
    with pytest.raises(ValueError) as info:
        SCHEMA.conform(data)
    first = str(info.value).splitlines()[0]
    assert first.startswith("3 problems: ")
    for part in (
        "column 'age' of the schema is missing",
        "column 'extra' of the data is not in the schema",
        "column 'income' has infinite value",
    ):
        assert part in first
    # out-of-domain categories are checked once the rest is sound, also all at once
    with pytest.raises(ValueError, match="^2 problems: column 'color' has values not in"):
        SCHEMA.conform(frame(color=["red", "pink", "blue"], label=[0, 5, 1]))


def test_ignored_columns_are_dropped_before_checking():
    schema = Schema(columns=SCHEMA.columns, target="label", ignore=("id", "notes"))
    table = schema.conform(frame().assign(id=[7, 8, 9]))
    assert list(table.frame.columns) == SCHEMA.names
    with pytest.raises(ValueError, match="column 'age' is both in the schema and ignored"):
        Schema(columns=SCHEMA.columns, ignore=("age",))


def test_nullable_columns_accept_missing_values_others_name_the_column():
    schema = Schema(
        columns=tuple(
            Column(**{**c.to_dict(), "nullable": c.name != "label"}) for c in SCHEMA.columns
        ),
        target="label",
    )
    data = frame(
        age=pd.array([20, None, 61], dtype="Int64"),
        income=[np.nan, 2e4, 9.9e4],
        color=["red", None, "NA"],
    )
    with pytest.raises(ValueError, match="column 'color' has values not in"):  # "NA" is a value
        schema.conform(data)
    table = schema.conform(data.assign(color=["red", None, "blue"]))
    assert table.frame["age"].dtype == "Int64" and table.frame["age"].isna().tolist() == [
        False,
        True,
        False,
    ]
    assert np.isnan(table.frame["income"][0]) and pd.isna(table.frame["color"][1])
    # not nullable: the error names the column; the count only under show_private_details
    with pytest.raises(ValueError) as info:
        SCHEMA.conform(frame(age=[20.0, np.nan, np.nan], color=["red", None, "blue"]))
    message = str(info.value)
    assert message.startswith("2 problems: column 'age' has NaN or missing value(s)")
    assert "column 'color' has missing value(s) and is not nullable" in message
    assert not any(ch.isdigit() for ch in message.split("problems")[1])
    with show_private_details(), pytest.raises(ValueError, match=r"'age'.*\(2 of them\)"):
        SCHEMA.conform(frame(age=[20.0, np.nan, np.nan]))
