"""Ablate P3GM on MNIST and Kaggle credit: which phase's privacy costs the utility (issue 15).

One table per dataset with the rows

* ``vae``: a VAE trained end to end WITHOUT privacy (``dp-vae`` with no noise or clipping);
* ``pgm``: P3GM's phased model WITHOUT privacy (every phase exact);
* ``dp-pca``, ``dp-em``, ``dp-sgd``: P3GM with exactly one phase private, at the noise
  multiplier that phase gets in the all-private run (the others exact);
* ``p3gm``: every phase private, at ONE ``(epsilon, delta)`` (default ``(1, 1e-5)``), the
  spent epsilon computed from the fitted ledger.

The row where the metric collapses names the phase (and so the candidate causes) to look at.
The metric is MNIST's small-CNN accuracy (synthetic train, real test) and credit's TSTR
AUROC / AUPRC (mean over the classifiers; logistic regression only in ``--quick``).
Settings come from ``scripts/reproduce_p3gm.py`` (:func:`config_for`: Table IV, public
sizes); ``--set KEY=VALUE`` overrides any :class:`~jdp.synth.p3gm.config.P3GMConfig` field
to ablate a modelling choice (e.g. ``--set decoder_init_steps=0``).

Only the all-private row is a DP release; the other rows exist to diagnose and are never a
private result.

Measured (issue 15; shared 2-CPU machine, MNIST accuracy, eps = 1, delta = 1e-5):

=================  =================  ==========================  =========================
row                before (10k rows)  + declared C_p, C_e,        full 60k, + split
                                      decoder init (10k rows)     (0.2, 0.1, 0.7) / public
                                                                  rule (0.15, 0.15, 0.7)
=================  =================  ==========================  =========================
vae (non-priv.)    0.826
pgm (non-priv.)    0.836
dp-pca             0.732
dp-em              0.214              0.831
dp-sgd             0.397              0.701
p3gm               0.098              0.194 (DP-PCA at 10k rows)  0.784 / **0.792** (paper
                                                                  0.794; PLD calibration)
=================  =================  ==========================  =========================

(``--quick`` 10k-row runs: 16 min each; the full P3GM row: 22-25 min.) Those rows used the
paper's prior (K = 3 diagonal, T_e = 20). Under the one-Gaussian default (0e7699f) the full
P3GM row (``--datasets mnist --rows p3gm --seed S``, ~10 min each beside another fit) gives
0.804 / 0.783 / 0.790 on seeds 0 / 1 / 2; with ``--set n_components=3 --set
prior_covariance=diag`` seed 0 gives 0.796. The spread over keys (about 0.01) is larger than
what the prior changes.

Credit, the paper's task (``creditcard-paper``: 9,443 training rows, 4.7% fraud; full
mode, 4-classifier mean TSTR AUROC / positive rate of the synthetic labels; real 0.988):

================  ===============  ================================================
row               d' = None (29)   P3GM (all private) with one change, seed 0
================  ===============  ================================================
vae (non-priv.)   0.968 / 3.1%     em_iterations=5: 0.538; em_clip_norm=0.05: 0.523
pgm (non-priv.)   0.980 / 5.5%     budget_split (0.05, 0.35, 0.6): 0.436
dp-pca (mean)     0.969 / 8.0%     latent_dim=10: 0.629
dp-em             0.917 / 2.0%     latent_dim=5: **0.955** / 2.3%
dp-sgd            0.898 / 4.7%
p3gm              0.504 / 0.9%     (seed 1: 0.168)
================  ===============  ================================================

DP-EM and DP-SGD each cost a little alone and together lose the fraud component (0.9%
synthetic frauds); DP-EM's noise on a component mean grows like ``sqrt(d')`` while the
fraud component holds ~440 rows, so the reduction to d' = 5 fixes it. One fit + four
classifiers: ~2 min under load.

Spread over keys (issue 15; d' = 5, full size, ``--seed 0/1/2``, 4-classifier mean TSTR AUROC
per key, mean +- sample std; ~1 min per row under load):

=========================  =======================  ===============  =========================
row                        AUROC per key            mean +- std      prior
=========================  =======================  ===============  =========================
p3gm                       0.913 / 0.874 / 0.941    0.910 +- 0.034   K = 3 diag, T_e = 20
p3gm, scatter at C_e=0.1   0.836 / 0.939 / 0.922    0.899 +- 0.055   K = 3 diag, T_e = 20
dp-pca                     0.978 / 0.931 / 0.971    0.960 +- 0.025   K = 1 full (0e7699f)
dp-em                      0.988 / 0.972 / 0.983    0.981 +- 0.008   K = 1 full
dp-sgd                     0.918 / 0.962 / 0.888    0.922 +- 0.038   K = 1 full
p3gm                       0.968 / 0.973 / 0.956    **0.966 +- 0.009** K = 1 full
=========================  =======================  ===============  =========================

(the all-private K = 1 rows: AUPRC 0.862 / 0.825 / 0.765, eps spent 0.9996 each, 218 s for
the three; ``--datasets credit --rows p3gm --seed S``.) The prior carried the spread: the
paper's K = 3 diagonal mixture costs 60 releases at multiplier 100, whose noise on the
small fraud component (~440 rows) moves it from key to key; one full-covariance Gaussian
(0e7699f, the default since) is one release at multiplier 22 and costs about nothing alone.
With it, DP-SGD carries most of the remaining loss and spread, DP-PCA the rest. Clipping Analyze Gauss's centred rows at DP-EM's bound ``C_e = 0.1`` instead of
the DP mean's ``C_p = 0.6`` (a throwaway patch of ``encoding_phase``, not landed) puts far more
of the fraud direction in the released subspace (norm of its projection 0.67-0.90 vs
0.25-0.61 over 8 noise draws, centre exact in this diagnostic; a random 5-of-29 subspace
gives 0.42) but did not raise the AUROC, so it stays out.

Usage::

    python scripts/ablate_p3gm.py --quick --json > ablation.json
    python scripts/ablate_p3gm.py --datasets mnist --set pca_clip_norm=1.0
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from accounting import PrivacyBudget
from jdp.eval.utility import tstr_table
from jdp.random import numpy_rng
from jdp.synth.p3gm import model as P

_SPEC = importlib.util.spec_from_file_location(
    "reproduce_p3gm", Path(__file__).resolve().parent / "reproduce_p3gm.py"
)
R = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = R  # its dataclasses look their module up
_SPEC.loader.exec_module(R)

#: (row name, variant, the phases that are private)
ROWS: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("vae", "dp-vae", frozenset()),
    ("pgm", "p3gm", frozenset()),
    ("dp-pca", "p3gm", frozenset({"pca"})),
    ("dp-em", "p3gm", frozenset({"em"})),
    ("dp-sgd", "p3gm", frozenset({"sgd"})),
    ("p3gm", "p3gm", frozenset({"pca", "em", "sgd"})),
)
QUICK_ROWS = {"mnist": 10_000, "credit": 40_000, "credit-full": 40_000}  # --quick sizes (public)


def fit_row(
    key: jax.Array,
    x: np.ndarray,
    layout: Any,
    bound: float,
    budget: PrivacyBudget,
    config: P.P3GMConfig,
    variant: str,
    private: frozenset[str],
    target_coords: tuple[int, int] | None,
) -> tuple[dict[str, Any], float | None]:
    """Fit one row: the phases in ``private`` at their all-private noise, the rest exact.

    Returns the parameters and, for the all-private row, the epsilon its ledger spends.
    """
    noise = P.calibrate_noise(config, variant, budget)
    enc_key, dec_key = jax.random.split(key)
    fixed: dict[str, Any] = {}
    ledger = None
    if variant != "dp-vae":
        enc_noise = None
        if private & {"pca", "em"}:
            enc_noise = {p: noise.get(p, 0.0) if p in private else 0.0 for p in ("pca", "em")}
        fixed, ledger = P.encoding_phase(
            numpy_rng(enc_key), x, bound, config, enc_noise, target_coords
        )
    z_sgd = noise["sgd"] if "sgd" in private else None
    trainable, sgd_ledger = P.decoding_phase(dec_key, x, fixed, layout, config, variant, z_sgd)
    params = {"trainable": trainable, **fixed}
    phases = set(P.get_variant(variant).phases(config))
    if variant == "dp-vae" or private != phases:
        return params, None
    return params, (ledger + sgd_ledger).epsilon(budget.delta)


def score_mnist(key: jax.Array, synth: Any, test: Any, quick: bool) -> dict[str, float]:
    pixels = [c for c in synth.columns if c != "label"]

    def images(frame: Any) -> tuple[np.ndarray, np.ndarray]:
        return frame[pixels].to_numpy(np.float32) / 255.0, frame["label"].to_numpy(np.int32)

    xs, ys = images(synth)
    xt, yt = images(test)
    acc = R.cnn_accuracy(key, xs, ys, xt, yt, 3 if quick else 10)
    return {"accuracy": acc}


def score_credit(train: Any, synth: Any, test: Any, target: str, quick: bool, seed: int):
    if quick:
        from jdp.eval.utility import paper_classifiers

        clf = {"LogisticRegression": paper_classifiers(seed)["LogisticRegression"]}
        rows = tstr_table(train, synth, test, target, classifiers=clf)
        return {
            r["metric"]: float(r["synthetic"]) for r in rows if r["metric"] in ("AUROC", "AUPRC")
        }
    return R.tstr_means(train, synth, test, target, seed)["synthetic"]


def ablate(name: str, args: argparse.Namespace, budget: PrivacyBudget) -> dict[str, Any] | None:
    loaded = R.load(name, False, args.seed)
    if loaded is None:
        return {"skipped": "dataset not installed"}
    ds, train, test = loaded
    n_public = R.PUBLIC_TRAIN_ROWS[name]
    n_sub = args.n_train or (QUICK_ROWS[name] if args.quick else n_public)
    if n_sub < n_public:
        n_public = n_sub
        train = train.sample(n=n_public, random_state=args.seed).reset_index(drop=True)
        if name == "mnist":
            test = test.sample(n=2000, random_state=args.seed).reset_index(drop=True)
    config = R.config_for(name, False, n_public=n_public)
    config = dataclasses.replace(config, **args.overrides)
    encoder = P.table_encoder(ds.schema)
    layout = P.head_layout(encoder)
    x = encoder.encode(ds.schema.conform(train))
    R.log(f"[{name}] n={len(x)} d={x.shape[1]} steps={config.steps} overrides={args.overrides}")
    out: dict[str, Any] = {"n_train": len(x), "config": dataclasses.asdict(config), "rows": {}}
    key = jax.random.key(args.seed)
    for i, (row, variant, private) in enumerate(ROWS):
        if args.rows and row not in args.rows:
            continue
        t = time.time()
        k_fit, k_sample, k_eval = jax.random.split(jax.random.fold_in(key, i), 3)
        params, eps = fit_row(
            k_fit,
            x,
            layout,
            encoder.row_norm_bound,
            budget,
            config,
            variant,
            private,
            P.target_coords(encoder),
        )
        synth = encoder.decode(P.sample_arrays(k_sample, params, layout, config, variant, len(x)))
        if name == "mnist":
            scores = score_mnist(k_eval, synth, test, args.quick)
        else:
            scores = score_credit(train, synth, test, ds.target, args.quick, args.seed)
            scores["positive_rate"] = float(np.mean(synth[ds.target] == 1))
        scores.update(epsilon_spent=eps, seconds=time.time() - t)
        out["rows"][row] = scores
        R.log(f"  {row:8s} {json.dumps({k: round(v, 4) if v else v for k, v in scores.items()})}")
    return out


def print_table(res: dict[str, Any]) -> None:
    for name, r in res["datasets"].items():
        if "rows" not in r:
            R.log(f"{name}: {r}")
            continue
        metric = "accuracy" if name == "mnist" else "AUROC"
        paper = (
            R.PAPER_TABLE_VII["p3gm"]
            if name == "mnist"
            else R.PAPER_TABLE_VI["credit"]["p3gm"]["AUROC"]
        )
        R.log(f"\n{name} (n={r['n_train']}; paper P3GM {metric} {paper})")
        R.log(f"  {'row':8s} {metric:>9s} {'eps':>7s} {'s':>6s}")
        for row, s in r["rows"].items():
            eps = f"{s['epsilon_spent']:7.3f}" if s["epsilon_spent"] is not None else "      -"
            R.log(f"  {row:8s} {s[metric]:9.4f} {eps} {s['seconds']:6.0f}")


def parse_set(items: list[str]) -> dict[str, Any]:
    out = {}
    for item in items:
        k, _, v = item.partition("=")
        out[k] = None if v == "None" else json.loads(v) if v[:1] in "[{" else type_of(k)(v)
    return out


def type_of(field: str) -> Callable[[str], Any]:
    types = {f.name: f.type for f in dataclasses.fields(P.P3GMConfig)}
    if field not in types:
        raise SystemExit(f"unknown P3GMConfig field {field!r}")
    t = str(types[field])
    if t.startswith("bool"):
        return lambda v: {"true": True, "false": False}[v.lower()]
    return int if t.startswith("int") else str if t.startswith("str") else float


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="subsamples, LR only, short CNN")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0, help="research reproducibility only")
    parser.add_argument("--datasets", default="mnist,credit")
    parser.add_argument("--rows", default="", help="comma-separated subset of rows")
    parser.add_argument("--n-train", type=int, default=0, help="training subsample size (public)")
    parser.add_argument("--set", action="append", default=[], help="P3GMConfig KEY=VALUE")
    args = parser.parse_args(argv)
    args.overrides = parse_set(args.set)
    args.rows = [r for r in args.rows.split(",") if r]
    start = time.time()
    budget = PrivacyBudget(epsilon=args.epsilon, delta=args.delta)
    res: dict[str, Any] = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "mode": "quick" if args.quick else "full",
        "overrides": args.overrides,
        "datasets": {},
    }
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        res["datasets"][name] = ablate(name, args, budget)
    res["runtime_s"] = time.time() - start
    print_table(res)
    R.log(f"run time {res['runtime_s']:.0f} s")
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
