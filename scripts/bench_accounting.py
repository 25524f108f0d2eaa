"""Accounting benchmarks: RDP speed against dp-accounting, and PLD tightness against RDP.

1. **RDP speed.** jdp's RDP accountant and dp-accounting's ``RdpAccountant`` both start from
   scratch in the same process (no caches), account ``SelfComposed(PoissonSampled(q,
   Gaussian(z)), steps)`` on their DEFAULT order grids (ours is a superset of theirs) and
   convert to epsilon at ``delta``; each is timed ``--repeats`` times (median).
2. **PLD tightness** (issue 16, "Tight upper bounds too"). On random DP-SGD runs of
   ``10^4``-``10^6`` steps (seeded: ``z`` log-uniform in [0.8, 10], ``q`` log-uniform in
   [1e-4, 0.02]), epsilon at ``delta`` from RDP, from the PLD accountant at dp-accounting's
   default discretisation (``1e-4``, one pass) and from our adaptive PLD (halving until the
   answer moves by < 0.5%), with ratios to RDP and times; and the ledger's default figure,
   the minimum, naming its accountant. ``--quick`` runs 4 configurations, the default 12.
   A scatter of the two PLD/RDP ratios goes to ``--out`` (default docs/figures/).
3. **Calibration searches** (``--calibration``). The noise searches the methods run before
   a fit (dp-GAN's, P3GM's and DPGM's default plans on Adult's row count, alone and after a
   Laplace release of class counts, as the table adapter composes them; four DP-SGD runs),
   each in a fresh process: accountant evaluations, the PLD ones among them (0.1-0.3 s
   each), seconds and the multiplier found. ``--baseline DIR`` runs the same searches with
   the ``accounting`` and ``jdp`` packages of another tree first, in the same run.

    python scripts/bench_accounting.py [--quick] [--json] [--out DIR] [--skip-pld]
        [--calibration [--baseline DIR]]

Prints the tables (``--json``: one JSON object, the timings and ``pld`` rows) and writes them
to ``docs/results/bench_accounting.md`` (``scripts/_harness.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import _harness as H
import dp_accounting
import numpy as np

from accounting import events as ev
from accounting.accountants import pld
from accounting.builders import dpsgd_event
from accounting.compose import best_epsilon, compute_epsilon


def _ours(event: ev.DpEvent, delta: float) -> float:
    return compute_epsilon(event, delta, accountant="rdp")


def _theirs(event: ev.DpEvent, delta: float) -> float:
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(event)
    return acc.get_epsilon(delta)


def _median_time(fn, event: ev.DpEvent, delta: float, repeats: int) -> tuple[float, float]:
    runs = [H.timed(fn, event, delta) for _ in range(repeats)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def random_configs(count: int, seed: int = 0) -> list[tuple[float, float, int]]:
    """``count`` DP-SGD runs ``(z, q, steps)`` with 10^4-10^6 steps (see the module doc)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        z = float(np.exp(rng.uniform(np.log(0.8), np.log(10.0))))
        q = float(np.exp(rng.uniform(np.log(1e-4), np.log(0.02))))
        out.append((z, q, int(10 ** rng.uniform(4, 6))))
    return out


def pld_rows(configs: list[tuple[float, float, int]], delta: float) -> list[dict]:
    """One row per configuration: RDP, one-pass PLD at 1e-4, adaptive PLD, the minimum."""
    rows = []
    for z, q, steps in configs:
        event = dpsgd_event(z, q, steps)
        t_rdp, rdp_eps = H.timed(compute_epsilon, event, delta)
        t_fixed, fixed = H.timed(pld.epsilon, event, delta, value_discretization_interval=1e-4)
        acc = pld.PldAccountant()
        t_adaptive, adaptive = H.timed(acc.epsilon, event, delta)
        bound = best_epsilon(event, delta)
        rows.append(
            {
                "noise_multiplier": z,
                "sampling_prob": q,
                "steps": steps,
                "rdp": rdp_eps,
                "pld_default_grid": fixed,
                "pld_adaptive": adaptive,
                "ratio_default_grid": fixed / rdp_eps,
                "ratio_adaptive": adaptive / rdp_eps,
                "adaptive_passes": len(acc.passes),
                "finest_interval": acc.passes[-1][0],
                "seconds_rdp": t_rdp,
                "seconds_default_grid": t_fixed,
                "seconds_adaptive": t_adaptive,
                "ledger_epsilon": bound.value,
                "ledger_accountant": bound.accountant,
            }
        )
        H.log(
            f"  z={z:.3g} q={q:.3g} steps={steps}: rdp {rdp_eps:.4g}, pld@1e-4 {fixed:.4g}, "
            f"adaptive {adaptive:.4g} ({t_adaptive:.1f}s)"
        )
    return rows


