"""What ``jdp`` imports before it runs a command: argument parsing and ``--help`` import no
heavy library (issue "What a person sees": every call used to spend seconds importing JAX,
pandas and dp_accounting, which pulls in scipy). Each command imports its implementation only
when it runs.

Each case runs ``jdp ARGV`` in a fresh interpreter and reads back the names in
``sys.modules`` at its exit. Timings are not checked here (``scripts/cli_startup.py``
measures them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Libraries that take from a tenth of a second to seconds to import.
HEAVY = (
    "jax",
    "jaxlib",
    "pandas",
    "scipy",
    "dp_accounting",
    "numpy",
    "sklearn",
    "matplotlib",
    "flax",
    "optax",
)

#: ``jdp ARGV`` that parse arguments or print help only. ``jdp fit --help`` is not here: it
#: lists the registered methods, which imports them.
LIGHT = [
    ["--help"],
    ["--version"],
    ["account", "--help"],
    ["account", "dpsgd", "--help"],
    ["sample", "--help"],
    ["evaluate", "--help"],
    ["report", "--help"],
    ["demo", "--help"],
    ["schema", "--help"],
    ["datasets", "--help"],
    ["audit", "--help"],
]

#: The child: run ``jdp ARGV`` with its output discarded, then print the loaded top-level
#: module names as JSON.
CHILD = """
import contextlib, io, json, sys
from jdp.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def loaded_modules(argv: list[str]) -> tuple[int, set[str]]:
    """The exit code of ``jdp ARGV`` in a fresh interpreter and the top-level packages it
    imported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["code"], set(result["modules"])


@pytest.mark.parametrize("argv", LIGHT, ids=" ".join)
def test_help_and_parsing_import_nothing_heavy(argv):
    code, modules = loaded_modules(argv)
    assert code == 0
    assert sorted(modules & set(HEAVY)) == []


def test_a_usage_error_imports_nothing_heavy():
    code, modules = loaded_modules(["account", "dpsgd", "--steps", "10"])
    assert code == 2
    assert sorted(modules & set(HEAVY)) == []


def test_the_command_imports_its_implementation_when_it_runs():
    code, modules = loaded_modules(
        ["account", "dpsgd", "--noise-multiplier", "1.1", "--sampling-prob", "0.01",
         "--steps", "10", "--delta", "1e-5", "--accountant", "rdp"]
    )  # fmt: skip
    assert code == 0
    assert {"dp_accounting", "scipy"} <= modules


def test_the_accountant_names_of_account_are_those_of_accounting():
    from accounting.compose import ACCOUNTANTS, BEST
    from jdp.cli.account import _ACCOUNTANTS

    assert _ACCOUNTANTS["best"] == BEST
    assert {name for key, name in _ACCOUNTANTS.items() if key != "best"} <= set(ACCOUNTANTS)
