"""``jdp schema``: write a table's schema file, released with DP (``--dp``) or as a template.

With ``--dp --epsilon E`` the bounds of numeric columns and the categories of categorical
columns are released with differential privacy (:func:`jdp.data.dp_schema.infer_schema_dp`: a
Laplace log-histogram inside a coarse public range, whose bounds cover the bulk of the data;
thresholded noisy category counts) and the file carries the ledger of that release, so
``jdp fit --schema FILE`` charges its cost to the model's budget. The released bounds are
printed with the noisy share of each column's values outside them (or that a column had no
signal and kept its coarse range). Column kinds are public: ``--dataset NAME`` takes them (and
the declared point masses and nullable columns) from the dataset's declared schema,
``--data CSV`` from ``--columns NAME:KIND[:LOW:HIGH],...`` (KIND is continuous, integer, date
or categorical; LOW:HIGH is the coarse public range, default ``--range``; two ISO dates for a
date column, which has no default: ``visit:date:2000-01-01:2030-12-31``).
``--ignore COL`` leaves columns out (never read; listed in the schema's ``ignore``, so
``jdp fit`` drops them) and ``--nullable COL`` declares columns whose missing values are
modelled; both repeat or take comma-separated names. Every problem with the inputs is
reported at once, in one error line.
Without ``--dp`` no value is released: the file is a template drafted from public metadata,
the CSV header's names and the dtypes its parser gives (:func:`jdp.data.schema.draft_schema`):
integer columns ``integer``, floats ``continuous``, text ``categorical``, bool
``categorical`` [false, true]; identifiers by name (``id``, ``*_id``, ``uuid``), dates
and likely free text by name (comment, description, notes, ...) go to ``ignore`` with the
reason in the template's ``description``; ``--columns`` kinds override the draft. Bounds and
categories stay null, to be declared or released with ``--dp``: the template does not load
until they are filled in (a named dataset's declared schema is written as it is). The file is
written atomically; an existing ``--out`` is refused unless ``--overwrite`` (a new release
spends budget again).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

from jdp.cli._args import add_command, add_flags, json_line

#: The coarse public range of a numeric column when ``--columns`` gives none.
DEFAULT_RANGE = (-1e9, 1e9)
#: What a template asks the user to fill in (its ``description``; the fields hold null).
TEMPLATE_NOTE = (
    "template written by `jdp schema` without --dp, drafted from the column names and dtypes "
    "only (check every kind): replace every null with the column's PUBLIC bounds or "
    "categories (never read them off the private data), or run `jdp schema --dp --epsilon E` "
    "to release them with differential privacy. Columns listed in ignore are not modelled."
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
            "default": 1e-7,
            "help": "delta of the whole DP release (default 1e-7)",
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
        "--ignore",
        action="append",
        metavar="COL",
        help="leave column COL out of the schema (an identifier, free text, a date); "
        "repeatable or comma-separated",
    )
    parser.add_argument(
        "--nullable",
        action="append",
        metavar="COL",
        help="column COL may hold missing values (modelled); repeatable or comma-separated",
    )
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
        "--noise",
        choices=("gaussian", "laplace"),
        default="gaussian",
        help="one joint Gaussian release of all histograms (default: lower thresholds), or "
        "one Laplace release per column (pure epsilon-DP bounds)",
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


def parse_range(text: str, what: str = "--range", *, dates: bool = False) -> tuple[Any, Any]:
    """``"LOW:HIGH"`` -> ``(low, high)``, finite with ``low < high``; with ``dates`` two ISO
    dates (``"2000-01-01:2030-12-31"``), returned as the text :func:`infer_schema_dp` reads."""
    low, sep, high = str(text).partition(":")
    if dates:
        from jdp.data.schema import date_to_days

        try:
            ok = bool(sep) and date_to_days(low) < date_to_days(high)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"expected {what} LOW:HIGH as two ISO dates, LOW first, got {text!r}")
        return low, high
    try:
        a, b = float(low), float(high)
    except ValueError:
        a = b = math.nan
    if not sep or not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"expected {what} LOW:HIGH with finite LOW < HIGH, got {text!r}")
    return a, b


def parse_columns(spec: str) -> tuple[dict[str, str], dict[str, tuple[float, float]]]:
    """``"age:integer:0:150,sex:categorical"`` -> ``(kinds, ranges)``; every bad item is
    reported in one error (:class:`jdp.data.schema.Problems`)."""
    from jdp.data.schema import Problems

    problems = Problems()
    parsed = _parse_columns(spec, problems)
    problems.raise_if_any()
    return parsed


def _parse_columns(
    spec: str, problems: Any
) -> tuple[dict[str, str], dict[str, tuple[float, float]]]:
    """The items of ``--columns`` that parse; a problem added for each that does not."""
    from jdp.data.schema import KINDS

    kinds: dict[str, str] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for item in (s.strip() for s in str(spec).split(",")):
        name, _, rest = item.partition(":")
        kind, _, bounds = rest.partition(":")
        if not name or kind not in KINDS or (bounds and kind == "categorical"):
            problems.add(
                ValueError(
                    f"expected --columns NAME:KIND[:LOW:HIGH],... with KIND in {KINDS} (no "
                    f"range for categorical), got {item!r}"
                )
            )
            continue
        if name in kinds:
            problems.add(ValueError(f"column {name!r} appears twice in --columns"))
            continue
        kinds[name] = kind
        if bounds:
            try:
                ranges[name] = parse_range(
                    bounds, f"a range for column {name!r}", dates=kind == "date"
                )
            except ValueError as exc:
                problems.add(exc)
    return kinds, ranges


def parse_names(values: list[str] | None, flag: str) -> list[str]:
    """The column names of a repeatable, comma-separated flag (``--ignore a,b --ignore c``),
    in order, each once."""
    names: list[str] = []
    for value in values or ():
        parts = [s.strip() for s in str(value).split(",") if s.strip()]
        if not parts:
            raise ValueError(f"expected {flag} COL[,COL...], got {value!r}")
        names += [n for n in parts if n not in names]
    return names


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


def _inputs(args: argparse.Namespace, header: list[str] | None = None) -> dict[str, Any]:
    """The public inputs of the release from the flags and the CSV ``header`` (no record is
    read): kinds, coarse ranges, target, nullable and ignored columns; for a named dataset
    also its declared point masses and nullable columns. Every problem is reported at once."""
    from jdp.data.schema import Problems

    if bool(args.dataset) == bool(args.data):
        raise ValueError("expected either --dataset NAME or --data CSV (with --columns)")
    problems = Problems()

    def attempt(parse: Any, fallback: Any) -> Any:
        try:
            return parse()
        except ValueError as exc:
            problems.errors.extend(_split(exc))
            return fallback

    default = attempt(lambda: parse_range(args.range), DEFAULT_RANGE)
    kinds, ranges = _parse_columns(args.columns, problems) if args.columns else ({}, {})
    ignore = attempt(lambda: parse_names(args.ignore, "--ignore"), [])
    nullable = attempt(lambda: parse_names(args.nullable, "--nullable"), [])
    public: dict[str, Any] = {}
    if args.dataset:
        from jdp.data.datasets import schema_json
        from jdp.data.schema import Schema

        declared = Schema.from_json(schema_json(args.dataset))
        header = declared.names
        for name in kinds:
            if name not in header:
                problems.add(ValueError(f"column {name!r} of --columns is not in {args.dataset}"))
            elif kinds[name] != declared[name].kind:
                problems.add(
                    ValueError(f"column {name!r}: --columns gives another kind than declared")
                )
        kinds = {c.name: c.kind for c in declared.columns}
        target = args.target or declared.target
        public["point_masses"] = {
            c.name: c.point_masses
            for c in declared.columns
            if c.point_masses and c.name not in ignore
        }
        nullable = [c.name for c in declared.columns if c.nullable and c.name not in ignore] + [
            n for n in nullable if not (n in declared.names and declared[n].nullable)
        ]
    else:
        target = args.target
        header = list(header or [])
        if not args.columns:
            problems.add(
                ValueError(
                    "expected --columns NAME:KIND[:LOW:HIGH],... with --data (draft the kinds "
                    "with `jdp schema --data CSV --out FILE`, without --dp)"
                )
            )
        else:
            _check_header(header, kinds, ignore, problems)
    for flag, names in (("--ignore", ignore), ("--nullable", nullable)):
        for name in names:
            if name not in header:
                problems.add(ValueError(f"column {name!r} of {flag} is not in the data"))
    for name in (n for n in nullable if n in ignore):
        problems.add(ValueError(f"column {name!r} is both in --ignore and --nullable"))
    if target is not None and target in ignore:
        problems.add(ValueError(f"--target {target!r} is in --ignore"))
    elif (
        target is not None and (args.dataset or args.columns) and kinds.get(target) != "categorical"
    ):
        problems.add(ValueError(f"expected --target a categorical column, got {target!r}"))
    problems.raise_if_any()
    kinds = {n: k for n, k in kinds.items() if n not in ignore}
    numeric = [n for n, k in kinds.items() if k not in ("categorical", "date")]
    ranges = {
        **{n: ranges[n] for n in kinds if n in ranges},
        **{n: ranges.get(n, default) for n in numeric},
    }
    return {
        "kinds": kinds,
        "ranges": ranges,
        "target": target,
        "nullable": nullable,
        "ignore": ignore,
        **public,
    }


def _split(exc: Exception) -> list[Exception]:
    """The problems of an exception raised by :meth:`Problems.raise_if_any` (one per line
    after its summary), else the exception itself."""
    lines = str(exc).splitlines()
    if len(lines) > 1 and all(line.startswith("- ") for line in lines[1:]):
        return [type(exc)(line[2:]) for line in lines[1:]]
    return [exc]


def _read_header(path: str) -> list[str]:
    """The CSV's column names (its format; no record is read)."""
    import pandas as pd

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"data file not found: {file}")
    try:
        return [str(c) for c in pd.read_csv(file, nrows=0).columns]
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read CSV {file}: {str(exc).splitlines()[0]}") from None


