"""DP-SGD's noise: the one Gaussian draw, the secure-noise option and the optax privatizer.

Every privacy-noise draw of :mod:`jdp.dpsgd` happens here (DESIGN.md §1): the Gaussian noise
on the clipped gradient sum (:func:`dp_aggregate`) and on DPGM's norm histogram
(:func:`jdp.dpsgd.clip_schedules.dpnorm`) both come from the sampler
:func:`standard_normals` (through :func:`gaussian_noise_like` and :func:`gaussian_noise`), and
the floating-point mitigation from :func:`secure_gaussian_sum`. The sampler is cut at
:data:`NORMAL_CUT` standard deviations and :func:`noise_cut` is what its cut costs per draw,
which every DP-SGD event records.

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

import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from accounting.validation import check_nonnegative, check_positive
from jdp.dpsgd.clipping import ClippedSum, Params

SECURE_GRID_BITS = 8
#: Slots for the pairs whose first word is 0 (probability ``2^-32`` each), per draw: each gets
#: its own deep uniform (:func:`box_muller`); more such pairs than slots is the overflow event
#: :func:`noise_cut` charges.
DEEP_SLOTS = 32
#: 32-bit words of a deep uniform (the exponent in blocks of 32 bits, then two words of it).
DEEP_WORDS = 8
#: The radius (in standard deviations) within which :func:`standard_normal` draws every pair,
#: rounded down: its smallest uniform is ``2^-320`` (a first word 0, then eight zero deep
#: words), so ``r = sqrt(-2 ln u) <= sqrt(640 ln 2) = 21.06``.
NORMAL_CUT = 21.0
#: The ideal probability that a pair of standard normals lies beyond :data:`NORMAL_CUT`
#: (the radius of a pair is Rayleigh: ``P(r > t) = exp(-t^2 / 2)``): ``1.6e-96``.
PAIR_TAIL_MASS = math.exp(-0.5 * NORMAL_CUT**2)


def standard_normal(key: jax.Array, shape: tuple[int, ...], dtype: Any = float) -> jax.Array:
    """``N(0, I)`` of ``shape`` whose cut lies at ``21`` standard deviations (per pair).

    ``jax.random.normal`` in float32 inverts a uniform whose resolution ends near the tails,
    so it never returns more than about 5.4 standard deviations: an output beyond
    ``f(D) + 5.4 sigma`` is then impossible without a record and possible with it, a delta
    the ideal Gaussian's accounting does not see (docs/privacy.md, "The sampler's cut").

    Box-Muller on integers instead, with a uniform ``u`` down to ``2^-320``, at the cost of
    two 32-bit words a pair (one a coordinate, as ``jax.random.normal``): ``r = sqrt(-2 ln
    u)``, ``theta = 2 pi (l + 1/2) 2^-24`` (``l`` the low 24 bits of the second word ``w1``),
    outputs ``r cos theta, r sin theta``. ``u`` is ``(w0 + (h + 1/2) 2^-8) 2^-32`` (``h`` the
    top 8 bits of ``w1``): relative resolution ``2^-24`` for ``w0 >= 2^16``, coarser only for
    ``u < 2^-16`` (``r > 4.7``), where it is still ``2^-8 / w0``; when ``w0 = 0`` (``u <
    2^-32``, probability ``2^-32``) the pair takes one of :data:`DEEP_SLOTS` deep uniforms
    instead, each from :data:`DEEP_WORDS` more words (:func:`box_muller`). In real
    arithmetic this is the ideal pair conditioned on ``r <= sqrt(640 ln 2)`` except when more
    than :data:`DEEP_SLOTS` pairs of one draw need the deep path (the extras keep ``u >=
    2^-41``): :func:`noise_cut` charges both. Near ``r = 0`` the radius moves in steps of
    ``sqrt(2^-23) = 3.5e-4``, and at ``u ~ 2^-32 w0`` in steps of ``2^-8 / (w0 r)``: wider
    than that only for ``w0 < 2`` (probability ``2^-31`` a pair).
    """
    return standard_normals([key], [shape], dtype)[0]


def standard_normals(
    keys: Sequence[jax.Array], shapes: Sequence[tuple[int, ...]], dtype: Any = float
) -> list[jax.Array]:
    """One :func:`standard_normal` per key and shape through one Box-Muller transform over
    all the draws' words: each draw keeps its own words, deep slots and overflow (as
    :func:`noise_cut` charges them), so the values are each draw's alone, up to float
    rounding (XLA may fuse the longer transform differently: 2 units in the last place at
    most in the tests)."""
    dtype = jnp.result_type(dtype)  # ``float``: JAX's default float type
    sizes = [math.prod(shape) for shape in shapes]
    pairs = tuple((size + 1) // 2 for size in sizes)
    words, deep_words = [], []
    for key, m in zip(keys, pairs, strict=True):
        main, deep = jax.random.split(key)
        words.append(jax.random.bits(main, (2, m), jnp.uint32))
        deep_words.append(jax.random.bits(deep, (DEEP_SLOTS, DEEP_WORDS), jnp.uint32))
    cos_part, sin_part = _box_muller_pairs(
        jnp.concatenate(words, axis=1), jnp.stack(deep_words), pairs, dtype
    )
    draws, start = [], 0
    for size, m, shape in zip(sizes, pairs, shapes, strict=True):
        both = jnp.concatenate([cos_part[start : start + m], sin_part[start : start + m]])
        draws.append(both[:size].reshape(shape))
        start += m
    return draws


def box_muller(words: jax.Array, deep_words: jax.Array, dtype: Any = jnp.float32) -> jax.Array:
    """:func:`standard_normal`'s transform: ``(2, m)`` uint32 words (and ``(DEEP_SLOTS,
    DEEP_WORDS)`` deep words) to ``2 m`` outputs, the ``r cos theta`` then the ``r sin
    theta`` of each pair.

    ``-ln u`` is computed without forming ``u`` (float32 stops at ``2^-149``): for ``w0 >=
    1``, ``-ln((w0 + (h + 1/2) 2^-8) 2^-32)`` (``h`` the top 8 bits of ``w1``); the ``i``-th pair with ``w0 = 0`` takes deep
    slot ``i``: with ``j`` its number of leading zero words (``P(j) ~ 2^-32j``, ``j = 7`` when
    all are zero) and ``v = d_j + (d_{j+1} + 1) 2^-32``, ``u = 2^-32 v 2^-32(j+1)`` is
    uniform on ``(0, 2^-32]``. The largest radius, at all-zero words, is ``sqrt(640 ln 2)``.
    The pairs with ``w0 = 0`` are found by a branch on the CPU and by a running count
    elsewhere (:func:`_deep_slots`). ``theta`` is ``(q + f) pi / 2`` with the quadrant ``q``
    and ``f`` from 2 and 22 bits of ``w1``'s low 24, its cosine and sine by Taylor polynomials
    on ``[0, pi / 2]`` (:func:`_quarter_sincos`, absolute error below ``1e-7``).
    """
    cos_part, sin_part = _box_muller_pairs(words, deep_words[None], (words.shape[1],), dtype)
    return jnp.concatenate([cos_part, sin_part])


def _box_muller_pairs(
    words: jax.Array, deep_words: jax.Array, pairs: tuple[int, ...], dtype: Any
) -> tuple[jax.Array, jax.Array]:
    """:func:`box_muller` of several draws at once: ``words`` ``(2, sum(pairs))`` holds the
    draws' words one after the other (``pairs[d]`` pairs for draw ``d``), ``deep_words``
    ``(len(pairs), DEEP_SLOTS, DEEP_WORDS)`` their deep words; returns the ``r cos theta``
    and the ``r sin theta`` of every pair."""
    w0, w1 = words
    v = w0.astype(dtype) + ((w1 >> 24).astype(dtype) + 0.5) * 2.0**-8
    neg_log_u = 32.0 * _LN2 - jnp.log(v)
    deep = jax.vmap(lambda d: _deep_neg_log_u(d, dtype))(deep_words)
    neg_log_u = _deep_slots(neg_log_u, w0, deep, pairs)
    r = jnp.sqrt(jnp.maximum(2.0 * neg_log_u, 0.0))
    cos, sin = _quarter_sincos(w1, dtype)
    return r * cos, r * sin


def _deep_neg_log_u(deep_words: jax.Array, dtype: Any) -> jax.Array:
    """``-ln u`` of each deep slot (:func:`box_muller`): ``j`` leading zero words, ``v = d_j
    + (d_{j+1} + 1) 2^-32``, ``u = 2^-32 v 2^-32(j+1)``."""
    nonzero = deep_words != 0
    j = jnp.where(nonzero.any(axis=1), jnp.argmax(nonzero, axis=1), DEEP_WORDS - 1)
    lead = jnp.take_along_axis(deep_words, j[:, None], axis=1)[:, 0]
    after = jnp.minimum(j + 1, DEEP_WORDS - 1)[:, None]
    nxt = jnp.take_along_axis(deep_words, after, axis=1)[:, 0]
    v_deep = lead.astype(dtype) + (nxt.astype(dtype) + 1.0) * 2.0**-32
    return (64.0 + 32.0 * j.astype(dtype)) * _LN2 - jnp.log(v_deep)


def _deep_slots(
    neg_log_u: jax.Array, w0: jax.Array, deep: jax.Array, pairs: tuple[int, ...]
) -> jax.Array:
    """``neg_log_u`` with the ``i``-th pair of draw ``d`` whose ``w0 = 0`` set to ``deep[d,
    i]`` (``i < DEEP_SLOTS``; later ones keep their value), the draws' pairs one after the
    other (``pairs``). A running count of those pairs numbers them (:func:`_count_slots`); on
    the CPU only under ``lax.cond`` on ``any(w0 == 0)`` (probability ``2^-32`` a pair), since
    the count costs 4x the whole draw there. Off the CPU the count runs in every draw: with the
    branch an H200's noise draws took 0.29-0.40 ms, with the count 0.25-0.36 ms (XLA's
    conditional reads its predicate back to the host; docs/results/device_check.md)."""

    def count(x: jax.Array) -> jax.Array:
        return _count_slots(x, w0, deep, pairs)

    def branch(x: jax.Array) -> jax.Array:
        return jax.lax.cond(jnp.any(w0 == 0), count, lambda y: y, x)

    return jax.lax.platform_dependent(neg_log_u, cpu=branch, default=count)


def _count_slots(
    neg_log_u: jax.Array, w0: jax.Array, deep: jax.Array, pairs: tuple[int, ...]
) -> jax.Array:
    """:func:`_deep_slots` by a running count, draw by draw (static slices)."""
    zero = w0 == 0
    count = jnp.cumsum(zero, dtype=jnp.int32)
    out, start = [], 0
    for d, m in enumerate(pairs):
        before = count[start - 1] if start else 0
        rank = count[start : start + m] - before  # 1 for the draw's first pair with w0 = 0
        takes = zero[start : start + m] & (rank <= DEEP_SLOTS)
        value = deep[d][jnp.clip(rank - 1, 0, DEEP_SLOTS - 1)]
        out.append(jnp.where(takes, value, neg_log_u[start : start + m]))
        start += m
    return jnp.concatenate(out)


_LN2 = math.log(2.0)
#: Taylor coefficients of ``sin x / x`` and ``cos x`` in ``x^2``, enough on ``[0, pi / 2]``
#: for float32 (the first omitted terms are below ``6e-8``).
_SIN = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(6))
_COS = tuple((-1) ** k / math.factorial(2 * k) for k in range(7))


def _quarter_sincos(w: jax.Array, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """``(cos theta, sin theta)`` for ``theta = (q + f) pi / 2``: ``q`` bits 22-23 of ``w``,
    ``f = (k + 1/2) 2^-22`` with ``k`` its low 22 bits (a uniform angle on a grid of ``2^24``
    points), from polynomials on one quadrant and the quadrant's rotation (XLA's general
    ``sin``/``cos`` cost about ten times as much here)."""
    q = (w >> 22) & 0x3
    x = ((w & 0x3FFFFF).astype(dtype) + 0.5) * (2.0**-22 * math.pi / 2.0)
    x2 = x * x
    sin = _SIN[-1]
    for c in reversed(_SIN[:-1]):
        sin = sin * x2 + c
    sin = sin * x
    cos = _COS[-1]
    for c in reversed(_COS[:-1]):
        cos = cos * x2 + c
    rotated_cos = jnp.select([q == 0, q == 1, q == 2], [cos, -sin, -cos], sin)
    rotated_sin = jnp.select([q == 0, q == 1, q == 2], [sin, cos, -sin], -cos)
    return rotated_cos, rotated_sin


def deep_overflow(pairs: int) -> float:
    """A bound on the probability that more than :data:`DEEP_SLOTS` of ``pairs`` pairs need
    the deep path: ``P(Bin(pairs, 2^-32) >= k) <= (e mu / k)^k`` for ``k = DEEP_SLOTS + 1 >
    mu = pairs 2^-32`` (Chernoff); ``1e-57`` at a billion pairs."""
    k = DEEP_SLOTS + 1
    mu = pairs * 2.0**-32
    return 1.0 if mu >= k else min(1.0, (math.e * mu / k) ** k)


def _dtype_groups(leaves: Sequence[Any]) -> dict[Any, list[int]]:
    """The leaves' indices by dtype, in order of first appearance: the groups
    :func:`gaussian_noise_like` draws one each."""
    groups: dict[Any, list[int]] = {}
    for i, x in enumerate(leaves):
        groups.setdefault(jnp.dtype(x.dtype), []).append(i)
    return groups


def noise_cut(shapes: Any) -> float:
    """The total variation between one draw of :func:`gaussian_noise_like` over a pytree of
    these shapes (arrays or ``jax.ShapeDtypeStruct``) and the ideal Gaussian: per dtype (one
    draw over all its leaves' coordinates), :data:`PAIR_TAIL_MASS` per pair (``ceil(size /
    2)`` of them) plus the deep path's overflow (:func:`deep_overflow`). What the ledger
    charges per noisy step (:func:`accounting.builders.dpsgd_event`'s ``noise_cut``)."""
    leaves = jax.tree_util.tree_leaves(shapes)
    total = 0.0
    for which in _dtype_groups(leaves).values():
        pairs = (sum(math.prod(leaves[i].shape) for i in which) + 1) // 2
        total += pairs * PAIR_TAIL_MASS + deep_overflow(pairs)
    return total


def gaussian_noise(
    key: jax.Array, std: jax.Array | float, shape: tuple[int, ...], dtype: Any = float
) -> jax.Array:
    """``std * N(0, I)`` of ``shape``: the Gaussian draw behind every DP-SGD noise addition,
    from :func:`standard_normal` (cut at :data:`NORMAL_CUT`, charged by :func:`noise_cut`).

    Args:
        key: PRNG key (used once).
        std: the noise standard deviation (``z`` times the sensitivity).
        shape, dtype: of the draw (``dtype=float`` is JAX's default float type).
    """
    return std * standard_normal(key, shape, dtype)


def gaussian_noise_like(key: jax.Array, tree: Params, std: jax.Array) -> Params:
    """Independent ``N(0, std^2)`` for every coordinate of ``tree``: the leaves of one dtype
    are consecutive slices of one :func:`gaussian_noise` over all their coordinates, the
    ``g``-th dtype (in order of first appearance) from the ``g``-th of ``jax.random.split(key,
    G)``. One draw, not one per leaf: the sampler's program then compiles once whatever the
    number of leaves (one draw per leaf cost about 0.17 s of compilation a leaf: 2.0 s for
    P3GM's eight)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    groups = _dtype_groups(leaves)
    draws: list[Any] = [None] * len(leaves)
    for k, (dtype, which) in zip(jax.random.split(key, len(groups)), groups.items()):
        sizes = [math.prod(leaves[i].shape) for i in which]
        flat = gaussian_noise(k, std, (sum(sizes),), dtype)
        for i, part in zip(which, jnp.split(flat, list(itertools.accumulate(sizes))[:-1])):
            draws[i] = part.reshape(leaves[i].shape)
    return treedef.unflatten(draws)


def secure_noise_grid(std: jax.Array) -> jax.Array:
    """``Λ = 2^ceil(log2(std · 2^-8))``: the smallest power of two ``>= std / 256``
    (exact: computed with ``frexp``, not a rounded ``log2``)."""
    mantissa, exponent = jnp.frexp(jnp.asarray(std, jnp.float32) * 2.0**-SECURE_GRID_BITS)
    return jnp.ldexp(jnp.float32(1.0), jnp.where(mantissa == 0.5, exponent - 1, exponent))


def secure_gaussian_sum(key: jax.Array, tree: Params, std: jax.Array) -> Params:
    """``round((S + std · N(0, I)) / Λ) Λ`` per coordinate, ``Λ = secure_noise_grid(std)``.

    A mitigation of the floating-point attack of Mironov (2012) on textbook samplers: the
    release lies on the grid ``Λ Z`` whatever ``S`` is, and since the noise of
    :func:`standard_normal` (the default sampler) has no gaps wider than ``Λ / 10`` within
    its cut, every grid point within that range is attainable from every ``S``: the low-order bits
    of the output carry no trace of ``S``'s own bits. In exact arithmetic the rounding is
    post-processing of the Gaussian mechanism, so the accounted event is unchanged.

    What it does NOT guarantee: it is neither Mironov's snapping mechanism (proved for
    Laplace noise with a clamp and exactly rounded float64 arithmetic) nor a discrete
    Gaussian (Canonne, Kamath & Steinke 2020). The probabilities of the grid points are
    float32 approximations of the rounded Gaussian's; the noise is cut at
    :data:`NORMAL_CUT` (charged in the ledger, as for the default); and ``S + noise`` is formed in float32 before rounding, so the grid is coarser than that
    sum's resolution only while ``|S_j| < 2^15 std`` (``|S_j| <= B C`` for a batch of ``B``:
    true for ``B < 2^15 z``).
    """
    lam = secure_noise_grid(std)
    noise = gaussian_noise_like(key, tree, std)
    return jax.tree_util.tree_map(
        lambda s, n: (jnp.round((s + n) / lam) * lam).astype(s.dtype), tree, noise
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


def not_a_clipped_sum(updates: Any) -> str:
    """:func:`dp_aggregate`'s message for an update that is not a :class:`ClippedSum` (plain
    gradients, most often): what it got and what to use instead."""
    return (
        f"expected a ClippedSum, got {type(updates).__name__}: dp_aggregate adds noise to the "
        "sum of per-example CLIPPED gradients; plain gradients (jax.grad of a batch loss) "
        "have no bounded sensitivity, so noising them protects nothing. Compute the update "
        "with jdp.dpsgd.clipped_grad(loss_fn, l2_clip_norm)(params, batch, mask) (loss_fn "
        "for ONE example), or build the whole step with jdp.dpsgd.make_dp_step / "
        "jdp.dpsgd.train"
    )


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
        secure_noise: round the noisy sum to the grid :func:`secure_noise_grid` (see
            :func:`secure_gaussian_sum` for what this mitigates and what it does not
            guarantee).

    Privacy:
        Gaussian mechanism with noise multiplier ``z`` on a sum of L2 sensitivity ``Δ``
        (add/remove one): ``GaussianDpEvent(z)`` per application, before subsampling, and
        the sampler's cut, :func:`noise_cut` of the parameters' shapes, beside it. The
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
            raise TypeError(not_a_clipped_sum(updates))
        next_key, noise_key = jax.random.split(state.key)
        noisy = noisy_sum(noise_key, updates, z, secure_noise=secure_noise)
        out = jax.tree_util.tree_map(lambda s: s / n, noisy)
        return out, DPAggregateState(next_key, state.count + 1)

    return optax.GradientTransformation(init, update)
