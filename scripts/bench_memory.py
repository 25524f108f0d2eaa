"""Benchmark the memory of ``jdp fit`` as the table grows (issue 29, item 4).

Adult's training split repeated ``k`` times (``k`` in 1, 4, 16; ``--quick``: 1, 4) is written
as a CSV with Adult's public schema, and ``jdp fit --data CSV --schema JSON`` is run on it
for each method in a fresh process, one at a time; the table reports the child's peak
resident memory (``ru_maxrss`` of ``os.wait4``: that child alone), its ratio to the same
method's ``k = 1`` run, and the child's CPU seconds (user + system). The issue's target: at
``k = 16`` at most 1.5 times the ``k = 1`` peak. The children keep no compiled programs
between runs (``JDP_COMPILE_CACHE=off``): every run compiles what it needs, as a first run
does, so that no run's peak depends on which ran before it.

``--baseline DIR`` first runs the same fits with the ``jdp`` and ``accounting`` packages found
in DIR (e.g. a copy of an earlier tree): the "code" column tells the two apart.

``marginals`` runs with its defaults. ``p3gm`` runs a fixed, short schedule whatever the
rows (``dpsgd.steps`` DP-SGD steps, ``decoder_init_steps`` decoder initialisation steps):
every phase still runs on the whole table (reading, conforming, encoding, DP-PCA and DP-EM
over every row, each DP-SGD batch gathered from the encoded rows), which is what grows with
the rows; the model's own size does not.

Usage: ``python scripts/bench_memory.py [--quick] [--json] [--methods marginals,p3gm]
[--baseline DIR] [--seed S]``; the table also goes to ``docs/results/bench_memory.md``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _harness as H

EPSILON, DELTA = 1.0, 1e-5
#: The ``jdp`` command in a child process (``python -c``: its ``jdp`` package as found there).
JDP = "import sys; from jdp.cli import main; sys.exit(main())"
METHODS = ("marginals", "p3gm")
#: ``--set`` options per method: P3GM's fixed schedule (module docstring).
OPTIONS = {
    "marginals": (),
    "p3gm": ("dpsgd.epochs=null", "dpsgd.steps=20", "decoder_init_steps=10"),
}


def write_table(directory: Path, k: int) -> tuple[Path, Path, int]:
    """(CSV, schema JSON, rows) of Adult's training split repeated ``k`` times."""
    from jdp.data.datasets import load_dataset

    adult = load_dataset("adult")
    schema, data = directory / "schema.json", directory / f"adult_x{k}.csv"
    adult.schema.save(schema)
    with open(data, "w", newline="") as out:
        adult.train.to_csv(out, index=False)
        for _ in range(k - 1):
            adult.train.to_csv(out, index=False, header=False)
    return data, schema, k * len(adult.train)


def fit_in_child(
    method: str,
    data: Path,
    schema: Path,
    out: Path,
    seed: int,
    packages: Path | None,
    *,
    environ: dict[str, str] | None = None,
    options: tuple[str, ...] | None = None,
) -> dict:
    """Peak RSS (MiB), CPU and wall seconds of one ``jdp fit`` in a fresh process (importing
    ``jdp`` from ``packages`` if given), with ``environ`` over this process's environment
    (default: the compile cache off) and ``--set`` ``options`` (default: :data:`OPTIONS`)."""
    env = {**os.environ, **({"JDP_COMPILE_CACHE": "off"} if environ is None else environ)}
    if packages is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(packages), env.get("PYTHONPATH", "")])
    argv = [sys.executable, "-c", JDP, "fit", "--method", method, "--epsilon", str(EPSILON)]
    argv += ["--delta", str(DELTA), "--data", str(data), "--schema", str(schema)]
    argv += ["--out", str(out), "--seed", str(seed), "--quiet", "--overwrite"]
    for option in OPTIONS[method] if options is None else options:
        argv += ["--set", option]
    start = time.perf_counter()
    child = subprocess.Popen(  # run in out's folder: no jdp package beside the child's cwd
        argv, cwd=out.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read().decode()
    child.stderr.close()
    if child.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({child.returncode}):\n{errors}")
    return {
        "peak_mib": usage.ru_maxrss / 1024.0,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": time.perf_counter() - start,
    }


def compute(args: argparse.Namespace) -> dict:
    multiples = (1, 4) if args.quick else (1, 4, 16)
    codes = {"this tree": None}
    if args.baseline is not None:
        codes = {"baseline": args.baseline.resolve(), **codes}
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        for k in multiples:
            data, schema, rows = write_table(Path(tmp), k)
            for (code, packages), method in itertools.product(codes.items(), args.methods):
                H.log(f"{method} on {rows} rows (Adult x{k}), {code} ...")
                out = Path(tmp) / f"model_{method}_{k}_{len(runs)}"
                run = fit_in_child(method, data, schema, out, args.seed, packages)
                runs.append({"code": code, "method": method, "k": k, "rows": rows, **run})
            data.unlink()
    for run in runs:
        first = next(
            r for r in runs if (r["code"], r["method"], r["k"]) == (run["code"], run["method"], 1)
        )
        run["ratio"] = run["peak_mib"] / first["peak_mib"]
    return {"epsilon": EPSILON, "delta": DELTA, "options": OPTIONS, "runs": runs}


def render(result: dict) -> str:
    lines = [
        (
            f"jdp fit on Adult's training split repeated k times, eps = {result['epsilon']:g}, "
            f"delta = {result['delta']:g}; peak RSS of the fit's process (no compile cache)"
        ),
    ]
    for method in dict.fromkeys(r["method"] for r in result["runs"]):
        options = " ".join(f"--set {o}" for o in result["options"][method]) or "defaults"
        lines.append(f"  {method}: {options}")
    lines.append(
        f"{'code':>10} {'method':>10} {'k':>3} {'rows':>8} {'peak MiB':>9} {'ratio':>6} "
        f"{'CPU s':>7} {'wall s':>7}"
    )
    for r in sorted(result["runs"], key=lambda r: (r["code"] != "baseline", r["method"])):
        lines.append(
            f"{r['code']:>10} {r['method']:>10} {r['k']:>3d} {r['rows']:>8d} {r['peak_mib']:>9.0f} "
            f"{r['ratio']:>6.2f} {r['cpu_s']:>7.1f} {r['wall_s']:>7.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="k in 1, 4 instead of 1, 4, 16", seed=0)
    p.add_argument(
        "--methods",
        type=H.subset(METHODS),
        default=list(METHODS),
        help=f"comma-separated methods to fit (default {','.join(METHODS)})",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="a directory holding the jdp and accounting packages to measure first",
    )
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
