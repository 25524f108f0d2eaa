"""``jdp fit``: fit a DP synthesizer on a table and save the model (arrays + JSON).

The data is a CSV with a public schema JSON (``--data PATH --schema PATH``) or a named dataset's
training split with its public schema (``--dataset adult``). The schema file may be a saved DP
schema release (``SchemaRelease.save``): its cost is then part of the model's ledger. Method
options are set with ``--set NAME=VALUE`` (repeatable). Without ``--seed`` the noise comes from
fresh OS entropy; a seed is for research reproducibility only.

Every fit spends its budget again and no ledger spans several fits, so ``fit`` refuses a
non-empty ``--out`` (exit 2, nothing written) unless ``--force``. Warnings and errors show no
private counts unless ``--verbose``. The key is drawn from the ``fit`` stream of ``--seed``
(:func:`jdp.cli._args.command_key`), never the one ``jdp sample --seed`` uses.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from jdp.cli._args import add_verbose_argument
from jdp.data.schema import Schema

if TYPE_CHECKING:
    from jdp.data.dp_schema import SchemaRelease


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fit",
        help="fit a DP synthesizer and save it",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
    )
    parser.add_argument(
        "--method", default="marginals", help="synthesizer name (default: marginals)"
    )
    parser.add_argument("--epsilon", type=float, required=True, help="privacy budget epsilon (> 0)")
    parser.add_argument(
        "--delta", type=float, default=1e-5, help="privacy budget delta (default 1e-5)"
    )
    add_data_arguments(parser)
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="directory to save the model in"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a method option (repeatable)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite a model already saved in --out (a new fit spends the budget again)",
    )
    parser.add_argument("--seed", type=int, help="fixed seed (research only; default: OS entropy)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    add_verbose_argument(parser)
    parser.set_defaults(func=run)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset", metavar="NAME", help="a named dataset's training split (e.g. adult)"
    )
    parser.add_argument("--data", metavar="PATH", help="training CSV (needs --schema)")
    parser.add_argument(
        "--schema",
        metavar="PATH",
        help="public schema JSON of --data, or a saved DP schema release (its cost is charged)",
    )


def training_data(args: argparse.Namespace) -> tuple[pd.DataFrame, Schema | SchemaRelease]:
    """The private training table and its public schema (a saved DP schema release is kept
    whole, with its ledger), from the parsed arguments."""
    from jdp.data.datasets import load_dataset, read_csv
    from jdp.data.dp_schema import SchemaRelease, load_schema

    if args.dataset:
        if args.data:
            raise ValueError("give either --dataset or --data, not both")
        dataset = load_dataset(args.dataset)
        schema = load_schema(args.schema) if args.schema else dataset.schema
        return dataset.train, schema
    if not args.data or not args.schema:
        raise ValueError("expected --data PATH and --schema PATH (or --dataset NAME)")
    schema = load_schema(args.schema)
    public = schema.schema if isinstance(schema, SchemaRelease) else schema
    return read_csv(args.data, public), schema


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["bins=64", "noise=laplace"]`` -> ``{"bins": 64, "noise": "laplace"}`` (JSON values
    where they parse, strings otherwise)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"expected --set NAME=VALUE, got {item!r}")
        try:
            out[name] = json.loads(text)
        except json.JSONDecodeError:
            out[name] = text
    return out


def make_config(method: str, overrides: dict[str, Any]) -> Any:
    from jdp.synth.base import get_method

    m = get_method(method)
    names = {f.name for f in dataclasses.fields(m.config_cls)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(
            f"unknown option {unknown[0]!r} for method {method!r}; options: {sorted(names)}"
        )
    return m.make_config(None, **overrides)


@contextlib.contextmanager
def one_line_warnings(command: str) -> Iterator[None]:
    """Collect warnings and print each as one ``jdp COMMAND: warning: message`` line on
    stderr (clipped values, a large delta, ...)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            yield
        finally:
            for w in caught:
                print(f"jdp {command}: warning: {w.message}", file=sys.stderr)


def check_output_directory(path: Path, *, force: bool) -> None:
    """Refuse to fit into a non-empty ``--out`` without ``--force`` (before any data is read).

    Every fit spends its budget anew, and nothing records the earlier fits: overwriting a saved
    model silently loses the record that the data was already used once.
    """
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {path} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise ValueError(
            f"--out {path} is not empty (a saved model?); a new fit spends the privacy budget "
            "again: choose another directory or pass --force"
        )


def run(args: argparse.Namespace) -> int:
    from accounting import PrivacyBudget
    from jdp.cli._args import command_key
    from jdp.synth.base import fit_model
    from jdp.synth.io import save

    check_output_directory(Path(args.out), force=args.force)
    budget = PrivacyBudget(epsilon=args.epsilon, delta=args.delta)
    with one_line_warnings("fit"):
        config = make_config(args.method, parse_overrides(args.set))
        frame, schema = training_data(args)
        model = fit_model(
            command_key(args.seed, "fit"), args.method, frame, budget, config, schema=schema
        )
    path = save(model, args.out)
    if args.json:
        print(
            json.dumps(
                {
                    "method": model.method,
                    "epsilon": model.epsilon(),
                    "delta": budget.delta,
                    "budget": {"epsilon": budget.epsilon, "delta": budget.delta},
                    "model_dir": str(path),
                    "ledger": model.ledger.to_dict(),
                }
            )
        )
    else:
        print(model.privacy_statement())
        print(f"saved {model.method} model to {path}")
    return 0
