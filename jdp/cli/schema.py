"""``jdp schema``: write a table's schema file, released with DP (``--dp``) or as a template.

With ``--dp --epsilon E`` the bounds of numeric columns and the categories of categorical
columns are released with differential privacy (:func:`jdp.data.dp_schema.infer_schema_dp`: a
Laplace log-histogram inside a coarse public range, whose bounds cover the bulk of the data;
thresholded noisy category counts) and the file carries the ledger of that release, so
``jdp fit --schema FILE`` charges its cost to the model's budget. The released bounds are
printed with the noisy share of each column's values outside them (or that a column had no
signal and kept its coarse range). Column kinds are public: ``--dataset NAME`` takes them (and
the declared point masses and nullable columns) from the dataset's declared schema,
``--data CSV`` from ``--columns NAME:KIND[:LOW:HIGH],...`` (KIND is continuous, integer or
categorical; LOW:HIGH is the coarse public range, default ``--range``).
Without ``--dp`` nothing is read from the records: the file is a template (the CSV header's
names, the kinds given, null bounds and categories to fill in; a named dataset's declared
schema), which does not load until it is filled in. The file is written atomically; an
existing ``--out`` is refused unless ``--overwrite`` (a new release spends budget again).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

from jdp.cli._args import add_command, add_flags

#: The coarse public range of a numeric column when ``--columns`` gives none.
DEFAULT_RANGE = (-1e9, 1e9)
#: Total delta of a release's category thresholds by default (split over the columns).
DEFAULT_DELTA = 1e-7
#: What a template asks the user to fill in (its ``description``; the fields hold null).
TEMPLATE_NOTE = (
    "template written by `jdp schema` without --dp: replace every null with the column's "
    "PUBLIC bounds or categories (never read them off the private data), or run "
    "`jdp schema --dp --epsilon E` to release them with differential privacy"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "schema", __doc__, help="write a schema file (DP release or template)"
    )
    add_flags(
        parser,
        "dataset",
        "data",
        "epsilon",
        "delta",
        "out",
        data={"help": "the private CSV (column kinds from --columns)"},
        epsilon={"help": "budget of the DP release (with --dp; > 0)"},
        delta={
            "default": DEFAULT_DELTA,
            "help": f"total delta of the category thresholds (default {DEFAULT_DELTA:g}), "
            "split over the categorical columns",
        },
        out={"required": True, "metavar": "FILE", "help": "schema JSON file to write"},
    )
    parser.add_argument(
        "--columns",
        metavar="SPEC",
        help="NAME:KIND[:LOW:HIGH],... for every CSV column (KIND: continuous, integer, "
        "categorical); with --dataset, overrides coarse ranges",
    )
    parser.add_argument("--target", metavar="NAME", help="the target column of --data")
    parser.add_argument(
        "--range",
        default=f"{DEFAULT_RANGE[0]:g}:{DEFAULT_RANGE[1]:g}",
        metavar="LOW:HIGH",
        help="coarse public range of numeric columns without one in --columns "
        f"(default {DEFAULT_RANGE[0]:g}:{DEFAULT_RANGE[1]:g})",
    )
    parser.add_argument(
        "--dp", action="store_true", help="release bounds and categories with DP (needs --epsilon)"
    )
    parser.add_argument(
        "--suppressed",
        choices=("drop", "other"),
        default="other",
        help="records holding a category the release suppressed: map them to an 'other' "
        "category (default) or drop them",
    )
    parser.add_argument(
        "--overwrite",
        "--force",
        dest="force",
        action="store_true",
        help="overwrite --out (a new release spends budget again; alias --force, as in fit)",
    )
    add_flags(parser, "seed", "json")
    parser.set_defaults(func=run)


def parse_range(text: str, what: str = "--range") -> tuple[float, float]:
    """``"LOW:HIGH"`` -> ``(low, high)``, finite with ``low < high``."""
    low, sep, high = str(text).partition(":")
    try:
        a, b = float(low), float(high)
    except ValueError:
        a = b = math.nan
    if not sep or not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"expected {what} LOW:HIGH with finite LOW < HIGH, got {text!r}")
    return a, b


def parse_columns(spec: str) -> tuple[dict[str, str], dict[str, tuple[float, float]]]:
    """``"age:integer:0:150,sex:categorical"`` -> ``(kinds, ranges)``."""
    from jdp.data.schema import KINDS

    kinds: dict[str, str] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for item in (s.strip() for s in str(spec).split(",")):
        name, _, rest = item.partition(":")
        kind, _, bounds = rest.partition(":")
        if not name or kind not in KINDS or (bounds and kind == "categorical"):
            raise ValueError(
                f"expected --columns NAME:KIND[:LOW:HIGH],... with KIND in {KINDS} (no range "
                f"for categorical), got {item!r}"
            )
        if name in kinds:
            raise ValueError(f"column {name!r} appears twice in --columns")
        kinds[name] = kind
        if bounds:
            ranges[name] = parse_range(bounds, f"a range for column {name!r}")
    return kinds, ranges


def check_out_file(path: Path, *, force: bool) -> None:
    """Refuse ``--out`` where it cannot be written, or exists without ``--force`` (checked
    before any data is read)."""
    if not str(path) or path.name in ("", ".", ".."):
        raise ValueError(f"expected --out a file name, got {str(path)!r}")
    if path.is_dir():
        raise ValueError(f"--out {path} is a directory; expected a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"--out {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"--out {path}: folder {parent} is not writable")
    if path.exists() and not force:
        raise ValueError(
            f"--out {path} exists; a new DP release spends budget again: choose another file "
            "or pass --overwrite"
        )


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The public inputs of the release from the flags (no record is read): kinds, coarse
    ranges and target; for a named dataset also its declared point masses and nullable
    columns."""
    if bool(args.dataset) == bool(args.data):
        raise ValueError("expected either --dataset NAME or --data CSV (with --columns)")
    default = parse_range(args.range)
    kinds, ranges = parse_columns(args.columns) if args.columns else ({}, {})
    public: dict[str, Any] = {}
    if args.dataset:
        from jdp.data.datasets import schema_json
        from jdp.data.schema import Schema

        declared = Schema.from_json(schema_json(args.dataset))
        unknown = sorted(set(kinds) - set(declared.names))
        if unknown:
            raise ValueError(f"column {unknown[0]!r} of --columns is not in {args.dataset}")
        bad = [n for n in kinds if kinds[n] != declared[n].kind]
        if bad:
            raise ValueError(f"column {bad[0]!r}: --columns gives another kind than declared")
        kinds = {c.name: c.kind for c in declared.columns}
        target = args.target or declared.target
        public = {
            "point_masses": {c.name: c.point_masses for c in declared.columns if c.point_masses},
            "nullable": [c.name for c in declared.columns if c.nullable],
        }
    else:
        if not args.columns:
            raise ValueError("expected --columns NAME:KIND[:LOW:HIGH],... with --data")
        target = args.target
    if target is not None and kinds.get(target) != "categorical":
        raise ValueError(f"expected --target a categorical column, got {target!r}")
    numeric = [n for n, k in kinds.items() if k != "categorical"]
    ranges = {n: ranges.get(n, default) for n in numeric}
    return {"kinds": kinds, "ranges": ranges, "target": target, **public}


