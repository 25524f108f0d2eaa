"""``jdp schema`` drafts a template from names and dtypes (never values); ``--ignore`` and
``--nullable`` reach the DP release; every problem is reported in one line. ``jdp evaluate``
reads CSVs as ``jdp fit`` does and accepts ``--classifiers LightGBM``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _cli_run import run
from _own_table import write_own_csv

from jdp.cli.evaluate import available_classifiers, named_classifiers, read_csv
from jdp.data.dp_schema import SchemaRelease, load_schema
from jdp.data.schema import Schema


@pytest.fixture()
def own_csv(tmp_path):
    return write_own_csv(tmp_path / "own.csv")


def test_template_drafts_kinds_from_dtypes_and_copies_no_value(capsys, tmp_path, own_csv):
    out = tmp_path / "draft.json"
    code, stdout, err = run(capsys, "schema", "--data", own_csv, "--target", "y", "--out", out)
    assert code == 0, err
    assert "ignored columns" in stdout and "comment" in stdout
    doc = json.loads(out.read_text())
    kinds = {c["name"]: c["kind"] for c in doc["columns"]}
    assert kinds == {
        "city": "categorical", "region": "categorical", "income": "continuous",
        "visits": "integer", "age": "integer", "y": "categorical",
    }  # fmt: skip
    assert doc["ignore"] == ["id", "visit_date", "comment"] and doc["target"] == "y"
    assert "identifier" in doc["description"] and "free text" in doc["description"]
    assert all(c.get("categories") is None and c.get("lower") is None for c in doc["columns"])
    text = out.read_text()
    for value in ("Town", "North", "private remark", "500000", "2021-"):
        assert value not in text
    # --columns overrides a drafted kind; --ignore/--nullable apply to the template too
    code, _, err = run(
        capsys, "schema", "--data", own_csv, "--out", tmp_path / "d2.json", "--columns",
        "age:continuous", "--ignore", "city", "--nullable", "income",
    )  # fmt: skip
    assert code == 0, err
    doc2 = json.loads((tmp_path / "d2.json").read_text())
    by_name = {c["name"]: c for c in doc2["columns"]}
    assert by_name["age"]["kind"] == "continuous" and "city" in doc2["ignore"]
    assert by_name["income"]["nullable"] is True
    with pytest.raises((TypeError, ValueError), match="expected a numeric public lower bound"):
        Schema.load(tmp_path / "d2.json")  # the nulls are still to be filled in


COLUMNS = (
    "city:categorical,region:categorical,income:continuous:0:1e9,visits:integer:0:1000,"
    "age:integer:0:200,y:categorical"
)


def test_dp_release_takes_ignore_and_nullable_and_fit_reads_it(capsys, tmp_path, own_csv):
    out = tmp_path / "release.json"
    code, stdout, err = run(
        capsys, "schema", "--data", own_csv, "--columns", COLUMNS.replace("city:categorical,", ""),
        "--target", "y", "--dp", "--epsilon", 4, "--seed", 0, "--out", out, "--json",
        "--ignore", "id,comment", "--ignore", "visit_date", "--ignore", "city",
        "--nullable", "income",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(stdout)["ignore"] == ["id", "comment", "visit_date", "city"]
    release = load_schema(out)
    assert isinstance(release, SchemaRelease)
    schema = release.schema
    assert schema.ignore == ("id", "comment", "visit_date", "city")
    assert schema.names == ["region", "income", "visits", "age", "y"]
    assert schema["income"].nullable and not schema["age"].nullable
    assert "NA" in schema["region"].categories  # read as fit reads: "NA" is a value
    assert release.ledger.labels == ["dp-schema-histograms", "dp-suppressed-shares"]
    assert "private remark" not in out.read_text()
    # jdp fit reads the CSV under the released schema: ignored columns dropped, missing
    # incomes modelled
    code, stdout, err = run(
        capsys, "fit", "--data", own_csv, "--schema", out, "--epsilon", 5, "--out",
        tmp_path / "model", "--seed", 0, "--json",
    )  # fmt: skip
    assert code == 0, err


def test_dp_reports_every_problem_in_one_line(capsys, tmp_path, own_csv):
    code, stdout, err = run(
        capsys, "schema", "--data", own_csv, "--dp", "--epsilon", -1, "--out",
        tmp_path / "s.json", "--columns",
        "age:int,income:continuous,zz:integer,visit_date:date:2030-01-01:2000-01-01",
        "--ignore", "nope", "--nullable", "id", "--ignore", "id",
    )  # fmt: skip
    assert code == 2 and stdout == ""
    [line] = err.strip().splitlines()
    for part in (
        "expected epsilon > 0", "got 'age:int'", "'zz' of --columns is not in the data",
        "'nope' of --ignore is not in the data", "'city' of the data has no kind",
        "'y' of the data has no kind", "'id' is both in --ignore and --nullable",
        "a range for column 'visit_date' LOW:HIGH as two ISO dates",
    ):  # fmt: skip
        assert part in line, line
    assert line.startswith("jdp schema: error: ") and " problems: " in line
    assert not (tmp_path / "s.json").exists()


def test_evaluate_reads_csvs_as_fit_does(tmp_path):
    """A category named "NA" stays a category (pandas' default list would make it missing);
    only an empty cell is missing; numbers stay numbers."""
    path = tmp_path / "real.csv"
    path.write_text("region,income,n\nNA,1.5,1\nNorth,,2\nNA,2.5,3\nNone,3.0,4\n")
    frame = read_csv(str(path), "real-train")
    assert frame["region"].tolist() == ["NA", "North", "NA", "None"]
    assert frame["income"].isna().tolist() == [False, True, False, False]
    assert frame["n"].dtype == np.int64
    schema = Schema.from_dict({"columns": [
        {"name": "region", "kind": "categorical", "categories": ["NA", "North", "None"]},
        {"name": "income", "kind": "continuous", "lower": 0, "upper": 10, "nullable": True},
    ], "ignore": ["n"]})  # fmt: skip
    frame = read_csv(str(path), "real-train", schema)  # with a schema: its ignore applies
    assert list(frame.columns) == ["region", "income"] and frame["region"].iloc[0] == "NA"


def test_evaluate_keeps_na_category_end_to_end(capsys, tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {"region": rng.choice(["NA", "North"], n), "x": rng.normal(size=n),
         "y": rng.choice(["a", "b"], n)}
    )  # fmt: skip
    frame.to_csv(tmp_path / "real.csv", index=False)
    synthetic = frame.assign(region="North")  # no "NA" region at all
    synthetic.to_csv(tmp_path / "syn.csv", index=False)
    code, stdout, err = run(
        capsys, "evaluate", "--real-train", tmp_path / "real.csv", "--synthetic",
        tmp_path / "syn.csv", "--queries", 0, "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    [region] = [c for c in json.loads(stdout)["columns"] if c["column"] == "region"]
    share = (frame["region"] == "NA").mean()  # the real share of "NA": the TVD
    assert region["tvd"] == pytest.approx(share)


def test_evaluate_accepts_lightgbm(capsys, tmp_path):
    pytest.importorskip("lightgbm")
    chosen = named_classifiers("LightGBM", available_classifiers(0))
    assert type(chosen["LightGBM"]).__name__ == "LGBMClassifier"
    rng = np.random.default_rng(1)
    n = 300
    x = rng.normal(size=n)
    frame = pd.DataFrame({"x": x, "c": rng.choice(["u", "v"], n), "y": np.where(x > 0, "p", "q")})
    frame.iloc[:200].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[200:].to_csv(tmp_path / "test.csv", index=False)
    code, stdout, err = run(
        capsys, "evaluate", "--real-train", tmp_path / "train.csv", "--real-test",
        tmp_path / "test.csv", "--synthetic", tmp_path / "train.csv", "--target", "y",
        "--classifiers", "LightGBM", "--queries", 0, "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(stdout)["tstr"]
    assert {r["classifier"] for r in rows} == {"LightGBM"}
    auroc = next(r for r in rows if r["metric"] == "AUROC")
    assert auroc["real"] > 0.9 and auroc["synthetic"] > 0.9
