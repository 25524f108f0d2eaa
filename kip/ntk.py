"""Infinite-width NNGP and NTK kernels of fully-connected ReLU networks (closed form).

The network is ``depth`` hidden layers ``[Dense, ReLU] * depth`` followed by a ``Dense``
read-out, in the NTK parameterisation (weights ``N(0, 1)`` scaled by ``w_std / sqrt(fan_in)``,
biases scaled by ``b_std``), i.e. ``stax.serial(*[Dense(w, b), Relu()] * depth, Dense(w, b))``
of neural-tangents. For inputs ``x, x'`` in ``R^d`` the recursion is

    K^0(x, x')  = w_std^2 <x, x'> / d + b_std^2,            Θ^0 = K^0
    for l = 1 .. depth  (ReLU, then the next Dense):
        ρ       = K^{l-1}(x, x') / sqrt(K^{l-1}(x, x) K^{l-1}(x', x')),  θ = arccos ρ
        E[φφ]   = sqrt(K^{l-1}(x, x) K^{l-1}(x', x')) (sin θ + (π - θ) cos θ) / (2π)
        E[φ'φ'] = (π - θ) / (2π)
        K^l     = w_std^2 E[φφ] + b_std^2
        Θ^l     = K^l + w_std^2 E[φ'φ'] Θ^{l-1}

and the kernels returned are ``nngp = K^depth`` and ``ntk = Θ^depth`` (the read-out layer's).
On the diagonal the ReLU expectation is ``K(x, x) / 2`` exactly, which is how the per-row
variances ``K^l(x, x)`` are propagated.

**Safe derivatives.** ``θ`` is computed as ``arctan2(sqrt(1 - ρ^2), ρ)`` with a square root
whose derivative is taken as 0 where ``1 - ρ^2`` is within rounding of 0 (the kernel diagonal,
``x == x'``, or duplicated rows). There the true map ``x -> θ(x, x')`` has a cone (``θ ~
||x - x'||``) and its only sensible subgradient is 0; with a plain ``arccos`` or ``sqrt`` the
gradient w.r.t. ``x`` is ``inf * 0 = NaN`` and a whole KIP support-set step is poisoned. The
value is unchanged (the exact square root is used for it everywhere).

**Memory.** ``block_size`` rows of ``x1`` are processed at a time (``lax.map`` over blocks), so
the intermediate arrays are ``block_size x n2`` instead of ``n1 x n2``; the results are the
same as unblocked (tested). Everything follows the dtype of the inputs: pass float64 arrays
under ``jax.enable_x64(True)`` for KIP's float64 setting.

References:
    Cho, Y. & Saul, L. (2009). Kernel methods for deep learning. NeurIPS (arc-cosine kernel
    of degree 1 and 0: the two ReLU expectations above).
    Lee, J. et al. (2018). Deep neural networks as Gaussian processes. ICLR (the NNGP
    recursion).
    Jacot, A., Gabriel, F. & Hongler, C. (2018). Neural tangent kernel. NeurIPS.
    Arora, S. et al. (2019). On exact computation with an infinitely wide neural net.
    NeurIPS, Sec. 3 and Appendix (the NTK recursion ``Θ^l = K^l + Θ^{l-1} E[φ'φ']``).
    Lee, J. et al. (2019). Wide neural networks of any depth evolve as linear models under
    gradient descent. NeurIPS (NTK parameterisation with ``w_std``, ``b_std``).
    Novak, R. et al. (2020). Neural Tangents. ICLR (``stax``; the parameterisation matched).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Kernels", "fc_relu_kernels", "make_kernel_fn"]

Get = Literal["ntk", "nngp"]


class Kernels(NamedTuple):
    """The NNGP and NTK of one network, each ``(n1, n2)``."""

    nngp: jax.Array
    ntk: jax.Array


def _validate(*, depth: int, w_std: float, b_std: float, block_size: int | None = None) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise TypeError(f"expected depth to be an int, got {type(depth).__name__}")
    if depth < 1:
        raise ValueError(f"expected depth >= 1, got {depth}")
    for name, value in (("w_std", w_std), ("b_std", b_std)):
        if not math.isfinite(float(value)):
            raise ValueError(f"expected finite {name}, got {value}")
    if not float(w_std) > 0:
        raise ValueError(f"expected w_std > 0, got {w_std}")
    if float(b_std) < 0:
        raise ValueError(f"expected b_std >= 0, got {b_std}")
    if block_size is not None and (
        isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1
    ):
        raise ValueError(f"expected block_size >= 1 or None, got {block_size}")


def _check_inputs(x1: jax.Array, x2: jax.Array) -> None:
    if jnp.ndim(x1) != 2 or jnp.ndim(x2) != 2:
        raise ValueError(
            f"expected x1 and x2 of shape (n, d), got {jnp.shape(x1)} and {jnp.shape(x2)}"
        )
    if jnp.shape(x1)[1] != jnp.shape(x2)[1]:
        raise ValueError(
            f"expected x1 and x2 with the same number of features, got {jnp.shape(x1)[1]} "
            f"and {jnp.shape(x2)[1]}"
        )


def _sqrt_zero_grad_at_zero(s: jax.Array, threshold: jax.Array | float) -> jax.Array:
    """``sqrt(max(s, 0))`` whose derivative is 0 where ``s <= threshold`` (finite everywhere)."""
    above = s > threshold
    root = jnp.sqrt(jnp.where(above, s, 1.0))
    return jnp.where(above, root, jax.lax.stop_gradient(jnp.sqrt(jnp.maximum(s, 0.0))))


@jax.custom_jvp
def _sin_from_cos_sq(one_minus_rho_sq: jax.Array) -> jax.Array:
    """``sqrt(max(1 - ρ^2, 0))`` with derivative 0 within ``64 eps`` of 0 (one square root;
    the argument lies in ``[0, 1]``, so an absolute threshold is scale-free)."""
    return jnp.sqrt(jnp.maximum(one_minus_rho_sq, 0.0))


@_sin_from_cos_sq.defjvp
def _sin_from_cos_sq_jvp(primals: tuple, tangents: tuple) -> tuple[jax.Array, jax.Array]:
    (s,), (ds,) = primals, tangents
    root = _sin_from_cos_sq(s)
    above = s > 64 * jnp.finfo(s.dtype).eps
    return root, jnp.where(above, ds / (2 * jnp.where(above, root, 1.0)), 0.0)


def _relu_step(q1: jax.Array, q2: jax.Array, cov: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(E[φ(u)φ(v)], E[φ'(u)φ'(v)])`` for ReLU, ``(u, v)`` centred Gaussian with variances
    ``q1[:, None]``, ``q2[None, :]`` and covariance ``cov``."""
    tiny = jnp.finfo(cov.dtype).tiny
    r1, r2 = _sqrt_zero_grad_at_zero(q1, tiny), _sqrt_zero_grad_at_zero(q2, tiny)
    inv1 = jnp.where(r1 > 0, 1.0 / jnp.where(r1 > 0, r1, 1.0), 0.0)  # 0 for a zero variance
    inv2 = jnp.where(r2 > 0, 1.0 / jnp.where(r2 > 0, r2, 1.0), 0.0)
    rho = jnp.clip(cov * inv1[:, None] * inv2[None, :], -1.0, 1.0)
    sin_theta = _sin_from_cos_sq(1.0 - rho * rho)
    theta = jnp.arctan2(sin_theta, rho)
    e_phi = (r1[:, None] * r2[None, :]) * (sin_theta + (jnp.pi - theta) * rho) / (2 * jnp.pi)
    e_dphi = (jnp.pi - theta) / (2 * jnp.pi)
    return e_phi, e_dphi


