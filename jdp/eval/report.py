"""One evaluation report, as Markdown, JSON and HTML: privacy ledger, utility, fidelity, plots.

:func:`evaluate_tables` computes every number (train-on-synthetic-test-on-real, 2-way
marginal TVD, per-column distances, counting-query error, pairwise associations and, given a
held-out real table, the same measures of the real data's own train/test split);
:func:`jdp.eval.fidelity.fidelity_scores` condenses them into an overall score in [0, 1], its parts beside the
real split's own, and a verdict (:data:`jdp.eval.fidelity.VERDICT_RULE`); :func:`write_report` writes
``report.json`` (the numbers plus the ledger, machine-readable), ``report.md`` (the privacy
statement, the tables and the plots, for people) and ``report.html`` (the same in one
self-contained page, :mod:`jdp.eval.html_report`).

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
from jdp.data.schema import NONPRIVATE_SCHEMA_CLAIM, write_atomic
from jdp.eval._tables import check_tables
from jdp.eval.fidelity import associations, fidelity_scores
from jdp.eval.marginals import column_distances, two_way_tvd
from jdp.eval.queries import query_error_summary
from jdp.eval.report_rows import COLUMN_FIELDS, column_rows, ledger_rows, plain_value, settings_rows
from jdp.eval.utility import tstr_table
from jdp.progress import no_progress, phase

JSON_FILE = "report.json"
MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"
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

    With ``real_test``, the same fidelity measures are also computed for the real data's own
    split (:func:`real_split_reference`): evaluation on real data, not a release; it gives
    the scores their scale (:func:`fidelity_scores`).

    Returns:
        ``{"tstr": rows or None, "two_way_tvd": float or None (one column), "n_bins",
        "columns": rows, "queries": summary or None, "associations": :func:`associations`
        or None (one column), "reference": :func:`real_split_reference` or None (no
        ``real_test``), "rows" and "evaluated_rows": {"real_train", "synthetic",
        "real_test"}}``.
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
    fidelity = _stages(progress, reference=real_test is not None)
    two_way = two_way_tvd(real_train, synthetic, n_bins=n_bins) if real_train.shape[1] > 1 else None
    next(fidelity)
    columns = column_distances(real_train, synthetic, n_bins=n_bins)
    next(fidelity)
    queries = (
        query_error_summary(np.random.default_rng(seed), real_train, synthetic, n_queries=n_queries)
        if n_queries
        else None
    )
    next(fidelity)
    pairs = associations(real_train, synthetic, n_bins=n_bins) if real_train.shape[1] > 1 else None
    next(fidelity)
    reference = None
    if real_test is not None:
        reference = real_split_reference(
            real_train, real_test, n_bins=n_bins, n_queries=n_queries, seed=seed
        )
    next(fidelity, None)
    return {
        "tstr": tstr,
        "two_way_tvd": two_way,
        "n_bins": n_bins,
        "columns": columns,
        "queries": queries,
        "associations": pairs,
        "reference": reference,
        "rows": rows,
        "evaluated_rows": {name: len(tables[name]) if name in tables else None for name in _TABLES},
    }


def real_split_reference(
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    *,
    n_bins: int = 10,
    n_queries: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The fidelity measures of the held-out real table against the real training table.

    The same functions as for the synthetic table, with ``real_test`` in its place: what a
    fresh real sample of the same population scores, up to sampling error, so the scale on
    which the synthetic scores are read (a synthesizer cannot be expected to beat it). The
    TSTR reference needs no extra fit: it is the ``real`` column of the TSTR table (trained
    on ``real_train``, tested on ``real_test``). This is evaluation on real data, not a
    release.

    Returns:
        ``{"two_way_tvd": float or None (one column), "columns": rows as
        :func:`~jdp.eval.marginals.column_distances`, "queries": summary or None}``; the
        queries are the same workload as the synthetic table's (the same ``seed``).
    """
    return {
        "two_way_tvd": (
            two_way_tvd(real_train, real_test, n_bins=n_bins) if real_train.shape[1] > 1 else None
        ),
        "columns": column_distances(real_train, real_test, n_bins=n_bins),
        "queries": (
            query_error_summary(
                np.random.default_rng(seed), real_train, real_test, n_queries=n_queries
            )
            if n_queries
            else None
        ),
    }


