"""The HTML report: self-contained, scored against the real split, readable tables, labelled
figures; and (marker ``browser``) rendered by headless Chromium."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyLedger
from accounting import events as ev
from jdp.eval.fidelity import CLOSE_GAP, FAR_GAP, VERDICT_RULE, associations, fidelity_scores
from jdp.eval.html_report import markdown_html, render_html
from jdp.eval.plots import marginal_figure, marginal_notes, marginal_plots, point_masses
from jdp.eval.report import HTML_FILE, MARKDOWN_FILE, evaluate_tables, write_report
from jdp.eval.utility import paper_classifiers

CHROMIUM = Path("/usr/bin/chromium")
EXTERNAL = re.compile(r"(?:src|href)\s*=\s*[\"']?\s*https?://", re.IGNORECASE)


@pytest.fixture(scope="module")
def built(tmp_path_factory, report_tables) -> tuple[Path, dict]:
    """A report written from :func:`report_tables` (logistic regression only)."""
    tmp_path = tmp_path_factory.mktemp("report")
    train, test, synthetic = report_tables
    lr = {"LogisticRegression": paper_classifiers(0, xgboost=False)["LogisticRegression"]}
    evaluation = evaluate_tables(
        train, synthetic, real_test=test, target="income", classifiers=lr, n_queries=50,
        progress=False,
    )  # fmt: skip
    plots = marginal_plots(train, synthetic, tmp_path / "plots")
    ledger = PrivacyLedger().record("dp-histograms", ev.GaussianDpEvent(3.0), note="histograms")
    report = write_report(
        tmp_path,
        evaluation=evaluation,
        ledger=ledger,
        delta=1e-5,
        plots=plots,
        plot_notes=marginal_notes(train, synthetic),
        meta={
            "method": "test",
            "budget": {"epsilon": 1.0, "delta": 1e-5},
            "config": {"bins": 32, "scale": {"kind": "log", "probs": (0.05, 0.5)}},
        },
    )
    return tmp_path, report


def test_html_is_one_self_contained_page(built):
    out, report = built
    page = (out / HTML_FILE).read_text()
    assert EXTERNAL.search(page) is None
    assert "<script" not in page
    sources = re.findall(r'<img src="([^"]*)"', page)
    assert len(sources) == len(report["plots"]) + 1  # the association heatmaps, then columns
    assert all(s.startswith("data:image/png;base64,") and len(s) > 1000 for s in sources)


def test_html_shows_each_score_beside_the_real_split_and_the_verdict(built):
    out, report = built
    page = (out / HTML_FILE).read_text()
    scores = report["scores"]
    assert [p["name"] for p in scores["parts"]] == ["column shapes", "column pairs", "ML utility"]
    for part in scores["parts"]:
        row = re.search(rf"<td>{part['name']}</td>(.*?)</tr>", page).group(1)
        assert f"{part['synthetic']:.3f}" in row and f"{part['real_split']:.3f}" in row
    assert html.escape(scores["verdict"]) in page
    assert html.escape(VERDICT_RULE) in page
    assert f"{scores['overall']['synthetic']:.3f}" in page
    # shuffled columns keep the marginals and lose the relations, the label's above all
    shapes, pairs, utility = scores["parts"]
    assert shapes["rating"] == "close" and pairs["gap"] > shapes["gap"]
    assert utility["rating"] == "far" and utility["synthetic"] < 0.6
    assert utility["real_split"] > 0.9
    assert scores["verdict"].startswith("Far from the real data in ML utility")
    assert "Not a release." in page and report["note"] in page
    assert report["privacy"]["statement"].splitlines()[0] in page


def test_ml_utility_reference_is_the_tstr_real_baseline(built):
    _, report = built
    auroc = [r for r in report["evaluation"]["tstr"] if r["metric"] == "AUROC"]
    utility = report["scores"]["parts"][2]
    assert utility["real_split"] == pytest.approx(np.mean([r["real"] for r in auroc]))
    assert utility["synthetic"] == pytest.approx(np.mean([r["synthetic"] for r in auroc]))


def test_budget_config_and_ledger_read_as_tables(built):
    out, _ = built
    page = (out / HTML_FILE).read_text()
    markdown = (out / MARKDOWN_FILE).read_text()
    for text in (page, markdown):
        assert "{'" not in text and "{&#x27;" not in text
    assert "| epsilon | 1 |" in markdown and "| delta | 1e-05 |" in markdown
    assert "| scale.probs | 0.05, 0.5 |" in markdown
    assert "<td>epsilon</td><td>1</td>" in page and "<td>scale.kind</td><td>log</td>" in page
    assert "Gaussian(noise_multiplier=3)" in markdown and "Gaussian(noise_multiplier=3)" in page


def test_cut_category_lists_are_said_so(built, report_tables):
    out, _ = built
    note = "showing 30 of 42 categories"
    assert note in (out / HTML_FILE).read_text() and note in (out / MARKDOWN_FILE).read_text()
    train, _, synthetic = report_tables
    notes = dict(zip(train.columns, marginal_notes(train, synthetic)))
    assert notes["country"].startswith(note) and notes["c"] == "" and notes["x"] == ""
    assert notes["gain"].startswith("real: 70% of rows at 0")
    fig = marginal_figure(train["country"], synthetic["country"])
    assert fig.axes[0].get_xlabel().startswith(note)


@pytest.mark.parametrize("column", ["x", "gain", "country", "flag"])
def test_every_marginal_axis_has_a_y_label(report_tables, column):
    train, _, synthetic = report_tables
    fig = marginal_figure(train[column], synthetic[column])
    assert fig.axes and all(ax.get_ylabel() for ax in fig.axes)


def test_a_point_mass_is_a_labelled_bar_beside_the_rest_on_its_own_scale(report_tables):
    train, _, synthetic = report_tables
    fig = marginal_figure(train["gain"], synthetic["gain"])
    bars, rest = fig.axes
    assert bars.get_ylabel() == "share of rows"
    assert [t.get_text() for t in bars.get_xticklabels()] == ["at 0"]
    labels = [t.get_text() for t in bars.texts]
    assert f"{np.mean(train['gain'] == 0):.0%}" in labels
    assert "not at 0" in rest.get_ylabel()
    assert rest.get_xlim()[0] >= -1e3  # the rest's own scale, not squeezed by the spike


def test_point_masses():
    assert point_masses(np.r_[np.zeros(7), np.arange(1.0, 4.0)]) == [(0.0, 0.7)]
    assert point_masses(np.arange(10.0)) == []
    assert point_masses(np.ones(5)) == []  # one value: an ordinary histogram


def test_associations_measure_dependence():
    rng = np.random.default_rng(0)
    a = rng.choice(["u", "v", "w"], size=600)
    frame = pd.DataFrame({"a": a, "copy": np.char.add(a, "!"), "noise": rng.normal(size=600)})
    result = associations(frame, frame)
    real = np.array(result["real"])
    assert result["columns"] == ["a", "copy", "noise"]
    assert np.allclose(np.diag(real), 1.0) and np.allclose(real, real.T)
    assert real[0, 1] == pytest.approx(1.0) and real[0, 2] < 0.15
    assert result["synthetic"] == result["real"]


def part(name: str, synthetic: float, real_split: float | None) -> dict:
    return {"name": name, "synthetic": synthetic, "real_split": real_split}


@pytest.mark.parametrize(
    "gap, rating, opening",
    [(CLOSE_GAP / 2, "close", "Close to the real data"),
     ((CLOSE_GAP + FAR_GAP) / 2, "some loss", "Similar to the real data with some loss"),
     (FAR_GAP * 2, "far", "Far from the real data in column pairs")],
)  # fmt: skip
def test_verdict_follows_the_largest_gap(gap, rating, opening):
    columns = [
        {"column": "a", "kind": "numeric", "ks": 0.02, "tvd": 0.0},
        {"column": "b", "kind": "categorical", "tvd": 0.04},
    ]
    evaluation = {
        "columns": columns,
        "two_way_tvd": 0.01 + gap,
        "n_bins": 10,
        "tstr": None,
        "reference": {"columns": columns, "two_way_tvd": 0.01},
    }
    scores = fidelity_scores(evaluation)
    shapes, pairs = scores["parts"]
    assert shapes["synthetic"] == pytest.approx(0.97) and shapes["gap"] == pytest.approx(0.0)
    assert pairs["gap"] == pytest.approx(gap) and pairs["rating"] == rating
    assert scores["verdict"].startswith(opening)
    assert scores["overall"]["synthetic"] == pytest.approx((0.97 + 0.99 - gap) / 2)
    assert scores["overall"]["real_split"] == pytest.approx((0.97 + 0.99) / 2)


def test_the_worst_column_is_named_against_its_real_split():
    columns = [
        {"column": "a", "kind": "numeric", "ks": 0.20, "tvd": 0.0},
        {"column": "b", "kind": "categorical", "tvd": 0.10},
    ]
    reference = [dict(columns[0], ks=0.19), dict(columns[1], tvd=0.01)]
    evaluation = {"columns": columns, "two_way_tvd": None, "n_bins": 10, "tstr": None}
    scores = fidelity_scores({**evaluation, "reference": {"columns": reference}})
    assert scores["worst_column"] == {
        "column": "b", "measure": "TVD", "synthetic": 0.10, "real_split": 0.01
    }  # fmt: skip
    assert "b (TVD 0.100, held-out real data 0.010)" in scores["worst_column_text"]
    alone = fidelity_scores({**evaluation, "reference": None})  # the largest distance
    assert alone["worst_column"]["column"] == "a" and alone["worst_column"]["real_split"] is None


def test_without_a_real_split_there_is_a_score_and_no_verdict(report_tables):
    train, _, synthetic = report_tables
    evaluation = evaluate_tables(train, synthetic, n_queries=0, progress=False)
    assert evaluation["reference"] is None
    scores = fidelity_scores(evaluation)
    assert all(p["real_split"] is None and p["rating"] is None for p in scores["parts"])
    assert scores["overall"]["real_split"] is None
    assert "no verdict" in scores["verdict"]


def test_further_sections_render_from_markdown():
    lines = ["## Membership inference", "", "Method `marginals`.", "",
             "| attack | AUC |", "|---|---|", "| distance | 0.510 |", "", "a <caveat>"]  # fmt: skip
    page = markdown_html(lines)
    assert "<h2>Membership inference</h2>" in page
    assert "<code>marginals</code>" in page
    assert "<th>attack</th><th>AUC</th></tr><tr><td>distance</td><td>0.510</td>" in page
    assert "a &lt;caveat&gt;" in page


def test_render_html_needs_one_figure_per_plot(built):
    _, report = built
    with pytest.raises(ValueError, match="figures"):
        render_html(report, figures=[])


def load_browser_check():
    path = Path(__file__).parents[2] / "scripts" / "report_browser_check.py"
    spec = importlib.util.spec_from_file_location("report_browser_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.is_file(), reason="needs Chromium at /usr/bin/chromium")
def test_chromium_renders_the_report(built, tmp_path):
    out, report = built
    result = load_browser_check().check(
        out / HTML_FILE, tmp_path / "shot.png", expected_images=len(report["plots"]) + 1
    )
    assert result["ok"], result["failures"]
    assert result["decoded_images"] == len(report["plots"]) + 1
