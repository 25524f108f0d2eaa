"""Utility against the privacy budget on UCI Adult: AUROC and AUPRC vs epsilon (one PNG).

P3GM (Takagi et al., ICDE 2021) plots classification utility against epsilon for P3GM and
its baselines (Section VI-C, Fig. 7 on Kaggle Credit and Adult). This sweep fits every
method in ``--methods`` (default: P3GM, DP-VAE, PCA-Gauss and the DP marginals method, each
with its library defaults, nothing tuned per epsilon) on Adult's training split at each
epsilon of ``--epsilons`` (delta = 1e-5), samples as many rows as the public test split
holds, and scores train-on-synthetic-test-on-real: the mean over the classifiers that
converged (:func:`jdp.eval.utility.mean_score`) of AUROC and AUPRC, beside the real-data
baseline. Each point is a mean over ``--seeds`` fits with its standard deviation. Beside the
utility each point records the fidelity numbers of issue 15: the average 2-way marginal TVD
against the training split (:func:`jdp.eval.marginals.two_way_tvd`, as ``jdp evaluate``) and,
per column with declared point masses (capital-gain, capital-loss), the share of synthetic
rows at a point mass, beside the real share.

Usage::

    python scripts/sweep_epsilon.py --quick --json     # 3 epsilons, LogisticRegression, 1 seed
    python scripts/sweep_epsilon.py                    # 5 epsilons, the paper's 4 classifiers, 3 seeds

Writes ``adult_epsilon_sweep.png`` into ``--out`` (default ``docs/figures``; the committed
figure comes from ``--json --seeds 1``; ``--quick`` writes ``adult_epsilon_sweep_quick.png``,
not committed) and the table to ``docs/results/sweep_epsilon.md``.
The JSON holds ``points`` (one per method, epsilon and seed: AUROC, AUPRC, ``tvd_2way``, one
``mass:<column>`` share per column with point masses, the ledger's epsilon, seconds), ``table``
(mean and std over seeds) and ``real`` (the real-data baseline: the same keys, the TVD being
the test split's against train).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import _harness as H
import jax
import numpy as np

from accounting import PrivacyBudget
from jdp.data.datasets import load_dataset
from jdp.eval.marginals import two_way_tvd
from jdp.eval.utility import mean_score, paper_classifiers, tstr_table
from jdp.random import key_from_seed
from jdp.synth.base import fit_model, sample_model

DEFAULT_METHODS = ("p3gm", "dp-vae", "pca-gauss", "marginals")
METRICS = ("AUROC", "AUPRC")


def point_mass_shares(data: Any, table: Any) -> dict[str, float]:
    """Per column with declared point masses, the share of ``table``'s rows holding one."""
    return {
        f"mass:{c.name}": float(np.isin(table[c.name].to_numpy(float), c.point_masses).mean())
        for c in data.schema.columns
        if c.point_masses
    }


