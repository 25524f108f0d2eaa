"""Numeric columns on real tables: every method, min-max against a public log scale and
released quantile knots.

Issue 26's check, on tables nobody tuned for: each method in ``--methods`` is fitted at
``--epsilon`` (delta = 1e-5) on each table of ``--tables``, once per numeric encoding of
``--scales`` (``default``: the method's own; ``minmax``: the declared bounds; ``log``: the
public log scale of :func:`jdp.data.quantile_scale.log_knots`; ``tails``: that scale on
right-tailed columns only; ``quantiles``: knots released by
:func:`jdp.mechanisms.quantiles.dp_quantiles` from 10% of the budget; each through the
config's ``scale``), and samples as many rows as the training split holds. Per fit it reports:

* ``off``: numeric columns (more than two values) whose synthetic mean is more than 50% off
  the real mean (measured from the declared lower bound: :func:`numeric_report`) or whose
  synthetic median lies outside the real interquartile range, of ``cols``;
* TSTR AUROC with logistic regression (train on synthetic, test on the real test split),
  the mean and the lowest over the seeds, beside the real-data AUROC (with the minority
  class's records in the training and test splits: a handful of test records makes a
  table's AUROCs noise) and chance (0.5), and the average 2-way marginal TVD against the
  training split (:func:`jdp.eval.marginals.two_way_tvd`);
* the ledger's epsilon and the wall time; each a mean over ``--seeds`` fits.

Beside the fits, the DP schema (:func:`jdp.data.dp_schema.infer_schema_dp`) of each table at
``--schema-epsilon`` (default 0.3), with the declared bounds as the coarse public ranges and the
declared point masses, nullable columns and target, once with every column released and once
with the categorical columns declared (a codebook): the largest share of a numeric column's
values outside the released bounds (clipped; beside it the noisy share the release reports),
the share of records a fit would lose to suppressed categories, under ``suppressed="drop"``
and ``"other"`` (and the share mapped to "other"), and the numeric columns released without
signal (coarse range kept); each with the joint Gaussian release and with one Laplace release
per column (``noise=``), averaged over ``--schema-seeds`` releases (default 5).

Usage::

    python scripts/numeric_columns.py --quick --json   # german and crx, 3 methods
    python scripts/numeric_columns.py                  # every installed table and method

The optional tables come from ``scripts/install_datasets.sh``; a table that is not installed is
left out with a note.
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from typing import Any

import _harness as H
import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget
from jdp.data.datasets import Dataset, DatasetNotInstalledError, load_dataset
from jdp.data.dp_schema import NOISES, infer_schema_dp
from jdp.data.quantile_scale import LOG, MIN_MAX, QUANTILES, TAILS
from jdp.eval.marginals import two_way_tvd
from jdp.eval.utility import mean_score, paper_classifiers, tstr_table
from jdp.random import key_from_seed
from jdp.synth.base import available_methods, fit_model, get_method, sample_model
from jdp.synth.feasibility import CannotWorkWarning, public_width
from jdp.synth.signal import NoSignalWarning

TABLES = ("adult", "german", "crx", "spambase", "creditcard", "creditcard-paper")
SCALES = {
    "default": None,
    "minmax": MIN_MAX,
    "log": LOG,
    "tails": TAILS,
    "quantiles": QUANTILES,
}
PRIVATE = tuple(m for m in available_methods() if get_method(m).private)
QUICK_METHODS = ("marginals", "pca-gauss", "dp-gan")


def numeric_report(data: Dataset, synthetic: pd.DataFrame) -> tuple[int, int, list[str]]:
    """``(off, cols, names)``: the numeric columns with more than two values whose synthetic
    mean is more than 50% off the real mean, measured from the declared lower bound (the
    location of a column whose range starts below zero, such as a centred principal component
    with mean 0, is its distance from that bound: the rule of
    :func:`jdp.synth.signal.mean_release`), or whose median is outside the real IQR."""
    off, cols = [], 0
    for c in data.schema.columns:
        if not c.is_numeric or (c.kind == "integer" and c.upper - c.lower <= 1):
            continue
        real = data.train[c.name].astype(float).dropna()
        synth = synthetic[c.name].astype(float).dropna()
        cols += 1
        q1, q3 = real.quantile([0.25, 0.75])
        mean_off = abs(synth.mean() - real.mean()) > 0.5 * abs(real.mean() - c.lower)
        if synth.empty or mean_off or not q1 <= synth.median() <= q3:
            off.append(c.name)
    return len(off), cols, off


def column_of(release: str) -> str:
    """The column a per-column no-signal release is about ("mean of age (to within half)",
    "spread of age (to within half)" -> "age")."""
    return release.split(" of ", 1)[-1].removesuffix(" (to within half)")


def auroc(data: Dataset, synthetic: pd.DataFrame, seed: int) -> float:
    classifier = {"LogisticRegression": paper_classifiers(seed)["LogisticRegression"]}
    rows = tstr_table(data.train, synthetic, data.test, data.target, classifiers=classifier)
    return mean_score(rows, "AUROC", "synthetic")[0]


def one_fit(data: Dataset, method: str, scale: str, epsilon: float, seed: int) -> dict[str, Any]:
    """One fit and its sample's scores (module docstring)."""
    fit_key, sample_key = jax.random.split(key_from_seed(seed))
    scale_option = {} if SCALES[scale] is None else {"scale": SCALES[scale]}
    config = get_method(method).make_config(None, **scale_option)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # recorded, not shown: they would flood the log
        model = fit_model(
            fit_key, method, data.train, PrivacyBudget(epsilon=epsilon, delta=1e-5), config,
            schema=data.schema,
        )  # fmt: skip
        synthetic = sample_model(sample_key, model, len(data.train))
        score = auroc(data, synthetic, seed)
    off, cols, names = numeric_report(data, synthetic)
    weak = {
        column_of(r.name)
        for w in caught
        if isinstance(w.message, NoSignalWarning)
        for r in w.message.releases
    }
    return {
        "said": any(issubclass(w.category, CannotWorkWarning) for w in caught),
        "off": off,
        "off_named": sum(name in weak for name in names),
        "cols": cols,
        "off_columns": names,
        "AUROC": score,
        "tvd_2way": two_way_tvd(data.train, synthetic),
        "ledger_epsilon": model.ledger.epsilon(1e-5),
        "seconds": time.perf_counter() - start,
    }