def _kernels_block(
    x1: jax.Array, x2: jax.Array, q2s: tuple[jax.Array, ...], depth: int, w2: float, b2: float
) -> Kernels:
    """The kernels of a block of rows ``x1`` against all of ``x2`` (``q2s``: x2's variances
    ``K^l(x', x')`` for l = 0 .. depth-1)."""
    d = x1.shape[1]
    cov = w2 * (x1 @ x2.T) / d + b2
    q1 = w2 * jnp.sum(x1 * x1, axis=1) / d + b2
    ntk = cov
    for layer in range(depth):
        e_phi, e_dphi = _relu_step(q1, q2s[layer], cov)
        cov = w2 * e_phi + b2
        ntk = cov + w2 * e_dphi * ntk
        q1 = w2 * q1 / 2 + b2
    return Kernels(cov, ntk)


def _diag_variances(x: jax.Array, depth: int, w2: float, b2: float) -> tuple[jax.Array, ...]:
    """``K^l(x, x)`` per row for l = 0 .. depth-1."""
    q = w2 * jnp.sum(x * x, axis=1) / x.shape[1] + b2
    out = []
    for _ in range(depth):
        out.append(q)
        q = w2 * q / 2 + b2
    return tuple(out)


@functools.partial(jax.jit, static_argnames=("depth", "w_std", "b_std", "block_size"))
def _fc_relu_kernels(
    x1: jax.Array, x2: jax.Array, depth: int, w_std: float, b_std: float, block_size: int | None
) -> Kernels:
    dtype = jnp.result_type(x1, x2, jnp.float32)
    x1 = x1.astype(dtype)
    x2 = x2.astype(dtype)
    w2, b2 = w_std**2, b_std**2
    q2s = _diag_variances(x2, depth, w2, b2)
    n1 = x1.shape[0]
    if block_size is None or block_size >= n1:
        return _kernels_block(x1, x2, q2s, depth, w2, b2)
    num_blocks = -(-n1 // block_size)
    padded = jnp.pad(x1, ((0, num_blocks * block_size - n1), (0, 0)))
    blocks = padded.reshape(num_blocks, block_size, x1.shape[1])
    out = jax.lax.map(lambda xb: _kernels_block(xb, x2, q2s, depth, w2, b2), blocks)
    return Kernels(*(k.reshape(num_blocks * block_size, -1)[:n1] for k in out))


def fc_relu_kernels(
    x1: jax.Array,
    x2: jax.Array,
    *,
    depth: int = 1,
    w_std: float = 2**0.5,
    b_std: float = 0.1,
    block_size: int | None = None,
) -> Kernels:
    """The NNGP and NTK of an infinitely wide FC ReLU network between two batches.

    Args:
        x1: ``(n1, d)`` inputs.
        x2: ``(n2, d)`` inputs.
        depth: number of hidden ``[Dense, ReLU]`` layers (>= 1); a ``Dense`` read-out follows.
        w_std: weight standard deviation ``σ_w`` (NTK parameterisation: ``σ_w / sqrt(fan_in)``).
        b_std: bias standard deviation ``σ_b``.
        block_size: rows of ``x1`` per block (memory ``O(block_size * n2)``); ``None``: one
            block.

    Returns:
        :class:`Kernels` ``(nngp, ntk)``, each ``(n1, n2)`` in the inputs' floating dtype.

    Raises:
        ValueError: on non-2-D inputs, mismatched feature counts or bad hyper-parameters.
    """
    _validate(depth=depth, w_std=w_std, b_std=b_std, block_size=block_size)
    _check_inputs(x1, x2)
    return _fc_relu_kernels(x1, x2, depth, float(w_std), float(b_std), block_size)


@functools.lru_cache(maxsize=64)
def make_kernel_fn(
    *,
    depth: int = 1,
    w_std: float = 2**0.5,
    b_std: float = 0.1,
    get: Get = "ntk",
    block_size: int | None = None,
) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """A ``kernel_fn(x1, x2) -> (n1, n2)`` of :func:`fc_relu_kernels` returning one kernel.

    Any callable of this shape works as KIP's ``kernel_fn``, e.g. a neural-tangents ``stax``
    kernel: ``lambda a, b: stax_kernel_fn(a, b, "ntk")``. Cached: equal arguments give the same
    function object, so jitted callers keyed on it compile once.
    """
    _validate(depth=depth, w_std=w_std, b_std=b_std, block_size=block_size)
    if get not in ("ntk", "nngp"):
        raise ValueError(f"expected get in ('ntk', 'nngp'), got {get!r}")

    def kernel_fn(x1: jax.Array, x2: jax.Array) -> jax.Array:
        _check_inputs(x1, x2)
        kernels = _fc_relu_kernels(x1, x2, depth, float(w_std), float(b_std), block_size)
        return getattr(kernels, get)

    return kernel_fn
