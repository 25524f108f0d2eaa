"""One evaluation report, as Markdown and JSON: privacy ledger, utility, fidelity, plots.

:func:`evaluate_tables` computes every number (train-on-synthetic-test-on-real, 2-way
marginal TVD, per-column distances, counting-query error); :func:`write_report` writes
``report.json`` (the same numbers plus the ledger, machine-readable) and ``report.md`` (the
privacy statement, the tables and the plots, for people).

The privacy section comes from the model's :class:`accounting.PrivacyLedger` alone: the
statement ``ledger.report(delta)`` and the full ledger ``ledger.to_dict()`` (the statement
opened by :data:`jdp.data.schema.NONPRIVATE_SCHEMA_CLAIM` when the model's schema was read off
the data without DP). Everything else
is evaluation on the user's own real data, which is not a release: the report says so, and
it must not be published with the synthetic data unless that is intended (the marginal plots
and the real baselines describe the real data).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import ClassifierMixin

from accounting import PrivacyLedger
from accounting.validation import check_count
from jdp.data.schema import NONPRIVATE_SCHEMA_CLAIM
from jdp.eval._tables import check_tables
from jdp.eval.marginals import column_distances, two_way_tvd
from jdp.eval.queries import query_error_summary
from jdp.eval.utility import tstr_table
from jdp.progress import no_progress, phase

JSON_FILE = "report.json"
MARKDOWN_FILE = "report.md"
NOT_A_RELEASE = (
    "Evaluation used the real data directly; its numbers and plots are not differentially "
    "private and describe the real data. Only the synthetic data and the privacy statement "
    "are covered by the ledger."
)


def evaluate_tables(
    real_train: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    real_test: pd.DataFrame | None = None,
    target: str | None = None,
    classifiers: Mapping[str, ClassifierMixin] | None = None,
    seed: int = 0,
    n_bins: int = 10,
    n_queries: int = 1000,
    max_rows: int | None = None,
    positive: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """All evaluation numbers of ``synthetic`` against the real data.

    Large tables are evaluated on uniform random subsamples of at most ``max_rows`` rows per
    table (seeded by ``seed``; ``None`` evaluates every row): the scores are then estimates
    whose sampling error shrinks like ``1/sqrt(max_rows)``, and the returned ``rows`` says
    how many rows each table had and ``evaluated_rows`` how many were used.

    Args:
        real_train: the real table the synthesizer was fitted on; the fidelity measures
            compare the synthetic table with it.
        synthetic: the synthetic table.
        real_test: held-out real table; with ``target`` it enables the TSTR table.
        target: the label column for TSTR.
        classifiers: TSTR classifiers (default: :func:`jdp.eval.utility.paper_classifiers`).
        seed: seeds the classifiers and the random query workload (evaluation is
            reproducible by design; it is not a privacy mechanism).
        n_bins: quantile bins per numeric column for the marginal TVDs.
        n_queries: random counting queries (0 skips them).
        max_rows: the largest number of rows evaluated per table (``None``: all).
        positive: the positive class of a binary target (default: the larger label).
        progress: ``False``: no progress line; otherwise the TSTR fits, then the fidelity
            measures, are shown on a terminal only (:mod:`jdp.progress`).

    Returns:
        ``{"tstr": rows or None, "two_way_tvd": float or None (one column), "columns":
        rows, "queries": summary or None, "rows" and "evaluated_rows": {"real_train",
        "synthetic", "real_test"}}``.
    """
    if (real_test is None) != (target is None):
        raise ValueError("expected both real_test and target (for TSTR) or neither")
    n_queries = check_count("n_queries", n_queries)
    tables = {"real_train": real_train, "synthetic": synthetic}
    if real_test is not None:
        tables["real_test"] = real_test
    check_tables(tables, target=target)  # errors name the tables as the caller knows them
    rows = {name: len(tables[name]) if name in tables else None for name in _TABLES}
    if max_rows is not None:
        max_rows = check_count("max_rows", max_rows, minimum=1)
        rng = np.random.default_rng(seed)
        tables = {name: subsample(rng, frame, max_rows) for name, frame in tables.items()}
        real_train, synthetic = tables["real_train"], tables["synthetic"]
        real_test = tables.get("real_test")
    tstr = None
    if real_test is not None:
        tstr = tstr_table(
            real_train,
            synthetic,
            real_test,
            target,
            classifiers=classifiers,
            seed=seed,
            positive=positive,
            progress=progress,
        )
    fidelity = _stages(progress)
    two_way = two_way_tvd(real_train, synthetic, n_bins=n_bins) if real_train.shape[1] > 1 else None
    next(fidelity)
    columns = column_distances(real_train, synthetic, n_bins=n_bins)
    next(fidelity)
    queries = (
        query_error_summary(np.random.default_rng(seed), real_train, synthetic, n_queries=n_queries)
        if n_queries
        else None
    )
    next(fidelity, None)
    return {
        "tstr": tstr,
        "two_way_tvd": two_way,
        "n_bins": n_bins,
        "columns": columns,
        "queries": queries,
        "rows": rows,
        "evaluated_rows": {name: len(tables[name]) if name in tables else None for name in _TABLES},
    }


_TABLES = ("real_train", "synthetic", "real_test")


def subsample(rng: np.random.Generator, frame: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    """A uniform random subsample of ``max_rows`` rows without replacement (``frame`` itself
    when it is no larger), in the original row order."""
    if len(frame) <= max_rows:
        return frame
    chosen = np.sort(rng.choice(len(frame), size=max_rows, replace=False))
    return frame.iloc[chosen].reset_index(drop=True)


def _stages(progress: bool):
    """The progress phase over the three fidelity measures (:mod:`jdp.progress`: a terminal
    only); ``next()`` after each one."""
    names = ("2-way TVD", "column distances", "counting queries")
    with no_progress(not progress), phase("fidelity measure", total=len(names)) as shown:
        for name in names:
            shown.note(name)
            yield
            shown.update()
        shown.note("")


def privacy_section(
    ledger: PrivacyLedger, delta: float, *, nonprivate_schema: bool = False
) -> dict[str, Any]:
    """The report's privacy part: epsilon at ``delta``, the statement and the full ledger.

    ``nonprivate_schema``: the model's schema was read off the data without DP
    (``Schema.nonprivate``); the statement then opens with
    :data:`~jdp.data.schema.NONPRIVATE_SCHEMA_CLAIM`, as the model's own does.
    """
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"expected a PrivacyLedger, got {type(ledger).__name__}")
    statement = ledger.report(delta)
    if nonprivate_schema:
        statement = f"{NONPRIVATE_SCHEMA_CLAIM}\n{statement}"
    return {
        "epsilon": ledger.epsilon(delta),
        "delta": delta,
        "statement": statement,
        "paper_mode": ledger.has_paper_mode,
        "nonprivate_schema": bool(nonprivate_schema),
        "ledger": ledger.to_dict(),
    }


def write_report(
    out_dir: str | Path,
    *,
    evaluation: Mapping[str, Any] | None,
    ledger: PrivacyLedger | None,
    delta: float | None = None,
    plots: Sequence[str | Path] = (),
    meta: Mapping[str, Any] | None = None,
    title: str = "jdp synthetic data report",
    sections: Mapping[str, tuple[Mapping[str, Any], Sequence[str]]] | None = None,
    nonprivate_schema: bool = False,
) -> dict[str, Any]:
    """Write ``report.json`` and ``report.md`` into ``out_dir``; return the report dict.

    Args:
        out_dir: output directory (created).
        evaluation: the output of :func:`evaluate_tables` (or ``None``).
        ledger: the model's privacy ledger (``None`` when the synthetic data has none: the
            report then says it carries no privacy statement).
        delta: the delta at which to state epsilon (required with a ledger).
        plots: PNG files to list and embed (inside ``out_dir`` they are linked relatively).
        meta: extra facts to record (method, config, paths, ...); must be JSON-serialisable.
        title: the Markdown heading.
        sections: further sections by key (e.g. ``"mia"`` from ``jdp.audit.mia.mia_section``):
            ``key -> (JSON-serialisable dict, Markdown lines)``, appended in order.
        nonprivate_schema: the model's schema was read off the data without DP (see
            :func:`privacy_section`).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if ledger is not None and delta is None:
        raise ValueError("expected delta with a ledger (the delta at which epsilon is stated)")
    report = {
        "title": title,
        "meta": dict(meta or {}),
        "privacy": (
            None
            if ledger is None
            else privacy_section(ledger, delta, nonprivate_schema=nonprivate_schema)
        ),
        "evaluation": None if evaluation is None else dict(evaluation),
        "plots": [_relative(Path(p), out_dir) for p in plots],
        "note": NOT_A_RELEASE,
    }
    extra = dict(sections or {})
    report.update({key: section for key, (section, _) in extra.items()})
    (out_dir / JSON_FILE).write_text(json.dumps(jsonable(report), indent=1) + "\n")
    markdown = [render_markdown(report)] + ["\n".join(lines) + "\n" for _, lines in extra.values()]
    (out_dir / MARKDOWN_FILE).write_text("\n".join(markdown))
    return report


