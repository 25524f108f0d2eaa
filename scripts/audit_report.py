"""Privacy audit report: audited epsilon lower bounds of every mechanism, and membership
inference on Adult for a non-private generator beside the DP methods at eps = 1.

Parts:

* ``mechanisms`` -- the black-box audit of every registered mechanism
  (:data:`jdp.audit.run.MECHANISM_AUDITS`, noise calibrated to eps = 1, delta = 1e-5) and the
  one-run audit of a DP-SGD training run (Steinke et al. 2023): claimed epsilon (from each
  mechanism's own event), 95% lower bound, their ratio, trials, wall time. The issue's target
  (the "paper's number" here): the lower bound never exceeds the claim, and reaches 0.7 x the
  claim for the Gaussian and Laplace mechanisms.
* ``mia`` -- Adult (embedded): each method is fitted on a subsample of the training split
  (the members), sampled, and attacked with distance to closest record and the DOMIAS
  density ratio against held-out test records; AUC with 95% DeLong intervals. ``pgm`` is
  P3GM's non-private reference (no noise, no clipping); the others are fitted at eps = 1.
  Attack AUCs are measurements, not guarantees (DCR is an attack, not a privacy metric).

Usage::

    python scripts/audit_report.py [--quick] [--json] [--out docs/figures] [--parts mechanisms,mia]

``--quick``: a tenth of the trials and 2,000 members; full: 8,000. ``--json`` prints one
object: ``mechanisms`` (a list of ``{name, epsilon, lower_bound, trials, ...}``), ``mia`` (a
list of ``{method, epsilon, auc, ...}``, one per method and attack), ``figures``,
``seconds``. The tables also go to ``docs/results/audit_report.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import _harness as H

DELTA = 1e-5
EPSILON = 1.0
PARTS = ("mechanisms", "mia")


def mechanisms_part(quick: bool) -> list[dict[str, Any]]:
    import jax

    from jdp.audit.run import MECHANISM_AUDITS, one_run_dpsgd_audit, run_mechanism_audit

    rows = []
    for name, entry in MECHANISM_AUDITS.items():
        trials = max(500, entry.audit_trials // 10) if quick else entry.audit_trials
        r = run_mechanism_audit(name, seed=0, trials=trials, epsilon=EPSILON, delta=DELTA)
        rows.append(r.as_dict())
        H.log(
            f"[mechanisms] {name}: claim {r.epsilon:.3f}, lower bound {r.lower_bound:.3f}, "
            f"{r.trials} trials, {r.wall_s:.1f} s"
        )
    one = one_run_dpsgd_audit(
        jax.random.key(0),
        canaries=500 if quick else 1000,
        dim=2000 if quick else 5000,
        steps=20 if quick else 50,
        target_epsilon=EPSILON,
        delta=DELTA,
    )
    rows.append(
        {
            "name": "dpsgd-one-run",
            "epsilon": one.epsilon,
            "delta": one.delta,
            "lower_bound": one.lower_bound,
            "tightness": one.lower_bound / one.epsilon,
            "trials": 1,
            "wall_s": one.wall_s,
            "end_to_end": True,
            "one_run": one.as_dict(),
        }
    )
    H.log(f"[mechanisms] dpsgd-one-run: claim {one.epsilon:.3f}, lower bound {one.lower_bound:.3f}")
    return rows


def _configs(quick: bool, n: int) -> dict[str, tuple[float | None, dict[str, Any]]]:
    """method -> (epsilon or None for non-private, config fields)."""
    p3gm = {
        "dpsgd": {
            "epochs": 2.0 if quick else 10.0,
            "sampling_prob": 100 / n,
            "expected_batch_size": 100.0,  # q N for the declared N
        },
        "hidden": 200,
        "em_iterations": 10,
        "decoder_init_steps": 200,
    }
    return {
        "pgm": (None, p3gm),
        "p3gm": (EPSILON, p3gm),
        "marginals": (EPSILON, {}),
        "pca-gauss": (EPSILON, {}),
    }


def mia_part(quick: bool, seed: int = 0) -> list[dict[str, Any]]:
    from accounting import PrivacyBudget
    from jdp.audit.mia import mia_split, synthetic_data_mia
    from jdp.data.datasets import load_dataset
    from jdp.random import key_from_seed
    from jdp.synth.base import fit_model, get_method

    adult = load_dataset("adult")
    m = 2000 if quick else 8000  # the test split (16,281) holds non-members and reference
    members, nonmembers, reference = mia_split(adult.train, adult.test, members=m, seed=seed)
    rows = []
    for method, (eps, fields) in _configs(quick, m).items():
        started = time.perf_counter()
        spec = get_method(method)
        config = spec.make_config(None, **fields)
        budget = PrivacyBudget(epsilon=EPSILON, delta=DELTA)
        if eps is None:  # the non-private reference: no budget check (its ledger says inf)
            model = spec.fit(key_from_seed(seed), adult.schema.conform(members), budget, config)
        else:
            model = fit_model(
                key_from_seed(seed), method, members, budget, config, schema=adult.schema
            )
        spent = None if eps is None else model.epsilon()
        for r in synthetic_data_mia(key_from_seed(seed + 1), model, members, nonmembers, reference):
            rows.append(
                {
                    "method": method,
                    "epsilon": spent,
                    "attack": r.name,
                    "auc": r.auc,
                    "auc_ci": list(r.auc_ci),
                    "members": r.n_members,
                    "seconds": time.perf_counter() - started,
                }
            )
            H.log(
                f"[mia] {method} (eps {spent}): {r.name} AUC {r.auc:.3f} "
                f"[{r.auc_ci[0]:.3f}, {r.auc_ci[1]:.3f}]"
            )
    return rows


def plot(res: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jdp.eval.plots import save_figure

    figures = []
    if res.get("mechanisms"):
        rows = res["mechanisms"]
        fig, ax = plt.subplots(figsize=(9, 3.5))
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], [r["epsilon"] for r in rows], 0.4, label="claimed eps")
        ax.bar([i + 0.2 for i in x], [r["lower_bound"] for r in rows], 0.4, label="lower bound")
        ax.set_xticks(list(x), [r["name"] for r in rows], rotation=40, ha="right")
        ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
        ax.legend()
        fig.tight_layout()
        figures.append(str(save_figure(fig, out / "audit_mechanisms.png")))
        plt.close(fig)
    if res.get("mia"):
        rows = res["mia"]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        labels = [f"{r['method']}\n{r['attack'].replace('black-box ', '')}" for r in rows]
        ax.bar(
            range(len(rows)),
            [r["auc"] for r in rows],
            yerr=[
                [r["auc"] - r["auc_ci"][0] for r in rows],
                [r["auc_ci"][1] - r["auc"] for r in rows],
            ],
        )
        ax.axhline(0.5, color="gray", lw=0.8)
        ax.set_xticks(range(len(rows)), labels, fontsize=7)
        ax.set_ylabel("attack AUC (95% CI)")
        fig.tight_layout()
        figures.append(str(save_figure(fig, out / "audit_mia.png")))
        plt.close(fig)
    return figures


def render(res: dict[str, Any]) -> str:
    lines = []
    if res.get("mechanisms"):
        lines.append(
            f"Mechanism audits at delta = {DELTA:g} (target: lower bound <= claim; "
            ">= 0.7 x claim for gaussian, laplace)"
        )
        lines.append(
            f"{'mechanism':15s} {'claim':>7s} {'lower':>7s} {'ratio':>6s} {'trials':>9s} "
            f"{'wall s':>7s}  end to end"
        )
        for r in res["mechanisms"]:
            lines.append(
                f"{r['name']:15s} {r['epsilon']:7.3f} {r['lower_bound']:7.3f} "
                f"{r['tightness']:6.2f} {r['trials']:9d} {r['wall_s']:7.1f}  "
                f"{'yes' if r['end_to_end'] else 'no'}"
            )
    if res.get("mia"):
        lines.append("\nMembership inference on Adult (attacks, not guarantees)")
        lines.append(f"{'method':10s} {'epsilon':>8s} {'attack':18s} {'AUC':>6s}  95% CI")
        for r in res["mia"]:
            eps = "none" if r["epsilon"] is None else f"{r['epsilon']:.3g}"
            lines.append(
                f"{r['method']:10s} {eps:>8s} {r['attack']:18s} {r['auc']:6.3f}  "
                f"[{r['auc_ci'][0]:.3f}, {r['auc_ci'][1]:.3f}]"
            )
    return "\n".join(lines)


def compute(args: argparse.Namespace) -> dict[str, Any]:
    parts = args.parts
    res: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "quick": args.quick}
    res["mechanisms"] = mechanisms_part(args.quick) if "mechanisms" in parts else []
    res["mia"] = mia_part(args.quick) if "mia" in parts else []
    res["figures"] = plot(res, args.out)
    return res


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="fewer trials, 2,000 members", out="docs/figures")
    p.add_argument("--parts", type=H.subset(PARTS), default=list(PARTS), help=f"subset of {PARTS}")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
