"""scripts/bench_accounting.py: one JSON object on stdout with both timings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_accounting.py"


def test_bench_json(capsys):
    spec = importlib.util.spec_from_file_location("bench_accounting", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--steps", "1000", "--repeats", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jdp_seconds"] > 0 and data["dp_accounting_seconds"] > 0
    # same event, default grids (ours contains theirs): never looser
    assert data["jdp_epsilon"] <= data["dp_accounting_epsilon"] * (1 + 1e-9)