def render_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown text of a report dict built by :func:`write_report`."""
    lines = [f"# {report['title']}", ""]
    for key, value in report["meta"].items():
        lines.append(f"- **{key}**: {value}")
    lines += ["", "## Privacy", ""]
    privacy = report["privacy"]
    if privacy is None:
        lines.append(
            "No privacy ledger was given: this synthetic data carries no privacy statement."
        )
    else:
        lines += ["```", privacy["statement"], "```", ""]
        lines += [
            "Full ledger (JSON):",
            "",
            "```json",
            json.dumps(privacy["ledger"], indent=1),
            "```",
        ]
    evaluation = report["evaluation"]
    if evaluation is not None:
        lines += ["", "## Evaluation", "", f"_{report['note']}_", ""]
        lines.append(
            "Rows: " + ", ".join(f"{k} {v}" for k, v in evaluation["rows"].items() if v is not None)
        )
        if evaluation["tstr"]:
            lines += ["", "### Train on synthetic, test on real", ""]
            lines.append(
                format_table(
                    evaluation["tstr"], ["classifier", "metric", "real", "synthetic"], markdown=True
                )
            )
        lines += ["", "### Marginals", ""]
        if evaluation["two_way_tvd"] is not None:
            lines.append(
                f"Average total-variation distance of all 2-way marginals: "
                f"{evaluation['two_way_tvd']:.4f} (numeric columns in {evaluation['n_bins']} quantile bins)"
            )
            lines.append("")
        lines.append(
            format_table(
                evaluation["columns"],
                ["column", "kind", "tvd", "wasserstein", "wasserstein_scaled", "ks", "ks_pvalue"],
                markdown=True,
            )
        )
        queries = evaluation["queries"]
        if queries is not None:
            lines += [
                "",
                "### Counting queries",
                "",
                (
                    f"{queries['n_queries']} random conjunctions of up to {queries['max_atoms']} atoms; "
                    f"relative error with sanity bound {queries['sanity_fraction']:g} x rows: "
                    f"mean {queries['mean']:.4f}, median {queries['median']:.4f}, "
                    f"90th percentile {queries['p90']:.4f}"
                ),
            ]
    if report["plots"]:
        lines += ["", "## Plots", ""]
        lines += [f"![{Path(p).stem}]({p})" for p in report["plots"]]
    return "\n".join(lines) + "\n"


def format_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, markdown: bool = False
) -> str:
    """Rows of dicts as an aligned text table (or a Markdown table); floats to 4 decimals."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    if markdown:
        out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in cells])
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    out = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    return "\n".join(out + ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if math.isfinite(value) else str(value)
    return str(value)


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)


def jsonable(value: Any) -> Any:
    """Plain JSON types (numpy scalars to Python numbers, non-finite floats to strings)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Path):
        return str(value)
    return value
