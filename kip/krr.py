"""Kernel ridge regression with KIP's trace-normalised ridge.

    preds = K_ts (K_ss + λ tr(K_ss)/n_s I)^{-1} y_s

solved with a Cholesky factorisation (``K_ss`` is symmetric positive semi-definite, so the
regularised matrix is positive definite for ``λ > 0`` unless ``tr(K_ss) = 0``). Scaling the
ridge by the mean eigenvalue ``tr(K_ss)/n_s`` makes ``λ`` independent of the kernel's scale
and of the support size.

References:
    Nguyen, T., Chen, Z. & Lee, J. (2021). Dataset meta-learning from kernel ridge-regression.
    ICLR (Sec. 2, the KRR loss; the reference code regularises by ``λ tr(K)/n``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

__all__ = ["krr_fit_predict", "regularised"]


def regularised(k_ss: jax.Array, reg: float) -> jax.Array:
    """``K_ss + reg * tr(K_ss) / n_s * I``."""
    n = k_ss.shape[0]
    return k_ss + (reg * jnp.trace(k_ss) / n) * jnp.eye(n, dtype=k_ss.dtype)


def krr_fit_predict(
    k_ts: jax.Array, k_ss: jax.Array, y_s: jax.Array, *, reg: float = 1e-6
) -> jax.Array:
    """Kernel ridge regression predictions on the targets from the support set.

    Args:
        k_ts: ``(n_t, n_s)`` kernel between targets and support.
        k_ss: ``(n_s, n_s)`` support kernel (symmetric PSD).
        y_s: ``(n_s,)`` or ``(n_s, c)`` support labels.
        reg: ridge ``λ >= 0`` relative to the mean eigenvalue ``tr(K_ss)/n_s``.

    Returns:
        ``(n_t,)`` or ``(n_t, c)`` predictions ``K_ts (K_ss + λ tr(K_ss)/n_s I)^{-1} y_s``.

    Raises:
        ValueError: on inconsistent shapes or ``reg < 0``.
    """
    if jnp.ndim(k_ss) != 2 or k_ss.shape[0] != k_ss.shape[1]:
        raise ValueError(f"expected k_ss of shape (n_s, n_s), got {jnp.shape(k_ss)}")
    n_s = k_ss.shape[0]
    if jnp.ndim(k_ts) != 2 or k_ts.shape[1] != n_s:
        raise ValueError(f"expected k_ts of shape (n_t, {n_s}), got {jnp.shape(k_ts)}")
    if jnp.ndim(y_s) not in (1, 2) or y_s.shape[0] != n_s:
        raise ValueError(f"expected y_s with {n_s} rows, got shape {jnp.shape(y_s)}")
    if not float(reg) >= 0:
        raise ValueError(f"expected reg >= 0, got {reg}")
    factor = jsl.cho_factor(regularised(k_ss, reg), lower=True)
    return k_ts @ jsl.cho_solve(factor, y_s)