def _plot(rows: list[dict], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jdp.eval.plots import save_figure

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [r["steps"] for r in rows]
    ax.scatter(steps, [r["ratio_default_grid"] for r in rows], label="PLD, grid 1e-4 (one pass)")
    ax.scatter(steps, [r["ratio_adaptive"] for r in rows], marker="x", label="PLD, adaptive")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("DP-SGD steps")
    ax.set_ylabel("epsilon / RDP epsilon")
    ax.set_title("PLD tightness against RDP (delta = 1e-5)")
    ax.legend()
    fig.tight_layout()
    path = save_figure(fig, out / "accounting_pld_vs_rdp.png")
    plt.close(fig)
    return path


def calibration_searches() -> dict[str, Callable[[], float]]:
    """The searches of part 3, by name: each returns the (DP-SGD) multiplier it found."""
    import dataclasses

    from accounting import PrivacyBudget, PrivacyLedger
    from accounting.calibrate import calibrate_noise_multiplier
    from jdp.synth.base import get_method
    from jdp.synth.dp_gan.model import calibrate_noise as dp_gan_noise
    from jdp.synth.dp_gan.model import critic_dpsgd
    from jdp.synth.dpgm.model import calibrate_noise as dpgm_noise
    from jdp.synth.p3gm.privacy import calibrate_noise as p3gm_noise

    rows, cut = 32561, 1e-88  # Adult's training rows; a sampler cut per step
    plain = PrivacyBudget(epsilon=1.0, delta=1e-5)
    counts = PrivacyLedger().record("class counts", ev.LaplaceDpEvent(1 / 0.05))
    gan = get_method("dp-gan").make_config(None)
    p3gm = get_method("p3gm").make_config(None)
    p3gm = dataclasses.replace(p3gm, dpsgd=p3gm.dpsgd.for_rows(rows))
    dpgm = get_method("dpgm").make_config(None)
    dpgm = dataclasses.replace(dpgm, dpsgd=dpgm.dpsgd.for_rows(rows / dpgm.n_clusters))
    searches: dict[str, Callable[[], float]] = {}
    for suffix, b in (("", plain), (" after counts", plain.composing().less(counts))):
        searches["dp-gan" + suffix] = lambda b=b: (
            dp_gan_noise(critic_dpsgd(gan, b), b, noise_cut=cut, state_share=gan.state_share).sgd
        )
        searches["p3gm" + suffix] = lambda b=b: p3gm_noise(p3gm, "p3gm", b, noise_cut=cut)["sgd"]
        searches["dpgm" + suffix] = lambda b=b: dpgm_noise(dpgm, b, noise_cut=cut)["sgd"]
    for q, steps, eps in (
        (0.01, 1000, 1.0),
        (0.004, 5000, 1.0),
        (0.1, 100, 3.0),
        (0.02, 2000, 8.0),
    ):
        searches[f"dp-sgd q={q} T={steps} eps={eps:g}"] = lambda q=q, t=steps, e=eps: (
            calibrate_noise_multiplier(
                target_epsilon=e, target_delta=1e-5, sampling_prob=q, steps=t
            )
        )
    return searches


def run_search(name: str) -> dict:
    """One search of :func:`calibration_searches` in this process: its accountant
    evaluations (the search observer's steps), the PLD ones among them, seconds, result."""
    from accounting.calibrate import set_search_observer

    search = calibration_searches()[name]
    steps: list[str] = []
    passes: list[int] = []
    refine = pld.PldAccountant._refine

    def counted(self: pld.PldAccountant, answer: Callable) -> float:
        passes.append(1)
        return refine(self, answer)

    observer = set_search_observer(lambda e: steps.append(e) if e == "step" else None)
    pld.PldAccountant._refine = counted
    try:
        t = time.perf_counter()
        value = search()
        seconds = time.perf_counter() - t
    finally:
        pld.PldAccountant._refine = refine
        set_search_observer(observer)
    return {"evaluations": len(steps), "pld": len(passes), "seconds": seconds, "value": value}


def calibration_rows(baseline: Path | None) -> list[dict]:
    """Every search in a fresh child process, the baseline's packages (if given) first."""
    codes = {"this tree": None} if baseline is None else {"baseline": baseline, "this tree": None}
    rows = []
    for name in calibration_searches():
        for code, packages in codes.items():
            env = dict(os.environ)
            if packages is not None:
                env["PYTHONPATH"] = os.pathsep.join([str(packages), env.get("PYTHONPATH", "")])
            H.log(f"calibration search {name}, {code}")
            child = subprocess.run(
                [sys.executable, __file__, "--calibration-child", name],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            rows.append({"search": name, "code": code, **json.loads(child.stdout)})
    return rows


def compute(args: argparse.Namespace) -> dict:
    event = dpsgd_event(args.noise_multiplier, args.sampling_prob, args.steps)
    H.log(f"accounting {args.steps} steps (q={args.sampling_prob}, z={args.noise_multiplier})")
    t_ours, eps_ours = _median_time(_ours, event, args.delta, args.repeats)
    t_theirs, eps_theirs = _median_time(_theirs, event, args.delta, args.repeats)
    result: dict = {
        "steps": args.steps,
        "noise_multiplier": args.noise_multiplier,
        "sampling_prob": args.sampling_prob,
        "delta": args.delta,
        "repeats": args.repeats,
        "jdp_seconds": t_ours,
        "dp_accounting_seconds": t_theirs,
        "jdp_epsilon": eps_ours,
        "dp_accounting_epsilon": eps_theirs,
        "speedup": t_theirs / t_ours,
    }
    if not args.skip_pld:
        count = args.configs or (4 if args.quick else 12)
        H.log(f"PLD vs RDP on {count} random DP-SGD runs")
        rows = pld_rows(random_configs(count), args.delta)
        result["pld"] = rows
        result["pld_summary"] = {
            "max_ratio_default_grid": max(r["ratio_default_grid"] for r in rows),
            "max_ratio_adaptive": max(r["ratio_adaptive"] for r in rows),
            "median_ratio_adaptive": statistics.median(r["ratio_adaptive"] for r in rows),
            "max_seconds_adaptive": max(r["seconds_adaptive"] for r in rows),
        }
        result["figure"] = str(_plot(rows, args.out))
    if args.calibration:
        baseline = None if args.baseline is None else args.baseline.resolve()
        result["calibration"] = calibration_rows(baseline)
        result["baseline"] = None if baseline is None else str(baseline)
    return result


def render(result: dict) -> str:
    lines = [
        f"{'accountant':<28}{'median time (s)':>16}{'epsilon':>14}",
        (
            f"{'jdp accounting.accountants.rdp':<28}{result['jdp_seconds']:>16.4f}"
            f"{result['jdp_epsilon']:>14.6f}"
        ),
        (
            f"{'dp_accounting RdpAccountant':<28}{result['dp_accounting_seconds']:>16.4f}"
            f"{result['dp_accounting_epsilon']:>14.6f}"
        ),
        f"speed-up: {result['speedup']:.1f}x",
    ]
    if "pld" in result:
        head = f"{'z':>6}{'q':>10}{'steps':>9}{'RDP':>9}{'PLD@1e-4':>10}{'ratio':>7}"
        lines.append(f"\n{head}{'adaptive':>10}{'ratio':>7}{'time s':>8}  ledger")
        for r in result["pld"]:
            lines.append(
                f"{r['noise_multiplier']:>6.2f}{r['sampling_prob']:>10.2e}{r['steps']:>9}"
                f"{r['rdp']:>9.4g}{r['pld_default_grid']:>10.4g}{r['ratio_default_grid']:>7.2f}"
                f"{r['pld_adaptive']:>10.4g}{r['ratio_adaptive']:>7.2f}"
                f"{r['seconds_adaptive']:>8.1f}  {r['ledger_accountant']}"
            )
        lines.append(f"figure: {result['figure']}")
    if "calibration" in result:
        lines.append(
            f"\n{'calibration search':<32}{'code':>10}{'evaluations':>12}{'PLD':>5}"
            f"{'seconds':>9}{'multiplier':>12}"
        )
        for r in result["calibration"]:
            lines.append(
                f"{r['search']:<32}{r['code']:>10}{r['evaluations']:>12}{r['pld']:>5}"
                f"{r['seconds']:>9.2f}{r['value']:>12.6g}"
            )
        for code in dict.fromkeys(r["code"] for r in result["calibration"]):
            mine = [r for r in result["calibration"] if r["code"] == code]
            lines.append(
                f"{code}: {sum(r['pld'] for r in mine)} PLD evaluations, "
                f"{sum(r['seconds'] for r in mine):.1f} s in all"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="4 PLD configurations", out="docs/figures")
    p.add_argument("--steps", type=int, default=10**6, help="steps of the RDP timing")
    p.add_argument("--noise-multiplier", type=float, default=1.1)
    p.add_argument("--sampling-prob", type=float, default=0.01)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--configs", type=int, help="PLD configurations (default 12; 4 quick)")
    p.add_argument("--skip-pld", action="store_true", help="only the RDP timing")
    p.add_argument("--calibration", action="store_true", help="the methods' noise searches")
    p.add_argument("--baseline", type=Path, help="with --calibration: an earlier tree's root")
    p.add_argument("--calibration-child", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    if "--calibration-child" in argv:  # one search, in this fresh process: JSON on stdout
        print(json.dumps(run_search(argv[argv.index("--calibration-child") + 1])))
        return 0
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
