"""How close a synthetic table is, in one score a data holder reads: the fidelity score, its
parts beside the real data's own train/test split, a verdict (:data:`VERDICT_RULE`), and the
pairwise associations (Cramér's V) drawn as heatmaps. Evaluation on real data, not a release
(:mod:`jdp.eval.report`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from jdp.eval.marginals import discretize

ASSOCIATION_MEASURE = "Cramér's V"
ASSOCIATION_DESCRIPTION = (
    "Cramér's V of each pair of columns (numeric columns cut at the real quantile bins of the "
    "2-way TVD; 0: independent, 1: one column determines the other)"
)


def associations(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, n_bins: int = 10
) -> dict[str, Any]:
    """Pairwise association of every two columns, in the real and in the synthetic table.

    One measure over mixed columns: Cramér's V of the two columns' contingency table, on the
    codes of :func:`~jdp.eval.marginals.discretize` (numeric columns cut at the real
    quantiles, as for the 2-way TVD; categorical ones by value). With ``n`` rows, ``chi2``
    Pearson's statistic and ``r x c`` the levels present in the table,
    ``V = sqrt(chi2 / (n * (min(r, c) - 1)))`` in [0, 1] (0 when a column takes one level);
    the diagonal is 1.

    Returns:
        ``{"columns": names, "measure": ASSOCIATION_MEASURE, "description":
        ASSOCIATION_DESCRIPTION, "real": matrix, "synthetic": matrix}``, each matrix a list
        of rows of floats.
    """
    real_codes, synthetic_codes, levels = discretize(real, synthetic, n_bins=n_bins)
    return {
        "columns": list(real_codes),
        "measure": ASSOCIATION_MEASURE,
        "description": ASSOCIATION_DESCRIPTION,
        "real": _cramers_v_matrix(real_codes, levels),
        "synthetic": _cramers_v_matrix(synthetic_codes, levels),
    }


def _cramers_v_matrix(codes: Mapping[str, np.ndarray], levels: Mapping[str, int]) -> list:
    names = list(codes)
    matrix = np.eye(len(names))
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            b = names[j]
            joint = np.bincount(codes[a] * levels[b] + codes[b], minlength=levels[a] * levels[b])
            matrix[i, j] = matrix[j, i] = _cramers_v(joint.reshape(levels[a], levels[b]))
    return matrix.tolist()


def _cramers_v(counts: np.ndarray) -> float:
    counts = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0]
    k = min(counts.shape) - 1
    if k < 1:
        return 0.0
    n = counts.sum()
    expected = np.outer(counts.sum(axis=1), counts.sum(axis=0)) / n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    return float(min(1.0, math.sqrt(chi2 / (n * k))))


#: the gap to the real split's own score up to which a part is "close", and beyond which "far"
CLOSE_GAP = 0.05
FAR_GAP = 0.15
VERDICT_RULE = (
    "Each part is scored twice with the same function: for the synthetic table, and for the "
    "held-out real test table in its place (the real data's own train/test split), which is "
    "what a fresh real sample scores, up to sampling error. The gap is the real split's score "
    f"minus the synthetic score. The verdict is 'close' when every part's gap is at most "
    f"{CLOSE_GAP}, 'some loss' when every gap is at most {FAR_GAP}, and 'far' otherwise; it "
    "names the part with the largest gap."
)
_PART_USE = {
    "column shapes": "the distribution of single columns",
    "column pairs": "relations between pairs of columns",
    "ML utility": "predicting the target from the other columns",
}


def fidelity_scores(evaluation: Mapping[str, Any]) -> dict[str, Any]:
    """The overall fidelity score in [0, 1], its parts, each beside the real split's own
    score, and a verdict sentence (:data:`VERDICT_RULE`).

    Parts (each higher is better, 1 at best):

    - **column shapes**: 1 - mean over columns of the Kolmogorov-Smirnov statistic (numeric
      columns) or the 1-way TVD (categorical columns);
    - **column pairs**: 1 - the mean 2-way marginal TVD (tables of two columns or more);
    - **ML utility**: the mean TSTR AUROC over the classifiers that scored on both sides
      (with a held-out real table; 0.5 is chance).

    The overall score is the mean of the parts. Each part's ``real_split`` is the same
    function of :func:`jdp.eval.report.real_split_reference` (the TSTR ``real`` column for ML utility), or
    ``None`` without a held-out real table; ``gap`` is ``real_split - synthetic`` and
    ``rating`` ``"close"``, ``"some loss"`` or ``"far"`` by :data:`CLOSE_GAP` and
    :data:`FAR_GAP`.

    A mean hides a single bad column: ``worst_column`` names the column whose distance (KS
    or TVD, as in column shapes) exceeds its real-split distance the most (without a real
    split: the largest distance), and ``worst_column_text`` says it in words.

    Returns:
        ``{"overall": {"synthetic", "real_split"}, "parts": [{"name", "measure",
        "synthetic", "real_split", "gap", "rating"}], "verdict": str, "rule": str,
        "worst_column": {"column", "measure", "synthetic", "real_split"},
        "worst_column_text": str}``.
    """
    reference = evaluation.get("reference")
    parts = [
        _part(
            "column shapes",
            "1 - mean per-column distance (KS statistic for numeric columns, TVD for "
            "categorical ones)",
            _shape_score(evaluation["columns"]),
            None if reference is None else _shape_score(reference["columns"]),
        )
    ]
    if evaluation["two_way_tvd"] is not None:
        parts.append(
            _part(
                "column pairs",
                f"1 - mean 2-way marginal TVD (numeric columns in {evaluation['n_bins']} "
                "quantile bins)",
                1.0 - evaluation["two_way_tvd"],
                None if reference is None else 1.0 - reference["two_way_tvd"],
            )
        )
    scored = [
        r
        for r in evaluation["tstr"] or ()
        if r["metric"] == "AUROC" and r["real"] is not None and r["synthetic"] is not None
    ]
    if scored:
        parts.append(
            _part(
                "ML utility",
                f"mean AUROC of {len(scored)} classifier(s) trained on the synthetic table and "
                "tested on held-out real data (0.5 is chance)",
                float(np.mean([r["synthetic"] for r in scored])),
                float(np.mean([r["real"] for r in scored])),
            )
        )
    overall = float(np.mean([p["synthetic"] for p in parts]))
    complete = all(p["real_split"] is not None for p in parts)
    return {
        "overall": {
            "synthetic": overall,
            "real_split": float(np.mean([p["real_split"] for p in parts])) if complete else None,
        },
        "parts": parts,
        "verdict": _verdict(parts, overall) if complete else _no_verdict(overall),
        "rule": VERDICT_RULE,
        **_worst_column(evaluation["columns"], None if reference is None else reference["columns"]),
    }


def _shape_distance(column: Mapping[str, Any]) -> float:
    return column["ks"] if column["kind"] == "numeric" else column["tvd"]


def _shape_score(columns: Sequence[Mapping[str, Any]]) -> float:
    return 1.0 - float(np.mean([_shape_distance(c) for c in columns]))


def _worst_column(
    columns: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]] | None
) -> dict[str, Any]:
    distances = [_shape_distance(c) for c in columns]
    references = None if reference is None else [_shape_distance(c) for c in reference]
    excess = distances if references is None else np.subtract(distances, references)
    i = int(np.argmax(excess))
    measure = "KS statistic" if columns[i]["kind"] == "numeric" else "TVD"
    ref = None if references is None else references[i]
    text = f"Largest single-column difference: {columns[i]['column']} ({measure} {distances[i]:.3f}"
    text += ")." if ref is None else f", held-out real data {ref:.3f})."
    return {
        "worst_column": {
            "column": columns[i]["column"],
            "measure": measure,
            "synthetic": distances[i],
            "real_split": ref,
        },
        "worst_column_text": text,
    }


def _part(name: str, measure: str, synthetic: float, real_split: float | None) -> dict[str, Any]:
    gap = None if real_split is None else real_split - synthetic
    rating = None
    if gap is not None:
        rating = "close" if gap <= CLOSE_GAP else "some loss" if gap <= FAR_GAP else "far"
    return {
        "name": name,
        "measure": measure,
        "synthetic": float(synthetic),
        "real_split": real_split,
        "gap": gap,
        "rating": rating,
    }


def _verdict(parts: Sequence[Mapping[str, Any]], overall: float) -> str:
    worst = max(parts, key=lambda p: p["gap"])
    against = (
        f"{worst['name']} scores {worst['synthetic']:.3f} against {worst['real_split']:.3f} "
        f"for held-out real data (gap {worst['gap']:.3f})"
    )
    if worst["rating"] == "close":
        return (
            f"Close to the real data (overall score {overall:.3f}): every part is within "
            f"{CLOSE_GAP} of what held-out real data scores; the largest gap: {against}."
        )
    if worst["rating"] == "some loss":
        return (
            f"Similar to the real data with some loss (overall score {overall:.3f}): {against}; "
            f"check {_PART_USE[worst['name']]} before relying on it."
        )
    far = [p["name"] for p in parts if p["rating"] == "far"]
    return (
        f"Far from the real data in {', '.join(far)} (overall score {overall:.3f}): {against}; "
        f"do not rely on it for {_PART_USE[worst['name']]}."
    )


def _no_verdict(overall: float) -> str:
    return (
        f"Overall score {overall:.3f}, with no verdict: no held-out real table was given, so "
        "there is no real split to compare with (give a real test table, e.g. --real-test or "
        "--dataset, for one)."
    )