def mean_fit(
    data: Dataset, method: str, scale: str, epsilon: float, seeds: range
) -> dict[str, Any]:
    """:func:`one_fit` averaged over ``seeds`` (the off-column names of the first seed); a
    method that refuses the table (e.g. MWEM's domain cap) gives a row with its reason."""
    row: dict[str, Any] = {"table": data.name, "method": method, "scale": scale}
    try:
        fits = [one_fit(data, method, scale, epsilon, seed) for seed in seeds]
    except ValueError as exc:
        return {**row, "refused": str(exc).split(";")[0]}
    for key in ("off", "off_named", "AUROC", "tvd_2way", "ledger_epsilon", "seconds"):
        row[key] = float(np.mean([f[key] for f in fits]))
    row["AUROC_min"] = float(min(f["AUROC"] for f in fits))
    first = fits[0]
    said = sum(f["said"] for f in fits)
    return {
        **row,
        "cols": first["cols"],
        "off_columns": first["off_columns"],
        "seeds": len(fits),
        "said": said,
        "per_width": len(data.train) * epsilon / public_width(data.schema),
    }


def schema_report(data: Dataset, epsilon: float, seed: int) -> list[dict[str, Any]]:
    """The DP schema's clipped and lost shares on ``data.train`` (module docstring), with
    every column released and with the categorical columns declared (their codebook)."""
    declared = data.schema
    numeric = [c for c in declared.columns if c.is_numeric]
    out = []
    for variant, noise in itertools.product(("all released", "categories declared"), NOISES):
        row: dict[str, Any] = {
            "table": data.name, "epsilon": epsilon, "variant": variant, "noise": noise
        }  # fmt: skip
        given = (
            [c for c in declared.columns if not c.is_numeric] if variant != "all released" else []
        )
        for suppressed in ("drop", "other"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    release = infer_schema_dp(
                        np.random.default_rng(seed),
                        data.train[declared.names],
                        epsilon=epsilon,
                        kinds={c.name: c.kind for c in declared.columns},
                        ranges={c.name: (c.lower, c.upper) for c in numeric},
                        target=declared.target,
                        declared=given,
                        point_masses={c.name: c.point_masses for c in numeric if c.point_masses},
                        nullable=[c.name for c in declared.columns if c.nullable],
                        suppressed=suppressed,
                        noise=noise,
                    )
                except ValueError as exc:  # e.g. no category passes its threshold
                    row["refused"] = str(exc)
                    break
                kept = len(release.conform(data.train[declared.names]))
            row[f"lost_{suppressed}"] = 1 - kept / len(data.train)
        if "refused" not in row:
            row["mapped"] = float(mapped_share(data.train, release))
        if "refused" in row:
            out.append(row)
            continue
        clipped, noisy = {}, dict(release.clipped)
        for c in numeric:
            x = data.train[c.name].astype(float)
            x = x[x.notna() & ~x.isin(c.point_masses)]
            released = release.schema[c.name]
            clipped[c.name] = float(((x < released.lower) | (x > released.upper)).mean())
        worst = max(clipped, key=clipped.get) if clipped else None
        row.update(
            max_clipped=clipped.get(worst, 0.0),
            max_clipped_column=worst,
            noisy_clipped=noisy.get(worst),
            clipped_bound=dict(release.clipped_bound).get(worst),
            no_signal=[name for name, share in noisy.items() if share is None],
        )
        out.append(row)
    return out


def mean_schema_report(data: Dataset, epsilon: float, seeds: range) -> list[dict[str, Any]]:
    """:func:`schema_report` over ``seeds``: each number the mean over the releases (the
    worst column and its no-signal list those of the first seed), and ``cut`` the number of
    releases whose largest true clipped share exceeds 2%."""
    runs = [schema_report(data, epsilon, seed) for seed in seeds]
    out = []
    for rows in zip(*runs, strict=True):
        row = dict(rows[0])
        if "refused" not in row:
            for key in ("max_clipped", "noisy_clipped", "clipped_bound", "lost_drop",
                        "lost_other", "mapped"):  # fmt: skip
                values = [r[key] for r in rows if r.get(key) is not None]
                row[key] = float(np.mean(values)) if values else None
            row["cut"] = f"{sum(r['max_clipped'] > 0.02 for r in rows)} / {len(rows)}"
        out.append(row)
    return out


def mapped_share(frame: pd.DataFrame, release: Any) -> float:
    """The true share of records with some value mapped to the release's "other" category."""
    mapped = np.zeros(len(frame), bool)
    for name in release.other_columns():
        domain = set(release.schema[name].categories)
        mapped |= (
            frame[name]
            .map(lambda v, d=domain: isinstance(v, str) and v not in d)
            .to_numpy(dtype=bool)
        )
    return float(mapped.mean())


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
    rows, real, schemas, minority = [], {}, [], {}
    for name in tables:
        data = load(name, args.quick)
        if data is None:
            continue
        seeds = range(args.seed, args.seed + args.schema_seeds)
        for row in mean_schema_report(data, args.schema_epsilon, seeds):
            schemas.append(row)
            H.log(f"{name:10s} DP schema eps {args.schema_epsilon:g}: {row}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            real[name] = auroc(data, data.train, args.seed)
        minority[name] = [
            int(split[data.target].value_counts().min()) for split in (data.train, data.test)
        ]
        for method in methods:
            for scale in args.scales:
                seeds = range(args.seed, args.seed + (args.seeds or (1 if args.quick else 3)))
                rows.append(mean_fit(data, method, scale, args.epsilon, seeds))
                r = rows[-1]
                if "refused" in r:
                    H.log(f"{name:10s} {method:10s} {scale:9s} refused: {r['refused']}")
                    continue
                H.log(
                    f"{name:10s} {method:10s} {scale:9s} off {r['off']:.1f}/{r['cols']} "
                    f"AUROC {r['AUROC']:.3f} TVD {r['tvd_2way']:.3f} ({r['seconds']:.0f} s/fit)"
                )
    return {
        "epsilon": args.epsilon,
        "delta": 1e-5,
        "real_auroc": real,
        "minority": minority,
        "rows": rows,
        "schemas": schemas,
        "schema_seeds": args.schema_seeds,
    }


def render(result: dict[str, Any]) -> str:
    def real(table: str) -> str:
        train, test = result.get("minority", {}).get(table, ("?", "?"))
        return f"{result['real_auroc'][table]:.3f} ({train} / {test})"

    lines = [
        (
            f"epsilon = {result['epsilon']:g}, delta = 1e-5; off = numeric columns whose "
            "synthetic mean is > 50% off (from the declared lower bound) or whose median is outside the real IQR; AUROC = TSTR, "
            "logistic regression (chance 0.5), mean and lowest over the seeds; real AUROC with the "
            "minority class's records in the training and test splits (a few test records make "
            "every AUROC of that table noise); rows x eps / width = records per public width "
            "(jdp.synth.feasibility, from the training rows); said = fits whose method warned "
            "before fitting that it cannot work here (CannotWorkWarning); named = off columns whose "
            "mean or spread the fit's no-signal warning named (NoSignalWarning, from released "
            "values)"
        ),
        "",
        "| table | real AUROC (minority train / test) | rows x eps / width | method | scale | seeds | said | off / cols "
        + "| named | AUROC | lowest | 2-way TVD | eps spent | s / fit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if "refused" in r:
            head = f"| {r['table']} | {real(r['table'])} | | {r['method']} |"
            lines.append(f"{head} {r['scale']} | refused: {r['refused']} | | | | | | | | | | |")
            continue
        lines.append(
            f"| {r['table']} | {real(r['table'])} | {r['per_width']:.1f} | "
            f"{r['method']} | {r['scale']} | {r['seeds']} | {r['said']} / {r['seeds']} | "
            f"{r['off']:.1f} / {r['cols']} | {r.get('off_named', 0):.1f} | {r['AUROC']:.3f} | "
            f"{r['AUROC_min']:.3f} | {r['tvd_2way']:.3f} | "
            f"{r['ledger_epsilon']:.3f} | {r['seconds']:.0f} |"
        )
    lines += [
        "",
        (
            f"DP schema (declared bounds as coarse ranges; means over {result['schema_seeds']} releases): largest share of a numeric column's "
            "non-mass values outside its released bounds (true, as the release reports it, and "
            "the release's 95% upper bound on it), "
            "records lost to suppressed categories, columns without signal (coarse range kept)"
        ),
        "",
        "| table | epsilon | columns released | noise | max clipped | column | reported "
        + "| 95% bound | releases cutting > 2% | lost (drop) | lost (other) | mapped (other) "
        + "| no signal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["schemas"]:
        head = f"| {r['table']} | {r['epsilon']:g} | {r['variant']} | {r.get('noise', '')} |"
        if "refused" in r:
            lines.append(f"{head} refused: {r['refused']} | | | | | | | | |")
            continue
        reported = "-" if r["noisy_clipped"] is None else f"{r['noisy_clipped']:.3f}"
        bound = "-" if r.get("clipped_bound") is None else f"{r['clipped_bound']:.3f}"
        lines.append(
            f"{head} {r['max_clipped']:.3f} | {r['max_clipped_column']} | {reported} | {bound} | "
            f"{r['cut']} | "
            f"{r['lost_drop']:.3f} | {r['lost_other']:.3f} | {r.get('mapped', 0):.3f} | "
            f"{', '.join(r['no_signal']) or '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="german and crx, three methods", seed=0)
    p.add_argument("--tables", type=H.subset(TABLES), help=f"comma-separated of {TABLES}")
    p.add_argument("--methods", type=H.subset(PRIVATE), help="comma-separated method names")
    p.add_argument(
        "--scales",
        type=H.subset(tuple(SCALES)),
        default=["minmax", "log", "quantiles"],
        help=f"comma-separated of {tuple(SCALES)} (default: each method's own config)",
    )
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--schema-epsilon", type=float, default=0.3)
    p.add_argument("--schema-seeds", type=int, default=5, help="DP schema releases per row")
    p.add_argument("--seeds", type=int, default=None, help="fits per row (default 3; quick 1)")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
