"""Canaries (worst-case records an auditor inserts) and the scores that detect them.

A canary should make the neighbouring outputs as far apart as the mechanism's sensitivity
allows, so that an audit measures the mechanism's worst case rather than an average one:

* :func:`boundary_canary` -- a record on the public bound, along one axis (the L2 ball's
  surface: a clipped sum moves by exactly ``C``; a scatter matrix by ``C^2``).
* :func:`corner_canary` -- the corner of a declared box (maximises an L1 sensitivity such as
  Lap-PCA's ``(||r||_1^2 + ||r||_2^2) / 2``).
* :func:`gradient_canaries` -- ``m`` random sign vectors of norm ``C`` in a high-dimensional
  parameter space (nearly orthogonal, so each canary is detected on its own; the
  "gradient-space" or Dirac canaries of Nasr et al. 2021 and Steinke et al. 2023).

The scores are likelihood-ratio statistics for noise of a known kind, the most powerful
tests between the two neighbouring output distributions (Neyman-Pearson):

* :func:`gaussian_shift_score` -- releases ``y = s + N(0, sigma_i^2 I)`` for statistics ``s``
  equal to ``a`` (canary out) or ``b`` (canary in): the log-likelihood ratio is an increasing
  function of ``sum_i <y_i - a_i, b_i - a_i> / sigma_i^2``.
* :func:`laplace_shift_score` -- releases ``y = s + Laplace(lambda_i)`` entrywise: the
  log-likelihood ratio is ``sum_i sum_j (|y_ij - a_ij| - |y_ij - b_ij|) / lambda_i``.

The auditor knows both datasets, so ``a`` and ``b`` are the mechanism's exact (pre-noise)
statistics, computed with the library's own functions.

References:
  Jagielski, Ullman & Oprea, NeurIPS 2020 (poisoning canaries); Nasr et al., IEEE S&P 2021
  (Sec. 4: Dirac / gradient canaries); Steinke, Nasr & Jagielski, NeurIPS 2023 (Sec. 6).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from accounting.validation import check_count, check_positive

__all__ = [
    "boundary_canary",
    "corner_canary",
    "gaussian_shift_score",
    "gradient_canaries",
    "laplace_shift_score",
]


def boundary_canary(dim: int, l2_clip_norm: float, *, axis: int = 0) -> np.ndarray:
    """``C e_axis``: a record of L2 norm exactly ``C`` along one axis, shape ``(dim,)``."""
    dim = check_count("dim", dim, minimum=1)
    c = check_positive("l2_clip_norm", l2_clip_norm)
    if not 0 <= axis < dim:
        raise ValueError(f"expected 0 <= axis < {dim}, got {axis}")
    out = np.zeros(dim)
    out[axis] = c
    return out


def corner_canary(lower: object, upper: object) -> np.ndarray:
    """The upper corner of the box ``[lower, upper]`` (every coordinate at its bound)."""
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    if lower.shape != upper.shape or np.any(upper <= lower):
        raise ValueError("expected lower < upper of the same shape")
    return upper.copy()


def gradient_canaries(key: jax.Array, m: int, dim: int, l2_clip_norm: float) -> jax.Array:
    """``m`` random sign vectors ``C s / sqrt(dim)``, ``s`` uniform in ``{-1, 1}^dim``: norm
    exactly ``C``, shape ``(m, dim)``.

    For ``dim >> m`` they are nearly orthogonal (``|<u_i, u_j>| ~ C^2 / sqrt(dim)``), so a
    canary's score is barely moved by the others."""
    m = check_count("m", m, minimum=1)
    dim = check_count("dim", dim, minimum=1)
    c = check_positive("l2_clip_norm", l2_clip_norm)
    return jax.random.rademacher(key, (m, dim), dtype=jnp.float32) * (c / np.sqrt(dim))


def _flat(parts: Sequence[object], trials_axis: bool) -> list[np.ndarray]:
    out = []
    for p in parts:
        arr = np.asarray(p, dtype=np.float64)
        out.append(arr.reshape(arr.shape[0], -1) if trials_axis else arr.reshape(1, -1))
    return out


def gaussian_shift_score(
    outputs: Sequence[object],
    without: Sequence[object],
    with_canary: Sequence[object],
    stds: Sequence[float],
) -> np.ndarray:
    """``sum_i <y_i - a_i, b_i - a_i> / sigma_i^2`` per trial (Gaussian log-likelihood ratio
    up to an increasing affine map).

    Args:
      outputs: the released statistics ``y_i``, each with a leading trials axis.
      without, with_canary: the exact statistics ``a_i`` and ``b_i`` (no trials axis).
      stds: the noise standard deviation ``sigma_i`` of each release.

    For a symmetric matrix released by noising its upper triangle, pass the upper triangle.
    """
    ys = _flat(outputs, True)
    a, b = _flat(without, False), _flat(with_canary, False)
    score = np.zeros(ys[0].shape[0])
    for y, ai, bi, s in zip(ys, a, b, stds, strict=True):
        score += (y - ai) @ (bi - ai)[0] / check_positive("std", s) ** 2
    return score


def laplace_shift_score(
    outputs: Sequence[object],
    without: Sequence[object],
    with_canary: Sequence[object],
    scales: Sequence[float],
    *,
    decimals: int | None = 9,
) -> np.ndarray:
    """``sum_i sum_j (|y_ij - a_ij| - |y_ij - b_ij|) / lambda_i`` per trial: the exact
    Laplace log-likelihood ratio (arguments as :func:`gaussian_shift_score`, ``scales`` the
    Laplace scales), rounded to ``decimals`` places.

    The ratio is bounded, ``|score| <= sum |b - a| / lambda``, and sits exactly at the bound
    whenever every noisy entry lies beyond both ``a`` and ``b``. Computed in float64, those
    atoms spread over a few ulps differently with and without the canary, and a threshold
    between them separates the two datasets far beyond ``e^eps``: a floating-point attack on
    the textbook Laplace sampler (Mironov 2012), not a test of the mechanism's sensitivity
    and scale. Rounding (default 9 decimals) removes it, so the audit measures the
    mechanism's mathematics; ``decimals=None`` keeps every bit (the floating-point audit:
    Lap-PCA passes it only with ``secure_noise=True``, Mironov's snapping).
    """
    ys = _flat(outputs, True)
    a, b = _flat(without, False), _flat(with_canary, False)
    score = np.zeros(ys[0].shape[0])
    for y, ai, bi, lam in zip(ys, a, b, scales, strict=True):
        score += (np.abs(y - ai) - np.abs(y - bi)).sum(axis=1) / check_positive("scale", lam)
    return score if decimals is None else np.round(score, decimals)
