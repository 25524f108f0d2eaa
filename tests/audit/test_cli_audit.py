"""``jdp audit``: the mechanism table and JSON, the model (membership-inference) audit on a
saved model, and one-line errors."""

from __future__ import annotations

import json

from accounting import PrivacyBudget
from jdp.cli import main
from jdp.data.datasets import load_dataset
from jdp.random import key_from_seed
from jdp.synth import base, io


def test_mechanism_audit_json(capsys):
    assert main(["audit", "mechanism", "laplace", "--trials", "20000", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["mechanisms"]
    assert row["name"] == "laplace" and row["trials"] == 40_000
    assert 0.5 < row["lower_bound"] <= row["epsilon"] <= 1.0


def test_mechanism_audit_table(capsys):
    assert main(["audit", "mechanism", "gaussian", "--trials", "20000", "--epsilon", "2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["mechanism", "claimed", "eps"]
    assert out.splitlines()[1].startswith("gaussian")


def saved_marginals_model(train, schema, path):
    """The DP marginals method fitted on ``train`` at (1, 1e-5), saved at ``path`` (and
    returned)."""
    model = base.fit_model(
        key_from_seed(0), "marginals", train, PrivacyBudget(epsilon=1.0, delta=1e-5), schema=schema
    )
    io.save(model, path)
    return model


def test_model_audit_on_a_saved_model(tmp_path, capsys):
    adult = load_dataset("adult")
    train = adult.train.sample(n=600, random_state=0)
    saved_marginals_model(train, adult.schema, tmp_path / "m")
    argv = ["audit", "--model", str(tmp_path / "m"), "--dataset", "adult", "--members", "100"]
    assert main([*argv, "--json"]) == 0
    section = json.loads(capsys.readouterr().out)["mia"]
    assert section["method"] == "marginals"
    assert [a["name"] for a in section["attacks"]] == ["black-box dcr", "black-box domias"]
    assert "not a privacy metric" in section["note"]
    # the text output is an aligned table like the mechanism audit's, not Markdown
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("membership inference against marginals (epsilon ")
    assert "black-box dcr" in text and "|" not in text and "##" not in text


def test_errors_are_one_line(capsys):
    assert main(["audit", "mechanism", "nope"]) == 2
    assert main(["audit"]) == 2
    assert main(["audit", "mechanisms", "gaussian"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("jdp audit: error:") for line in err)


def test_report_includes_the_mia_section(tmp_path, capsys):
    """``jdp report`` with real train and test data carries the membership-inference section
    (JSON key ``mia``, a Markdown table with the caveat)."""
    adult = load_dataset("adult")
    train, test = (
        adult.train.sample(n=400, random_state=1),
        adult.test.sample(n=400, random_state=2),
    )
    model = saved_marginals_model(train, adult.schema, tmp_path / "m")
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    base.sample_model(key_from_seed(1), model, 400).to_csv(tmp_path / "syn.csv", index=False)
    out = tmp_path / "report"
    argv = ["report", str(tmp_path / "m"), "--synthetic", str(tmp_path / "syn.csv"),
            "--out", str(out), "--real-train", str(tmp_path / "train.csv"),
            "--real-test", str(tmp_path / "test.csv"), "--classifiers", "LogisticRegression",
            "--queries", "0", "--quiet", "--json"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mia"]["method"] == "marginals"
    assert [a["n_members"] for a in report["mia"]["attacks"]] == [200, 200]
    markdown = (out / "report.md").read_text()
    assert "## Membership inference (attacks, not guarantees)" in markdown
    assert "not a privacy metric" in markdown
