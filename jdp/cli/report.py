"""``jdp report``: one report for a fitted model and its synthetic data, as ``report.html`` (one
self-contained page to open in a browser), ``report.md`` and ``report.json``.

The report holds the model's privacy ledger and statement (at the model's budget delta),
and, when real data is given, the evaluation of ``jdp evaluate`` with an overall fidelity
score and a verdict (each score beside the real data's own train/test split when a real test
table is given), pairwise-association heatmaps and a real-vs-synthetic marginal plot per
column; ``--image-shape 28x28`` adds a grid of synthetic images. The model
is given as ``--model DIR`` (as for ``jdp sample``) or as the first argument. The report is
written into a temporary directory beside ``--out`` and renamed into place at the end
(Ctrl-C leaves the old report or none); an ``--out`` holding a previous report is replaced
(other files in it are kept), a non-empty ``--out`` without a report is refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jdp.cli._args import add_command, add_flags, output_path
from jdp.cli.evaluate import (
    add_evaluation_arguments,
    add_real_data_arguments,
    evaluate_args,
    read_csv,
    real_data,
)

if TYPE_CHECKING:
    import pandas as pd

# jdp.eval (matplotlib, scikit-learn, pandas) is imported by the functions that use it, not
# here: ``jdp report --help`` and argument parsing stay fast.

GRID_IMAGES = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "report",
        __doc__,
        help="write an HTML + Markdown + JSON report (ledger, verdict, plots) for a fitted model",
    )
    parser.add_argument(
        "model_dir", metavar="MODEL_DIR", nargs="?", help="fitted model directory (or --model)"
    )
    parser.add_argument(
        "--model", metavar="DIR", help="fitted model directory (jdp fit --out), as jdp sample"
    )
    parser.add_argument(
        "--synthetic", required=True, metavar="PATH", help="synthetic CSV sampled from the model"
    )
    add_flags(parser, "out", out={"required": True, "help": "report directory"})
    add_real_data_arguments(parser)
    add_evaluation_arguments(parser)
    parser.add_argument(
        "--image-shape",
        metavar="HxW",
        help="draw the first 100 synthetic rows' features as HxW images",
    )
    add_flags(parser, "json", json={"help": "print the report as one JSON object"})
    parser.set_defaults(func=run)


def model_directory(args: argparse.Namespace) -> str:
    """The model directory: ``--model DIR`` or the positional ``MODEL_DIR`` (exactly one)."""
    if (args.model is None) == (args.model_dir is None):
        raise ValueError("expected the model directory once: --model DIR (or MODEL_DIR)")
    return args.model if args.model is not None else args.model_dir


def check_report_directory(text: str) -> Path:
    """``--out`` must be new, empty, or hold a previous report (``report.json``)."""
    from jdp.eval.report import JSON_FILE

    out = output_path(text, kind="dir")
    if out.is_dir() and any(out.iterdir()) and not (out / JSON_FILE).is_file():
        raise ValueError(
            f"--out {out} is not empty and holds no report: choose a new or empty directory"
        )
    return out


def run(args: argparse.Namespace) -> int:
    from jdp.eval.report import HTML_FILE, JSON_FILE, MARKDOWN_FILE, jsonable
    from jdp.synth.io import load, staged_directory

    model_dir = model_directory(args)
    out = check_report_directory(args.out)
    model = load(model_dir)
    synthetic = read_csv(args.synthetic, "synthetic")
    _check_columns(synthetic, model.schema.names)
    shape = _shape(args.image_shape) if args.image_shape else None
    with staged_directory(out) as staging:
        report, plots = _write(args, model, model_dir, synthetic, shape, staging)
    if args.json:
        print(json.dumps(jsonable(report)))
    else:
        print(report["privacy"]["statement"])
        if report["scores"] is not None:
            print(report["scores"]["verdict"])
        print(
            f"wrote {out / HTML_FILE}, {out / MARKDOWN_FILE} and {out / JSON_FILE} "
            f"({len(plots)} plots)"
        )
    return 0


def _write(args, model, model_dir, synthetic, shape, out: Path):  # type: ignore[no-untyped-def]
    """Write the report's files into ``out``; return the report and its plots."""
    from jdp.eval.plots import marginal_notes, marginal_plots

    evaluation, plots, notes, sections = None, [], [], {}
    if args.real_train or args.dataset:
        if args.target is None and (args.real_test or args.dataset):
            args.target = model.schema.target
        train, test, target = real_data(args)
        evaluation = evaluate_args(args, train, synthetic, test, target)
        aligned = synthetic[list(train.columns)]
        plots = marginal_plots(train, aligned, out / "plots")
        notes = marginal_notes(train, aligned)
        if test is not None:
            sections["mia"] = _mia(model, train, test, args.seed)
    if shape is not None:
        plots.append(_image_grid(synthetic, model.schema.target, shape, out / "plots"))
        notes.append(f"the first {GRID_IMAGES} synthetic rows drawn as images")
    report = write_report(
        out,
        evaluation=evaluation,
        ledger=model.ledger,
        delta=model.budget.delta,
        plots=plots,
        plot_notes=notes,
        meta={
            "method": model.method,
            "model_dir": str(model_dir),
            "synthetic": str(args.synthetic),
            "budget": {"epsilon": model.budget.epsilon, "delta": model.budget.delta},
            "config": dataclasses.asdict(model.config),
        },
        sections=sections,
        nonprivate_schema=model.schema.nonprivate,
    )
    return report, plots


