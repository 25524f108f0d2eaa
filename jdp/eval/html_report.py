"""The report as one self-contained HTML page, for the data holder.

:func:`render_html` turns the report dict of :func:`jdp.eval.report.write_report` (the numbers
:func:`~jdp.eval.report.evaluate_tables` computed, the scores of
:func:`~jdp.eval.fidelity.fidelity_scores`, the privacy section) and the bytes of its PNG
figures into one page: the figures are embedded as ``data:image/png;base64`` URIs and the
style sheet is inline, so the file needs no other file, no network and no JavaScript.

Order of the page: the verdict and the overall score with its parts, each beside the real
data's own train/test split (the scale of what is good); the warning that the evaluation
used the real data (not a release); the privacy statement in words with the ledger as a
table; the budget and the method's settings as tables; the detailed tables (TSTR, per
column, counting queries); the pairwise-association heatmaps (drawn here from the
numbers); the report's figures with their captions (one per column); further sections
(e.g. membership inference) from their Markdown lines.

All functions are pure (the report's numbers in, text out; the heatmaps are drawn in memory);
every value from the report is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jdp.eval.report_rows import COLUMN_FIELDS, column_rows, ledger_rows, plain_value, settings_rows

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1180px; padding: 1.5em; color: #1b1b1b; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; white-space: pre-wrap; }
.box { border-radius: 6px; padding: 0.8em 1em; margin: 0.8em 0; }
.warning { background: #fff4d6; border: 1px solid #e0b84c; }
.verdict { font-size: 1.15em; font-weight: 600; }
.close { background: #e3f4e1; border: 1px solid #7cbf73; }
.some-loss { background: #fff4d6; border: 1px solid #e0b84c; }
.far { background: #fbe3e1; border: 1px solid #d9837a; }
.none { background: #eef1f6; border: 1px solid #9aa8c0; }
.score { font-size: 2.4em; font-weight: 700; }
.bar { position: relative; height: 0.8em; background: #eee; width: 14em; margin: 0.15em 0; }
.bar span { position: absolute; top: 0; bottom: 0; left: 0; }
.bar .synthetic { background: #d62728; }
.bar .real { background: #1f77b4; }
figure { margin: 1.2em 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 0 1.5em; }
.grid figure { margin: 0.6em 0; }
.statement { white-space: pre-wrap; background: #f7f7f7; padding: 0.8em; font-size: 0.95em; }
figure img { max-width: 100%; border: 1px solid #e4e4e4; }
figcaption { font-size: 0.9em; color: #444; }
.small { font-size: 0.88em; color: #444; }
"""


def render_html(
    report: Mapping[str, Any],
    *,
    figures: Sequence[bytes] = (),
    sections: Sequence[Sequence[str]] = (),
) -> str:
    """The report as one HTML page.

    Args:
        report: the dict of :func:`jdp.eval.report.write_report`.
        figures: the PNG bytes of each of ``report["plots"]``, in the same order.
        sections: the Markdown lines of each further section (headings, pipe tables and
            paragraphs are rendered by :func:`markdown_html`).
    """
    if len(figures) != len(report["plots"]):
        raise ValueError(f"expected {len(report['plots'])} figures, got {len(figures)}")
    title = html.escape(report["title"])
    body = [f"<h1>{title}</h1>"]
    body += _facts_html(report["meta"])
    if report["scores"] is not None:
        body += scores_html(report["scores"])
    if report["evaluation"] is not None:
        body.append(f'<div class="box warning"><b>Not a release.</b> {_text(report["note"])}</div>')
    body += privacy_html(report["privacy"])
    body += settings_html(report["meta"])
    if report["evaluation"] is not None:
        body += evaluation_html(report["evaluation"])
    if report["evaluation"] is not None and report["evaluation"].get("associations"):
        body += associations_html(report["evaluation"]["associations"])
    body += figures_html(report["plots"], report["plot_notes"], figures)
    for lines in sections:
        body.append(markdown_html(lines))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def scores_html(scores: Mapping[str, Any]) -> list[str]:
    """The verdict, the overall score and the table of its parts, each part beside the real
    split's own score (a bar each), with the rule that turns them into the verdict."""
    ratings = [p["rating"] for p in scores["parts"]]
    worst = "none" if None in ratings else max(ratings, key=["close", "some loss", "far"].index)
    overall = scores["overall"]
    reference = (
        ""
        if overall["real_split"] is None
        else f' <span class="small">(held-out real data: {overall["real_split"]:.3f})</span>'
    )
    out = [
        "<h2>Verdict</h2>",
        f'<div class="box {worst.replace(" ", "-")}">',
        (
            f'<div>Overall fidelity score: <span class="score">{overall["synthetic"]:.3f}</span>'
            f"{reference}</div>"
        ),
        f'<p class="verdict">{_text(scores["verdict"])}</p>',
        f"<p>{_text(scores['worst_column_text'])}</p>",
        "</div>",
        (
            "<table><tr><th>part</th><th>synthetic</th><th>held-out real data</th><th>gap</th>"
            "<th>rating</th><th></th><th>what it measures</th></tr>"
        ),
    ]
    for part in scores["parts"]:
        out.append(
            "<tr>"
            f"<td>{_text(part['name'])}</td>"
            f'<td class="num">{_number(part["synthetic"])}</td>'
            f'<td class="num">{_number(part["real_split"])}</td>'
            f'<td class="num">{_number(part["gap"])}</td>'
            f"<td>{_text(part['rating'] or '-')}</td>"
            f"<td>{_bar(part['synthetic'], 'synthetic')}{_bar(part['real_split'], 'real')}</td>"
            f'<td class="small">{_text(part["measure"])}</td>'
            "</tr>"
        )
    out.append("</table>")
    out.append(
        '<p class="small">Scores lie in [0, 1], higher is better; red bar: synthetic, blue '
        "bar: held-out real data. The overall score is the mean of the parts. "
        f"{_text(scores['rule'])}</p>"
    )
    return out


