"""DP-SGD's per-example clipping: per-example gradients, clip factors, the general path.

**Loss signature.** Losses are written for ONE example (DESIGN.md §3)::

    loss_fn(params, example, key) -> scalar                # has_aux=False
    loss_fn(params, example, key) -> (scalar, aux)         # has_aux=True

``example`` is one row of the data pytree (the batch axis removed) and ``key`` is a
per-example PRNG key (for a VAE's reparameterisation, dropout, ...). Models with state that
is NOT computed from private data (an RBM's persistent chains) pass it as a fourth argument
through :func:`jdp.dpsgd.step.make_dp_step` / :func:`jdp.dpsgd.train.train`.

**The step** (Abadi et al. 2016; P3GM II-D; dp-GAN Alg. 1; DPGM Alg. 4) on a padded batch
``x_1..x_B`` with mask ``m_i``::

    g_i   = grad loss(params, x_i, k_i)                 per example
    ĝ_i   = g_i * min(1, C / ||g_i||_2)                 global L2 norm over the whole pytree
    ĝ_i   = 0                if ||g_i|| is NaN or inf   a non-finite gradient is dropped
    S     = sum_i m_i ĝ_i                                padded rows contribute exactly 0
    ḡ     = (S + N(0, (z C)^2 I)) / B̄                   noise once; B̄ a declared public constant

This module computes ``S``; the noise is :mod:`jdp.dpsgd.noise`'s. On the general path the
bound ``C`` may be a function of the batch's norms ``||g_i||``, evaluated once the ``g_i``
exist (DPGM's DPNorm: :func:`clipped_sum_general`), so that the norms and the clipped sum
come from one per-example gradient pass. Three ways to ``S`` give the same result (tested):
the **general** path here, ``vmap(grad)`` over memory-bounded micro-batches in ``lax.scan``
(any loss: LSTMs, gradient penalties, RBMs); the **ghost** path of
:mod:`jdp.dpsgd.ghost_clipping` (dense/embedding/conv layers: per-example norms without
per-example gradients), which builds on the clip factors here; and the **ghost_penalty** path
of :mod:`jdp.dpsgd.ghost_penalty` (WGAN-GP's critic loss of a piecewise-linear Dense critic,
its gradient penalty included). :mod:`jdp.dpsgd.step` chooses the path (``method="auto"``
picks a ghost path where its structural check finds it exact).

**Per-layer clipping.** ``l2_clip_norm`` may be a pytree of per-leaf bounds ``C_l`` (see
:func:`per_layer_clip_norms`); each leaf is clipped to its own bound and the sum's L2
sensitivity is ``sqrt(sum_l C_l^2)``, which the noise uses.

Privacy:
    Add/remove-one neighbours. ``S`` changes by at most one clipped gradient, so its L2
    sensitivity is ``C`` (or ``sqrt(sum_l C_l^2)``). With Poisson sampling at rate ``q``
    and noise std ``z C`` each step is ``PoissonSampledDpEvent(q, GaussianDpEvent(z))``;
    ``T`` steps self-compose (:func:`accounting.builders.dpsgd_event`). Dividing by a
    declared public constant ``B̄`` (the expected batch size the user states, never one
    computed from ``len(data)``) is post-processing; dividing by the actual batch size or by
    ``q len(data)`` would release a data-dependent quantity (see docs/privacy.md).

    An example whose gradient has a NaN or infinite entry (a ``log(0)`` in its loss, an
    overflow) gets weight 0 on every leaf and its entries are replaced by 0 *before* the
    weighted sum (``jnp.where``, so ``0 * NaN`` cannot poison ``S``): its contribution is 0,
    within the bound ``C``, and ``S`` stays finite whatever one record does. The count of such
    examples is in :class:`StepInfo` (derived from private data: not released).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp

from accounting.validation import check_positive

Params = Any
LossFn = Callable[..., Any]
Method = Literal["auto", "general", "ghost", "ghost_penalty"]


class ClippedSum(NamedTuple):
    """The sum of clipped per-example gradients and the L2 sensitivity that bounds it."""

    grads: Params
    l2_sensitivity: jax.Array


class StepInfo(NamedTuple):
    """Per-example diagnostics of one clipped sum (derived from private data: NOT private).

    Attributes:
        norms: ``||g_i||`` per row (0 for padded rows, NaN/inf for non-finite gradients).
        aux: the loss's auxiliary output per row (``None`` without ``has_aux``).
        nonfinite: ``True`` for the unmasked rows whose gradient was non-finite and dropped.
    """

    norms: jax.Array
    aux: Any
    nonfinite: jax.Array

    @property
    def num_nonfinite(self) -> jax.Array:
        """How many unmasked examples were dropped for a non-finite gradient."""
        return jnp.sum(self.nonfinite)


# -- validation ------------------------------------------------------------------------------
def check_clip_norm(l2_clip_norm: Any) -> Any:
    """Validate a global bound (float > 0, inf allowed) or a pytree of per-leaf bounds."""
    leaves = jax.tree_util.tree_leaves(l2_clip_norm)
    if not leaves:
        raise ValueError("expected l2_clip_norm to be a number or a non-empty pytree of numbers")
    for leaf in leaves:
        check_positive("l2_clip_norm", float(leaf), allow_inf=True)
    return l2_clip_norm


def check_batch(batch: Any, mask: jax.Array | None = None) -> int:
    """Check that every leaf of ``batch`` has the same leading (batch) axis; return its size."""
    leaves = jax.tree_util.tree_leaves(batch)
    if not leaves:
        raise ValueError("expected a non-empty data pytree")
    sizes = set()
    for leaf in leaves:
        if jnp.ndim(leaf) == 0:
            raise ValueError(
                "expected every data leaf to have a leading batch axis, got a scalar; "
                "wrap a single example as x[None]"
            )
        sizes.add(jnp.shape(leaf)[0])
    if len(sizes) != 1:
        raise ValueError(f"expected all data leaves to share one batch size, got {sorted(sizes)}")
    (size,) = sizes
    if mask is not None and jnp.shape(mask) != (size,):
        raise ValueError(f"expected mask of shape ({size},), got {jnp.shape(mask)}")
    return size


def per_layer_clip_norms(params: Params, l2_clip_norm: float) -> Params:
    """Split a total bound ``C`` equally over the ``L`` leaves: ``C_l = C / sqrt(L)``.

    The per-layer sensitivity ``sqrt(sum_l C_l^2)`` then equals ``C``.
    """
    c = check_positive("l2_clip_norm", l2_clip_norm)
    leaves = jax.tree_util.tree_leaves(params)
    return jax.tree_util.tree_map(lambda _: c / math.sqrt(len(leaves)), params)


def is_per_layer(l2_clip_norm: Any) -> bool:
    """True for a pytree of per-leaf bounds, False for one global bound (a scalar)."""
    return not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(l2_clip_norm))


def l2_sensitivity(l2_clip_norm: Any) -> jax.Array:
    """``C`` for a global bound, ``sqrt(sum_l C_l^2)`` for per-leaf bounds (jit-safe)."""
    if not is_per_layer(l2_clip_norm):
        return jnp.asarray(l2_clip_norm, jnp.float32)
    leaves = jax.tree_util.tree_leaves(l2_clip_norm)
    return jnp.sqrt(sum(jnp.square(jnp.asarray(c, jnp.float32)) for c in leaves))


# -- clipping --------------------------------------------------------------------------------
def clip_factor(norm: jax.Array, bound: jax.Array | float) -> jax.Array:
    """``min(1, C / norm)`` for a finite norm (1 for ``norm <= C``, including ``norm = 0`` and
    ``C = inf``); 0 for a NaN or infinite norm (the example is dropped: ``C / inf = 0`` would
    otherwise multiply an infinite gradient into NaN, and NaN compares as ``<= C``)."""
    factor = jnp.where(norm > bound, bound / jnp.where(norm > bound, norm, 1.0), 1.0)
    return jnp.where(jnp.isfinite(norm), factor, 0.0)


def finite_examples(sq_norms: list[jax.Array]) -> jax.Array:
    """Per example: is every entry of its gradient finite? (``sum_l ||g_{i,l}||^2`` is finite
    exactly then, unless it overflows float32, which drops the example too.)"""
    return jnp.isfinite(sum(sq_norms))


def leaf_sq_norms(grads: Params) -> list[jax.Array]:
    """Squared L2 norm of each leaf of a per-example gradient pytree (leading axis kept)."""
    return [
        jnp.sum(jnp.square(g).reshape(g.shape[0], -1), axis=1)
        for g in jax.tree_util.tree_leaves(grads)
    ]


def clip_weights(sq_norms: list[jax.Array], l2_clip_norm: Any, treedef: Any) -> list[jax.Array]:
    """Per-example, per-leaf scale factors from per-leaf squared norms.

    Global clipping gives every leaf the factor ``min(1, C / ||g_i||)`` of the whole pytree;
    per-layer clipping gives leaf ``l`` the factor ``min(1, C_l / ||g_{i,l}||)``. An example
    with a non-finite gradient (:func:`finite_examples`) gets 0 on every leaf.
    """
    if is_per_layer(l2_clip_norm):
        bounds = treedef.flatten_up_to(l2_clip_norm)
        finite = finite_examples(sq_norms)
        return [
            jnp.where(finite, clip_factor(jnp.sqrt(s), c), 0.0)
            for s, c in zip(sq_norms, bounds, strict=True)
        ]
    factor = clip_factor(jnp.sqrt(sum(sq_norms)), l2_clip_norm)
    return [factor] * len(sq_norms)


def _example_grad_fn(loss_fn: LossFn, has_aux: bool) -> Callable:
    def one(params: Params, example: Any, key: jax.Array) -> tuple[Params, Any]:
        if has_aux:
            (_, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, example, key)
        else:
            grads, aux = jax.grad(loss_fn)(params, example, key), None
        return grads, aux

    return jax.vmap(one, in_axes=(None, 0, 0))


def per_example_grads(
    loss_fn: LossFn, params: Params, batch: Any, keys: jax.Array, *, has_aux: bool = False
) -> tuple[Params, Any]:
    """``vmap(grad(loss_fn))``: per-example gradients with a leading batch axis (and aux)."""
    return _example_grad_fn(loss_fn, has_aux)(params, batch, keys)


#: The per-example gradients one micro-batch of the general path holds under
#: ``microbatch_size="auto"`` (bytes; :func:`auto_microbatch_size`).
AUTO_MICROBATCH_BYTES = 4 * 2**20


def auto_microbatch_size(batch_size: int, num_params: int, itemsize: int = 4) -> int:
    """The general path's micro-batch under ``microbatch_size="auto"``: the largest power of
    two ``m`` whose per-example gradients fit :data:`AUTO_MICROBATCH_BYTES`
    (``m * num_params * itemsize <= 4 MiB``), at least 1 and at most ``batch_size``.

    A function of shapes only (public). Measured on 2 shared CPU cores, batch 256, the general
    clipped sum alone, two runs (``m``: micro-batch): dp-GAN's 60-128-128-1 WGAN-GP critic
    (24,449 parameters, rule 32) 16-29 ms whole-batch, 8.1-8.9 at 32, best 6.1-8.8 (8 to 128);
    an LSTM critic with gradient penalty (4,385 parameters, rule 128) 110-122 ms whole, 104-110
    at 128, best 95-104 (16 to 128); an MLP 784-1000-10 (795,010 parameters, rule 1) 118-137
    ms at 1, 234-1,800 ms at 2 to 256. No fixed size is near the best for all three; the bound
    on the micro-batch's gradient memory is.
    """
    check_positive("batch_size", batch_size)
    per_example = max(1, int(num_params) * int(itemsize))
    m = max(1, AUTO_MICROBATCH_BYTES // per_example)
    return int(min(1 << (m.bit_length() - 1), batch_size))


def microbatch_length(microbatch_size: int | str | None, size: int, params: Params) -> int:
    """The general path's micro-batch length for a padded batch of ``size``: ``None`` the
    whole batch, ``"auto"`` :func:`auto_microbatch_size` of the parameters' count and dtype
    (a function of shapes only: public)."""
    if microbatch_size is None:
        return size
    if microbatch_size == "auto":
        return auto_microbatch_size(size, *_count_and_itemsize(params))
    return min(int(microbatch_size), size)


def _count_and_itemsize(params: Params) -> tuple[int, int]:
    """The parameters' count and their widest dtype's bytes (shapes only)."""
    leaves = jax.tree_util.tree_leaves(params)
    count = sum(int(jnp.size(p)) for p in leaves)
    return count, max((jnp.result_type(p).itemsize for p in leaves), default=4)


#: Per-example gradient bytes the general path may hold at once under ``"auto"`` when the
#: clip is chosen from the batch's norms (:func:`norms_in_one_pass`).
ONE_PASS_BYTES = 32 * 2**20


def norms_in_one_pass(microbatch_size: int | str | None, size: int, params: Params) -> bool:
    """Whether the general path takes a clip chosen from a padded chunk's norms (DPGM's
    DPNorm) from the clipped sum's own per-example pass: the chunk fits one micro-batch
    (:func:`microbatch_length`), or, under ``"auto"``, its per-example gradients fit
    :data:`ONE_PASS_BYTES` (``size * num_params * itemsize``); the chunk is then held whole,
    one pass instead of a norm pass and a clipped pass in 4 MiB micro-batches (DPGM's
    default fit against the micro-batches: ``docs/results/bench_dpgm_fit.md``). A function
    of shapes only (public)."""
    if microbatch_length(microbatch_size, size, params) == size:
        return True
    count, itemsize = _count_and_itemsize(params)
    return microbatch_size == "auto" and size * count * itemsize <= ONE_PASS_BYTES


def _chunked(tree: Any, microbatch_size: int) -> Any:
    return jax.tree_util.tree_map(
        lambda x: x.reshape((x.shape[0] // microbatch_size, microbatch_size) + x.shape[1:]), tree
    )


def _unchunked(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), tree)


def clipped_sum_general(
    loss_fn: LossFn,
    params: Params,
    batch: Any,
    mask: jax.Array,
    keys: jax.Array,
    *,
    l2_clip_norm: Any,
    has_aux: bool = False,
    microbatch_size: int | str | None = None,
) -> tuple[ClippedSum, StepInfo]:
    """General path: ``vmap(grad)`` per micro-batch inside ``lax.scan``; peak memory holds
    one micro-batch of per-example gradients (``microbatch_size x |params|``).

    ``microbatch_size``: ``None`` (the whole padded batch at once), a length, or ``"auto"``
    (:func:`auto_microbatch_size`). A batch that is not a multiple of it is padded with
    masked rows (copies of row 0, weight 0) up to the next multiple.

    ``l2_clip_norm`` is a bound, a pytree of per-leaf bounds, or a function of the batch's
    norms ``choose(n) -> bound`` with ``n_i = m_i ||g_i||`` (a
    :class:`jax.tree_util.Partial`, so that it passes through ``jit``): it is evaluated once
    the per-example gradients ``g_i`` exist and clips those same ``g_i``, so a clip chosen
    from the norms (DPGM's DPNorm) costs one per-example gradient pass instead of two. It
    needs the whole batch in one micro-batch (every norm before any clip).

    Raises:
        ValueError: a ``choose`` function with a micro-batch shorter than the batch.
    """
    size = mask.shape[0]
    m = microbatch_length(microbatch_size, size, params)
    if callable(l2_clip_norm) and m < size:
        raise ValueError(
            f"expected one micro-batch for a clip chosen from the norms, got {m} of {size} rows"
        )
    choose = l2_clip_norm if callable(l2_clip_norm) else lambda norms: l2_clip_norm
    if size % m:  # pad with masked copies of row 0 (they contribute exactly 0, as any mask)
        rows = jnp.concatenate([jnp.arange(size), jnp.zeros(-size % m, int)])
        batch, keys = jax.tree_util.tree_map(lambda x: x[rows], (batch, keys))
        mask = jnp.where(jnp.arange(rows.shape[0]) < size, mask[rows], False)
    grad_fn = _example_grad_fn(loss_fn, has_aux)
    leaves, treedef = jax.tree_util.tree_flatten(params)

    def body(acc: list[jax.Array], chunk: tuple) -> tuple[list[jax.Array], tuple]:
        x, k, mk = chunk
        grads, aux = grad_fn(params, x, k)
        g_leaves = treedef.flatten_up_to(grads)
        sq = leaf_sq_norms(grads)
        norms = jnp.where(mk, jnp.sqrt(sum(sq)), 0.0)
        clip = choose(norms)
        weights = clip_weights(sq, clip, treedef)
        finite = finite_examples(sq)
        keep = mk & finite
        # sum_i keep_i w_i g_i as one matrix-vector product per leaf. Rows not kept (padded
        # or non-finite) get weight 0 AND their entries are replaced by 0 first: a padded slot
        # repeats a real row, which may be the non-finite one, and 0 * NaN = NaN.
        new = [
            a
            + jnp.tensordot(
                jnp.where(keep, w, 0.0), jnp.where(keep[:, None], g.reshape(m, -1), 0.0), axes=1
            ).reshape(a.shape)
            for a, g, w in zip(acc, g_leaves, weights, strict=True)
        ]
        return new, (norms, aux, mk & ~finite, l2_sensitivity(clip))

    init = [jnp.zeros_like(p) for p in leaves]
    acc, (norms, aux, nonfinite, sensitivity) = jax.lax.scan(
        body, init, (_chunked(batch, m), _chunked(keys, m), _chunked(mask, m))
    )
    norms, aux, nonfinite = (
        jax.tree_util.tree_map(lambda x: x[:size], _unchunked(t)) for t in (norms, aux, nonfinite)
    )
    return ClippedSum(treedef.unflatten(acc), sensitivity[0]), StepInfo(norms, aux, nonfinite)


def bind_model_state(loss_fn: LossFn, model_state: Any) -> LossFn:
    """The three-argument loss ``(params, example, key)`` for a model with (non-private) state;
    a loss with its own ``bind_model_state`` (a structured loss such as
    :class:`jdp.dpsgd.ghost_penalty.GradientPenaltyLoss`) binds itself, keeping its parts."""
    if model_state is None:
        return loss_fn
    bind = getattr(loss_fn, "bind_model_state", None)
    if bind is not None:
        return bind(model_state)
    return lambda p, x, k: loss_fn(p, x, k, model_state)


def add_clipped_sums(a: ClippedSum, b: ClippedSum) -> ClippedSum:
    """Gradient accumulation: sums add, the sensitivity of one logical step stays the same."""
    return ClippedSum(jax.tree_util.tree_map(jnp.add, a.grads, b.grads), a.l2_sensitivity)
