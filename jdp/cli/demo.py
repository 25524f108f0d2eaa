"""``jdp demo``: P3GM (or another registered method) on the embedded UCI Adult data, end to end.

Fits P3GM on Adult's training split at epsilon = 1 and delta = 1e-5 (``--method marginals``
for the DP marginals baseline), samples synthetic rows -- by default the model's released noisy
row count, or for methods that release none as many rows as the public Adult test split has
(the exact training count is private) -- writes the synthetic CSV and the model, prints the privacy
statement from the ledger and a train-on-synthetic-test-on-real (TSTR) table beside the
real-data baseline. For speed the demo scores two classifiers, LogisticRegression and
XGBoost (GradientBoosting when XGBoost is not installed); ``--classifiers all`` runs the
P3GM paper's full set.
"""

from __future__ import annotations

import argparse
import sys

from jdp.cli._args import (
    add_command,
    add_flags,
    json_line,
    model_summary,
    one_line_warnings,
    output_path,
    replaced_file,
)

METHOD = "p3gm"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "demo",
        __doc__,
        help="fit P3GM on embedded Adult, sample, and print ledger + TSTR table",
    )
    add_flags(
        parser,
        "method",
        "epsilon",
        "delta",
        method={"default": METHOD, "help": f"registered synthesizer (default {METHOD})"},
        epsilon={"default": 1.0, "help": "privacy budget epsilon (default 1)"},
    )
    parser.add_argument(
        "--rows", type=int, help="synthetic rows (default: the model's noisy row count)"
    )
    add_flags(
        parser, "out", out={"default": "jdp-demo", "help": "output directory (default jdp-demo)"}
    )
    parser.add_argument(
        "--classifiers",
        metavar="NAMES",
        help="comma-separated TSTR classifiers, or 'all' (default: a fast pair, see above)",
    )
    add_flags(parser, "seed", "quiet", "json")
    parser.set_defaults(func=run)


def demo_classifiers(names: str | None, seed: int) -> dict:
    """The TSTR classifiers of the demo (see the module docstring)."""
    from jdp.cli.evaluate import available_classifiers, named_classifiers

    available = available_classifiers(seed)
    if names == "all":
        return available
    if names is None:
        fast = "XGBoost" if "XGBoost" in available else "GradientBoosting"
        return {n: available[n] for n in ("LogisticRegression", fast)}
    return named_classifiers(names, available)


def _progress(args: argparse.Namespace, message: str) -> None:
    """A line between the demo's steps, on a terminal only (:mod:`jdp.progress`'s rule)."""
    from jdp.progress import shown

    if not args.quiet and shown():
        print(f"jdp demo: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    import jax

    from accounting import PrivacyBudget
    from jdp.cli.fit import check_private
    from jdp.data.datasets import load_adult
    from jdp.eval.report import format_table
    from jdp.eval.utility import tstr_table
    from jdp.progress import show_ledger
    from jdp.random import key_from_seed
    from jdp.synth.base import fit_model, noisy_row_count, sample_model
    from jdp.synth.io import save
    from jdp.verbosity import no_progress

    out = output_path(args.out, kind="dir")
    budget = PrivacyBudget(epsilon=args.epsilon, delta=args.delta)
    check_private(args.method)
    classifiers = demo_classifiers(args.classifiers, 0 if args.seed is None else args.seed)
    fit_key, sample_key = jax.random.split(key_from_seed(args.seed))
    with no_progress(args.quiet), one_line_warnings("demo"):
        adult = load_adult()
        _progress(args, f"fitting {args.method} on Adult ({adult.citation.split('.')[0]}) ...")
        with show_ledger():
            model = fit_model(fit_key, args.method, adult.train, budget, schema=adult.schema)
        rows = args.rows
        if rows is None:
            rows = noisy_row_count(model) or len(adult.test)
        synthetic = sample_model(sample_key, model, rows)
        with replaced_file(out / "synthetic.csv") as tmp:
            synthetic.to_csv(tmp, index=False)
        save(model, out / "model")
        _progress(args, f"wrote {rows} synthetic rows to {out / 'synthetic.csv'}; TSTR ...")
        table = tstr_table(
            adult.train,
            synthetic,
            adult.test,
            adult.target,
            classifiers=classifiers,
            progress=not args.quiet,
        )
    if args.json:
        summary = model_summary(
            model,
            dataset="adult",
            rows=rows,
            synthetic_csv=str(out / "synthetic.csv"),
            model_dir=str(out / "model"),
            classifiers=list(classifiers),
            tstr=table,
        )
        print(json_line(summary))
        return 0
    print(model.privacy_statement())
    print(f"synthetic data: {out / 'synthetic.csv'} ({rows} rows); model: {out / 'model'}")
    print()
    print("Train on synthetic, test on real (Adult test split, target 'income'):")
    print(format_table(table, ["classifier", "metric", "real", "synthetic"]))
    return 0
