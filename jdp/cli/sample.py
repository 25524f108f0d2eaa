"""``jdp sample``: draw synthetic rows from a saved model and write them as CSV.

Sampling reads only the saved model (post-processing): it costs no privacy. Without
``--seed`` the draws come from fresh OS entropy.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jdp.cli._args import add_command, add_flags


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "sample", __doc__, help="sample synthetic rows from a saved model"
    )
    parser.add_argument(
        "--model", required=True, metavar="DIR", help="model directory (jdp fit --out)"
    )
    parser.add_argument("-n", "--rows", type=int, required=True, help="number of rows")
    add_flags(
        parser,
        "out",
        "seed",
        "json",
        out={"required": True, "metavar": "PATH", "help": "CSV file to write"},
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jdp.cli._args import command_key
    from jdp.synth.base import sample_model
    from jdp.synth.io import load

    model = load(args.model)
    frame = sample_model(command_key(args.seed, "sample"), model, args.rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    if args.json:
        print(json.dumps({"method": model.method, "rows": len(frame), "path": str(out)}))
    else:
        print(f"wrote {len(frame)} synthetic rows ({model.method}) to {out}")
    return 0
