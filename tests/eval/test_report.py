"""The report: evaluation numbers, ledger, plots, Markdown and JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from accounting import PrivacyLedger
from accounting import events as ev
from jdp.eval.plots import marginal_plots
from jdp.eval.report import (
    HTML_FILE,
    JSON_FILE,
    MARKDOWN_FILE,
    evaluate_tables,
    format_table,
    write_report,
)
from jdp.eval.utility import paper_classifiers


@pytest.fixture
def ledger() -> PrivacyLedger:
    return (
        PrivacyLedger()
        .record("dp-histograms", ev.GaussianDpEvent(3.0))
        .record("dp-em", ev.GaussianDpEvent(5.0), mode="paper", note="paper's argument")
    )


def lr_only() -> dict:
    return {"LogisticRegression": paper_classifiers(0, xgboost=False)["LogisticRegression"]}


def test_evaluate_tables_on_identical_tables(tables):
    train, test = tables
    evaluation = evaluate_tables(
        train, train.copy(), real_test=test, target="income", classifiers=lr_only(), n_queries=50
    )
    assert all(r["real"] == r["synthetic"] for r in evaluation["tstr"])
    assert evaluation["two_way_tvd"] == 0.0
    assert evaluation["queries"]["mean"] == 0.0
    assert evaluation["rows"] == {
        "real_train": len(train),
        "synthetic": len(train),
        "real_test": len(test),
    }


def test_evaluate_tables_without_test_data_skips_tstr(tables):
    train, test = tables
    evaluation = evaluate_tables(train, test, n_queries=0)
    assert evaluation["tstr"] is None and evaluation["queries"] is None
    assert evaluation["two_way_tvd"] > 0
    with pytest.raises(ValueError, match="both real_test and target"):
        evaluate_tables(train, test, real_test=test)


def test_report_files_hold_the_ledger_the_table_and_the_plots(tmp_path, tables, ledger):
    train, test = tables
    synthetic = test.sample(frac=1.0, random_state=0)
    evaluation = evaluate_tables(
        train, synthetic, real_test=test, target="income", classifiers=lr_only(), n_queries=50
    )
    plots = marginal_plots(train, synthetic, tmp_path / "plots")
    report = write_report(
        tmp_path,
        evaluation=evaluation,
        ledger=ledger,
        delta=1e-5,
        plots=plots,
        meta={"method": "test"},
    )

    saved = json.loads((tmp_path / JSON_FILE).read_text())
    assert saved["privacy"]["ledger"] == ledger.to_dict()
    assert PrivacyLedger.from_dict(saved["privacy"]["ledger"]) == ledger
    assert saved["privacy"]["epsilon"] == pytest.approx(ledger.epsilon(1e-5))
    assert saved["privacy"]["paper_mode"] is True
    assert saved["evaluation"]["tstr"] == evaluation["tstr"]
    assert saved["plots"] == [f"plots/{p.name}" for p in plots]
    assert report["privacy"]["statement"] == ledger.report(1e-5)

    markdown = (tmp_path / MARKDOWN_FILE).read_text()
    assert ledger.report(1e-5) in markdown
    assert json.dumps(ledger.to_dict(), indent=1) in markdown
    assert "| LogisticRegression | AUROC |" in markdown
    for p in plots:
        assert f"](plots/{p.name})" in markdown
        assert p.stat().st_size > 0
    assert "not differentially private" in markdown
    assert saved["scores"] == json.loads(json.dumps(report["scores"]))
    assert report["scores"]["verdict"] in markdown
    page = (tmp_path / HTML_FILE).read_text()
    assert page.startswith("<!DOCTYPE html>") and "not differentially private" in page
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # atomic writes


def test_report_without_ledger_says_so(tmp_path):
    report = write_report(tmp_path, evaluation=None, ledger=None)
    assert report["privacy"] is None and report["scores"] is None
    assert "carries no privacy statement" in (tmp_path / MARKDOWN_FILE).read_text()
    assert "carries no privacy statement" in (tmp_path / HTML_FILE).read_text()


def test_evaluate_tables_adds_the_real_split_reference_only_with_real_test(tables):
    train, test = tables
    alone = evaluate_tables(train, test, n_queries=20)
    assert alone["reference"] is None
    assert alone["associations"]["columns"] == list(train.columns)
    split = evaluate_tables(
        train, test, real_test=test, target="income", classifiers=lr_only(), n_queries=20
    )
    # the synthetic table is the test table itself: its scores are the reference's
    assert split["reference"]["two_way_tvd"] == split["two_way_tvd"]
    assert split["reference"]["columns"] == split["columns"]
    assert split["reference"]["queries"] == split["queries"]


def test_plot_notes_match_the_plots(tmp_path):
    with pytest.raises(ValueError, match="expected 0 plot notes"):
        write_report(tmp_path, evaluation=None, ledger=None, plot_notes=["x"])


def test_report_needs_delta_with_a_ledger(tmp_path, ledger):
    with pytest.raises(ValueError, match="expected delta"):
        write_report(tmp_path, evaluation=None, ledger=ledger)


def test_json_handles_numpy_and_non_finite_values(tmp_path):
    write_report(tmp_path, evaluation=None, ledger=None, meta={"n": np.int64(3), "x": float("inf")})
    assert json.loads((tmp_path / JSON_FILE).read_text())["meta"] == {"n": 3, "x": "inf"}


def test_format_table():
    rows = [{"a": "x", "b": 0.123456}, {"a": "longer", "b": None}]
    assert format_table(rows, ["a", "b"]).splitlines() == [
        "a       b     ",
        "x       0.1235",
        "longer  -     ",
    ]
    assert format_table(rows, ["a", "b"], markdown=True).splitlines()[2] == "| x | 0.1235 |"
