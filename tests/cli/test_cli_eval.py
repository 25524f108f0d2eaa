"""``jdp evaluate`` and ``jdp report`` end to end on (subsampled) embedded Adult."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget, PrivacyLedger
from jdp.cli import COMMANDS, main
from jdp.data.datasets import load_adult
from jdp.eval.report import JSON_FILE, MARKDOWN_FILE
from jdp.random import key_from_seed
from jdp.synth.base import fit_model, sample_model
from jdp.synth.io import save

# the fast classifiers: GradientBoosting with P3GM's settings is the slowest and is covered
# by tests/eval (the default set runs in the first test below)
FAST = "LogisticRegression,AdaBoost"


@pytest.fixture(scope="module")
def adult_csvs(tmp_path_factory):
    """3,000 training and 2,000 test rows of Adult, written as CSV."""
    adult = load_adult()
    directory = tmp_path_factory.mktemp("adult")
    train = adult.train.sample(3000, random_state=0)
    test = adult.test.sample(2000, random_state=0)
    train.to_csv(directory / "train.csv", index=False)
    test.to_csv(directory / "test.csv", index=False)
    return directory, train, test, adult.schema


def run_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1  # exactly one JSON object
    return json.loads(out)


def test_commands_are_registered():
    assert "evaluate" in COMMANDS and "report" in COMMANDS


def test_real_train_as_its_own_synthetic_reproduces_the_baseline(adult_csvs, capsys):
    directory, _, _, _ = adult_csvs
    train = str(directory / "train.csv")
    result = run_json(
        capsys,
        ["evaluate", "--real-train", train, "--real-test", str(directory / "test.csv"),
         "--synthetic", train, "--target", "income", "--json", "--quiet", "--queries", "100"],
    )  # fmt: skip
    assert {r["classifier"] for r in result["tstr"]} >= {
        "LogisticRegression",
        "AdaBoost",
        "GradientBoosting",
    }
    for row in result["tstr"]:
        assert row["synthetic"] == row["real"], row
    assert result["two_way_tvd"] == 0.0
    assert result["queries"]["mean"] == 0.0
    auroc = [r["real"] for r in result["tstr"] if r["metric"] == "AUROC"]
    assert min(auroc) > 0.85  # the real-data baseline on Adult


def test_noise_synthetic_scores_at_chance_within_a_z_bound(adult_csvs, capsys, tmp_path):
    """A synthetic table of noise scores chance AUROC, within 4 sd of the Mann-Whitney null.

    The null (mean 1/2, variance (n0 + n1 + 1) / (12 n0 n1)) holds when the scores are
    independent of the test labels. A model trained on noise over *informative* features is
    a random function of them and may correlate with the label by chance, so the noise table
    varies only a column ``noise`` that is independent of everything (added, uniform, to
    the real tables too), holds every Adult feature at one value, and draws coin-flip labels.
    """
    _, train, test, _ = adult_csvs
    rng = np.random.default_rng(0)
    real_train = train.assign(noise=rng.uniform(size=len(train)))
    real_test = test.assign(noise=rng.uniform(size=len(test)))
    noise = real_train.iloc[[0] * 3000].reset_index(drop=True)
    noise["noise"] = rng.uniform(size=len(noise))
    noise["income"] = rng.choice(["<=50K", ">50K"], size=len(noise))
    for frame, name in [(real_train, "train"), (real_test, "test"), (noise, "noise")]:
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    result = run_json(
        capsys,
        ["evaluate", "--real-train", str(tmp_path / "train.csv"), "--real-test", str(tmp_path / "test.csv"),
         "--synthetic", str(tmp_path / "noise.csv"), "--target", "income", "--json", "--quiet",
         "--classifiers", FAST, "--queries", "0"],
    )  # fmt: skip
    n1 = int((test["income"] == ">50K").sum())
    n0 = len(test) - n1
    sd = math.sqrt((n0 + n1 + 1) / (12 * n0 * n1))
    for row in result["tstr"]:
        if row["metric"] == "AUROC":
            assert abs(row["synthetic"] - 0.5) < 4 * sd, row
            assert row["real"] > 0.85


def test_text_output(adult_csvs, capsys):
    directory, _, _, _ = adult_csvs
    assert main(["evaluate", "--dataset", "adult", "--synthetic", str(directory / "train.csv"),
                 "--classifiers", "LogisticRegression", "--quiet", "--queries", "20"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "Train on real / synthetic, test on real:" in out
    assert "LogisticRegression  AUROC" in out
    assert "average 2-way marginal TVD:" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--target", "nope"], "target column 'nope' is missing from real_train"),
        (["--target", "income", "--classifiers", "SVM"], "unknown or unavailable classifier 'SVM'"),
        ([], "TSTR needs both --real-test and a label column"),
        (["--target", "income", "--positive-class", "maybe"], "positive class 'maybe' must be one"),
        (["--dataset", "adult"], "either --dataset or --real-train/--real-test"),
    ],
)
def test_bad_input_exits_2_with_one_line(adult_csvs, capsys, extra, message):
    directory, _, _, _ = adult_csvs
    argv = ["evaluate", "--real-train", str(directory / "train.csv"), "--real-test", str(directory / "test.csv"),
            "--synthetic", str(directory / "train.csv"), "--quiet", *extra]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_large_tables_are_evaluated_on_a_stated_subsample(adult_csvs, capsys):
    """``--max-rows`` subsamples every larger table: the output states both sizes, and the
    evaluation is a function of the seed."""
    directory = adult_csvs[0]
    args = ["evaluate", "--real-train", str(directory / "train.csv"), "--real-test", str(directory / "test.csv"),
            "--synthetic", str(directory / "train.csv"), "--target", "income", "--classifiers",
            "LogisticRegression", "--json", "--quiet", "--queries", "50"]  # fmt: skip
    result = run_json(capsys, [*args, "--max-rows", "1000"])
    assert result["rows"] == {"real_train": 3000, "synthetic": 3000, "real_test": 2000}
    assert result["evaluated_rows"] == {"real_train": 1000, "synthetic": 1000, "real_test": 1000}
    full = run_json(capsys, [*args, "--max-rows", "0"])
    assert full["evaluated_rows"] == full["rows"]
    assert result["tstr"] != full["tstr"]  # a smaller real_train gives another baseline
    # the sample is a function of the seed: the same run twice agrees exactly
    assert run_json(capsys, [*args, "--max-rows", "1000"]) == result


def test_target_from_schema_and_positive_class(adult_csvs, capsys, tmp_path):
    """The label comes from --schema's target. Naming the other class positive scores the
    complementary probability against the complementary labels: AUROC and accuracy are
    unchanged (the same ranking, reversed on both sides), AUPRC is that of the other class
    (Adult's negative class is the majority, so its average precision is higher)."""
    directory, _, _, schema = adult_csvs
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(schema.to_json())
    args = ["evaluate", "--real-train", str(directory / "train.csv"), "--real-test", str(directory / "test.csv"),
            "--synthetic", str(directory / "train.csv"), "--schema", str(schema_path), "--classifiers",
            "LogisticRegression", "--json", "--quiet", "--queries", "0"]  # fmt: skip
    default = run_json(capsys, args)
    assert default["tstr"]  # the target came from the schema
    negative = min(schema["income"].categories)
    flipped = run_json(capsys, [*args, "--positive-class", negative])
    before = {r["metric"]: r["real"] for r in default["tstr"]}
    after = {r["metric"]: r["real"] for r in flipped["tstr"]}
    assert after["AUROC"] == pytest.approx(before["AUROC"], abs=1e-9)
    assert after["accuracy"] == pytest.approx(before["accuracy"], abs=1e-12)
    assert after["AUPRC"] > before["AUPRC"] + 0.1


def test_mismatched_or_missing_synthetic(adult_csvs, capsys, tmp_path):
    directory, train, _, _ = adult_csvs
    train.drop(columns="age").to_csv(tmp_path / "short.csv", index=False)
    base = ["evaluate", "--real-train", str(directory / "train.csv"), "--quiet"]
    assert main([*base, "--synthetic", str(tmp_path / "short.csv")]) == 2
    assert "column 'age' of real_train is missing from synthetic" in capsys.readouterr().err
    train.assign(age=train["age"].astype(float).where(train.index != train.index[5])).to_csv(
        tmp_path / "nan.csv", index=False
    )
    assert main([*base, "--synthetic", str(tmp_path / "nan.csv")]) == 2
    assert "column 'age' of synthetic contains NaN (1 rows)" in capsys.readouterr().err
    assert main([*base, "--synthetic", str(tmp_path / "absent.csv")]) == 2
    assert "synthetic file not found" in capsys.readouterr().err
    (tmp_path / "empty.csv").write_text("")
    assert main([*base, "--synthetic", str(tmp_path / "empty.csv")]) == 2
    assert "cannot read synthetic CSV" in capsys.readouterr().err


@pytest.fixture(scope="module")
def fitted(adult_csvs, tmp_path_factory):
    """The DP marginals baseline fitted on the Adult subsample, saved, and 2,000 samples."""
    directory, train, _, schema = adult_csvs
    model = fit_model(
        key_from_seed(0), "marginals", train, PrivacyBudget(epsilon=1.0, delta=1e-5), schema=schema
    )
    model_dir = save(model, tmp_path_factory.mktemp("model") / "marginals")
    synthetic = sample_model(key_from_seed(1), model, 2000)
    synthetic.to_csv(directory / "synthetic.csv", index=False)
    return model, model_dir, directory / "synthetic.csv"


def test_report_end_to_end(adult_csvs, fitted, capsys, tmp_path):
    directory, _, _, _ = adult_csvs
    model, model_dir, synthetic = fitted
    out = tmp_path / "report"
    report = run_json(
        capsys,
        ["report", str(model_dir), "--synthetic", str(synthetic), "--out", str(out),
         "--real-train", str(directory / "train.csv"), "--real-test", str(directory / "test.csv"),
         "--classifiers", FAST, "--queries", "100", "--quiet", "--json"],
    )  # fmt: skip
    ledger = PrivacyLedger.from_dict(json.loads((out / JSON_FILE).read_text())["privacy"]["ledger"])
    assert ledger == model.ledger
    assert report["privacy"]["epsilon"] == pytest.approx(model.ledger.epsilon(1e-5))
    assert report["privacy"]["epsilon"] <= 1.0 + 1e-9
    markdown = (out / MARKDOWN_FILE).read_text()
    assert model.ledger.report(1e-5) in markdown
    assert report["meta"]["method"] == "marginals"
    assert (
        report["evaluation"]["tstr"][0]["classifier"] == "LogisticRegression"
    )  # target from the schema
    assert len(report["plots"]) == len(model.schema.names)
    for name in report["plots"]:
        assert (out / name).stat().st_size > 0
        assert f"]({name})" in markdown


def test_marginals_baseline_lands_between_random_and_real(fitted, adult_csvs, capsys):
    """The DP marginals baseline (histograms per class of the target, features independent
    given the class) keeps some feature-label signal and loses the rest: its TSTR AUROC lies
    above chance by more than 4 sd of the Mann-Whitney null and below the real baseline, and
    its 2-way marginals differ from the real ones."""
    directory, _, test, _ = adult_csvs
    _, _, synthetic = fitted
    result = run_json(
        capsys,
        ["evaluate", "--real-train", str(directory / "train.csv"), "--real-test", str(directory / "test.csv"),
         "--synthetic", str(synthetic), "--target", "income", "--json", "--quiet",
         "--classifiers", "LogisticRegression", "--queries", "0"],
    )  # fmt: skip
    n1 = int((test["income"] == ">50K").sum())
    n0 = len(test) - n1
    sd = math.sqrt((n0 + n1 + 1) / (12 * n0 * n1))
    auroc = next(r for r in result["tstr"] if r["metric"] == "AUROC")
    assert 0.5 + 4 * sd < auroc["synthetic"] < auroc["real"]
    assert result["two_way_tvd"] > 0.05


def test_report_without_real_data(fitted, capsys, tmp_path):
    _, model_dir, synthetic = fitted
    assert (
        main(["report", str(model_dir), "--synthetic", str(synthetic), "--out", str(tmp_path)]) == 0
    )
    assert "Privacy:" in capsys.readouterr().out
    saved = json.loads((tmp_path / JSON_FILE).read_text())
    assert saved["evaluation"] is None and saved["plots"] == []
    assert main(["report", str(model_dir), "--synthetic", str(synthetic), "--out", str(tmp_path),
                 "--image-shape", "2x7"]) == 2  # fmt: skip
    assert "column 'workclass' is categorical" in capsys.readouterr().err


def test_report_image_grid_of_digits(capsys, tmp_path):
    """8x8 digits (scikit-learn), integer pixels 0..16: the report draws a sample grid."""
    from sklearn.datasets import load_digits

    from jdp.data.schema import Column, Schema

    digits = load_digits()
    pixels = [f"p{i}" for i in range(64)]
    frame = pd.DataFrame(digits.data[:600].astype(int), columns=pixels).assign(
        label=digits.target[:600]
    )
    schema = Schema(
        columns=(*(Column(name=p, kind="integer", lower=0, upper=16) for p in pixels),
                 Column(name="label", kind="categorical", categories=tuple(range(10)))),
        target="label",
    )  # fmt: skip
    model = fit_model(
        key_from_seed(0), "marginals", frame, PrivacyBudget(epsilon=1.0, delta=1e-3), schema=schema
    )
    save(model, tmp_path / "model")
    sample_model(key_from_seed(1), model, 100).to_csv(tmp_path / "synthetic.csv", index=False)
    argv = ["report", str(tmp_path / "model"), "--synthetic", str(tmp_path / "synthetic.csv"),
            "--out", str(tmp_path / "out"), "--image-shape", "8x8"]  # fmt: skip
    assert main(argv) == 0
    assert (tmp_path / "out" / "plots" / "samples.png").stat().st_size > 0
    assert "](plots/samples.png)" in (tmp_path / "out" / MARKDOWN_FILE).read_text()
    assert main([*argv[:-1], "3x3"]) == 2
    assert "needs 9 feature columns, got 64" in capsys.readouterr().err
