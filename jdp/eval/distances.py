"""Distances between samples: sliced Wasserstein-1 of point clouds, dynamic time warping of
series (dp-GAN's evaluation, Frigerio et al. 2019, Sec. 6.1-6.2)."""

from __future__ import annotations

import numpy as np


def sliced_wasserstein(
    a: np.ndarray, b: np.ndarray, rng: np.random.Generator, k: int = 50
) -> float:
    """Mean 1-D Wasserstein-1 distance between the projections of ``a`` and ``b`` (rows are
    points) on ``k`` random unit directions."""
    from scipy.stats import wasserstein_distance

    dirs = rng.standard_normal((k, a.shape[1]))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    return float(np.mean([wasserstein_distance(a @ d, b @ d) for d in dirs]))


def dtw(a: np.ndarray, b: np.ndarray) -> float:
    """Dynamic time warping distance of two 1-D series (absolute differences, no window)."""
    n, m = len(a), len(b)
    cost = np.full((n + 1, m + 1), np.inf)
    cost[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost[i, j] = abs(a[i - 1] - b[j - 1]) + min(
                cost[i - 1, j], cost[i, j - 1], cost[i - 1, j - 1]
            )
    return float(cost[n, m])
