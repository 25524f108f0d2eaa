"""``jdp evaluate``: score a synthetic CSV against the real training and test data.

Prints the train-on-synthetic-test-on-real table beside the real-data baseline, the average
2-way marginal TVD, per-column distances and the counting-query error; ``--json`` prints the
same numbers as one JSON object. The real data comes from CSV files (``--real-train``,
``--real-test``) or from a named dataset (``--dataset adult``); the label column from
``--target``, or else the target of ``--schema`` / of the ``--model``'s schema / of the
dataset. Tables larger than ``--max-rows`` are evaluated on a seeded uniform subsample of that
size (the output states both sizes).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jdp.cli._args import add_command, add_flags, json_line

if TYPE_CHECKING:
    import pandas as pd


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "evaluate",
        __doc__,
        help="score synthetic data against real data (TSTR, marginals, queries)",
    )
    add_real_data_arguments(parser)
    parser.add_argument("--synthetic", required=True, metavar="PATH", help="synthetic CSV")
    add_flags(parser, "schema", schema={"help": "public schema JSON whose target is the label"})
    parser.add_argument(
        "--model", metavar="DIR", help="saved model (jdp fit --out) whose schema names the label"
    )
    add_evaluation_arguments(parser)
    add_flags(parser, "json")
    parser.set_defaults(func=run)


def add_real_data_arguments(parser: argparse.ArgumentParser) -> None:
    """``--real-train``/``--real-test`` CSV paths or ``--dataset NAME``, and ``--target``."""
    parser.add_argument(
        "--real-train", metavar="PATH", help="real training CSV (what the model was fitted on)"
    )
    parser.add_argument("--real-test", metavar="PATH", help="held-out real CSV for TSTR")
    add_flags(parser, "dataset", dataset={"help": "use a named dataset's train/test split instead"})
    parser.add_argument(
        "--target",
        metavar="COL",
        help="label column for TSTR (default: the target of --schema, --model or --dataset)",
    )


def add_evaluation_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the evaluation itself, shared with ``jdp report``."""
    parser.add_argument(
        "--classifiers",
        metavar="NAMES",
        help="comma-separated TSTR classifiers among LogisticRegression, AdaBoost, "
        "GradientBoosting, XGBoost and LightGBM (the last two with pip install 'jdp[eval]'; "
        "default: the paper's four, XGBoost when installed)",
    )
    add_flags(parser, "seed", seed={"default": 0, "help": "seed of classifiers and query workload"})
    parser.add_argument("--bins", type=int, default=10, help="quantile bins per numeric column")
    parser.add_argument(
        "--queries", type=int, default=1000, help="random counting queries (0: none)"
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        metavar="N",
        help=f"evaluate at most N rows per table, a seeded uniform subsample "
        f"(default {DEFAULT_MAX_ROWS}; 0: every row)",
    )
    parser.add_argument(
        "--positive-class",
        metavar="LABEL",
        help="positive class of a binary target (default: the larger label)",
    )
    add_flags(parser, "quiet")


#: ``--max-rows`` default: TSTR and the fidelity measures on at most this many rows per table.
DEFAULT_MAX_ROWS = 50_000


def read_csv(path: str, what: str, schema: Any = None) -> pd.DataFrame:
    """Read a CSV as ``jdp fit`` reads its data (:func:`jdp.data.read.read_csv`, the one copy
    of the rule): only the schema's ``missing_values`` tokens (default: the empty field) are
    missing, so a category named ``"NA"`` stays a category; with a ``schema`` (a
    :class:`~jdp.data.schema.Schema` or release) its string-category columns are read as
    text and its ``ignore`` columns left out. An unreadable or empty file is a one-line
    error."""
    from jdp.data.read import read_csv as read_table

    if not Path(path).is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    schema = getattr(schema, "schema", schema)  # a SchemaRelease reads as its schema
    try:
        return read_table(path, schema if schema is not None else _header_schema(path))
    except ValueError as exc:
        message = str(exc).splitlines()[0]
        raise ValueError(message.replace("cannot read CSV", f"cannot read {what} CSV")) from None


def _header_schema(path: str) -> Any:
    """A stand-in schema for a CSV read without one: the header's names as numeric columns
    (no string column is forced to text, nothing ignored) and the default ``missing_values``,
    so that :func:`jdp.data.read.read_csv` applies its missing-value rule and infers dtypes."""
    import pandas as pd

    from jdp.data.schema import Column, Schema

    try:
        header = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read CSV {path}: {str(exc).splitlines()[0]}") from None
    if not header:
        raise ValueError(f"cannot read CSV {path}: no columns")
    columns = (Column(name=n, kind="continuous", lower=0.0, upper=1.0) for n in header)
    return Schema(columns=tuple(columns))


