"""Startup time of the ``jdp`` command line: how long a person waits for a command that does
little work, against the targets of the issue "What a person sees".

Each command runs in a fresh interpreter, as the ``jdp`` console script runs it (``from
jdp.cli import main``), ``--repeats`` times after one untimed warm-up run; the commands take
turns, so that a load spike of a shared machine hits each alike. The table gives the median
wall time (what a person waits for: the targets judge it) and the median CPU time of the
child (less sensitive to other jobs on the machine). ``jdp sample`` draws from a marginals
model fitted once on Adult into a temporary directory (``jdp fit --dataset adult --method
marginals --epsilon 1``, not timed).

``--tree NAME=DIR`` (repeatable) also times the ``jdp`` of another source tree (a directory
holding ``jdp/``, ``accounting/`` and ``kip/``, e.g. an older checkout), side by side in the
same run, by putting ``DIR`` first on ``PYTHONPATH``; the tree of this script is ``current``.

Usage: ``python scripts/cli_startup.py [--quick] [--json] [--repeats N] [--tree NAME=DIR]``
(``--quick``: 3 repeats instead of 5). A benchmark, not a test: nothing fails when a target is
missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _harness as H

ROOT = Path(__file__).resolve().parents[1]
CURRENT = "current"
#: How the console script ``jdp`` starts (``[project.scripts]`` in pyproject.toml).
ENTRY = "import sys; from jdp.cli import main; sys.exit(main())"


def commands(model: Path, csv: Path) -> list[tuple[str, list[str], float]]:
    """(label, argv of ``jdp``, target wall seconds) of each timed command."""
    return [
        ("jdp --help", ["--help"], 1.0),
        ("jdp account --help", ["account", "--help"], 1.0),
        (
            "jdp sample -n 5",
            ["sample", "--model", str(model), "-n", "5", "--out", str(csv), "--quiet"],
            3.0,
        ),
    ]


def tree_value(text: str) -> tuple[str, Path]:
    """``--tree``'s type: ``NAME=DIR`` with ``DIR/jdp/cli`` present."""
    name, sep, directory = text.partition("=")
    if not sep or not name or not directory:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR, got {text!r}")
    if name == CURRENT:
        raise argparse.ArgumentTypeError(f"{CURRENT!r} names this script's own tree")
    path = Path(directory).resolve()
    if not (path / "jdp" / "cli" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(f"{path} holds no jdp/cli package")
    return name, path


def jdp(tree: Path, argv: list[str]) -> tuple[float, float]:
    """Run ``jdp ARGV`` from ``tree`` in a fresh interpreter: (wall s, CPU s of the child)."""
    path = [str(tree), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, *argv],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(
            f"jdp {' '.join(argv)} (tree {tree}) exited {proc.returncode}:\n{proc.stderr}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def compute(args: argparse.Namespace) -> dict[str, Any]:
    repeats = args.repeats or (3 if args.quick else 5)
    trees = [(CURRENT, ROOT), *args.tree]
    with tempfile.TemporaryDirectory(prefix="jdp-cli-startup-") as tmp:
        model, csv = Path(tmp) / "model", Path(tmp) / "sample.csv"
        H.log("fitting the marginals model (jdp fit --dataset adult --method marginals) ...")
        jdp(ROOT, ["fit", "--dataset", "adult", "--method", "marginals", "--epsilon", "1",
                   "--out", str(model), "--seed", "0", "--quiet"])  # fmt: skip
        cases = [(label, argv, target, name, tree)
                 for label, argv, target in commands(model, csv)
                 for name, tree in trees]  # fmt: skip
        for label, argv, _, name, tree in cases:  # warm-up: file caches, the first run is cold
            H.log(f"warm-up: {label} ({name})")
            jdp(tree, argv)
        times: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(cases))}
        for r in range(repeats):
            H.log(f"round {r + 1}/{repeats}")
            for i, (_, argv, _, _, tree) in enumerate(cases):
                times[i].append(jdp(tree, argv))
    rows = []
    for i, (label, argv, target, name, tree) in enumerate(cases):
        walls, cpus = [w for w, _ in times[i]], [c for _, c in times[i]]
        median = statistics.median(walls)
        rows.append(
            {
                "command": label,
                "tree": name,
                "argv": argv,
                "wall_s": walls,
                "cpu_s": cpus,
                "median_s": median,
                "cpu_median_s": statistics.median(cpus),
                "target_s": target,
                "met": median < target,
            }
        )
    return {
        "repeats": repeats,
        "trees": {name: str(tree) for name, tree in trees},
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        # without bytecode caches jdp's own modules are compiled on every start
        "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
        "rows": rows,
    }


def render(result: dict[str, Any]) -> str:
    header = ("command", "tree", "median s", "CPU s", "target", "met?")
    lines = [
        (
            r["command"],
            r["tree"],
            f"{r['median_s']:.2f}",
            f"{r['cpu_median_s']:.2f}",
            f"< {r['target_s']:g} s",
            "yes" if r["met"] else "NO",
        )
        for r in result["rows"]
    ]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    out = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *lines]
    ]
    out.insert(1, "  ".join("-" * w for w in widths))
    note = (
        f"median of {result['repeats']} runs each (after one warm-up), Python "
        f"{result['python']}, {result['cpus']} CPUs"
        + (", PYTHONDONTWRITEBYTECODE set" if result["pythondontwritebytecode"] else "")
    )
    return "\n".join([*out, "", note])


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="3 repeats instead of 5")
    p.add_argument("--repeats", type=int, help="timed runs of each command (default 5)")
    p.add_argument(
        "--tree",
        type=tree_value,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="also time the jdp of this source tree (repeatable)",
    )
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    sys.exit(main())
