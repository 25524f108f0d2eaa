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
Settings come from :func:`jdp.synth.p3gm.paper.config_for` (Table IV, public sizes, as
``scripts/reproduce_p3gm.py``); ``--set KEY=VALUE`` overrides any
:class:`~jdp.synth.p3gm.config.P3GMConfig` option, nested ones dotted, as ``jdp fit --set``
does, to ablate a modelling choice (e.g. ``--set decoder_init_steps=0``, ``--set
dpsgd.epochs=10``, or the paper's prior: ``--set n_components=3 --set
prior_covariance=diag``); ``--seed``, ``--rows`` and ``--n-train`` pick the key, the rows and
a (public) training subsample size.

Only the all-private row is a DP release; the other rows exist to diagnose and are never a
private result. The tables also go to ``docs/results/ablate_p3gm.md``.

Usage::

    python scripts/ablate_p3gm.py --quick --json > ablation.json
    python scripts/ablate_p3gm.py --datasets mnist --set pca_clip_norm=1.0
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import _harness as H
import jax
import numpy as np

from accounting import PrivacyBudget
from jdp.cli.fit import parse_overrides
from jdp.data.datasets import DatasetNotInstalledError, load_dataset
from jdp.eval.images import cnn_accuracy, mnist_images
from jdp.eval.utility import paper_classifiers, tstr_table
from jdp.random import numpy_rng
from jdp.synth.configs import apply_overrides, config_to_dict
from jdp.synth.p3gm import model as P
from jdp.synth.p3gm import paper
from jdp.synth.p3gm import phases as Ph
from jdp.synth.p3gm.config import P3GMConfig
from jdp.synth.p3gm.privacy import calibrate_noise
from jdp.synth.p3gm.variants import get_variant

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
    codec: P.P3GMCodec,
    budget: PrivacyBudget,
    config: P3GMConfig,
    variant: str,
    private: frozenset[str],
) -> tuple[dict[str, Any], float | None]:
    """Fit one row: the phases in ``private`` at their all-private noise, the rest exact.

    Returns the parameters and, for the all-private row, the epsilon its ledger spends.
    """
    layout = codec.layout
    cut = Ph.sgd_noise_cut(config, variant, layout)
    noise = calibrate_noise(config, variant, budget, noise_cut=cut)
    enc_key, dec_key = jax.random.split(key)
    fixed: dict[str, Any] = {}
    ledger = None
    if variant != "dp-vae":
        enc_noise = None
        if private & {"pca", "em"}:
            enc_noise = {p: noise.get(p, 0.0) if p in private else 0.0 for p in ("pca", "em")}
        fixed, ledger = Ph.encoding_phase(
            numpy_rng(enc_key), x, codec.row_norm_bound, config, enc_noise, codec.target_coords
        )
    z_sgd = noise["sgd"] if "sgd" in private else None
    trainable, sgd_ledger = Ph.decoding_phase(dec_key, x, fixed, layout, config, variant, z_sgd)
    params = {"trainable": trainable, **fixed}
    phases = set(get_variant(variant).phases(config))
    if variant == "dp-vae" or private != phases:
        return params, None
    return params, (ledger + sgd_ledger).epsilon(budget.delta)


def score_mnist(key: jax.Array, synth: Any, test: Any, quick: bool) -> dict[str, float]:
    xs, ys = mnist_images(synth)
    xt, yt = mnist_images(test)
    return {"accuracy": cnn_accuracy(key, xs, ys, xt, yt, 3 if quick else 10)}


def score_credit(train: Any, synth: Any, test: Any, target: str, quick: bool, seed: int):
    if quick:
        clf = {"LogisticRegression": paper_classifiers(seed)["LogisticRegression"]}
        rows = tstr_table(train, synth, test, target, classifiers=clf)
        return {
            r["metric"]: float(r["synthetic"]) for r in rows if r["metric"] in ("AUROC", "AUPRC")
        }
    rows = tstr_table(train, synth, test, target, classifiers=paper_classifiers(seed))
    return H.mean_scores(rows, "synthetic")


