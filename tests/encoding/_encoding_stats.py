"""Statistical bounds shared by the encoding-phase tests (computed, not guessed)."""

from __future__ import annotations

import numpy as np
from scipy import stats

ALPHA = 1e-6  # false-alarm rate of each statistical check


def chi2_var_ratio_bounds(n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Two-sided bounds on s^2 / sigma^2 for n i.i.d. zero-mean normal draws (n dof, known mean)."""
    return stats.chi2.ppf(alpha / 2, n) / n, stats.chi2.ppf(1 - alpha / 2, n) / n


def laplace_scale_bounds(n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Bounds on mean(|L|) / b for n i.i.d. Laplace(0, b) draws: |L|/b ~ Exp(1), so
    sum |L| / b ~ Gamma(n, 1)."""
    return stats.gamma.ppf(alpha / 2, n) / n, stats.gamma.ppf(1 - alpha / 2, n) / n


def upper_triangle(m: np.ndarray) -> np.ndarray:
    return m[np.triu_indices(m.shape[-1])]


def spiked_data(rng: np.random.Generator, n: int, d: int, *, k: int = 3) -> np.ndarray:
    """Rows with a clear k-dimensional principal subspace, scaled to norm <= 1."""
    scales = np.concatenate([np.linspace(1.0, 0.6, k), np.full(d - k, 0.1)])
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    x = (rng.normal(size=(n, d)) * scales) @ basis.T
    return x / (np.linalg.norm(x, axis=1).max() * 1.01)
