"""PNG figures for reports: image-sample grids, real-vs-synthetic marginal plots and
pairwise-association heatmaps.

Figures are drawn on matplotlib's Agg canvas directly (``matplotlib.figure.Figure`` with
``FigureCanvasAgg``), never through ``pyplot``: no display is needed and no global backend
state is touched.

The marginal plots and heatmaps show the real table's distribution, which is fine for a report the data
owner reads (evaluation is not a release) and must not be published with a DP release.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from accounting.validation import check_count
from jdp.eval._tables import check_tables, is_categorical

REAL_COLOR = "#1f77b4"
SYNTHETIC_COLOR = "#d62728"
#: categories drawn per categorical column (the most frequent real ones)
MAX_CATEGORIES = 30
#: a numeric value holding at least this share of the real rows is drawn as a point mass
POINT_MASS_SHARE = 0.2


def image_grid(
    images: np.ndarray,
    path: str | Path,
    *,
    n_cols: int = 10,
    image_shape: tuple[int, ...] | None = None,
    labels: list | None = None,
    title: str | None = None,
) -> Path:
    """Write a grid of images to ``path`` (PNG) and return the path.

    Args:
        images: ``(n, h, w)`` grayscale, ``(n, h, w, 3|4)`` colour, or ``(n, d)`` flat rows
            with ``image_shape`` (e.g. ``(28, 28)`` for MNIST rows of 784 pixels).
        path: output file.
        n_cols: images per row.
        image_shape: shape of one image when ``images`` holds flat rows.
        labels: optional per-image captions (e.g. class labels).
        title: optional figure title.

    All images share one grey scale (the array's min and max), so intensities compare.
    """
    images = np.asarray(images, dtype=float)
    if image_shape is not None:
        images = images.reshape((len(images), *image_shape))
    if images.ndim not in (3, 4) or len(images) == 0:
        raise ValueError(
            f"expected images of shape (n, h, w) or (n, h, w, c) with n >= 1, got {images.shape}"
        )
    if not np.isfinite(images).all():
        raise ValueError("expected finite pixel values, got NaN or inf")
    if labels is not None and len(labels) != len(images):
        raise ValueError(f"expected {len(images)} labels, got {len(labels)}")
    n_cols = min(check_count("n_cols", n_cols, minimum=1), len(images))
    n_rows = -(-len(images) // n_cols)
    lo, hi = float(images.min()), float(images.max())
    fig = Figure(figsize=(1.2 * n_cols, 1.2 * n_rows + (0.4 if title else 0)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if i < len(images):
            if images.ndim == 4:
                ax.imshow(np.clip((images[i] - lo) / max(hi - lo, 1e-12), 0, 1))
            else:
                ax.imshow(images[i], cmap="gray", vmin=lo, vmax=hi)
            if labels is not None:
                ax.set_title(str(labels[i]), fontsize=8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def marginal_plots(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    out_dir: str | Path,
    *,
    n_bins: int = 30,
    max_categories: int = MAX_CATEGORIES,
) -> list[Path]:
    """One PNG per column comparing its real and synthetic marginal; return the paths.

    Each figure is :func:`marginal_figure`; files are named ``marginal_<index>_<column>.png``
    (unsafe characters replaced). :func:`marginal_notes` gives each figure's caption.
    """
    kinds = check_tables({"real": real, "synthetic": synthetic})
    n_bins = check_count("n_bins", n_bins, minimum=1)
    max_categories = check_count("max_categories", max_categories, minimum=1)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        save_figure(
            marginal_figure(
                real[column], synthetic[column], n_bins=n_bins, max_categories=max_categories
            ),
            out_dir / f"marginal_{index:02d}_{_slug(column)}.png",
        )
        for index, column in enumerate(kinds)
    ]


def marginal_figure(
    real: pd.Series,
    synthetic: pd.Series,
    *,
    n_bins: int = 30,
    max_categories: int = MAX_CATEGORIES,
) -> Figure:
    """The real-vs-synthetic marginal of one column (titled by the series' name).

    Numeric column: the values the real column holds in point masses (:func:`point_masses`,
    e.g. Adult's capital-gain at 0) are drawn as labelled bars of their share of rows, real
    beside synthetic; the other values as histograms on shared equal-width bins spanning both
    tables, on their own axis (each bin's share of the rows not at a point mass). A column
    without point masses is one such histogram (each bin's share of all rows).
    Categorical column: the share of rows of each category side by side, the
    ``max_categories`` most frequent real categories (then synthetic-only ones) in order of
    real frequency; a cut list says so under the axis ("showing 30 of 42 categories").
    Every axis carries a y-label.
    """
    fig = Figure(figsize=(6.0, 3.6))
    FigureCanvasAgg(fig)
    name = str(real.name)
    if is_categorical(real):
        # fixed margins (room for rotated labels): tight_layout costs more than drawing
        fig.subplots_adjust(left=0.12, right=0.97, top=0.9, bottom=0.34)
        ax = fig.subplots()
        _categorical_bars(ax, real, synthetic, max_categories)
        ax.set_title(name)
        ax.legend(frameon=False)
        return fig
    r = real.to_numpy(dtype=float)
    s = synthetic.to_numpy(dtype=float)
    masses = point_masses(r)
    if not masses:
        fig.subplots_adjust(left=0.12, right=0.97, top=0.9, bottom=0.14)
        ax = fig.subplots()
        _numeric_histograms(ax, r, s, n_bins)
        ax.set_ylabel("share of rows per bin")
        ax.set_title(name)
        ax.legend(frameon=False)
        return fig
    r_rest, s_rest = _off(r, masses), _off(s, masses)
    fig.suptitle(name)
    if not len(r_rest):  # every real row at a point mass: the bars are the whole picture
        fig.subplots_adjust(left=0.12, right=0.97, top=0.86, bottom=0.14)
        ax = fig.subplots()
        _mass_bars(ax, r, s, masses)
        ax.legend(frameon=False)
        return fig
    fig.subplots_adjust(left=0.1, right=0.97, top=0.86, bottom=0.16, wspace=0.5)
    bars, ax = fig.subplots(1, 2, width_ratios=[min(len(masses), 3), 3])
    _mass_bars(bars, r, s, masses)
    _numeric_histograms(ax, r_rest, s_rest if len(s_rest) else None, n_bins)
    at = ", ".join(_number(v) for v, _ in masses)
    ax.set_ylabel(f"share of rows not at {at}, per bin", fontsize=9)
    ax.set_xlabel(f"values other than {at}")
    ax.legend(frameon=False)
    return fig


def point_masses(values: np.ndarray, share: float = POINT_MASS_SHARE) -> list[tuple[float, float]]:
    """The values that hold at least ``share`` of ``values`` (the real column), with their
    share, in increasing order of value; ``[]`` when the column takes one value only (a
    single value is its whole distribution, drawn as an ordinary histogram)."""
    distinct, counts = np.unique(values, return_counts=True)
    if len(distinct) < 2:
        return []
    shares = counts / len(values)
    return [(float(v), float(p)) for v, p in zip(distinct, shares) if p >= share]


def marginal_notes(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    max_categories: int = MAX_CATEGORIES,
) -> list[str]:
    """One caption per column of :func:`marginal_plots`, in the same order: the point masses
    of a numeric column ("real: 92% of rows at 0, synthetic: 3%; the other values on their
    own scale"), the cut of a categorical one ("showing 30 of 42 categories, the most
    frequent in the real data"), else ``""``."""
    kinds = check_tables({"real": real, "synthetic": synthetic})
    max_categories = check_count("max_categories", max_categories, minimum=1)
    notes = []
    for column, categorical in kinds.items():
        if categorical:
            shown, total = _category_order(real[column], synthetic[column], max_categories)
            notes.append(_cut_note(len(shown), total) if len(shown) < total else "")
            continue
        r = real[column].to_numpy(dtype=float)
        s = synthetic[column].to_numpy(dtype=float)
        masses = point_masses(r)
        notes.append(
            "; ".join(
                f"real: {p:.0%} of rows at {_number(v)}, synthetic: {np.mean(s == v):.0%}"
                for v, p in masses
            )
            + ("; the other values on their own scale" if masses else "")
        )
    return notes


def association_figure(associations: Mapping[str, Any]) -> Figure:
    """Heatmaps of the pairwise association of the columns, real | synthetic | absolute
    difference, on one colour scale [0, 1].

    Args:
        associations: ``{"columns": names, "real": matrix, "synthetic": matrix, "measure":
            name}`` (:func:`jdp.eval.report.associations`): square matrices of values in
            [0, 1] (the diagonal is drawn grey).
    """
    names = [str(c) for c in associations["columns"]]
    panels = {
        "real": np.asarray(associations["real"], dtype=float),
        "synthetic": np.asarray(associations["synthetic"], dtype=float),
    }
    panels["|real - synthetic|"] = np.abs(panels["real"] - panels["synthetic"])
    diagonal = np.eye(len(names), dtype=bool)  # a column with itself: grey, off the scale
    cmap = colormaps["viridis"].with_extremes(bad="#d9d9d9")
    size = max(3.0, 0.2 * len(names) + 1.2)
    fig = Figure(figsize=(3 * size + 0.8, size))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.09, right=0.92, top=0.93, bottom=0.26, wspace=0.5)
    axes = fig.subplots(1, 3)
    image = None
    for ax, (title, matrix) in zip(axes, panels.items()):
        image = ax.imshow(np.ma.array(matrix, mask=diagonal), vmin=0.0, vmax=1.0, cmap=cmap)
        ax.set_title(title)
        ticks = np.arange(len(names))
        ax.set_xticks(ticks, names, rotation=90, fontsize=7)
        ax.set_yticks(ticks, names, fontsize=7)
    cbar = fig.colorbar(image, ax=list(axes), fraction=0.015, pad=0.02)
    cbar.set_label(str(associations["measure"]))
    return fig


def _numeric_histograms(ax, real: np.ndarray, synthetic: np.ndarray | None, n_bins: int) -> None:
    edges = np.histogram_bin_edges(real if synthetic is None else np.r_[real, synthetic], n_bins)
    ax.hist(
        real,
        bins=edges,
        weights=np.full(len(real), 1 / len(real)),
        histtype="stepfilled",
        alpha=0.35,
        color=REAL_COLOR,
        label="real",
    )
    if synthetic is not None:
        ax.hist(
            synthetic,
            bins=edges,
            weights=np.full(len(synthetic), 1 / len(synthetic)),
            histtype="step",
            linewidth=1.5,
            color=SYNTHETIC_COLOR,
            label="synthetic",
        )


def _mass_bars(
    ax, real: np.ndarray, synthetic: np.ndarray, masses: list[tuple[float, float]]
) -> None:
    """Bars of the share of rows at each point mass, real beside synthetic, labelled."""
    x = np.arange(len(masses))
    r = [p for _, p in masses]
    s = [float(np.mean(synthetic == v)) for v, _ in masses]
    for offset, shares, color, label in (
        (-0.2, r, REAL_COLOR, "real"),
        (0.2, s, SYNTHETIC_COLOR, "synthetic"),
    ):
        bars = ax.bar(x + offset, shares, width=0.4, color=color, label=label)
        ax.bar_label(bars, labels=[f"{p:.0%}" for p in shares], fontsize=7)
    ax.set_xticks(x, [f"at {_number(v)}" for v, _ in masses], fontsize=8)
    ax.set_xlim(-0.7, len(masses) - 0.3)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("share of rows")


def _off(values: np.ndarray, masses: list[tuple[float, float]]) -> np.ndarray:
    return values[~np.isin(values, [v for v, _ in masses])]


def _category_order(
    real: pd.Series, synthetic: pd.Series, max_categories: int
) -> tuple[list[str], int]:
    """The categories drawn (the most frequent real ones, then synthetic-only ones, at most
    ``max_categories``) and the number there are in both tables together."""
    p = real.astype(str).value_counts()
    q = synthetic.astype(str).value_counts()
    order = list(p.index) + [c for c in q.index if c not in p.index]
    return order[:max_categories], len(order)


def _cut_note(shown: int, total: int) -> str:
    return f"showing {shown} of {total} categories, the most frequent in the real data"


def _categorical_bars(ax, real: pd.Series, synthetic: pd.Series, max_categories: int) -> None:
    p = real.astype(str).value_counts(normalize=True)
    q = synthetic.astype(str).value_counts(normalize=True)
    order, total = _category_order(real, synthetic, max_categories)
    x = np.arange(len(order))
    ax.bar(x - 0.2, [p.get(c, 0.0) for c in order], width=0.4, color=REAL_COLOR, label="real")
    ax.bar(
        x + 0.2, [q.get(c, 0.0) for c in order], width=0.4, color=SYNTHETIC_COLOR, label="synthetic"
    )
    ax.set_xticks(x, order, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("share of rows")
    if len(order) < total:
        ax.set_xlabel(_cut_note(len(order), total), fontsize=8)


def _number(value: float) -> str:
    return f"{value:g}"


def _slug(name: object) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("_") or "column"


def figure_png(fig: Figure) -> bytes:
    """``fig`` rendered as PNG bytes (100 dpi), in memory."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as a PNG at ``path`` atomically (:func:`figure_png`, then
    :func:`jdp.data.schema.write_atomic`): a crash leaves the old file or none."""
    from jdp.data.schema import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, figure_png(fig))
    return path