def real_data(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame | None, str | None]:
    """(real_train, real_test or None, target or None) from the parsed arguments."""
    if args.dataset:
        if args.real_train or args.real_test:
            raise ValueError("give either --dataset or --real-train/--real-test, not both")
        from jdp.data.datasets import load_dataset

        dataset = load_dataset(args.dataset)
        return dataset.train, dataset.test, declared_target(args) or dataset.target
    if not args.real_train:
        raise ValueError("expected --real-train PATH (or --dataset NAME)")
    schema = declared_schema(args)
    train = read_csv(args.real_train, "real-train", schema)
    test = read_csv(args.real_test, "real-test", schema) if args.real_test else None
    target = args.target or (schema.target if schema is not None else None)
    if (test is None) != (target is None):
        raise ValueError(
            "TSTR needs both --real-test and a label column (--target, or a --schema or "
            "--model whose schema names a target)"
        )
    return train, test, target


def declared_schema(args: argparse.Namespace) -> Any:
    """The schema of ``--schema`` (a release's schema), else of ``--model``, else ``None``
    (loaded once per ``args``)."""
    schema_path, model_dir = getattr(args, "schema", None), getattr(args, "model", None)
    if schema_path and model_dir:
        raise ValueError("give either --schema or --model, not both")
    key = (schema_path, model_dir)
    cached = getattr(args, "_declared_schema", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    schema = None
    if schema_path:
        from jdp.data.dp_schema import SchemaRelease, load_schema

        schema = load_schema(schema_path)
        schema = schema.schema if isinstance(schema, SchemaRelease) else schema
    elif model_dir:
        from jdp.synth.io import load

        schema = load(model_dir).schema
    args._declared_schema = (key, schema)
    return schema


def declared_target(args: argparse.Namespace) -> str | None:
    """``--target``, else the target of ``--schema``, else of ``--model``'s schema."""
    if args.target:
        return args.target
    schema = declared_schema(args)
    return None if schema is None else schema.target


def available_classifiers(seed: int) -> dict:
    """The classifiers that can run here: the paper's (an absent XGBoost is left out
    silently), then LightGBM when installed (:func:`jdp.eval.utility.optional_classifiers`)."""
    from jdp.eval.utility import optional_classifiers, paper_classifiers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return paper_classifiers(seed) | optional_classifiers(seed)


def named_classifiers(names: str, available: dict) -> dict:
    """The classifiers of a comma-separated ``--classifiers`` list, from ``available``."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise ValueError(
            f"unknown or unavailable classifier {unknown[0]!r}; available: {', '.join(available)}"
        )
    if not wanted:
        raise ValueError("expected at least one classifier name in --classifiers")
    return {n: available[n] for n in wanted}


def chosen_classifiers(names: str | None, seed: int) -> dict | None:
    """The named subset of the paper's classifiers (``None``: all of them)."""
    return None if names is None else named_classifiers(names, available_classifiers(seed))


def evaluate_args(
    args: argparse.Namespace,
    train: pd.DataFrame,
    synthetic: pd.DataFrame,
    test: pd.DataFrame | None,
    target: str | None,
) -> dict:
    """Run :func:`jdp.eval.report.evaluate_tables` with the parsed options."""
    from jdp.eval.report import evaluate_tables

    return evaluate_tables(
        train,
        synthetic,
        real_test=test,
        target=target,
        classifiers=chosen_classifiers(args.classifiers, args.seed),
        seed=args.seed,
        n_bins=args.bins,
        n_queries=args.queries,
        max_rows=args.max_rows or None,
        positive=args.positive_class,
        progress=not args.quiet,
    )


def run(args: argparse.Namespace) -> int:
    train, test, target = real_data(args)
    synthetic = read_csv(args.synthetic, "synthetic", declared_schema(args))
    evaluation = evaluate_args(args, train, synthetic, test, target)
    if args.json:
        from jdp.eval.report import jsonable

        print(json_line(jsonable(evaluation)))
        return 0
    print(text_summary(evaluation))
    return 0


def text_summary(evaluation: dict) -> str:
    """The evaluation as plain-text tables."""
    from jdp.eval.report import format_table

    rows, used = evaluation["rows"], evaluation["evaluated_rows"]
    lines = [
        "rows: "
        + ", ".join(
            f"{name} {rows[name]}"
            + (
                f" (evaluated on a uniform sample of {used[name]})"
                if used[name] != rows[name]
                else ""
            )
            for name in ("real_train", "synthetic", "real_test")
            if rows[name] is not None
        )
    ]
    if evaluation["tstr"]:
        lines += [
            "",
            "Train on real / synthetic, test on real:",
            format_table(evaluation["tstr"], ["classifier", "metric", "real", "synthetic"]),
        ]
    if evaluation["two_way_tvd"] is not None:
        lines += ["", f"average 2-way marginal TVD: {evaluation['two_way_tvd']:.4f}"]
    lines += [
        "",
        format_table(evaluation["columns"], ["column", "kind", "tvd", "wasserstein_scaled", "ks"]),
    ]
    queries = evaluation["queries"]
    if queries is not None:
        lines += [
            "",
            (
                f"counting queries ({queries['n_queries']}): mean relative error {queries['mean']:.4f}, "
                f"median {queries['median']:.4f}, p90 {queries['p90']:.4f}"
            ),
        ]
    return "\n".join(lines)