#: the pairwise association measure of :func:`associations`, and what it is
_TABLES = ("real_train", "synthetic", "real_test")


def subsample(rng: np.random.Generator, frame: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    """A uniform random subsample of ``max_rows`` rows without replacement (``frame`` itself
    when it is no larger), in the original row order."""
    if len(frame) <= max_rows:
        return frame
    chosen = np.sort(rng.choice(len(frame), size=max_rows, replace=False))
    return frame.iloc[chosen].reset_index(drop=True)


def _stages(progress: bool, *, reference: bool):
    """The progress phase over the fidelity measures (:mod:`jdp.progress`: a terminal only),
    with the real split's reference when ``reference``; ``next()`` after each one."""
    names = ("2-way TVD", "column distances", "counting queries", "associations")
    names += ("real-split reference",) * reference
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
    plot_notes: Sequence[str] = (),
    meta: Mapping[str, Any] | None = None,
    title: str = "jdp synthetic data report",
    sections: Mapping[str, tuple[Mapping[str, Any], Sequence[str]]] | None = None,
    nonprivate_schema: bool = False,
) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out_dir``, each
    atomically (:func:`jdp.data.schema.write_atomic`); return the report dict.

    Args:
        out_dir: output directory (created).
        evaluation: the output of :func:`evaluate_tables` (or ``None``); the report adds its
            :func:`fidelity_scores` as ``"scores"``, and the HTML draws its associations.
        ledger: the model's privacy ledger (``None`` when the synthetic data has none: the
            report then says it carries no privacy statement).
        delta: the delta at which to state epsilon (required with a ledger).
        plots: PNG files to list and embed (inside ``out_dir`` they are linked relatively
            from the Markdown; the HTML embeds their bytes).
        plot_notes: a caption per plot (empty: none), e.g. from
            :func:`jdp.eval.plots.marginal_notes`.
        meta: extra facts to record (method, config, paths, ...); must be JSON-serialisable.
            A mapping value (budget, config) is shown as a table of settings.
        title: the heading.
        sections: further sections by key (e.g. ``"mia"`` from ``jdp.audit.mia.mia_section``):
            ``key -> (JSON-serialisable dict, Markdown lines)``, appended in order.
        nonprivate_schema: the model's schema was read off the data without DP (see
            :func:`privacy_section`).
    """
    from jdp.eval.html_report import render_html

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if ledger is not None and delta is None:
        raise ValueError("expected delta with a ledger (the delta at which epsilon is stated)")
    if plot_notes and len(plot_notes) != len(plots):
        raise ValueError(f"expected {len(plots)} plot notes (one per plot), got {len(plot_notes)}")
    report = {
        "title": title,
        "meta": dict(meta or {}),
        "privacy": (
            None
            if ledger is None
            else privacy_section(ledger, delta, nonprivate_schema=nonprivate_schema)
        ),
        "evaluation": None if evaluation is None else dict(evaluation),
        "scores": None if evaluation is None else fidelity_scores(evaluation),
        "plots": [_relative(Path(p), out_dir) for p in plots],
        "plot_notes": list(plot_notes) or [""] * len(plots),
        "note": NOT_A_RELEASE,
    }
    extra = dict(sections or {})
    report.update({key: section for key, (section, _) in extra.items()})
    write_atomic(out_dir / JSON_FILE, json.dumps(jsonable(report), indent=1) + "\n")
    markdown = [render_markdown(report)] + ["\n".join(lines) + "\n" for _, lines in extra.values()]
    write_atomic(out_dir / MARKDOWN_FILE, "\n".join(markdown))
    figures = [Path(p).read_bytes() for p in plots]
    page = render_html(report, figures=figures, sections=[lines for _, lines in extra.values()])
    write_atomic(out_dir / HTML_FILE, page)
    return report


def render_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown text of a report dict built by :func:`write_report`."""
    lines = [f"# {report['title']}", ""]
    lines += meta_markdown(report["meta"])
    lines += ["", "## Privacy", ""]
    privacy = report["privacy"]
    if privacy is None:
        lines.append(
            "No privacy ledger was given: this synthetic data carries no privacy statement."
        )
    else:
        lines += ["```", privacy["statement"], "```", ""]
        lines.append(
            format_table(
                ledger_rows(privacy["ledger"]), ["step", "mechanism", "mode", "note"], markdown=True
            )
        )
        lines += [
            "",
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
        scores = report["scores"]
        lines += ["", "### Verdict", "", f"**{scores['verdict']}**", ""]
        lines += [scores["worst_column_text"], ""]
        lines.append(
            format_table(
                [
                    *scores["parts"],
                    {"name": "overall (mean of the parts)", **scores["overall"]},
                ],
                ["name", "synthetic", "real_split", "gap", "rating", "measure"],
                markdown=True,
            )
        )
        lines += ["", f"_{scores['rule']}_"]
        if evaluation.get("associations") is not None:
            lines += [
                "",
                (
                    f"Pairwise associations ({evaluation['associations']['measure']}) of the real "
                    f"and the synthetic data are drawn side by side in {HTML_FILE}."
                ),
            ]
        if evaluation["tstr"]:
            lines += ["", "### Train on synthetic, test on real", ""]
            lines.append(
                format_table(
                    evaluation["tstr"], ["classifier", "metric", "real", "synthetic"], markdown=True
                )
            )
        lines += ["", "### Marginals", ""]
        reference = evaluation.get("reference")
        if evaluation["two_way_tvd"] is not None:
            lines.append(
                f"Average total-variation distance of all 2-way marginals: "
                f"{evaluation['two_way_tvd']:.4f} (numeric columns in {evaluation['n_bins']} quantile bins)"
                + (
                    f"; held-out real data: {reference['two_way_tvd']:.4f}"
                    if reference is not None
                    else ""
                )
            )
            lines.append("")
        lines.append(
            format_table(
                column_rows(evaluation),
                list(COLUMN_FIELDS),
                markdown=True,
            )
        )
        queries = evaluation["queries"]
        if queries is not None:
            ref = None if reference is None else reference["queries"]
            lines += [
                "",
                "### Counting queries",
                "",
                (
                    f"{queries['n_queries']} random conjunctions of up to {queries['max_atoms']} atoms; "
                    f"relative error with sanity bound {queries['sanity_fraction']:g} x rows: "
                    f"mean {queries['mean']:.4f}, median {queries['median']:.4f}, "
                    f"90th percentile {queries['p90']:.4f}"
                    + (
                        f" (held-out real data: mean {ref['mean']:.4f}, median "
                        f"{ref['median']:.4f}, 90th percentile {ref['p90']:.4f})"
                        if ref is not None
                        else ""
                    )
                ),
            ]
    if report["plots"]:
        lines += ["", "## Plots", ""]
        for path, note in zip(report["plots"], report["plot_notes"]):
            lines.append(f"![{Path(path).stem}]({path})")
            if note:
                lines += ["", f"_{note}_", ""]
    return "\n".join(lines) + "\n"


def meta_markdown(meta: Mapping[str, Any]) -> list[str]:
    """The report's facts as Markdown: plain values as a list, a mapping (budget, config) as
    a two-column table of its :func:`settings_rows`."""
    lines = [
        f"- **{key}**: {plain_value(value)}"
        for key, value in meta.items()
        if not isinstance(value, Mapping)
    ]
    for key, value in meta.items():
        if isinstance(value, Mapping):
            lines += ["", f"**{key}**", "", "| setting | value |", "|---|---|"]
            lines += [f"| {name} | {text} |" for name, text in settings_rows(value)]
    return lines


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