def ablate(name: str, args: argparse.Namespace, budget: PrivacyBudget) -> dict[str, Any] | None:
    try:
        ds = load_dataset(paper.DATASET_NAMES[name])
    except DatasetNotInstalledError as exc:
        H.log(f"[{name}] skipped: {exc}")
        return {"skipped": "dataset not installed"}
    train, test = ds.train, ds.test
    n_public = paper.PUBLIC_TRAIN_ROWS[name]
    n_sub = args.n_train or (QUICK_ROWS[name] if args.quick else n_public)
    if n_sub < n_public:
        n_public = n_sub
        train = train.sample(n=n_public, random_state=args.seed).reset_index(drop=True)
        if name == "mnist":
            test = test.sample(n=2000, random_state=args.seed).reset_index(drop=True)
    config = apply_overrides(paper.config_for(name, False, n_public=n_public), args.overrides)
    codec = P.codec(ds.schema, config)
    x = codec.encode(ds.schema.conform(train))
    steps = config.dpsgd.num_steps
    H.log(f"[{name}] n={len(x)} d={x.shape[1]} steps={steps} overrides={args.overrides}")
    out: dict[str, Any] = {"n_train": len(x), "config": config_to_dict(config), "rows": {}}
    key = jax.random.key(args.seed)
    for i, (row, variant, private) in enumerate(ROWS):
        if args.rows and row not in args.rows:
            continue
        t = time.time()
        k_fit, k_sample, k_eval = jax.random.split(jax.random.fold_in(key, i), 3)
        params, eps = fit_row(k_fit, x, codec, budget, config, variant, private)
        rows = P.sample_arrays(k_sample, params, codec, config, len(x), variant=variant)
        synth = codec.decode(k_sample, rows)
        if name == "mnist":
            scores = score_mnist(k_eval, synth, test, args.quick)
        else:
            scores = score_credit(train, synth, test, ds.target, args.quick, args.seed)
            scores["positive_rate"] = float(np.mean(synth[ds.target] == 1))
        scores.update(epsilon_spent=eps, seconds=time.time() - t)
        out["rows"][row] = scores
        H.log(f"  {row:8s} {json.dumps({k: round(v, 4) if v else v for k, v in scores.items()})}")
    return out


def render(res: dict[str, Any]) -> str:
    lines = []
    for name, r in res["datasets"].items():
        if "rows" not in r:
            lines.append(f"{name}: {r}")
            continue
        metric = "accuracy" if name == "mnist" else "AUROC"
        if name == "mnist":
            reference = paper.PAPER_TABLE_VII["p3gm"]
        else:
            reference = paper.PAPER_TABLE_VI["credit"]["p3gm"]["AUROC"]
        lines.append(f"\n{name} (n={r['n_train']}; paper P3GM {metric} {reference})")
        lines.append(f"  {'row':8s} {metric:>9s} {'eps':>7s} {'s':>6s}")
        for row, s in r["rows"].items():
            eps = f"{s['epsilon_spent']:7.3f}" if s["epsilon_spent"] is not None else "      -"
            lines.append(f"  {row:8s} {s[metric]:9.4f} {eps} {s['seconds']:6.0f}")
    lines.append(f"run time {res['seconds']:.0f} s")
    return "\n".join(lines)


def compute(args: argparse.Namespace) -> dict[str, Any]:
    args.overrides = parse_overrides(args.set)
    args.rows = [r for r in args.rows.split(",") if r]
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
    if all("skipped" in r for r in res["datasets"].values()):
        res["skipped"] = "no dataset installed"
    return res


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="subsamples, LR only, short CNN", seed=0)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--datasets", default="mnist,credit")
    p.add_argument("--rows", default="", help="comma-separated subset of rows")
    p.add_argument("--n-train", type=int, default=0, help="training subsample size (public)")
    p.add_argument(
        "--set", action="append", default=[], help="P3GMConfig KEY=VALUE (nested: dpsgd.epochs=3)"
    )
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
