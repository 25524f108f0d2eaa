"""One DP-SGD step: the path choice, the clipped sum, and the optax-style ``init``/``step``.

**Path choice.** The clipped sum ``S = sum_i m_i clip(g_i)`` has three implementations that
give the same result: the general ``vmap`` path (:func:`jdp.dpsgd.clipping.clipped_sum_general`),
the ghost path (:func:`jdp.dpsgd.ghost_clipping.clipped_sum_ghost`) and, for WGAN-GP's critic
loss, the gradient-penalty ghost path (:func:`jdp.dpsgd.ghost_penalty.clipped_sum_penalty`).
This module is the one place that dispatches between them (:func:`clipped_grad_sum`) and
decides which one a loss gets (:func:`choose_method`: a ghost path only where it is exact), so
no path imports its caller. A ``mesh`` shards any path over devices
(:mod:`jdp.dpsgd.parallel`).

**Steps.** :func:`make_dp_step` is one jitted step on one padded batch
(``step(params, opt_state, batch, mask, key) -> (params, opt_state, info)``).
:func:`dp_sgd` is the logical step of the training loop in optax's style (optax
``_src/base.py``: a pair of pure functions and a ``NamedTuple`` state)::

    sgd = dp_sgd(keys, loss_fn, optax.chain(dp_aggregate(noise_key, ...), optimizer), ...)
    state = sgd.init(params)
    state = sgd.step(state, [(batch, mask), ...])     # the chunks of one logical batch

It evaluates the clip rule (a constant, a schedule, or DPGM's noisy histogram of the batch's
norms: inside the clipped sum's own per-example gradient pass where the structure allows,
else in a norm pass before it), accumulates the clipped sums of the chunks and adds the
noise ONCE (the chain's :func:`jdp.dpsgd.noise.dp_aggregate`); a public model state the loss
reads is carried along and changed only by the loop that owns it (:mod:`jdp.dpsgd.run`).

Privacy:
    One step releases ``S + N(0, (z Δ)^2 I)`` (divided by a declared constant): the Gaussian
    mechanism on a sum of L2 sensitivity ``Δ = C_t`` (per-layer: ``sqrt(sum_l C_l^2)``)
    under add/remove-one; with an :class:`~jdp.dpsgd.clip_schedules.AdaptiveClip` also the
    histogram's Gaussian mechanism on the same batch (the same norms, whether one pass or two
    computes them, and the same ``C_t`` clipping the same per-example gradients). The run's
    event is built by the batch selection
    (:meth:`jdp.dpsgd.batch_selection.BatchSelection.event`).

References:
    Abadi et al., "Deep learning with differential privacy", CCS 2016, Alg. 1; Li et al.,
    "Large language models can be strong differentially private learners", ICLR 2022 (ghost
    clipping); Chen et al. 2020 (DPGM), Alg. 3-4.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh

from jdp.dpsgd.clip_schedules import AdaptiveClip, dpnorm
from jdp.dpsgd.clipping import (
    ClippedSum,
    LossFn,
    Method,
    Params,
    StepInfo,
    add_clipped_sums,
    bind_model_state,
    check_clip_norm,
    clipped_sum_general,
    norms_in_one_pass,
)
from jdp.dpsgd.ghost_clipping import clipped_sum_ghost, ghost_support
from jdp.dpsgd.ghost_penalty import GradientPenaltyLoss, clipped_sum_penalty, penalty_support
from jdp.dpsgd.parallel import shard_clipped_sum
from jdp.random import jit_once

ClipSchedule = Callable[[int], Any]
ClipRule = Any  # a bound C, a pytree of per-leaf bounds, a ClipSchedule or an AdaptiveClip


# -- the path choice -------------------------------------------------------------------------
def choose_method(
    loss_fn: LossFn,
    params: Params,
    example: Any,
    *,
    has_aux: bool = False,
    method: Method = "auto",
    model_state: Any = None,
) -> str:
    """The clipping path for this loss: ``"general"`` as asked; ``"ghost"`` only where
    :func:`jdp.dpsgd.ghost_clipping.ghost_support` finds it exact (a wrong ghost norm would
    void the sensitivity bound); ``"ghost_penalty"`` only for a
    :class:`~jdp.dpsgd.ghost_penalty.GradientPenaltyLoss` that
    :func:`jdp.dpsgd.ghost_penalty.penalty_support` accepts (a piecewise-linear Dense critic);
    ``"auto"`` picks ``"ghost_penalty"`` for an accepted gradient-penalty loss (never
    ``"ghost"``, which cannot be exact for one), ``"ghost"`` where it is exact, else
    ``"general"``.

    ``example`` is a batch of at least one example (the leading axis is kept); the checks are
    structural and run on its shapes alone (traced, not compiled), so the choice reveals
    nothing about the data.

    Raises:
        ValueError: an unknown ``method``, or ``method="ghost"`` / ``"ghost_penalty"`` for a
            loss it cannot handle.
    """
    if method == "general":
        return method
    if method not in ("auto", "ghost", "ghost_penalty"):
        raise ValueError(
            f"expected method in ('auto', 'general', 'ghost', 'ghost_penalty'), got {method!r}"
        )
    bound = bind_model_state(loss_fn, model_state)
    if method == "ghost_penalty" or (method == "auto" and isinstance(bound, GradientPenaltyLoss)):
        one = jax.tree_util.tree_map(lambda x: x[0], example)
        reason = penalty_support(bound, params, one, has_aux=has_aux)
        if reason is not None and method == "ghost_penalty":
            raise ValueError(f"method='ghost_penalty' is not exact for this loss: {reason}")
        return "general" if reason is not None else "ghost_penalty"
    reason = ghost_support(bound, params, example, has_aux=has_aux)
    if reason is not None and method == "ghost":
        raise ValueError(f"method='ghost' is not exact for this loss: {reason}")
    return "general" if reason is not None else "ghost"


def clipped_grad_sum(
    loss_fn: LossFn,
    params: Params,
    batch: Any,
    mask: jax.Array,
    keys: jax.Array,
    *,
    method: Method = "general",
    **options: Any,
) -> tuple[ClippedSum, StepInfo]:
    """Sum of per-example clipped gradients over the unmasked rows, by the path ``method``.

    ``options`` are the path's keywords: ``l2_clip_norm`` (required; a function of the norms
    on the general path only, :func:`jdp.dpsgd.clipping.clipped_sum_general`), ``has_aux``
    and, on the general path, ``microbatch_size`` (the ghost paths hold no per-example
    gradients and ignore it). ``method="ghost"`` requires a loss accepted by
    :func:`jdp.dpsgd.ghost_clipping.discover`, ``"ghost_penalty"`` one accepted by
    :func:`jdp.dpsgd.ghost_penalty.check_penalty_loss`; resolve ``"auto"`` with
    :func:`choose_method` beforehand (it needs example shapes).
    """
    if method != "general" and callable(options.get("l2_clip_norm")):
        raise ValueError(f"expected a bound as l2_clip_norm on the {method} path, got a function")
    if method == "ghost":
        options.pop("microbatch_size", None)
        return clipped_sum_ghost(loss_fn, params, batch, mask, keys, **options)
    if method == "ghost_penalty":
        options.pop("microbatch_size", None)
        return clipped_sum_penalty(loss_fn, params, batch, mask, keys, **options)
    if method != "general":
        raise ValueError(
            f"expected method in ('general', 'ghost', 'ghost_penalty') here, got {method!r}"
        )
    return clipped_sum_general(loss_fn, params, batch, mask, keys, **options)


def _keyed_sum_fn(
    loss_fn: LossFn,
    has_aux: bool,
    microbatch_size: int | str | None,
    method: Method,
    mesh: Mesh | None,
) -> Callable:
    """``f(params, batch, mask, key, l2_clip_norm, model_state=None) -> (ClippedSum, StepInfo)``:
    per-example keys split from ``key`` (before any sharding, so a mesh sees the same keys),
    then :func:`clipped_grad_sum`, on one device or sharded over ``mesh``."""

    def per_device(params, batch, mask, keys, l2_clip_norm, model_state=None):
        return clipped_grad_sum(
            bind_model_state(loss_fn, model_state),
            params,
            batch,
            mask,
            keys,
            method=method,
            l2_clip_norm=l2_clip_norm,
            has_aux=has_aux,
            microbatch_size=microbatch_size,
        )

    sum_fn = per_device if mesh is None else shard_clipped_sum(per_device, mesh)

    def f(params, batch, mask, key, l2_clip_norm, model_state=None):
        keys = jax.random.split(key, mask.shape[0])
        return sum_fn(params, batch, mask, keys, l2_clip_norm, model_state)

    return f


def make_clipped_sum_fn(
    loss_fn: LossFn,
    *,
    has_aux: bool = False,
    microbatch_size: int | str | None = None,
    method: Method = "general",
    mesh: Mesh | None = None,
) -> Callable:
    """Jitted ``f(params, batch, mask, key, l2_clip_norm, model_state=None) -> (ClippedSum,
    StepInfo)`` with the clip norm as a traced argument (schedules, overflow accumulation);
    sharded over ``mesh`` (:func:`jdp.dpsgd.parallel.data_mesh`) when given."""
    return jax.jit(_keyed_sum_fn(loss_fn, has_aux, microbatch_size, method, mesh))


@functools.cache
def _chunk_keys(n: int) -> Callable[[jax.Array, Any], tuple[jax.Array, ...]]:
    """``(key, count) -> (fold_in(fold_in(key, count), j) for j < n)``: a step's chunk keys
    as one program (eagerly, ``1 + n`` dispatches a step)."""

    def keys(key: jax.Array, count: Any) -> tuple[jax.Array, ...]:
        step_key = jax.random.fold_in(key, count)
        return tuple(jax.random.fold_in(step_key, j) for j in range(n))

    return jit_once(keys)


def apply_update(optimizer: optax.GradientTransformation) -> Callable:
    """``(params, opt_state, clipped) -> (params, opt_state)`` through an optimiser that starts
    with :func:`jdp.dpsgd.noise.dp_aggregate` (it takes the :class:`ClippedSum`)."""

    def apply(params: Params, opt_state: Any, clipped: ClippedSum) -> tuple[Params, Any]:
        updates, opt_state = optimizer.update(clipped, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return apply


def make_dp_step(
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    *,
    l2_clip_norm: Any,
    has_aux: bool = False,
    microbatch_size: int | str | None = None,
    method: Method = "general",
    with_model_state: bool = False,
    mesh: Mesh | None = None,
) -> Callable:
    """A jitted DP-SGD step ``step(params, opt_state, batch, mask, key[, model_state])``.

    ``optimizer`` must start with :func:`jdp.dpsgd.noise.dp_aggregate` (it receives a
    :class:`ClippedSum`). Returns ``(params, opt_state, info)``. ``method`` is ``"general"``,
    ``"ghost"`` or ``"ghost_penalty"`` (resolve ``"auto"`` with :func:`choose_method`).
    ``l2_clip_norm`` is static here; for schedules pass it per call through
    :func:`make_clipped_sum_fn`. With ``mesh`` the batch is sharded over its devices and the
    noise still drawn once.
    """
    check_clip_norm(l2_clip_norm)
    sum_fn = _keyed_sum_fn(loss_fn, has_aux, microbatch_size, method, mesh)
    update = apply_update(optimizer)

    def step(params, opt_state, batch, mask, key, model_state=None):
        clipped, info = sum_fn(params, batch, mask, key, l2_clip_norm, model_state)
        params, opt_state = update(params, opt_state, clipped)
        return params, opt_state, info

    if not with_model_state:
        return jax.jit(lambda p, o, b, m, k: step(p, o, b, m, k))
    return jax.jit(step)


# -- the logical step of the training loop ---------------------------------------------------
def check_clip_rule(l2_clip_norm: ClipRule) -> ClipRule:
    """Validate a clip rule: a bound or pytree of bounds (:func:`check_clip_norm`), a schedule
    (any callable ``step -> bound``, checked when evaluated) or an :class:`AdaptiveClip`."""
    if not isinstance(l2_clip_norm, AdaptiveClip) and not callable(l2_clip_norm):
        check_clip_norm(l2_clip_norm)
    return l2_clip_norm


def clip_at(l2_clip_norm: ClipRule, step: int) -> Any:
    """The clip bound at ``step``: a constant, or a schedule evaluated on the host."""
    return l2_clip_norm(step) if callable(l2_clip_norm) else l2_clip_norm


class StepKeys(NamedTuple):
    """The key streams of :func:`dp_sgd` (the noise key lives in ``dp_aggregate``'s state).

    Attributes:
        example: step ``t``, chunk ``j`` uses ``fold_in(fold_in(example, t), j)``, split into
            one key per example.
        clip: ``fold_in(clip, t)`` for DPGM's noisy norm histogram at step ``t``.
    """

    example: jax.Array
    clip: jax.Array


class DPSGDState(NamedTuple):
    """State of :func:`dp_sgd`.

    Attributes:
        params: the current parameters.
        opt_state: the optimiser chain's state (its ``dp_aggregate`` holds the noise key).
        model_state: public model state the loss reads (``None`` when not used); the loop
            that owns it changes it between steps (:mod:`jdp.dpsgd.run`).
        count: the number of logical steps taken (a host integer: schedules read it; a
            traced one inside the compiled loop, :mod:`jdp.dpsgd.scan`, which takes no
            schedule).
        num_nonfinite: how many sampled examples had a non-finite gradient and were dropped,
            summed on the device (derived from private data: not released).
    """

    params: Params
    opt_state: Any
    model_state: Any
    count: int
    num_nonfinite: jax.Array


class DPSGD(NamedTuple):
    """A pair of pure functions in optax's style (see :func:`dp_sgd`)."""

    init: Callable[..., DPSGDState]
    step: Callable[[DPSGDState, Sequence[tuple[Any, Any]]], DPSGDState]


def dp_sgd(
    keys: StepKeys,
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    *,
    l2_clip_norm: ClipRule,
    has_aux: bool = False,
    method: Method = "general",
    microbatch_size: int | str | None = None,
    mesh: Mesh | None = None,
) -> DPSGD:
    """DP-SGD's logical step as ``init(params, model_state=None)`` and
    ``step(state, chunks) -> state``.

    Args:
        keys: the :class:`StepKeys` streams.
        loss_fn: loss for ONE example (see :mod:`jdp.dpsgd.clipping`); with model state it
            takes it as a fourth argument.
        optimizer: ``optax.chain(dp_aggregate(...), ...)``: the noise is drawn there, once
            per logical step.
        l2_clip_norm: a bound, a pytree of per-leaf bounds, a schedule ``t -> bound`` or an
            :class:`AdaptiveClip` (DPGM Alg. 4: the norms of the whole logical batch go to a
            noisy histogram, then the batch is clipped to its choice). Where the general path
            holds the whole logical batch's per-example gradients at once (one chunk, one
            micro-batch or under ``"auto"`` a chunk within
            :data:`jdp.dpsgd.clipping.ONE_PASS_BYTES`, no ``mesh``; decided from shapes and
            flags only: :func:`jdp.dpsgd.clipping.norms_in_one_pass`) ONE pass computes
            them, their norms, the histogram's choice and the clipped sum
            (:func:`jdp.dpsgd.clipping.clipped_sum_general`); elsewhere (a ghost path, whose
            clipped sum needs its own backward pass, micro-batches, several chunks, a mesh) a
            norm pass precedes the clipped sum's. The same keys give the same per-example
            gradients, norms, histogram noise and clip either way.
        has_aux, method, microbatch_size, mesh: the clipping path (:func:`make_clipped_sum_fn`;
            ``method`` already resolved by :func:`choose_method`).

    ``step``'s ``chunks`` are the padded ``(batch, mask)`` chunks of one logical batch; their
    clipped sums are added before the one noise draw (gradient accumulation). With a bound or
    an :class:`AdaptiveClip` ``step`` is traceable (a traced ``count`` and chunks): the
    compiled loop scans this same function (:func:`jdp.dpsgd.scan.scan_steps`).
    """
    check_clip_rule(l2_clip_norm)
    sum_fn = make_clipped_sum_fn(
        loss_fn, has_aux=has_aux, microbatch_size=microbatch_size, method=method, mesh=mesh
    )
    # the chunk held whole when the clip is chosen from its norms (norms_in_one_pass)
    whole_fn = (
        make_clipped_sum_fn(loss_fn, has_aux=has_aux, microbatch_size=None, method=method)
        if isinstance(l2_clip_norm, AdaptiveClip) and method == "general"
        else sum_fn
    )
    apply = apply_update(optimizer)

    @jax.jit
    def finish(params: Params, opt_state: Any, clipped: ClippedSum, count: Any, flags: Any):
        # the update, and the dropped examples counted, in the one program of the step's end
        params, opt_state = apply(params, opt_state, clipped)
        dropped = sum(jnp.sum(f).astype(count.dtype) for f in flags)
        return params, opt_state, count + dropped

    hist_fn = jax.jit(dpnorm, static_argnums=3)

    # run once a fit: one program, not one per optimiser leaf
    start = jit_once(lambda params: (optimizer.init(params), jnp.zeros((), jnp.int32)))

    def init(params: Params, model_state: Any = None) -> DPSGDState:
        opt_state, nonfinite = start(params)
        return DPSGDState(params, opt_state, model_state, 0, nonfinite)

    def choose(key: jax.Array, mask: jax.Array, norms: jax.Array) -> jax.Array:
        # DPNorm of the norms, key and mask bound first (one function per dp_sgd: the jitted
        # clipped sum caches on it)
        return dpnorm(key, norms, mask, l2_clip_norm)

    def one_pass(params: Params, keyed: list[tuple]) -> bool:
        # the general path holds the logical batch's per-example gradients at once (shapes
        # and flags only)
        if method != "general" or mesh is not None or len(keyed) != 1:
            return False
        return norms_in_one_pass(microbatch_size, jnp.shape(keyed[0][1])[0], params)

    def clip_bound(state: DPSGDState, keyed: list[tuple]) -> Any:
        if not isinstance(l2_clip_norm, AdaptiveClip):
            return clip_at(l2_clip_norm, state.count)
        # DPGM Alg. 4: norms on the whole logical batch, noisy histogram, then clip to C_s.
        key = jax.random.fold_in(keys.clip, state.count)
        masks = [jnp.asarray(m) for _, m, _ in keyed]
        if one_pass(state.params, keyed):  # C_s = choose(norms) inside the clipped sum
            return jax.tree_util.Partial(choose, key, masks[0])
        infos = [sum_fn(state.params, x, m, k, np.inf, state.model_state)[1] for x, m, k in keyed]
        norms = jnp.concatenate([i.norms for i in infos])
        return hist_fn(key, norms, jnp.concatenate(masks), l2_clip_norm)

    def step(state: DPSGDState, chunks: Sequence[tuple[Any, Any]]) -> DPSGDState:
        step_keys = _chunk_keys(len(chunks))(keys.example, state.count)
        keyed = [(x, m, k) for (x, m), k in zip(chunks, step_keys, strict=True)]
        clip = clip_bound(state, keyed)
        total: ClippedSum | None = None
        flags = []
        fn = whole_fn if isinstance(clip, jax.tree_util.Partial) else sum_fn
        for x, m, k in keyed:
            part, info = fn(state.params, x, m, k, clip, state.model_state)
            total = part if total is None else add_clipped_sums(total, part)
            flags.append(info.nonfinite)
        params, opt_state, nonfinite = finish(
            state.params, state.opt_state, total, state.num_nonfinite, tuple(flags)
        )
        return DPSGDState(params, opt_state, state.model_state, state.count + 1, nonfinite)

    return DPSGD(init, step)
