"""Numeric columns on real tables: every method, min-max against released quantile knots.

Issue 26's check, on tables nobody tuned for: each method in ``--methods`` is fitted at
``--epsilon`` (delta = 1e-5) on each table of ``--tables``, once per numeric encoding of
``--scales`` (``minmax``: the declared bounds; ``quantiles``: knots released by
:func:`jdp.mechanisms.quantiles.dp_quantiles` from 10% of the budget, through the config's
``scale``), and samples as many rows as the training split holds. Per fit it reports:

* ``off``: numeric columns (more than two values) whose synthetic mean is more than 50% off
  the real mean or whose synthetic median lies outside the real interquartile range, of
  ``cols``;
* TSTR AUROC with logistic regression (train on synthetic, test on the real test split)
  beside the real-data AUROC and chance (0.5);
* the ledger's epsilon and the wall time.

Usage::

    python scripts/numeric_columns.py --quick --json   # german and crx, 3 methods
    python scripts/numeric_columns.py                  # every installed table and method

The optional tables come from ``scripts/install_datasets.sh``; a table that is not installed is
left out with a note.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import _harness as H
import jax
import pandas as pd

from accounting import PrivacyBudget
from jdp.data.datasets import Dataset, DatasetNotInstalledError, load_dataset
from jdp.data.quantile_scale import MIN_MAX, QUANTILES
from jdp.eval.utility import mean_score, paper_classifiers, tstr_table
from jdp.random import key_from_seed
from jdp.synth.base import available_methods, fit_model, get_method, sample_model

TABLES = ("adult", "german", "crx", "spambase", "creditcard")
SCALES = {"minmax": MIN_MAX, "quantiles": QUANTILES}
PRIVATE = tuple(m for m in available_methods() if get_method(m).private)
QUICK_METHODS = ("marginals", "pca-gauss", "dp-gan")


def numeric_report(data: Dataset, synthetic: pd.DataFrame) -> tuple[int, int, list[str]]:
    """``(off, cols, names)``: the numeric columns with more than two values whose synthetic
    mean is more than 50% off the real mean or whose median is outside the real IQR."""
    off, cols = [], 0
    for c in data.schema.columns:
        if not c.is_numeric or (c.kind == "integer" and c.upper - c.lower <= 1):
            continue
        real = data.train[c.name].astype(float).dropna()
        synth = synthetic[c.name].astype(float).dropna()
        cols += 1
        q1, q3 = real.quantile([0.25, 0.75])
        mean_off = abs(synth.mean() - real.mean()) > 0.5 * abs(real.mean())
        if synth.empty or mean_off or not q1 <= synth.median() <= q3:
            off.append(c.name)
    return len(off), cols, off


def auroc(data: Dataset, synthetic: pd.DataFrame, seed: int) -> float:
    classifier = {"LogisticRegression": paper_classifiers(seed)["LogisticRegression"]}
    rows = tstr_table(data.train, synthetic, data.test, data.target, classifiers=classifier)
    return mean_score(rows, "AUROC", "synthetic")[0]


def one_fit(data: Dataset, method: str, scale: str, epsilon: float, seed: int) -> dict[str, Any]:
    fit_key, sample_key = jax.random.split(key_from_seed(seed))
    config = get_method(method).make_config(None, scale=SCALES[scale])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # per-fit warnings would flood the log
        model = fit_model(
            fit_key, method, data.train, PrivacyBudget(epsilon=epsilon, delta=1e-5), config,
            schema=data.schema,
        )  # fmt: skip
        synthetic = sample_model(sample_key, model, len(data.train))
        score = auroc(data, synthetic, seed)
    off, cols, names = numeric_report(data, synthetic)
    return {
        "table": data.name,
        "method": method,
        "scale": scale,
        "off": off,
        "cols": cols,
        "off_columns": names,
        "AUROC": score,
        "ledger_epsilon": model.ledger.epsilon(1e-5),
        "seconds": time.perf_counter() - start,
    }


def load(name: str, quick: bool) -> Dataset | None:
    try:
        data = load_dataset(name)
    except DatasetNotInstalledError as exc:
        H.log(f"{name}: left out ({exc})")
        return None
    if quick and len(data.train) > 5000:  # a public subsample size, not a data statistic
        data = Dataset(data.name, data.train.iloc[:5000], data.test.iloc[:5000], data.schema,
                       data.citation)  # fmt: skip
    return data


def compute(args: argparse.Namespace) -> dict[str, Any]:
    tables = args.tables or (["german", "crx"] if args.quick else list(TABLES))
    methods = args.methods or list(QUICK_METHODS if args.quick else PRIVATE)
    rows, real = [], {}
    for name in tables:
        data = load(name, args.quick)
        if data is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            real[name] = auroc(data, data.train, args.seed)
        for method in methods:
            for scale in args.scales:
                rows.append(one_fit(data, method, scale, args.epsilon, args.seed))
                r = rows[-1]
                H.log(
                    f"{name:10s} {method:10s} {scale:9s} off {r['off']}/{r['cols']} "
                    f"AUROC {r['AUROC']:.3f} ({r['seconds']:.0f} s)"
                )
    return {"epsilon": args.epsilon, "delta": 1e-5, "real_auroc": real, "rows": rows}


def render(result: dict[str, Any]) -> str:
    lines = [
        (
            f"epsilon = {result['epsilon']:g}, delta = 1e-5; off = numeric columns whose "
            "synthetic mean is > 50% off or whose median is outside the real IQR; AUROC = TSTR, "
            "logistic regression (chance 0.5)"
        ),
        "",
        "| table | real AUROC | method | scale | off / cols | AUROC | eps spent | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['table']} | {result['real_auroc'][r['table']]:.3f} | {r['method']} | "
            f"{r['scale']} | {r['off']} / {r['cols']} | {r['AUROC']:.3f} | "
            f"{r['ledger_epsilon']:.3f} | {r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="german and crx, three methods", seed=0)
    p.add_argument("--tables", type=H.subset(TABLES), help=f"comma-separated of {TABLES}")
    p.add_argument("--methods", type=H.subset(PRIVATE), help="comma-separated method names")
    p.add_argument("--scales", type=H.subset(tuple(SCALES)), default=list(SCALES))
    p.add_argument("--epsilon", type=float, default=1.0)
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