def write_report(out: Path, **kwargs: Any) -> dict:
    """:func:`jdp.eval.report.write_report` (imported when a report is written)."""
    from jdp.eval.report import write_report

    return write_report(out, **kwargs)


def _mia(model, train: pd.DataFrame, test: pd.DataFrame, seed: int | None):  # type: ignore[no-untyped-def]
    """The membership-inference section (:mod:`jdp.audit.mia`): up to 1000 training records
    (members) against held-out test records, black-box attacks on fresh samples."""
    import jax

    from jdp.audit.mia import mia_section, mia_split, synthetic_data_mia

    m = min(1000, len(train), len(test) // 2)
    seed = 0 if seed is None else seed
    members, nonmembers, reference = mia_split(train, test, members=m, seed=seed)
    results = synthetic_data_mia(jax.random.key(seed), model, members, nonmembers, reference)
    return mia_section(results, method=model.method, epsilon=model.epsilon())


def _check_columns(synthetic: pd.DataFrame, names: list[str]) -> None:
    missing = [c for c in names if c not in synthetic.columns]
    if missing:
        raise ValueError(
            f"column {missing[0]!r} of the model's schema is missing from the synthetic CSV"
        )
    extra = [c for c in synthetic.columns if c not in names]
    if extra:
        raise ValueError(f"column {extra[0]!r} of the synthetic CSV is not in the model's schema")


def _shape(text: str) -> tuple[int, int]:
    try:
        height, width = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"expected --image-shape as HxW (e.g. 28x28), got {text!r}") from None
    if height < 1 or width < 1:
        raise ValueError(f"expected a positive --image-shape, got {text!r}")
    return height, width


def _image_grid(
    synthetic: pd.DataFrame, target: str | None, shape: tuple[int, int], out: Path
) -> Path:
    from jdp.eval._tables import is_categorical
    from jdp.eval.plots import image_grid

    features = [c for c in synthetic.columns if c != target]
    categorical = [c for c in features if is_categorical(synthetic[c])]
    if categorical:
        raise ValueError(
            f"--image-shape needs numeric features, but column {categorical[0]!r} is categorical"
        )
    if len(features) != shape[0] * shape[1]:
        raise ValueError(
            f"--image-shape {shape[0]}x{shape[1]} needs {shape[0] * shape[1]} feature columns, got {len(features)}"
        )
    head = synthetic.head(GRID_IMAGES)
    return image_grid(
        head[features].to_numpy(dtype=float),
        out / "samples.png",
        image_shape=shape,
        labels=None if target is None else head[target].tolist(),
        title="synthetic samples",
    )
