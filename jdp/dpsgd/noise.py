"""DP-SGD's noise: the one Gaussian draw, the secure-noise option and the optax privatizer.

Every privacy-noise draw of :mod:`jdp.dpsgd` happens here (DESIGN.md §1): the Gaussian noise
on the clipped gradient sum (:func:`dp_aggregate`) and on DPGM's norm histogram
(:func:`jdp.dpsgd.clip_schedules.dpnorm`) both come from :func:`gaussian_noise`, and the
floating-point mitigation from :func:`secure_gaussian_sum`.

The privatizer follows optax's ``GradientTransformation`` (``init``/``update`` with a
``NamedTuple`` state, optax ``_src/base.py``) and is the first link of
``optax.chain(dp_aggregate(...), optimizer)``, as jax_privacy's ``noise_addition`` and
``optax.contrib.differentially_private_aggregate`` are: its ``update`` takes a
:class:`jdp.dpsgd.clipping.ClippedSum` in place of a gradient::

    ḡ = (S + N(0, (z Δ)^2 I)) / B̄        S the clipped sum, Δ its L2 sensitivity, B̄ declared

References:
    Abadi et al., "Deep learning with differential privacy", CCS 2016, Alg. 1.
    Mironov, "On significance of the least significant bits for differential privacy",
    CCS 2012 (the floating-point attack on textbook samplers).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from accounting.validation import check_nonnegative, check_positive
from jdp.dpsgd.clipping import ClippedSum, Params

SECURE_GRID_BITS = 8


def gaussian_noise(
    key: jax.Array, std: jax.Array | float, shape: tuple[int, ...], dtype: Any = float
) -> jax.Array:
    """``std * N(0, I)`` of ``shape``: the Gaussian draw behind every DP-SGD noise addition.

    Args:
        key: PRNG key (used once).
        std: the noise standard deviation (``z`` times the sensitivity).
        shape, dtype: of the draw (``dtype=float`` is JAX's default float type).
    """
    return std * jax.random.normal(key, shape, dtype)


def gaussian_noise_like(key: jax.Array, tree: Params, std: jax.Array) -> Params:
    """Independent ``N(0, std^2)`` for every coordinate of ``tree`` (one key per leaf)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    keys = jax.random.split(key, len(leaves))
    return treedef.unflatten(
        [gaussian_noise(k, std, x.shape, x.dtype) for k, x in zip(keys, leaves, strict=True)]
    )


def secure_noise_grid(std: jax.Array) -> jax.Array:
    """``Λ = 2^ceil(log2(std · 2^-8))``: the smallest power of two ``>= std / 256``
    (exact: computed with ``frexp``, not a rounded ``log2``)."""
    mantissa, exponent = jnp.frexp(jnp.asarray(std, jnp.float32) * 2.0**-SECURE_GRID_BITS)
    return jnp.ldexp(jnp.float32(1.0), jnp.where(mantissa == 0.5, exponent - 1, exponent))


def secure_standard_normal(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``N(0, 1)`` in float32 without the resolution gaps of an inverse-CDF sampler.

    Box-Muller on integers: per pair of outputs, three 24-bit integers ``b0, b1, b2`` give
    ``u = (b0 + (b1 + 1) 2^-24) 2^-24`` in ``(0, 1]`` (relative resolution ``2^-24`` down to
    ``2^-48``, so the tail is not cut near 5.2-5.3 as ``jax.random.normal``'s float32
    uniform cuts it), ``r = sqrt(-2 log u) <= 8.16`` and ``θ = 2π (b2 + 1/2) 2^-24``; the
    outputs are ``r cos θ, r sin θ``. Within ``|x| <= 7.4`` neighbouring attainable values
    are closer than ``4e-4`` (the radius near 0 moves in steps of ``sqrt(2^-23)``), ten
    times finer than the grid :func:`secure_noise_grid` rounds to; beyond ``r = 7.4``
    (probability ``1.3e-12`` per pair) ``u < 312 · 2^-48`` and the radius coarsens up to
    the cut at 8.16.
    """
    size = math.prod(shape)
    half = (size + 1) // 2
    b = (jax.random.bits(key, (3, half), jnp.uint32) >> 8).astype(jnp.float32)
    u = (b[0] + (b[1] + 1.0) * 2.0**-24) * 2.0**-24
    r = jnp.sqrt(-2.0 * jnp.log(u))
    theta = (2.0 * math.pi * 2.0**-24) * (b[2] + 0.5)
    return jnp.concatenate([r * jnp.cos(theta), r * jnp.sin(theta)])[:size].reshape(shape)


def secure_gaussian_sum(key: jax.Array, tree: Params, std: jax.Array) -> Params:
    """``round((S + std · N(0, I)) / Λ) Λ`` per coordinate, ``Λ = secure_noise_grid(std)``.

    A mitigation of the floating-point attack of Mironov (2012) on textbook samplers: the
    release lies on the grid ``Λ Z`` whatever ``S`` is, and since the noise of
    :func:`secure_standard_normal` has no gaps wider than ``Λ / 10`` within ``7.4 std``,
    every grid point within that range is attainable from every ``S``: the low-order bits
    of the output carry no trace of ``S``'s own bits. In exact arithmetic the rounding is
    post-processing of the Gaussian mechanism, so the accounted event is unchanged.

    What it does NOT guarantee: it is neither Mironov's snapping mechanism (proved for
    Laplace noise with a clamp and exactly rounded float64 arithmetic) nor a discrete
    Gaussian (Canonne, Kamath & Steinke 2020). The probabilities of the grid points are
    float32 approximations of the rounded Gaussian's; the noise is truncated at ``8.16 std``
    (a tail of probability ``~3e-16`` per coordinate) and coarse beyond ``7.4 std``; and
    ``S + noise`` is formed in float32 before rounding, so the grid is coarser than that
    sum's resolution only while ``|S_j| < 2^15 std`` (``|S_j| <= B C`` for a batch of ``B``:
    true for ``B < 2^15 z``).
    """
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    keys = jax.random.split(key, len(leaves))
    lam = secure_noise_grid(std)
    return treedef.unflatten(
        [
            (jnp.round((s + std * secure_standard_normal(k, s.shape)) / lam) * lam).astype(s.dtype)
            for k, s in zip(keys, leaves, strict=True)
        ]
    )


def noisy_sum(
    key: jax.Array, clipped: ClippedSum, noise_multiplier: float, *, secure_noise: bool = False
) -> Params:
    """The Gaussian mechanism on a clipped sum: ``S + N(0, (z Δ)^2 I)`` (``S`` itself for
    ``z = 0``, the non-private limit, also with ``Δ = inf`` where ``z Δ`` is NaN).

    Privacy:
        ``GaussianDpEvent(z)`` on a sum of L2 sensitivity ``Δ = clipped.l2_sensitivity``
        (before subsampling); the ``secure_noise`` rounding is post-processing.
    """
    if noise_multiplier == 0:
        return clipped.grads
    std = noise_multiplier * clipped.l2_sensitivity
    if secure_noise:
        return secure_gaussian_sum(key, clipped.grads, std)
    noise = gaussian_noise_like(key, clipped.grads, std)
    return jax.tree_util.tree_map(jnp.add, clipped.grads, noise)


class DPAggregateState(NamedTuple):
    """State of :func:`dp_aggregate`: the noise key (split on every update) and a step count."""

    key: jax.Array
    count: jax.Array


def dp_aggregate(
    key: jax.Array,
    *,
    noise_multiplier: float,
    expected_batch_size: float,
    secure_noise: bool = False,
) -> optax.GradientTransformation:
    """Gaussian mechanism on a :class:`ClippedSum`, then division by a public constant.

    ``update(ClippedSum(S, Δ), state) -> (S + N(0, (z Δ)^2 I)) / expected_batch_size``.
    Put it first in ``optax.chain(dp_aggregate(...), optax.adam(...))``; the chain's
    ``update`` then takes the clipped sum in place of a gradient.

    Args:
        key: PRNG key kept in the state and split at every update (never reused).
        noise_multiplier: ``z >= 0``; the noise std is ``z`` times the sum's sensitivity.
        expected_batch_size: a declared public constant ``B̄`` (typically the expected
            batch size ``q n`` with a public ``n``, or ``L`` for fixed-size batches); never
            a value computed from the private data.
        secure_noise: draw the noise with :func:`secure_standard_normal` and round the
            noisy sum to the grid :func:`secure_noise_grid` (see :func:`secure_gaussian_sum`
            for what this mitigates and what it does not guarantee).

    Privacy:
        Gaussian mechanism with noise multiplier ``z`` on a sum of L2 sensitivity ``Δ``
        (add/remove one): ``GaussianDpEvent(z)`` per application, before subsampling. The
        division by ``B̄`` (and the rounding of ``secure_noise``) is post-processing.

    References:
        Abadi et al. 2016, Alg. 1 (the noisy, normalised sum); Mironov 2012 (snapping).
    """
    z = check_nonnegative("noise_multiplier", noise_multiplier)
    n = check_positive("expected_batch_size", expected_batch_size)

    def init(params: Params) -> DPAggregateState:
        del params
        return DPAggregateState(key, jnp.zeros((), jnp.int32))

    def update(updates: ClippedSum, state: DPAggregateState, params: Params = None) -> tuple:
        del params
        if not isinstance(updates, ClippedSum):
            raise TypeError(f"expected a ClippedSum, got {type(updates).__name__}")
        next_key, noise_key = jax.random.split(state.key)
        noisy = noisy_sum(noise_key, updates, z, secure_noise=secure_noise)
        out = jax.tree_util.tree_map(lambda s: s / n, noisy)
        return out, DPAggregateState(next_key, state.count + 1)

    return optax.GradientTransformation(init, update)
