"""Drafting a schema from public metadata (names and dtypes, never values), and what
``infer_schema_nonprivate`` / ``infer_schema_dp`` do with dates, identifiers, free text and
ignored columns."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from jdp.data.dp_schema import infer_schema_dp
from jdp.data.schema import (
    NonPrivateSchemaWarning,
    Schema,
    draft_column,
    draft_schema,
    infer_schema_nonprivate,
)

N = 1852


def own_table(seed: int = 0) -> pd.DataFrame:
    """The reported table: an integer ID, a date, a free-text comment, missing values, an
    800-level city, a skewed income."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10, 1.5, N)
    income[rng.random(N) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "ID": np.arange(100_000, 100_000 + N),
            "visit_date": pd.Timestamp("2020-01-01")
            + pd.to_timedelta(rng.integers(0, 900, N), "D"),
            "comment": [f"secret remark {i}" for i in range(N)],
            "city": rng.choice([f"City-{k:03d}" for k in range(800)], N),
            "income": income,
            "age": rng.integers(18, 90, N),
            "member": rng.random(N) < 0.3,
            "label": rng.choice(["no", "yes"], N),
        }
    )


def test_draft_fills_kinds_from_dtypes_drafts_dates_and_ignores_ids_and_free_text():
    frame = own_table()
    doc = draft_schema(frame, target="label")
    kinds = {c["name"]: c["kind"] for c in doc["columns"]}
    assert kinds == {
        "visit_date": "date", "city": "categorical", "income": "continuous", "age": "integer",
        "member": "categorical", "label": "categorical",
    }  # fmt: skip
    assert doc["ignore"] == ["ID", "comment"]
    for name in [*doc["ignore"], "visit_date"]:  # each with its reason (a date: its resolution)
        assert repr(name) in doc["description"]
    assert "identifier" in doc["description"] and "free text" in doc["description"]
    by_name = {c["name"]: c for c in doc["columns"]}
    assert by_name["income"]["lower"] is None and by_name["income"]["upper"] is None
    assert by_name["visit_date"]["lower"] is None and by_name["visit_date"]["upper"] is None
    assert by_name["city"]["categories"] is None and by_name["label"]["categories"] is None
    assert by_name["member"]["categories"] == [False, True]  # the bool dtype's domain
    text = json.dumps(doc)
    assert "City-" not in text and "secret remark" not in text and "100000" not in text
    # only the dtypes are read: the mapping of dtypes drafts the same template
    assert draft_schema(dict(frame.dtypes), target="label") == doc


@pytest.mark.parametrize(
    "name, dtype, kind",
    [
        ("id", "int64", None), ("customer_id", "object", None), ("userID", "int64", None),
        ("uuid", "object", None), ("paid", "int64", "integer"), ("valid", "bool", "categorical"),
        ("Notes", "object", None), ("description", "object", None), ("context", "object",
        "categorical"), ("price", "float64", "continuous"), ("when", "datetime64[ns]", "date"),
        ("birth_date", "object", None), ("Unnamed: 0", "int64", None),
        ("code", "category", "categorical"), ("count", "Int64", "integer"),
    ],
)  # fmt: skip
def test_draft_column_rules(name, dtype, kind):
    draft = draft_column(name, pd.Series([], dtype=dtype).dtype)
    assert draft.kind == kind
    if kind is None:
        assert draft.reason  # an ignored column says why


def test_draft_overrides_and_reports_every_problem_at_once():
    frame = own_table()
    doc = draft_schema(
        frame, kinds={"age": "continuous", "comment": "categorical"}, ignore=["city"],
        nullable=["income"],
    )  # fmt: skip
    by_name = {c["name"]: c for c in doc["columns"]}
    assert by_name["age"]["kind"] == "continuous" and by_name["comment"]["kind"] == "categorical"
    assert "city" in doc["ignore"] and "city" not in by_name
    assert by_name["income"]["nullable"] is True
    with pytest.raises(ValueError, match=r"^3 problems: .*'zz' of kinds.*'yy' of ignore.*"
                       r"'label' must be categorical"):  # fmt: skip
        draft_schema(frame, target="label", kinds={"zz": "integer", "label": "integer"},
                     ignore=["yy"])  # fmt: skip


