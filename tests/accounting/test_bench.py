"""scripts/bench_accounting.py, run as a program: one JSON object on stdout with both timings
and the PLD rows, and its table in the results file (scripts/_harness.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_accounting.py"


def _run(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "1000", "--repeats", "1", "--json", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # exactly one JSON object: anything else fails to parse


def test_bench_json(tmp_path):
    results = tmp_path / "results.md"
    data = _run("--skip-pld", "--results", str(results))
    assert data["jdp_seconds"] > 0 and data["dp_accounting_seconds"] > 0
    # same event, default grids (ours contains theirs): never looser
    assert data["jdp_epsilon"] <= data["dp_accounting_epsilon"] * (1 + 1e-9)
    assert "pld" not in data and data["seconds"] > 0 and data["peak_rss_mb"] > 0
    text = results.read_text()  # one section, keyed by the flags that choose what is computed
    assert text.count("<!-- section: --steps 1000 --repeats 1 --skip-pld -->") == 1
    assert "speed-up" in text


def test_bench_pld_rows(tmp_path):
    data = _run("--configs", "1", "--out", str(tmp_path), "--no-results")
    rows = data["pld"]
    assert len(rows) == 1 and all(10**4 <= r["steps"] <= 10**6 for r in rows)
    for r in rows:
        assert r["pld_adaptive"] <= r["rdp"] * (1 + 1e-9)  # refined PLD is never looser
        assert r["ledger_epsilon"] == min(r["rdp"], r["pld_adaptive"])
        assert r["ratio_adaptive"] == r["pld_adaptive"] / r["rdp"]
    assert data["pld_summary"]["max_ratio_adaptive"] == max(r["ratio_adaptive"] for r in rows)
    assert Path(data["figure"]).is_file() and Path(data["figure"]).parent == tmp_path


def test_a_calibration_search_counts_its_evaluations_and_leaves_the_accountant_as_it_was():
    """Part 3's child, in process: a DP-SGD search's multiplier is calibrate_noise_multiplier's,
    its PLD answers are among its evaluations, and the counting spy and observer are removed
    afterwards."""
    sys.path.insert(0, str(SCRIPT.parent))
    import bench_accounting as B

    from accounting.accountants import pld
    from accounting.calibrate import calibrate_noise_multiplier

    refine = pld.PldAccountant._refine
    row = B.run_search("dp-sgd q=0.1 T=100 eps=3")
    assert row["value"] == calibrate_noise_multiplier(
        target_epsilon=3.0, target_delta=1e-5, sampling_prob=0.1, steps=100
    )
    assert 1 <= row["pld"] <= row["evaluations"] and row["seconds"] > 0
    assert pld.PldAccountant._refine is refine


def test_a_section_names_the_commit_of_the_tree_measured_beside_this_one():
    """--baseline DIR: the section's facts give DIR's commit, so a ratio can be traced."""
    sys.path.insert(0, str(SCRIPT.parent))
    import _harness as H

    root = SCRIPT.parents[1]
    facts = {"seconds": 1.0, "peak_rss_mb": 1.0}
    assert "Baseline" not in H.run_section("cmd", facts, "table")
    text = H.run_section("cmd", {**facts, "baseline": str(root)}, "table")
    assert f"Baseline: {root}, commit " in text
