"""A data holder's own table, walked as they would from a shell: one ``jdp`` process per
step (draft a schema, release it with DP, fit, sample), each reading only what the step
before wrote; the ledger covers the schema, and the sample holds the table's kinds back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from _own_table import ROWS, write_own_csv

ROOT = Path(__file__).resolve().parents[2]
#: The kinds and coarse public ranges the data holder states (a date as two ISO dates).
COLUMNS = (
    "visit_date:date:2000-01-01:2030-12-31,region:categorical,"
    "income:continuous:0:1e9,visits:integer:0:1000,age:integer:0:150,y:categorical"
)


def jdp(*argv: object, cwd: Path) -> str:
    """``jdp ARGV`` in its own process; its stdout (the test fails on a non-zero exit)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from jdp.cli import main; sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)], cwd=cwd, env=env, text=True,
        capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_csv_to_dp_schema_to_fit_to_sample(tmp_path):
    csv = write_own_csv(tmp_path / "own.csv")
    # 1. a draft from names and dtypes: the ID and the free text are set aside with a reason
    jdp("schema", "--data", csv, "--target", "y", "--out", "draft.json", cwd=tmp_path)
    draft = json.loads((tmp_path / "draft.json").read_text())
    assert {"id", "comment"} <= set(draft["ignore"])
    # 2. the DP release, with the columns the draft set aside left out and a date range; the
    # 800-level city has no value frequent enough to pass at this budget (about 2 records
    # each): the release would refuse it, so it is left out too
    out = jdp(
        "schema", "--data", csv, "--dp", "--epsilon", 0.3, "--columns", COLUMNS,
        "--ignore", "id,comment,city", "--nullable", "income", "--target", "y",
        "--out", "release.json", "--seed", 0, "--json", cwd=tmp_path,
    )  # fmt: skip
    summary = json.loads(out)
    assert summary["epsilon"] <= 0.3 * (1 + 1e-9) and set(summary["clipped"]) == {
        "visit_date", "income", "visits", "age",
    }  # fmt: skip
    assert 0.0 <= summary["suppressed"]["mapped"] <= 1.0  # shown to the data holder
    release = json.loads((tmp_path / "release.json").read_text())
    dates = {c["name"]: c for c in release["schema"]["columns"]}["visit_date"]
    assert dates["kind"] == "date" and dates["lower"] <= "2021-03-01" <= dates["upper"]
    # 3. the fit is charged the release and meets the whole budget
    out = jdp(
        "fit", "--data", csv, "--schema", "release.json", "--epsilon", 1.0, "--delta", 1e-5,
        "--out", "model", "--seed", 0, "--json", cwd=tmp_path,
    )  # fmt: skip
    fit = json.loads(out)
    labels = [e["label"] for e in fit["ledger"]["entries"]]
    assert labels[: len(release["ledger"]["entries"])] == [
        e["label"] for e in release["ledger"]["entries"]
    ]
    assert 0.99 <= fit["epsilon"] <= 1.0
    # 4. the sample: the released kinds come back, nothing set aside is copied
    jdp("sample", "--model", "model", "-n", 500, "--out", "synthetic.csv", "--seed", 0,
        cwd=tmp_path)  # fmt: skip
    synthetic = pd.read_csv(tmp_path / "synthetic.csv", keep_default_na=False, na_values=[""])
    assert list(synthetic.columns) == [
        "visit_date", "region", "income", "visits", "age", "y",
    ]  # fmt: skip
    days = pd.to_datetime(synthetic["visit_date"], format="ISO8601")
    assert days.between(dates["lower"], dates["upper"]).all()
    assert synthetic["income"].isna().any() and synthetic["income"].dropna().ge(0).all()
    assert set(synthetic["region"]) <= {"North", "South", "NA", "other"}
    assert len(pd.read_csv(tmp_path / "own.csv")) == ROWS
