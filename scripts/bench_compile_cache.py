"""Benchmark the CLI's persistent compilation cache: a second identical ``jdp fit`` (issue 29,
item 3: at least 30% faster).

For each method of ``--methods`` (default ``p3gm``), on Adult's training split written as a
CSV with its public schema, ``jdp fit`` runs three times in fresh processes
(:func:`bench_memory.fit_in_child`): ``off`` with ``JDP_COMPILE_CACHE=off`` (every program
compiled, nothing kept), ``first`` with an empty cache directory (``XDG_CACHE_HOME`` a new
temporary folder: it compiles as ``off`` does and fills the cache), and ``second``, the same
command again (it reads the programs back). The table reports each run's CPU seconds (user +
system of that child) and wall seconds, and ``second / first`` in CPU seconds; the target is
at most 0.7.

``--baseline DIR`` first runs the same three fits with the ``jdp`` and ``accounting``
packages found in DIR (e.g. a worktree of an earlier commit), its own cache directory: the
"code" column tells the two apart, and the cold (``off``) CPU seconds of this tree over the
baseline's are printed per method.

``--repeat K`` runs the triples ``K`` times (the baseline's and this tree's in turn) and
reports each timing's median.

    python scripts/bench_compile_cache.py [--quick] [--json] [--methods p3gm,dp-gan]
        [--baseline DIR] [--repeat K] [--seed S]

``--quick`` fits P3GM on bench_memory's short schedule (20 DP-SGD steps: the share of the
fit the cache can save is then larger than in a full fit). The table also goes to
``docs/results/bench_compile_cache.md``.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from pathlib import Path

import _harness as H
from bench_memory import OPTIONS, fit_in_child, write_table

METHODS = ("p3gm", "dp-gan", "dp-vae", "dpgm", "clustmix", "pca-gauss", "marginals")
TARGET = 0.7


def compute(args: argparse.Namespace) -> dict:
    codes = {"this tree": None}
    if args.baseline is not None:
        codes = {"baseline": args.baseline.resolve(), **codes}
    found: dict[tuple[str, str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_compile_cache_") as tmp:
        data, schema, rows = write_table(Path(tmp), 1)
        for method in args.methods:
            options = OPTIONS.get(method, ()) if args.quick else ()
            for repeat, (code, packages) in itertools.product(range(args.repeat), codes.items()):
                cache = {"XDG_CACHE_HOME": str(Path(tmp) / f"cache_{method}_{code}_{repeat}")}
                for name, environ in (("off", {"JDP_COMPILE_CACHE": "off"}), ("first", cache),
                                      ("second", cache)):  # fmt: skip
                    H.log(f"{method} on {rows} rows, {code}, cache {name} ({repeat + 1}) ...")
                    out = Path(tmp) / f"model_{method}"
                    run = fit_in_child(
                        method, data, schema, out, args.seed, packages, environ=environ,
                        options=options,
                    )  # fmt: skip
                    found.setdefault((code, method, name), []).append(run)
    runs = [
        {"code": code, "method": method, "cache": name, "options": (
            OPTIONS.get(method, ()) if args.quick else ()), **H.median_run(fits)}
        for (code, method, name), fits in found.items()
    ]  # fmt: skip
    for run in runs:
        if run["cache"] == "second":
            first = next(
                r for r in runs
                if (r["code"], r["method"], r["cache"]) == (run["code"], run["method"], "first")
            )  # fmt: skip
            run["ratio"] = run["cpu_s"] / first["cpu_s"]
    baseline = None if args.baseline is None else str(args.baseline.resolve())
    return {"rows": rows, "target": TARGET, "repeat": args.repeat, "runs": runs,
            "baseline": baseline}  # fmt: skip


def _cold(runs: list[dict], code: str, method: str) -> float | None:
    """The CPU seconds of ``code``'s fit of ``method`` with the cache off, if it ran."""
    found = [
        r["cpu_s"] for r in runs if (r["code"], r["method"], r["cache"]) == (code, method, "off")
    ]
    return found[0] if found else None


def render(result: dict) -> str:
    lines = [
        (
            f"jdp fit on Adult's training split ({result['rows']} rows), three fresh processes "
            "per method: cache off, first run on an empty cache, the same command again"
            + (
                f"; medians of {result['repeat']} such triples"
                if result.get("repeat", 1) > 1
                else ""
            )
        ),
        (
            f"{'code':>10} {'method':>10} {'cache':>7} {'CPU s':>7} {'wall s':>7} "
            f"{'second/first CPU':>17}"
        ),
    ]
    for r in result["runs"]:
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        lines.append(
            f"{r.get('code', 'this tree'):>10} {r['method']:>10} {r['cache']:>7} "
            f"{r['cpu_s']:>7.1f} {r['wall_s']:>7.1f} {ratio:>17}"
        )
    options = {r["method"]: r["options"] for r in result["runs"] if r["options"]}
    for method, opts in options.items():
        lines.append(f"  {method}: " + " ".join(f"--set {o}" for o in opts))
    for method in dict.fromkeys(r["method"] for r in result["runs"]):
        base, now = (_cold(result["runs"], code, method) for code in ("baseline", "this tree"))
        if base is not None and now is not None:
            lines.append(f"  {method}: cold CPU seconds, baseline / this tree: {base / now:.2f}")
    lines.append(f"target: second / first CPU seconds <= {result['target']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="P3GM on bench_memory's short schedule", seed=0)
    p.add_argument(
        "--methods",
        type=H.subset(METHODS),
        default=("p3gm",),
        help=f"comma-separated of {METHODS}",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="a directory holding the jdp and accounting packages to measure first",
    )
    p.add_argument("--repeat", type=int, default=1, help="triples per code, medians reported")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