def classifiers(quick: bool, seed: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an absent XGBoost is left out
        chosen = paper_classifiers(seed)
    return {"LogisticRegression": chosen["LogisticRegression"]} if quick else chosen


def point(method: str, epsilon: float, seed: int, data: Any, quick: bool) -> dict[str, Any]:
    """Fit ``method`` at ``epsilon`` and score its synthetic table (one point of the sweep)."""
    fit_key, sample_key = jax.random.split(key_from_seed(seed))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # per-fit warnings would flood the sweep's log
        model = fit_model(
            fit_key,
            method,
            data.train,
            PrivacyBudget(epsilon=epsilon, delta=1e-5),
            schema=data.schema,
        )
        synthetic = sample_model(sample_key, model, len(data.test))
        rows = tstr_table(
            data.train, synthetic, data.test, data.target, classifiers=classifiers(quick, seed)
        )
    scores = {metric: mean_score(rows, metric, "synthetic") for metric in METRICS}
    return {
        "method": method,
        "epsilon": epsilon,
        "seed": seed,
        **{metric: value for metric, (value, _) in scores.items()},
        "tvd_2way": two_way_tvd(data.train, synthetic),
        **point_mass_shares(data, synthetic),
        "left_out": sorted({name for _, dropped in scores.values() for name in dropped}),
        "ledger_epsilon": model.ledger.epsilon(1e-5),
        "seconds": time.perf_counter() - start,
    }


def real_baseline(data: Any, quick: bool, seed: int) -> dict[str, float]:
    rows = tstr_table(
        data.train, data.train, data.test, data.target, classifiers=classifiers(quick, seed)
    )
    real = H.mean_scores(rows, "real", METRICS)
    # the TVD floor: the real test split against the training split
    return {
        **real,
        "tvd_2way": two_way_tvd(data.train, data.test),
        **point_mass_shares(data, data.train),
    }


def summarise(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds, per method and epsilon."""
    table = []
    for method in dict.fromkeys(p["method"] for p in points):
        for epsilon in sorted({p["epsilon"] for p in points if p["method"] == method}):
            chosen = [p for p in points if p["method"] == method and p["epsilon"] == epsilon]
            row: dict[str, Any] = {"method": method, "epsilon": epsilon, "seeds": len(chosen)}
            for metric in [
                *METRICS,
                *(k for k in chosen[0] if k == "tvd_2way" or k.startswith("mass:")),
            ]:
                values = np.array([p[metric] for p in chosen])
                row[metric] = float(values.mean())
                row[f"{metric}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
            table.append(row)
    return table


def plot(table: list[dict[str, Any]], real: dict[str, float], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jdp.eval.plots import save_figure

    fig, axes = plt.subplots(1, len(METRICS), figsize=(10, 4))
    for ax, metric in zip(axes, METRICS, strict=True):
        for method in dict.fromkeys(r["method"] for r in table):
            rows = [r for r in table if r["method"] == method]
            ax.errorbar(
                [r["epsilon"] for r in rows],
                [r[metric] for r in rows],
                yerr=[r[f"{metric}_std"] for r in rows],
                marker="o",
                capsize=3,
                label=method,
            )
        ax.axhline(real[metric], color="black", linestyle="--", label="real data")
        ax.set_xscale("log")
        epsilons = sorted({r["epsilon"] for r in table})
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.minorticks_off()
        ax.set_xlabel("epsilon (delta = 1e-5)")
        ax.set_ylabel(f"TSTR {metric} (mean over classifiers)")
        ax.set_title(f"Adult: {metric} vs epsilon")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    out = save_figure(fig, path)
    plt.close(fig)
    return out


def compute(args: argparse.Namespace) -> dict[str, Any]:
    epsilons = args.epsilons or ([0.3, 1.0, 3.0] if args.quick else [0.1, 0.3, 1.0, 3.0, 10.0])
    seeds = args.seeds or (1 if args.quick else 3)
    data = load_dataset("adult")
    real = real_baseline(data, args.quick, 0)
    points = []
    for method in args.methods:
        for epsilon in epsilons:
            for seed in range(seeds):
                points.append(point(method, epsilon, seed, data, args.quick))
                p = points[-1]
                H.log(
                    f"{method:10s} eps={epsilon:<5g} seed={seed} AUROC={p['AUROC']:.3f} "
                    f"AUPRC={p['AUPRC']:.3f} ({p['seconds']:.0f} s)"
                )
    table = summarise(points)
    return {
        "dataset": "adult",
        "delta": 1e-5,
        "classifiers": list(classifiers(args.quick, 0)),
        "real": real,
        "points": points,
        "table": table,
        "figure": str(plot(table, real, Path(args.out) / figure_name(args.quick))),
    }


def figure_name(quick: bool) -> str:
    """The committed figure's name, or a separate one under ``--quick`` (never overwrites it)."""
    return "adult_epsilon_sweep_quick.png" if quick else "adult_epsilon_sweep.png"


def render(result: dict[str, Any]) -> str:
    real = result["real"]
    masses = [k for k in real if k.startswith("mass:")]
    lines = [
        f"real data: AUROC={real['AUROC']:.3f} AUPRC={real['AUPRC']:.3f} 2-way TVD (test vs "
        f"train) {real['tvd_2way']:.3f} " + " ".join(f"{k} {real[k]:.3f}" for k in masses)
    ]
    for row in result["table"]:
        lines.append(
            f"{row['method']:10s} eps={row['epsilon']:<5g} AUROC {row['AUROC']:.3f} "
            f"+- {row['AUROC_std']:.3f}  AUPRC {row['AUPRC']:.3f} +- {row['AUPRC_std']:.3f}  "
            f"2-way TVD {row['tvd_2way']:.3f}  " + " ".join(f"{k} {row[k]:.3f}" for k in masses)
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="3 epsilons, 1 seed, one classifier", out="docs/figures")
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS))
    p.add_argument("--epsilons", type=float, nargs="+", default=None)
    p.add_argument("--seeds", type=int, default=None, help="fits per point")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
