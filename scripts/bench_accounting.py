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

    python scripts/bench_accounting.py [--quick] [--json] [--out DIR] [--skip-pld]

Prints the tables (``--json``: one JSON object, the timings and ``pld`` rows) and writes them
to ``docs/results/bench_accounting.md`` (``scripts/_harness.py``).
"""

from __future__ import annotations

import argparse
import statistics
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
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
