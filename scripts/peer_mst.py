"""jdp's histogram methods beside smartnoise-synth's MST, on the same cells.

Issue 26, item 5: is the best jdp method's 2-way TVD at or below MST's (McKenna et al. 2021,
as shipped by smartnoise-synth), with its TSTR lead kept? Each table of ``--tables`` (at most its
first 5,000 training rows) is cut into the cells ``marginals`` uses (its default scale, 32
cells per numeric column: :class:`jdp.data.cells.CellCodec`; ``tree``, also shown, keeps its
own scale); MST is fitted on those cell indices (every column
categorical, its whole budget on the model, ``preprocessor_eps=0``) by ``--peer-python``, an
interpreter with smartnoise-synth installed (it needs torch and opacus, so it lives outside
jdp's environment: ``python3 -m venv peer && peer/bin/pip install smartnoise-synth``). Its
sampled cells are decoded by jdp's codec, so both sides are scored by the same evaluator:
numeric columns off (mean > 50% off or median outside the real IQR), TSTR AUROC (logistic
regression) and the average 2-way TVD against the training split, each a mean over
``--seeds`` fits at ``--epsilon`` (delta = 1e-5).

Caveat, in MST's favour: smartnoise-synth reads each categorical column's categories off the
data it is given (its own non-private step), so it knows which cells are empty; jdp's methods
use the public cell domain.

Usage::

    python scripts/peer_mst.py --peer-python peer/bin/python --quick
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

import _harness as H
import numpy as np
import pandas as pd
from numeric_columns import auroc, load, numeric_report, one_fit

from jdp.data.cells import CellCodec
from jdp.data.quantile_scale import scale_table
from jdp.eval.marginals import two_way_tvd
from jdp.random import key_from_seed
from jdp.synth.marginals import MarginalsConfig

TABLES = ("german", "crx", "spambase", "adult", "creditcard", "creditcard-paper")
METHODS = ("marginals", "tree")
BINS = 32

#: Run by ``--peer-python``: MST on a CSV of cell indices, its sample written beside it.
PEER = """
import sys, random
import numpy as np, pandas as pd
from snsynth import Synthesizer
src, dst, eps, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
np.random.seed(seed); random.seed(seed)
df = pd.read_csv(src)
mst = Synthesizer.create("mst", epsilon=eps, delta=1e-5)
mst.fit(df, categorical_columns=list(df.columns), preprocessor_eps=0.0)
pd.DataFrame(mst.sample(len(df)), columns=df.columns).to_csv(dst, index=False)
"""


def mst_fit(args: argparse.Namespace, data: Any, seed: int, work: Path) -> dict[str, Any]:
    """One MST fit on ``data``'s cells by the peer interpreter, scored by jdp's evaluator."""
    table = scale_table(None, data.schema.conform(data.train), None, MarginalsConfig().scale).data
    codec = CellCodec(table.schema, BINS)
    src, dst = work / f"{data.name}.csv", work / f"{data.name}_mst_{seed}.csv"
    pd.DataFrame(codec.encode(table), columns=table.schema.names).to_csv(src, index=False)
    peer = [str(args.peer_python), "-c", PEER, str(src), str(dst), str(args.epsilon), str(seed)]
    seconds, _ = H.timed(subprocess.run, peer, check=True, capture_output=True)
    cells = pd.read_csv(dst)[table.schema.names].to_numpy().astype(np.int64)
    synthetic = codec.decode(key_from_seed(seed), cells)
    off, cols, _ = numeric_report(data, synthetic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score = auroc(data, synthetic, seed)
    return {
        "off": off,
        "cols": cols,
        "AUROC": score,
        "tvd_2way": two_way_tvd(data.train, synthetic),
        "seconds": seconds,
    }


def mean_row(name: str, method: str, fits: list[dict[str, Any]]) -> dict[str, Any]:
    row = {k: float(np.mean([f[k] for f in fits])) for k in ("off", "AUROC", "tvd_2way", "seconds")}
    return {"table": name, "method": method, "cols": fits[0]["cols"], "seeds": len(fits), **row}


def compute(args: argparse.Namespace) -> dict[str, Any]:
    if args.peer_python is None:
        H.log("no --peer-python: nothing to compare against")
        return {"skipped": "no --peer-python given"}
    tables = args.tables or (["german", "crx"] if args.quick else list(TABLES))
    seeds = range(args.seed, args.seed + (args.seeds or (1 if args.quick else 2)))
    rows, real = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in tables:
            data = load(name, True)
            if data is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                real[name] = auroc(data, data.train, args.seed)
            for method in METHODS:
                fits = [one_fit(data, method, "default", args.epsilon, s) for s in seeds]
                rows.append(mean_row(name, method, fits))
                H.log(f"{name:10s} {method:10s} {rows[-1]}")
            rows.append(mean_row(name, "MST", [mst_fit(args, data, s, Path(tmp)) for s in seeds]))
            H.log(f"{name:10s} MST        {rows[-1]}")
    return {"epsilon": args.epsilon, "real_auroc": real, "rows": rows}


def render(result: dict[str, Any]) -> str:
    if result.get("skipped"):
        return f"skipped: {result['skipped']}"
    lines = [
        (
            f"epsilon = {result['epsilon']:g}, delta = 1e-5, on marginals' cells (its scale, {BINS} "
            "per numeric column); MST = smartnoise-synth's; off = numeric columns whose mean is "
            "> 50% off or median outside the real IQR; AUROC = TSTR, logistic regression"
        ),
        "",
        "| table | real AUROC | method | seeds | off / cols | AUROC | 2-way TVD | s / fit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['table']} | {result['real_auroc'][r['table']]:.3f} | {r['method']} | "
            f"{r['seeds']} | {r['off']:.1f} / {r['cols']} | {r['AUROC']:.3f} | "
            f"{r['tvd_2way']:.3f} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="german and crx, one seed", seed=0)
    p.add_argument("--peer-python", type=Path, help="an interpreter with smartnoise-synth")
    p.add_argument("--tables", type=H.subset(TABLES), help=f"comma-separated of {TABLES}")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seeds", type=int, default=None, help="fits per row (default 2; quick 1)")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