def _read_csv(path: str, text: list[str], skip: list[str]) -> Any:
    """The CSV without the ``skip`` columns, ``text`` columns read as text (``"1"`` stays a
    category), and only empty cells missing (``"NA"`` stays a value), as ``jdp fit`` reads
    it (:func:`jdp.data.read.read_csv`)."""
    import pandas as pd

    file = Path(path)
    skipped = set(skip)
    try:
        return pd.read_csv(
            file,
            dtype={n: str for n in text},
            skipinitialspace=True,
            keep_default_na=False,
            na_values=[""],
            usecols=lambda name: name not in skipped,
        )
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read CSV {file}: {str(exc).splitlines()[0]}") from None


def _check_header(
    header: list[str], kinds: dict[str, str], ignore: list[str], problems: Any
) -> None:
    """Add a problem for every data column (not ignored) without a kind, and every
    ``--columns`` name not in the data."""
    for name in header:
        if name not in kinds and name not in ignore:
            problems.add(ValueError(f"column {name!r} of the data has no kind in --columns"))
    for name in kinds:
        if name not in header:
            problems.add(ValueError(f"column {name!r} of --columns is not in the data"))


def template(args: argparse.Namespace) -> dict[str, Any]:
    """The schema template (no value released): a dataset's declared schema, or a draft from
    the CSV's header names and parsed dtypes (:func:`jdp.data.schema.draft_schema`), with the
    kinds of ``--columns``, ``--ignore`` and ``--nullable`` applied and null
    bounds/categories to fill in."""
    if args.dataset:
        from jdp.data.datasets import schema_json

        return json.loads(schema_json(args.dataset))
    from jdp.data.schema import Problems, draft_schema

    header = _read_header(args.data)
    problems = Problems()
    kinds: dict[str, str] = {}
    ignore: list[str] = []
    nullable: list[str] = []
    try:
        kinds = parse_columns(args.columns)[0] if args.columns else {}
    except ValueError as exc:
        problems.errors += _split(exc)
    try:
        ignore = parse_names(args.ignore, "--ignore")
        nullable = parse_names(args.nullable, "--nullable")
    except ValueError as exc:
        problems.add(exc)
    problems.raise_if_any()
    # the dtypes of the columns without a --columns kind, as `jdp fit` parses them: the
    # parser reads every cell, but only the dtype (public format) is kept, never a value
    need = [n for n in header if n not in kinds and n not in ignore]
    dtypes: dict[str, Any] = dict.fromkeys(header)
    if need:
        keep = set(need)
        parsed = _read_csv(args.data, [], [n for n in header if n not in keep]).dtypes
        dtypes |= {str(n): d for n, d in parsed.items()}
    return draft_schema(
        dtypes,
        target=args.target,
        kinds=kinds,
        ignore=ignore,
        nullable=nullable,
        description=TEMPLATE_NOTE,
    )


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    check_out_file(out, force=args.force)
    if not args.dp:
        if args.epsilon is not None:
            raise ValueError("--epsilon is spent only with --dp; without it a template is written")
        doc = template(args)
        from jdp.data.schema import write_atomic

        write_atomic(out, json.dumps(doc, indent=1) + "\n")
        ignored = list(doc.get("ignore", []))
        if args.json:
            summary = {"out": str(out), "dp": False, "template": not args.dataset}
            print(json_line({**summary, "ignore": ignored}))
        else:
            kind = "declared schema" if args.dataset else "template (fill in the nulls)"
            print(f"wrote the {kind} to {out}")
            if ignored and not args.dataset:
                print("ignored columns (reasons in its description): " + ", ".join(ignored))
        return 0
    if args.epsilon is None:
        raise ValueError("expected --epsilon E (> 0) with --dp")
    if bool(args.dataset) == bool(args.data):
        raise ValueError("expected either --dataset NAME or --data CSV (with --columns)")
    from accounting.validation import check_open_unit, check_positive
    from jdp.data.schema import Problems

    problems = Problems()
    for check in (
        lambda: check_positive("epsilon", args.epsilon),
        lambda: check_open_unit("delta", args.delta),
    ):
        try:
            check()
        except (TypeError, ValueError) as exc:
            problems.add(exc)
    header = None if args.dataset else _read_header(args.data)
    public: dict[str, Any] = {}
    try:
        public = _inputs(args, header)
    except ValueError as exc:
        problems.errors.extend(_split(exc))
    problems.raise_if_any()
    if args.dataset:
        from jdp.data.datasets import load_dataset

        frame = load_dataset(args.dataset).train
    else:
        text = [n for n, k in public["kinds"].items() if k == "categorical"]
        frame = _read_csv(args.data, text, public["ignore"])
    release = _release(args, frame, public)
    release.save(out)
    if args.json:
        summary = {"out": str(out), "dp": True, "epsilon": release.epsilon}
        summary |= {"delta": release.delta, "clipped": dict(release.clipped)}
        if release.suppressed is not None:
            summary |= {"suppressed": release.suppressed._asdict()}
        summary |= {"ignore": list(release.schema.ignore)}
        print(json_line({**summary, "ledger": release.ledger.to_dict()}))
    else:
        print(release.privacy_statement())
        if release.clipped or release.suppressed is not None:
            print(release.bounds_report())
        print(f"wrote the DP schema release to {out} (jdp fit --schema {out} charges its cost)")
    return 0


def _release(args: argparse.Namespace, frame: Any, public: dict[str, Any]) -> Any:
    """The DP release: the noise from ``--seed`` (its own ``schema`` stream) or OS entropy."""
    import numpy as np

    from jdp.data.dp_schema import infer_schema_dp

    entropy = None if args.seed is None else [args.seed, zlib.crc32(b"schema")]
    return infer_schema_dp(
        np.random.default_rng(entropy),
        frame,
        epsilon=args.epsilon,
        delta=args.delta,
        noise=args.noise,
        suppressed=args.suppressed,
        **public,
    )