def test_filled_draft_loads_and_conforms_without_the_ignored_columns():
    frame = own_table()
    doc = draft_schema(frame, target="label", nullable=["income"])
    fill = {"city": [f"City-{k:03d}" for k in range(800)], "income": (0, 1e9), "age": (0, 120),
            "label": ["no", "yes"], "visit_date": ("2019-01-01", "2023-12-31")}  # fmt: skip
    for column in doc["columns"]:
        if column["name"] in fill:
            value = fill[column["name"]]
            if column["kind"] == "categorical":
                column["categories"] = value
            else:
                column["lower"], column["upper"] = value
    schema = Schema.from_dict(doc)
    table = schema.conform(frame)
    assert list(table.frame.columns) == ["visit_date", "city", "income", "age", "member", "label"]
    assert table.frame["income"].isna().sum() == frame["income"].isna().sum()


def test_infer_schema_nonprivate_ignores_ids_and_free_text_and_reads_dates():
    frame = own_table()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema = infer_schema_nonprivate(frame, target="label", ignore=["member"])
    assert any(issubclass(w.category, NonPrivateSchemaWarning) for w in caught)
    [note] = [str(w.message) for w in caught if "ignores column(s)" in str(w.message)]
    assert "'comment' (likely free text" in note and "visit_date" not in note
    assert set(schema.ignore) == {"member", "ID", "comment"}
    assert schema.names == ["visit_date", "city", "income", "age", "label"]
    first, last = frame["visit_date"].min(), frame["visit_date"].max()  # read off the data
    assert schema["visit_date"].kind == "date"
    assert schema["visit_date"].to_dict()["lower"] == first.date().isoformat()
    assert schema["visit_date"].to_dict()["upper"] == last.date().isoformat()
    assert "secret remark" not in schema.to_json()  # free text is never a category
    assert len(schema.conform(frame.dropna()).frame) == len(frame.dropna())


def test_infer_schema_dp_ignores_columns_and_reports_every_problem_at_once():
    frame = own_table().drop(columns=["visit_date"])
    # an 800-level city over 1,852 rows has no category DP discovery can release: 4 levels here
    frame["city"] = np.random.default_rng(1).choice(["A", "B", "C", "D"], N)
    kinds = {"city": "categorical", "income": "continuous", "age": "integer", "member": "integer",
             "label": "categorical"}  # fmt: skip
    ranges = {"income": (0, 1e9), "age": (0, 1e3), "member": (0, 1)}
    release = infer_schema_dp(
        np.random.default_rng(0), frame, epsilon=5.0, kinds=kinds, ranges=ranges,
        target="label", ignore=["ID", "comment"], nullable=["income"],
    )  # fmt: skip
    assert release.schema.ignore == ("ID", "comment")
    assert release.schema.names == ["city", "income", "age", "member", "label"]
    assert not any("ID" in label or "comment" in label for label in release.ledger.labels)
    assert release.schema["income"].nullable
    assert 0.999 * 5.0 <= release.epsilon <= 5.0
    bad = frame.assign(age=frame["age"].astype(object))
    bad.loc[7, "age"] = "ninety-one"  # a private value: never in the message
    with pytest.raises(ValueError) as info:
        infer_schema_dp(
            np.random.default_rng(0), bad, epsilon=1.0, kinds=kinds,
            ranges={"income": (0, 1), "age": (0, 1e3)},
            target="label", ignore=["comment", "visit_date"],
        )  # fmt: skip
    message = str(info.value)
    assert message.startswith("4 problems: ")
    for part in ("'ID' has no declared kind",
                 "'income' has NaN", "'age' is declared numeric but has non-numeric",
                 "'member': a coarse public range"):  # fmt: skip
        assert part in message, message
    assert "ninety-one" not in message
