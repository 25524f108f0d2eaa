"""scripts/bench_accounting.py: one JSON object on stdout with both timings and the PLD rows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_accounting.py"


def _module():
    spec = importlib.util.spec_from_file_location("bench_accounting", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_json(capsys):
    assert _module().main(["--steps", "1000", "--repeats", "1", "--json", "--skip-pld"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jdp_seconds"] > 0 and data["dp_accounting_seconds"] > 0
    # same event, default grids (ours contains theirs): never looser
    assert data["jdp_epsilon"] <= data["dp_accounting_epsilon"] * (1 + 1e-9)
    assert "pld" not in data


def test_bench_pld_rows(capsys, tmp_path):
    args = ["--steps", "1000", "--repeats", "1", "--json", "--configs", "2", "--out", str(tmp_path)]
    assert _module().main(args) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["pld"]
    assert len(rows) == 2 and all(10**4 <= r["steps"] <= 10**6 for r in rows)
    for r in rows:
        assert r["pld_adaptive"] <= r["rdp"] * (1 + 1e-9)  # refined PLD is never looser
        assert r["ledger_epsilon"] == min(r["rdp"], r["pld_adaptive"])
        assert r["ratio_adaptive"] == r["pld_adaptive"] / r["rdp"]
    assert data["pld_summary"]["max_ratio_adaptive"] == max(r["ratio_adaptive"] for r in rows)
    assert Path(data["figure"]).is_file() and Path(data["figure"]).parent == tmp_path