def _read_private_csv(path: str, kinds: dict[str, str]) -> Any:
    """The CSV, with categorical columns as text (``"NA"`` stays a category) and only empty
    cells missing; its columns must be exactly those of ``--columns``."""
    import pandas as pd

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"data file not found: {file}")
    text = {n: str for n, k in kinds.items() if k == "categorical"}
    try:
        frame = pd.read_csv(
            file, dtype=text, skipinitialspace=True, keep_default_na=False, na_values=[""]
        )
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read CSV {file}: {str(exc).splitlines()[0]}") from None
    _check_header([str(c) for c in frame.columns], kinds)
    return frame


def _check_header(header: list[str], kinds: dict[str, str]) -> None:
    extra = [c for c in header if c not in kinds]
    if extra:
        raise ValueError(f"column {extra[0]!r} of the data has no kind in --columns")
    missing = [n for n in kinds if n not in header]
    if missing:
        raise ValueError(f"column {missing[0]!r} of --columns is not in the data")


def template(args: argparse.Namespace) -> dict[str, Any]:
    """The schema template (no record read): a dataset's declared schema, or the CSV header's
    names with the kinds of ``--columns`` and null bounds/categories to fill in."""
    if args.dataset:
        from jdp.data.datasets import schema_json

        return json.loads(schema_json(args.dataset))
    import pandas as pd

    file = Path(args.data)
    if not file.is_file():
        raise FileNotFoundError(f"data file not found: {file}")
    header = [str(c) for c in pd.read_csv(file, nrows=0).columns]  # the format, no record
    kinds = parse_columns(args.columns)[0] if args.columns else {}
    if kinds:
        _check_header(header, kinds)
    columns = []
    for name in header:
        kind = kinds.get(name)
        entry: dict[str, Any] = {"name": name, "kind": kind}
        if kind == "categorical":
            entry["categories"] = None
        else:
            entry["lower"] = entry["upper"] = None
        columns.append(entry)
    return {"description": TEMPLATE_NOTE, "target": args.target, "columns": columns}


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    check_out_file(out, force=args.force)
    if not args.dp:
        if args.epsilon is not None:
            raise ValueError("--epsilon is spent only with --dp; without it a template is written")
        doc = template(args)
        from jdp.data.schema import write_atomic

        write_atomic(out, json.dumps(doc, indent=1) + "\n")
        if args.json:
            print(json.dumps({"out": str(out), "dp": False, "template": not args.dataset}))
        else:
            kind = "declared schema" if args.dataset else "template (fill in the nulls)"
            print(f"wrote the {kind} to {out}")
        return 0
    if args.epsilon is None:
        raise ValueError("expected --epsilon E (> 0) with --dp")
    from accounting.validation import check_open_unit, check_positive

    check_positive("epsilon", args.epsilon)
    check_open_unit("delta", args.delta)
    public = _inputs(args)
    if args.dataset:
        from jdp.data.datasets import load_dataset

        frame = load_dataset(args.dataset).train
    else:
        frame = _read_private_csv(args.data, public["kinds"])
    release = _release(args, frame, public)
    release.save(out)
    if args.json:
        summary = {"out": str(out), "dp": True, "epsilon": release.epsilon}
        summary |= {"delta": release.delta, "clipped": dict(release.clipped)}
        print(json.dumps({**summary, "ledger": release.ledger.to_dict()}))
    else:
        print(release.privacy_statement())
        if release.clipped:
            print(release.bounds_report())
        print(f"wrote the DP schema release to {out} (jdp fit --schema {out} charges its cost)")
    return 0


def _release(args: argparse.Namespace, frame: Any, public: dict[str, Any]) -> Any:
    """The DP release: the noise from ``--seed`` (its own ``schema`` stream) or OS entropy."""
    import numpy as np

    from jdp.data.dp_schema import infer_schema_dp

    entropy = None if args.seed is None else [args.seed, zlib.crc32(b"schema")]
    n_categorical = sum(k == "categorical" for k in public["kinds"].values())
    return infer_schema_dp(
        np.random.default_rng(entropy),
        frame,
        epsilon=args.epsilon,
        category_delta=args.delta / max(n_categorical, 1),
        suppressed=args.suppressed,
        **public,
    )
