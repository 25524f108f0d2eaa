"""A data holder's own table, end to end: the DP schema path against the declared schema.

Issue 28's check. Each table of ``--tables`` is read as a data holder would hold it: its
training split plus an integer ID, a date and a free-text note (the ID and the note left out by
``ignore``, the date a ``date`` column). Then, per method of ``--methods``:

* **declared**: the dataset's declared public schema (the date declared by its public range),
  fitted at ``--epsilon`` (delta = 1e-5);
* **DP schema**: :func:`jdp.data.dp_schema.infer_schema_dp` at ``--schema-epsilon`` (default
  0.3) with only what a data holder can state without looking: the kinds, the target, the
  declared point masses and nullable columns, and coarse ranges (``[0, 1e9]`` for a column
  declared non-negative, else ``[-1e9, 1e9]``; 1990 to 2030 for the date); the model is then
  fitted on the release under the same total ``--epsilon``, its ledger opening with the
  release's entries. Two variants: every column released (``all released``; refused when a
  column has no category frequent enough to pass its threshold), and the categorical
  columns declared from the dataset's codebook (``codebook``), only the bounds released.

Per row: the largest true share of a numeric column's values outside the released bounds
(clipped; the release's noisy figure beside it), the true shares of records holding a
suppressed category (mapped to "other", dropped) beside the released noisy ones, the ledger's
epsilon, TSTR AUROC with logistic regression on the real test split, and the 2-way marginal TVD
against the training split (both on the dataset's own columns). The true shares are the
evaluator's reading of the private table, printed here and never released by the library.

Usage::

    python scripts/own_table.py --quick --json    # crx and 5,000 Adult rows, marginals
    python scripts/own_table.py                   # all of Adult and crx, marginals and p3gm
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import _harness as H
import jax
import numpy as np
import pandas as pd
from numeric_columns import auroc, load

from accounting import PrivacyBudget
from jdp.data.datasets import Dataset
from jdp.data.dp_schema import infer_schema_dp
from jdp.data.schema import Column, Schema
from jdp.eval.marginals import two_way_tvd
from jdp.random import key_from_seed
from jdp.synth.base import fit_model, get_method, sample_model

TABLES = ("adult", "crx", "german")
DATES = ("1990-01-01", "2030-12-31")
EXTRA = ("id", "opened", "note")


def own_frame(data: Dataset, seed: int) -> pd.DataFrame:
    """The training split as the data holder keeps it: an ID, a date and a free-text note
    (unrelated to the rest: their only role is to be handled, not modelled well)."""
    rng = np.random.default_rng(seed)
    n = len(data.train)
    return data.train.assign(
        id=np.arange(10_000, 10_000 + n),
        opened=pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 3000, n), "D"),
        note=[f"remark {i}" for i in range(n)],
    )


def declared_schema(data: Dataset) -> Schema:
    """The dataset's declared schema with the date column declared and the rest ignored."""
    opened = Column(name="opened", kind="date", lower=DATES[0], upper=DATES[1])
    return Schema(
        columns=(*data.schema.columns, opened), target=data.schema.target, ignore=("id", "note")
    )


def coarse(column: Column) -> tuple[Any, Any]:
    """What a data holder states without looking: the sign of a column, or the date range."""
    if column.kind == "date":
        return DATES
    return (0.0, 1e9) if column.lower >= 0 else (-1e9, 1e9)


VARIANTS = ("all released", "codebook")


def release_for(
    frame: pd.DataFrame, schema: Schema, variant: str, epsilon: float, seed: int
) -> Any:
    """The DP schema release of ``variant`` (module docstring)."""
    numeric = [c for c in schema.columns if c.is_numeric]
    given = [c for c in schema.columns if not c.is_numeric] if variant == "codebook" else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return infer_schema_dp(
            np.random.default_rng(seed), frame, epsilon=epsilon, declared=given,
            kinds={c.name: c.kind for c in schema.columns},
            ranges={c.name: coarse(c) for c in numeric}, target=schema.target,
            ignore=list(schema.ignore),
            point_masses={c.name: c.point_masses for c in numeric if c.point_masses},
            nullable=[c.name for c in schema.columns if c.nullable],
        )  # fmt: skip


