"""``jdp sample``: draw synthetic rows from a saved model and write them as CSV.

Sampling reads only the saved model (post-processing): it costs no privacy. Without
``--seed`` the draws come from fresh OS entropy. ``-n`` defaults to the model's released noisy
row count when its method releases one (``-n noisy`` asks for it explicitly); otherwise ``-n``
is required (the exact training row count is private and never stored). Rows are drawn and
written in chunks of 50,000 (:func:`jdp.synth.base.sample_chunks`: chunk i > 0 uses the key
``fold_in(key, i)``), so memory stays bounded whatever ``-n``; there is no maximum, but after the
first chunk the output's size is estimated and a file that would not fit on its disk is refused.
The CSV is written beside ``--out`` and renamed into place at the end (Ctrl-C or kill -9 leave
the old file or none); ``--out -`` streams to stdout. ``--where`` (repeatable) keeps only rows
that satisfy every condition -- ``COLUMN=VALUE`` on a categorical or integer column, a range
``COLUMN>V``, ``>=``, ``<``, ``<=`` on a numeric one, quoted in a shell (``--where 'age>=60'``;
:func:`jdp.synth.conditions.parse_where`) --, drawn by rejection from the model
(:func:`jdp.synth.conditions.matching_chunks`; a condition too rare under the model fails with
its acceptance rate).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import IO

from jdp.cli._args import add_command, add_flags, json_line, output_path, replaced_file

NOISY = "noisy"


def rows_value(text: str) -> int | str:
    """``-n``'s type: a positive integer or ``noisy``."""
    if text == NOISY:
        return NOISY
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of rows or 'noisy', got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected n >= 1, got {value}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "sample", __doc__, help="sample synthetic rows from a saved model"
    )
    parser.add_argument(
        "--model", required=True, metavar="DIR", help="model directory (jdp fit --out)"
    )
    parser.add_argument(
        "-n",
        "--rows",
        type=rows_value,
        metavar="N|noisy",
        help="number of rows (default: the model's released noisy row count, if any)",
    )
    add_flags(
        parser,
        "out",
        "seed",
        "json",
        "quiet",
        out={"required": True, "metavar": "PATH", "help": "CSV file to write ('-': stdout)"},
    )
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="CONDITION",
        help=(
            "only rows satisfying COLUMN=VALUE (categorical or integer column) or a range "
            "COLUMN>V, COLUMN>=V, COLUMN<V, COLUMN<=V (numeric column; quote it in a shell); "
            "repeatable, all must hold; by rejection"
        ),
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jdp.cli._args import command_key
    from jdp.synth.base import rows_to_sample
    from jdp.synth.conditions import matching_chunks, parse_where
    from jdp.synth.io import load

    to_stdout = args.out == "-"
    out = None if to_stdout else output_path(args.out, kind="file")
    model = load(args.model)
    rows = rows_to_sample(model, None if args.rows == NOISY else args.rows, hint="-n N")
    where = parse_where(args.where, model.schema)
    chunks = matching_chunks(command_key(args.seed, "sample"), model, rows, where)
    if to_stdout:
        _write(chunks, sys.stdout, rows, out=None, quiet=True)
    else:
        with replaced_file(out) as tmp, open(tmp, "w", newline="") as stream:
            _write(chunks, stream, rows, out=out, quiet=args.quiet)
    path = "stdout" if to_stdout else str(out)
    if args.json:
        print(json_line({"method": model.method, "rows": rows, "path": path}), file=_info(out))
    else:
        print(f"wrote {rows} synthetic rows ({model.method}) to {path}", file=_info(out))
    return 0


def _info(out: Path | None) -> IO[str]:
    """Where the summary goes: stdout, or stderr when the CSV itself goes to stdout."""
    return sys.stderr if out is None else sys.stdout


def _write(chunks, stream: IO[str], rows: int, *, out: Path | None, quiet: bool) -> None:  # type: ignore[no-untyped-def]
    """Write the chunks as one CSV; after the first, refuse a file its disk cannot hold."""
    from jdp.progress import no_progress, phase

    with no_progress(quiet), phase("writing rows", total=rows) as shown:
        for i, frame in enumerate(chunks):
            frame.to_csv(stream, index=False, header=i == 0)
            if i == 0 and out is not None:
                _check_space(stream, len(frame), rows, out)
            shown.update(len(frame))


def _check_space(stream: IO[str], written: int, rows: int, out: Path) -> None:
    from jdp.synth.base import byte_size

    stream.flush()
    per_row = stream.tell() / written
    need = per_row * (rows - written)
    free = shutil.disk_usage(Path(stream.name).parent).free
    if need > free:
        raise ValueError(
            f"-n {rows} would write about {byte_size(need)} to {out}, but its disk has "
            f"{byte_size(free)} free (about {per_row:.0f} bytes per row)"
        )
