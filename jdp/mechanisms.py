"""Additive-noise mechanisms and clipping on numpy arrays (the encoding-phase building blocks).

Every mechanism returns ``(noisy_value, event)``; the caller records the event in its
:class:`accounting.ledger.PrivacyLedger`. The noise generator is always passed in
(``rng: np.random.Generator``); nothing here has a default seed.

Floating-point caveat (Mironov 2012, "On significance of the least significant bits for
differential privacy"): textbook floating-point Laplace/Gaussian samplers leak through the
low-order bits of their output. ``secure_noise=True`` rounds the released value to a grid of
spacing 2**-k above the noise scale's resolution (the snapping idea of that paper), which
removes that channel at a negligible utility cost; the default follows the papers we
reimplement (plain floating-point noise).
"""

from __future__ import annotations

import math

import numpy as np

from accounting import events as ev
from accounting._validate import check_nonnegative, check_positive


def _snap(value: np.ndarray, scale: float) -> np.ndarray:
    """Round to the power-of-two grid just above ``scale * 2**-20`` (Mironov's snapping)."""
    if scale <= 0:
        return value
    lam = 2.0 ** math.ceil(math.log2(scale * 2.0**-20))
    return np.round(value / lam) * lam


def gaussian_mechanism(
    rng: np.random.Generator,
    value: np.ndarray,
    *,
    l2_sensitivity: float,
    noise_multiplier: float,
    symmetric: bool = False,
    secure_noise: bool = False,
) -> tuple[np.ndarray, ev.GaussianDpEvent]:
    """Release ``value + N(0, (noise_multiplier * l2_sensitivity)^2 I)``.

    Args:
      rng: the noise source.
      value: the statistic (any shape) computed on the private data.
      l2_sensitivity: max L2 change of ``value`` between neighbouring datasets. For a
        symmetric matrix with ``symmetric=True`` this is the L2 norm of the change of the
        upper triangle (diagonal included), since only that triangle carries fresh noise.
      noise_multiplier: sigma / sensitivity; 0 is the non-private limit (infinite epsilon).
      symmetric: for a square ``value``: draw i.i.d. noise on the upper triangle and mirror it
        (Dwork et al. 2014 "Analyze Gauss"), so the release is symmetric.
      secure_noise: snap the output to a grid to close the floating-point channel.

    Returns:
      ``(noisy_value, GaussianDpEvent(noise_multiplier))``.

    Privacy:
      Neighbouring relation: whatever relation ``l2_sensitivity`` was derived for.
      Gaussian mechanism: RDP(alpha) = alpha / (2 * noise_multiplier**2) (Mironov 2017).
    """
    check_positive("l2_sensitivity", l2_sensitivity)
    check_nonnegative("noise_multiplier", noise_multiplier)
    value = np.asarray(value, dtype=np.float64)
    scale = noise_multiplier * l2_sensitivity
    if symmetric:
        if value.ndim != 2 or value.shape[0] != value.shape[1]:
            raise ValueError(f"expected a square matrix for symmetric noise, got shape {value.shape}")
        noise = np.triu(rng.normal(0.0, scale, size=value.shape))
        noise = noise + np.triu(noise, 1).T
    else:
        noise = rng.normal(0.0, scale, size=value.shape)
    out = value + noise
    if secure_noise:
        out = _snap(out, scale)
    return out, ev.GaussianDpEvent(noise_multiplier=float(noise_multiplier))


def laplace_mechanism(
    rng: np.random.Generator,
    value: np.ndarray,
    *,
    l1_sensitivity: float,
    epsilon: float,
    symmetric: bool = False,
    secure_noise: bool = False,
) -> tuple[np.ndarray, ev.LaplaceDpEvent]:
    """Release ``value + Laplace(0, l1_sensitivity / epsilon)`` entrywise (pure epsilon-DP).

    With ``symmetric=True`` the noise is drawn on the upper triangle and mirrored; then
    ``l1_sensitivity`` must bound the L1 change of the upper triangle only.

    Privacy:
      epsilon-DP for the relation ``l1_sensitivity`` was derived under. The event is
      ``LaplaceDpEvent(noise_multiplier = scale / sensitivity = 1 / epsilon)``.
    """
    check_positive("l1_sensitivity", l1_sensitivity)
    check_positive("epsilon", epsilon)
    value = np.asarray(value, dtype=np.float64)
    scale = l1_sensitivity / epsilon
    if symmetric:
        if value.ndim != 2 or value.shape[0] != value.shape[1]:
            raise ValueError(f"expected a square matrix for symmetric noise, got shape {value.shape}")
        noise = np.triu(rng.laplace(0.0, scale, size=value.shape))
        noise = noise + np.triu(noise, 1).T
    else:
        noise = rng.laplace(0.0, scale, size=value.shape)
    out = value + noise
    if secure_noise:
        out = _snap(out, scale)
    return out, ev.LaplaceDpEvent(noise_multiplier=1.0 / float(epsilon))


def clip_rows(x: np.ndarray, l2_clip_norm: float) -> np.ndarray:
    """Scale each row of ``x`` so that its L2 norm is at most ``l2_clip_norm``.

    ``x_i <- x_i * min(1, C / ||x_i||)``; rows already inside the ball are unchanged.
    """
    check_positive("l2_clip_norm", l2_clip_norm, allow_inf=True)
    x = np.asarray(x)
    if math.isinf(l2_clip_norm):
        return x
    norms = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]  # faster than linalg.norm
    if norms.max(initial=0.0) <= l2_clip_norm:
        return x
    factor = np.minimum(1.0, l2_clip_norm / np.maximum(norms, np.finfo(np.float64).tiny))
    return x * factor

