"""Distributional fidelity: 2-way marginal total variation and per-column distances.

**2-way marginals** (P3GM, Takagi et al., ICDE 2021, Section VI "2-way marginals" and VI-C):
for every pair of columns (a, b), with p and q the joint frequency tables of (a, b) in the
real and synthetic tables,

    TVD(a, b) = 1/2 * sum_{u, v} |p(u, v) - q(u, v)|,

and the score is the average of TVD(a, b) over all pairs a < b (the target included).
It lies in [0, 1]; identical tables score 0. P3GM does not say how it discretises continuous
columns; we cut each numeric column at the real table's quantiles k / n_bins
(k = 1 .. n_bins - 1, duplicates dropped, bins closed on the right), so that a column with a
point mass (Adult's capital-gain is mostly 0) keeps that mass in a bin of its own and no bin
is empty in the real data. Synthetic values beyond the real range fall into the end bins.
Categorical columns use their values (the union over both tables) as they are.

**Per column**: the 1-way TVD on the same discretisation, and for numeric columns the
1-Wasserstein distance (also divided by the real column's standard deviation, so columns
on different scales compare) and the two-sample Kolmogorov-Smirnov statistic and p-value.

Evaluation is not a release: the quantile edges come from the real data, which is fine here
and never acceptable inside a synthesizer (there, bounds are public or DP-released).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from accounting.validation import check_count
from jdp.eval._tables import categories, category_codes, check_tables, is_categorical


def discretize(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, n_bins: int = 10
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, int]]:
    """Integer codes of every column of both tables, and each column's number of levels.

    Numeric columns are cut at the real quantiles described in the module docstring;
    categorical columns are coded over the sorted union of their values.
    """
    check_count("n_bins", n_bins, minimum=2)
    tables = {"real": real, "synthetic": synthetic}
    kinds = check_tables(tables)
    real_codes, synthetic_codes, levels = {}, {}, {}
    for column, categorical in kinds.items():
        if categorical:
            cats = categories(column, tables)
            real_codes[column] = category_codes(real[column], cats)
            synthetic_codes[column] = category_codes(synthetic[column], cats)
            levels[column] = len(cats)
        else:
            edges = quantile_edges(real[column].to_numpy(dtype=float), n_bins)
            real_codes[column] = np.searchsorted(
                edges, real[column].to_numpy(dtype=float), side="left"
            )
            synthetic_codes[column] = np.searchsorted(
                edges, synthetic[column].to_numpy(dtype=float), side="left"
            )
            levels[column] = len(edges) + 1
    return real_codes, synthetic_codes, levels


def quantile_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Distinct interior cut points: the quantiles k / n_bins, k = 1 .. n_bins - 1."""
    return np.unique(np.quantile(values, np.arange(1, n_bins) / n_bins))


def two_way_tvd(real: pd.DataFrame, synthetic: pd.DataFrame, *, n_bins: int = 10) -> float:
    """Average total-variation distance over all 2-way marginals (P3GM Section VI-C).

    Args:
        real: the real table.
        synthetic: the synthetic table (same columns and column kinds; any number of rows).
        n_bins: quantile bins per numeric column.

    Returns:
        The mean over column pairs of 1/2 * L1 distance between the joint frequency tables,
        in [0, 1]. A table with a single column has no pairs and raises ``ValueError``.
    """
    if real.shape[1] < 2:
        raise ValueError(f"expected at least two columns for 2-way marginals, got {real.shape[1]}")
    real_codes, synthetic_codes, levels = discretize(real, synthetic, n_bins=n_bins)
    tvds = [
        _tvd(
            real_codes[a] * levels[b] + real_codes[b],
            synthetic_codes[a] * levels[b] + synthetic_codes[b],
            levels[a] * levels[b],
        )
        for a, b in combinations(real_codes, 2)
    ]
    return float(np.mean(tvds))


def column_distances(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, n_bins: int = 10
) -> list[dict]:
    """Per-column distances between the real and synthetic marginals.

    Returns:
        One row per column: ``column``, ``kind`` ("numeric" or "categorical"), ``tvd`` (1-way,
        on the :func:`discretize` codes) and, for numeric columns, ``wasserstein``,
        ``wasserstein_scaled`` (divided by the real standard deviation; ``None`` when it is
        0), ``ks`` and ``ks_pvalue``; these four are ``None`` for categorical columns.
    """
    real_codes, synthetic_codes, levels = discretize(real, synthetic, n_bins=n_bins)
    rows = []
    for column in real.columns:
        categorical = is_categorical(real[column])
        row: dict = {
            "column": column,
            "kind": "categorical" if categorical else "numeric",
            "tvd": _tvd(real_codes[column], synthetic_codes[column], levels[column]),
            "wasserstein": None,
            "wasserstein_scaled": None,
            "ks": None,
            "ks_pvalue": None,
        }
        if not categorical:
            r = real[column].to_numpy(dtype=float)
            s = synthetic[column].to_numpy(dtype=float)
            distance = float(stats.wasserstein_distance(r, s))
            ks = stats.ks_2samp(r, s)
            std = float(np.std(r))
            row.update(
                wasserstein=distance,
                wasserstein_scaled=distance / std if std > 0 else None,
                ks=float(ks.statistic),
                ks_pvalue=float(ks.pvalue),
            )
        rows.append(row)
    return rows


def _tvd(real_codes: np.ndarray, synthetic_codes: np.ndarray, n_levels: int) -> float:
    p = np.bincount(real_codes, minlength=n_levels) / len(real_codes)
    q = np.bincount(synthetic_codes, minlength=n_levels) / len(synthetic_codes)
    return float(0.5 * np.abs(p - q).sum())
