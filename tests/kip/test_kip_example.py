"""The KIP example of the user guide (docs/examples/kip_own_kernel.py) runs: a user's own
kernel through ``kip.fit_support`` and through DP-KIP, whose ledger meets its target."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "kip_own_kernel.py"


def test_the_example_runs(monkeypatch, capsys):
    monkeypatch.setenv("JDP_EXAMPLE_QUICK", "1")
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert re.search(r"RBF: accuracy of the initial support 0\.\d+, after KIP", out)
    spent = float(re.search(r"Privacy: \(([\d.]+), 1e-05\)-DP", out).group(1))
    assert 0.99 * 3.0 <= spent <= 3.0
