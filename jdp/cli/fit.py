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
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from jdp.cli._args import DATA_FLAGS, add_command, add_flags, model_summary, one_line_warnings
from jdp.data.schema import Schema

if TYPE_CHECKING:
    from jdp.data.dp_schema import SchemaRelease


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "fit", __doc__, help="fit a DP synthesizer and save it")
    add_flags(
        parser,
        "method",
        "epsilon",
        "delta",
        *DATA_FLAGS,
        "out",
        method={"default": "marginals", "help": "synthesizer name (default: marginals)"},
        epsilon={"required": True},
        out={"required": True, "help": "directory to save the model in"},
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
    add_flags(parser, "seed", "json", "quiet", "verbose")
    parser.set_defaults(func=run)


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
        print(json.dumps(model_summary(model, model_dir=str(path))))
    else:
        print(model.privacy_statement())
        print(f"saved {model.method} model to {path}")
    return 0