def true_shares(frame: pd.DataFrame, release: Any, declared: Schema) -> dict[str, Any]:
    """The evaluator's reading: the largest share clipped, and the records mapped/dropped."""
    clipped = {}
    for c in (c for c in declared.columns if c.is_numeric and c.kind != "date"):
        x = frame[c.name].astype(float)
        x = x[x.notna() & ~x.isin(c.point_masses)]
        got = release.schema[c.name]
        clipped[c.name] = float(((x < got.lower) | (x > got.upper)).mean())
    mapped = np.zeros(len(frame), bool)
    for name in release.other_columns():
        values = frame[name]
        mapped |= (values.notna() & ~values.isin(release.schema[name].categories)).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = len(release.conform(frame))
    worst = max(clipped, key=clipped.get)
    lost = release.suppressed
    return {
        "clipped": clipped[worst],
        "clipped_column": worst,
        "noisy_clipped": dict(release.clipped).get(worst),
        "mapped": float(mapped.mean()),
        "dropped": 1 - kept / len(frame),
        "noisy_mapped": None if lost is None else lost.mapped,
        "noisy_dropped": None if lost is None else lost.dropped,
    }


def one_fit(data: Dataset, frame: pd.DataFrame, method: str, schema: Any, args: Any) -> dict:
    fit_key, sample_key = jax.random.split(key_from_seed(args.seed))
    budget = PrivacyBudget(epsilon=args.epsilon, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_model(fit_key, method, frame, budget, schema=schema)
        synthetic = sample_model(sample_key, model, len(frame))[data.schema.names]
        score = auroc(data, synthetic, args.seed)
    return {
        "epsilon": model.epsilon(),
        "AUROC": score,
        "tvd_2way": two_way_tvd(data.train, synthetic),
    }


def compute(args: argparse.Namespace) -> dict[str, Any]:
    tables = args.tables or ["crx", "adult"]
    methods = args.methods or (["marginals"] if args.quick else ["marginals", "p3gm"])
    rows = []
    for name in tables:
        data = load(name, args.quick)
        if data is None:
            continue
        frame, declared = own_frame(data, args.seed), declared_schema(data)
        for method in methods:
            base = one_fit(data, frame, method, declared, args)
            for variant in VARIANTS:
                row = {"table": data.name, "method": method, "rows": len(frame),
                       "variant": variant, **{f"declared_{k}": v for k, v in base.items()}}  # fmt: skip
                try:
                    release = release_for(frame, declared, variant, args.schema_epsilon, args.seed)
                except ValueError as exc:  # no category passes its threshold
                    rows.append({**row, "refused": str(exc).split(";")[0]})
                    H.log(f"{name}: {variant}: refused: {rows[-1]['refused']}")
                    continue
                row.update(true_shares(frame, release, declared))
                fit = one_fit(data, frame, method, release, args)
                rows.append({**row, **{f"dp_{k}": v for k, v in fit.items()}})
                H.log(f"{name}: {method}: {rows[-1]}")
    return {"rows": rows, "epsilon": args.epsilon, "schema_epsilon": args.schema_epsilon}


def render(result: dict[str, Any]) -> str:
    lines = [
        (
            f"Total epsilon {result['epsilon']:g} (delta 1e-5); DP schema at "
            f"{result['schema_epsilon']:g} of it. Shares are true (noisy as released)."
        ),
        "",
        (
            "| table | method | rows | DP schema | max clipped (noisy) | column "
            "| mapped to other (noisy) | dropped (noisy) | epsilon declared / DP "
            "| TSTR AUROC declared / DP | 2-way TVD declared / DP |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def share(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    for r in result["rows"]:
        head = f"| {r['table']} | {r['method']} | {r['rows']} | {r['variant']} |"
        if "refused" in r:
            lines.append(f"{head} refused: {r['refused']} | | | | | | |")
            continue
        lines.append(
            f"{head} {r['clipped']:.3f} ({share(r['noisy_clipped'])}) | "
            f"{r['clipped_column']} | {r['mapped']:.3f} ({share(r['noisy_mapped'])}) | "
            f"{r['dropped']:.3f} ({share(r['noisy_dropped'])}) | {r['declared_epsilon']:.4f} / "
            f"{r['dp_epsilon']:.4f} | {r['declared_AUROC']:.3f} / {r['dp_AUROC']:.3f} | "
            f"{r['declared_tvd_2way']:.3f} / {r['dp_tvd_2way']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="crx and 5,000 Adult rows, marginals", seed=0)
    p.add_argument("--tables", type=H.subset(TABLES), help=f"comma-separated of {TABLES}")
    p.add_argument(
        "--methods",
        type=lambda s: [m for m in s.split(",") if get_method(m)],
        help="comma-separated method names",
    )
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--schema-epsilon", type=float, default=0.3)
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