def privacy_html(privacy: Mapping[str, Any] | None) -> list[str]:
    """The privacy statement in words and the ledger as a table (its JSON folded away)."""
    out = ["<h2>Privacy</h2>"]
    if privacy is None:
        return out + [
            "<p>No privacy ledger was given: this synthetic data carries no privacy statement.</p>"
        ]
    out.append(f'<div class="statement">{_text(privacy["statement"])}</div>')
    out.append("<p>Every step that read the private data (the privacy ledger):</p>")
    out.append(table_html(ledger_rows(privacy["ledger"]), ["step", "mechanism", "mode", "note"]))
    out.append(
        "<details><summary>Full ledger (JSON)</summary><pre>"
        f"{_text(json.dumps(privacy['ledger'], indent=1))}</pre></details>"
    )
    return out


def settings_html(meta: Mapping[str, Any]) -> list[str]:
    """Each mapping in the report's facts (budget, config) as a table of settings."""
    out = []
    for key, value in meta.items():
        if isinstance(value, Mapping):
            out.append(f"<h3>{_text(key)}</h3>")
            rows = [{"setting": name, "value": text} for name, text in settings_rows(value)]
            out.append(table_html(rows, ["setting", "value"]))
    return (["<h2>Budget and settings</h2>"] + out) if out else []


def evaluation_html(evaluation: Mapping[str, Any]) -> list[str]:
    """Row counts, the TSTR table, the per-column distances beside the real split's, the
    2-way TVD and the counting-query error, each with its held-out real reference."""
    rows, used = evaluation["rows"], evaluation["evaluated_rows"]
    counts = ", ".join(
        f"{name.replace('_', ' ')} {rows[name]}"
        + (f" (evaluated on a uniform sample of {used[name]})" if used[name] != rows[name] else "")
        for name in rows
        if rows[name] is not None
    )
    out = ["<h2>Details</h2>", f"<p>Rows: {_text(counts)}.</p>"]
    reference = evaluation.get("reference")
    if evaluation["tstr"]:
        out += [
            "<h3>Train on synthetic, test on real</h3>",
            (
                "<p>Each classifier is trained once on the real training data (column "
                "<i>real</i>) and once on the synthetic data (column <i>synthetic</i>), and both "
                "are tested on the same held-out real data. AUROC: 0.5 is chance, 1 is perfect.</p>"
            ),
            table_html(evaluation["tstr"], ["classifier", "metric", "real", "synthetic"]),
        ]
    out.append("<h3>Marginals</h3>")
    if evaluation["two_way_tvd"] is not None:
        ref = (
            ""
            if reference is None
            else f"; held-out real data against the real training data: "
            f"{reference['two_way_tvd']:.4f}"
        )
        out.append(
            "<p>Average total-variation distance of all 2-way marginals (0: identical, 1: "
            f"disjoint): {evaluation['two_way_tvd']:.4f}{ref} (numeric columns in "
            f"{evaluation['n_bins']} quantile bins).</p>"
        )
    out.append(
        "<p>Per column: total-variation distance (tvd) and, for numeric columns, the "
        "Kolmogorov-Smirnov statistic (ks, with its p-value) and the Wasserstein distance in units of the real "
        "standard deviation; <i>real split</i> is the same distance for held-out real data "
        "(lower is better).</p>"
    )
    out.append(
        table_html(
            column_rows(evaluation),
            list(COLUMN_FIELDS),
        )
    )
    queries = evaluation["queries"]
    if queries is not None:
        ref = None if reference is None else reference["queries"]
        out += [
            "<h3>Counting queries</h3>",
            (
                f"<p>{queries['n_queries']} random conjunctions of up to {queries['max_atoms']} "
                "conditions (e.g. <i>age in (30, 40] and sex = Female</i>); relative error of the "
                f"synthetic count, with a floor of {queries['sanity_fraction']:g} x rows "
                "(lower is better).</p>"
            ),
            table_html(
                [{"table": "synthetic", **queries}]
                + ([] if ref is None else [{"table": "held-out real data", **ref}]),
                ["table", "mean", "median", "p90"],
            ),
        ]
    return out


