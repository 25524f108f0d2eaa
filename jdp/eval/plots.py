"""PNG figures for reports: image-sample grids and real-vs-synthetic marginal plots.

Figures are drawn on matplotlib's Agg canvas directly (``matplotlib.figure.Figure`` with
``FigureCanvasAgg``), never through ``pyplot``: no display is needed and no global backend
state is touched.

The marginal plots show the real table's distribution, which is fine for a report the data
owner reads (evaluation is not a release) and must not be published with a DP release.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from accounting.validation import check_count
from jdp.eval._tables import check_tables, is_categorical

REAL_COLOR = "#1f77b4"
SYNTHETIC_COLOR = "#d62728"


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
    max_categories: int = 30,
) -> list[Path]:
    """One PNG per column comparing its real and synthetic marginal; return the paths.

    Numeric columns: density histograms on shared equal-width bins spanning both tables.
    Categorical columns: relative frequencies side by side, the ``max_categories`` most
    frequent real categories (then synthetic-only ones) in order of real frequency.
    Files are named ``marginal_<index>_<column>.png`` (unsafe characters replaced).
    """
    kinds = check_tables({"real": real, "synthetic": synthetic})
    n_bins = check_count("n_bins", n_bins, minimum=1)
    max_categories = check_count("max_categories", max_categories, minimum=1)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, column in enumerate(kinds):
        fig = Figure(figsize=(6.0, 3.6))
        FigureCanvasAgg(fig)
        categorical = is_categorical(real[column])
        # fixed margins (room for rotated category labels): tight_layout costs more than drawing
        fig.subplots_adjust(left=0.12, right=0.97, top=0.9, bottom=0.32 if categorical else 0.12)
        ax = fig.subplots()
        if categorical:
            _categorical_bars(ax, real[column], synthetic[column], max_categories)
        else:
            _numeric_histograms(ax, real[column], synthetic[column], n_bins)
        ax.set_title(str(column))
        ax.legend(frameon=False)
        paths.append(save_figure(fig, out_dir / f"marginal_{index:02d}_{_slug(column)}.png"))
    return paths


def _numeric_histograms(ax, real: pd.Series, synthetic: pd.Series, n_bins: int) -> None:
    r = real.to_numpy(dtype=float)
    s = synthetic.to_numpy(dtype=float)
    edges = np.histogram_bin_edges(np.r_[r, s], bins=n_bins)
    ax.hist(
        r,
        bins=edges,
        density=True,
        histtype="stepfilled",
        alpha=0.35,
        color=REAL_COLOR,
        label="real",
    )
    ax.hist(
        s,
        bins=edges,
        density=True,
        histtype="step",
        linewidth=1.5,
        color=SYNTHETIC_COLOR,
        label="synthetic",
    )
    ax.set_ylabel("density")


def _categorical_bars(ax, real: pd.Series, synthetic: pd.Series, max_categories: int) -> None:
    p = real.astype(str).value_counts(normalize=True)
    q = synthetic.astype(str).value_counts(normalize=True)
    order = list(p.index) + [c for c in q.index if c not in p.index]
    order = order[:max_categories]
    x = np.arange(len(order))
    ax.bar(x - 0.2, [p.get(c, 0.0) for c in order], width=0.4, color=REAL_COLOR, label="real")
    ax.bar(
        x + 0.2, [q.get(c, 0.0) for c in order], width=0.4, color=SYNTHETIC_COLOR, label="synthetic"
    )
    ax.set_xticks(x, order, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("frequency")


def _slug(name: object) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("_") or "column"


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as a PNG at ``path`` atomically (rendered in memory, then
    :func:`jdp.data.schema.write_atomic`): a crash leaves the old file or none."""
    import io

    from jdp.data.schema import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    write_atomic(path, buffer.getvalue())
    return path
