"""``jdp schema``: a DP schema release written with its ledger (read back by ``jdp fit
--schema``), a template without ``--dp`` (nothing read off the records), one-line exit-2
failures with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from _cli_run import run

from jdp.data.dp_schema import MARGIN, SchemaRelease, load_schema
from jdp.data.schema import Schema

COLUMNS = "age:integer:0:1e9,score:continuous,work:categorical,y:categorical"


@pytest.fixture()
def csv(tmp_path):
    rng = np.random.default_rng(40)
    n = 3000
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "score": rng.normal(-5.0, 2.0, n),
            "work": rng.choice(["Private", "Gov", "NA"], n),  # "NA" is a category, not missing
            "y": rng.choice(["no", "yes"], n),
        }
    )
    frame.loc[0, "work"] = "Rare-Wx"
    frame.loc[1, "age"] = 123457  # a distinctive record value
    path = tmp_path / "train.csv"
    frame.to_csv(path, index=False)
    return path


def test_dp_release_file_carries_its_ledger_and_fit_charges_it(capsys, tmp_path, csv):
    out = tmp_path / "release.json"
    code, stdout, err = run(
        capsys, "schema", "--data", csv, "--columns", COLUMNS, "--target", "y", "--dp",
        "--epsilon", 1.0, "--delta", 1e-7, "--out", out, "--seed", 0, "--json",
        "--suppressed", "other", "--noise", "laplace",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(stdout)
    release = load_schema(out)
    assert isinstance(release, SchemaRelease) and release.other == "other"
    assert summary["epsilon"] == pytest.approx(1.0) and summary["delta"] == pytest.approx(1e-7)
    assert release.ledger.labels == [
        "dp-bounds:age", "dp-bounds:score", "dp-categories:work", "dp-categories:y",
        "dp-suppressed-shares",
    ]  # fmt: skip
    # one record of n holds the suppressed "Rare-Wx": its released share is mostly noise
    assert summary["suppressed"] == release.suppressed._asdict()
    assert 0 <= summary["suppressed"]["mapped"] < 0.02
    s = release.schema
    assert s.target == "y" and s["work"].categories == ("Gov", "NA", "Private", "other")
    # the bounds cover the bulk within a few doubling buckets (dp_bounds), not the one
    # distinctive record 123457 (a lone record does not reach the thresholds)
    assert 0 <= s["age"].lower <= 18 and 79 <= s["age"].upper < 2_000
    score = pd.read_csv(csv)["score"]  # range -1e9:1e9; at most 2% outside
    assert -200 < s["score"].lower < score.min() and score.max() < 200
    assert ((score < s["score"].lower) | (score > s["score"].upper)).mean() <= 0.02
    assert set(summary["clipped"]) == {"age", "score"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.json", "train.csv"]
    # jdp fit --schema reads it as a release: its cost opens the model's ledger
    code, stdout, err = run(
        capsys, "fit", "--data", csv, "--schema", out, "--epsilon", 2.0, "--out",
        tmp_path / "model", "--seed", 0, "--json",
    )  # fmt: skip
    assert code == 0, err
    ledger = json.loads(stdout)["ledger"]
    labels = [e["label"] for e in ledger["entries"]]
    assert labels[:5] == release.ledger.labels and labels[5:] == ["row count", "marginals"]
    assert json.loads(stdout)["epsilon"] <= 2.0


def test_dataset_release_and_declared_template(capsys, tmp_path):
    code, _, err = run(
        capsys, "schema", "--dataset", "adult", "--dp", "--epsilon", 1, "--out",
        tmp_path / "adult.json", "--seed", 1,
    )  # fmt: skip
    assert code == 0, err
    release = SchemaRelease.load(tmp_path / "adult.json")
    # 15 columns in one joint release, and the suppressed shares
    assert release.ledger.labels == ["dp-schema-histograms", "dp-suppressed-shares"]
    assert 0.999 <= release.epsilon <= 1.0 and release.delta == pytest.approx(1e-7)
    few = 2 ** (MARGIN + 2)  # the data's top bucket, a tail bucket or two and the margin
    assert 90 <= release.schema["age"].upper < few * 90  # a few buckets: not 1e9
    gain = release.schema["capital-gain"]  # declared point mass 0 kept, bounds around it
    assert gain.point_masses == (0.0,) and gain.lower == 0 and 99_999 <= gain.upper < few * 99_999
    # without --dp a named dataset's declared (public) schema is written
    code, stdout, _ = run(capsys, "schema", "--dataset", "adult", "--out", tmp_path / "d.json")
    assert code == 0 and "declared schema" in stdout
    assert Schema.load(tmp_path / "d.json")["age"].upper == 90


def test_without_dp_a_template_reads_no_record(capsys, tmp_path, csv):
    """Without --dp only the header is read: names, the kinds given, nulls to fill in; the
    template does not load as a schema until filled in, and holds no record value."""
    out = tmp_path / "t.json"
    code, stdout, err = run(capsys, "schema", "--data", csv, "--columns", COLUMNS, "--out", out)
    assert code == 0, err and "template" in stdout
    doc = json.loads(out.read_text())
    assert [c["name"] for c in doc["columns"]] == ["age", "score", "work", "y"]
    assert doc["columns"][0] == {"name": "age", "kind": "integer", "lower": None, "upper": None}
    assert doc["columns"][2] == {"name": "work", "kind": "categorical", "categories": None}
    text = out.read_text()
    assert "Private" not in text and "123457" not in text and "Rare-Wx" not in text
    with pytest.raises((TypeError, ValueError), match="expected a numeric public lower bound"):
        Schema.load(out)
    filled = {"age": (0, 120), "score": (-50, 50), "work": ["Gov", "Private"], "y": ["no", "yes"]}
    for column in doc["columns"]:
        value = filled[column["name"]]
        if column["kind"] == "categorical":
            column["categories"] = value
        else:
            column["lower"], column["upper"] = value
    out.write_text(json.dumps(doc))
    assert Schema.load(out)["score"].lower == -50  # filled in, it loads (description kept)
    # without --columns the kinds are drafted from the dtypes (tests/cli/test_schema_draft.py)
    code, _, err = run(capsys, "schema", "--data", csv, "--out", tmp_path / "u.json")
    drafted = json.loads((tmp_path / "u.json").read_text())["columns"]
    assert code == 0 and [c["kind"] for c in drafted] == [
        "integer", "continuous", "categorical", "categorical",
    ]  # fmt: skip
    with pytest.raises((TypeError, ValueError), match="expected a numeric public lower bound"):
        Schema.load(tmp_path / "u.json")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--dp", "--epsilon", "-1"], "expected epsilon > 0, got -1"),
        (["--dp"], "expected --epsilon E"),
        (["--epsilon", "1"], "--epsilon is spent only with --dp"),
        (["--dp", "--epsilon", "1", "--delta", "2"], "expected delta in"),
        (["--dp", "--epsilon", "1", "--columns", "age:int"], "expected --columns NAME:KIND"),
        (["--dp", "--epsilon", "1", "--columns", "age:integer,score:continuous"], "'work' of the data has no kind"),
        (["--dp", "--epsilon", "1", "--columns", COLUMNS + ",z:integer"], "'z' of --columns is not in the data"),
        (["--dp", "--epsilon", "1", "--columns", COLUMNS, "--range", "5:1"], "expected --range LOW:HIGH"),
        (["--dp", "--epsilon", "1", "--columns", COLUMNS, "--target", "age"], "expected --target a categorical"),
        (["--dp", "--epsilon", "1", "--columns", COLUMNS, "--dataset", "adult"], "either --dataset"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_one_line_and_writes_nothing(capsys, tmp_path, csv, argv, message):
    argv = ["--columns", COLUMNS, *argv] if "--columns" not in argv else argv
    code, stdout, err = run(capsys, "schema", "--data", csv, "--out", tmp_path / "s.json", *argv)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]


def test_out_is_checked_before_the_data_is_read(capsys, tmp_path, csv):
    (tmp_path / "old.json").write_text("{}")
    base = ["schema", "--data", csv, "--columns", COLUMNS, "--dp", "--epsilon", 1]
    for out, message in (
        (tmp_path / "old.json", "exists; a new DP release spends budget again"),
        (tmp_path, "is a directory"),
        (tmp_path / "no" / "s.json", "does not exist"),
        ("", "expected --out a file name"),
    ):
        code, _, err = run(capsys, *base, "--out", out)
        assert code == 2 and message in err, err
    assert (tmp_path / "old.json").read_text() == "{}"
    for flag in ("--overwrite", "--force"):
        code, _, err = run(capsys, *base, "--out", tmp_path / "old.json", flag)
        assert code == 0 and isinstance(load_schema(tmp_path / "old.json"), SchemaRelease)


def test_command_line_exit_code_and_one_line(tmp_path, csv):
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, jdp.cli; sys.exit(jdp.cli.main())", "schema", "--data", str(csv), "--columns", COLUMNS,
         "--dp", "--epsilon", "0", "--out", str(tmp_path / "s.json")],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == "jdp schema: error: expected epsilon > 0, got 0.0"
    assert not (tmp_path / "s.json").exists()