def associations_html(associations: Mapping[str, Any]) -> list[str]:
    """The pairwise-association heatmaps (:func:`jdp.eval.plots.association_figure`, real |
    synthetic | difference) as one embedded PNG with its caption."""
    from jdp.eval.plots import association_figure, figure_png

    return [
        "<h2>Column pairs</h2>",
        _figure(
            figure_png(association_figure(associations)),
            "pairwise associations",
            f"{associations['description']}. Left: the real training data; middle: the "
            "synthetic data; right: their absolute difference (dark: close; grey: a column "
            "with itself).",
        ),
    ]


def figures_html(names: Sequence[str], notes: Sequence[str], figures: Sequence[bytes]) -> list[str]:
    """Each figure as an embedded PNG (a ``data:`` URI) with its caption."""
    if not figures:
        return []
    cells = [_figure(data, name, note) for name, note, data in zip(names, notes, figures)]
    return ["<h2>Figures</h2>", '<div class="grid">', *cells, "</div>"]


def _figure(png: bytes, name: str, caption: str) -> str:
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    below = f"<figcaption>{_text(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{uri}" alt="{_text(name)}">{below}</figure>'


def table_html(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows of dicts as an HTML table; numbers right-aligned, floats to 4 decimals (as
    :func:`jdp.eval.report.format_table`), ``None`` as "-", underscores in headers read as
    spaces."""
    head = "".join(f"<th>{_text(c.replace('_', ' '))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c)
            if isinstance(value, float) and math.isfinite(value):
                cells.append(f'<td class="num">{value:.4f}</td>')
            elif isinstance(value, int) and not isinstance(value, bool):
                cells.append(f'<td class="num">{value}</td>')
            else:
                cells.append(f"<td>{_text(plain_value(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>" + "".join(body) + "</table>"


def markdown_html(lines: Sequence[str]) -> str:
    """The Markdown of a further report section as HTML: ``#`` headings (``##`` is ``<h2>``,
    as in the Markdown report; none above ``<h2>``), pipe tables and paragraphs (inline
    backticks as code); anything else is kept as escaped text."""
    out: list[str] = []
    table: list[list[str]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if table:
            head, *body = table
            out.append(
                "<table><tr>"
                + "".join(f"<th>{_inline(c)}</th>" for c in head)
                + "</tr>"
                + "".join(
                    "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>"
                    for row in body
                )
                + "</table>"
            )
            table.clear()
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    for line in lines:
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        if heading:
            flush()
            level = max(len(heading.group(1)), 2)  # the page's own title is the only h1
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.startswith("|"):
            if paragraph:
                flush()
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):  # skip the rule row
                table.append(cells)
        elif not line.strip():
            flush()
        else:
            if table:
                flush()
            paragraph.append(line.strip())
    flush()
    return "\n".join(out)


def _facts_html(meta: Mapping[str, Any]) -> list[str]:
    facts = [(k, v) for k, v in meta.items() if not isinstance(v, Mapping)]
    if not facts:
        return []
    items = "".join(f"<li><b>{_text(k)}</b>: {_text(plain_value(v))}</li>" for k, v in facts)
    return [f'<ul class="small">{items}</ul>']


def _bar(value: float | None, kind: str) -> str:
    if value is None:
        return ""
    width = 100.0 * min(max(value, 0.0), 1.0)
    return f'<div class="bar"><span class="{kind}" style="width: {width:.1f}%"></span></div>'


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _inline(text: str) -> str:
    parts = str(text).split("`")
    return "".join(
        f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts)
    )


def _text(value: Any) -> str:
    return html.escape(str(value))
