"""Data-parallel DP-SGD over several devices (and hosts) with ``jax.shard_map``.

The padded batch is split along its leading axis over a 1-D device mesh. Each device clips
its own examples and sums them; the partial sums are added with ``psum``; the Gaussian noise
is drawn ONCE, outside the sharded region, from the replicated optimiser state, so every
device applies the same noisy update. Per-example keys are split from the step key before
sharding, so example ``i`` sees the same key as on one device: for the same key the update
equals the single-device one (up to float summation order). Across hosts, initialise
``jax.distributed`` and build the mesh over ``jax.devices()``; nothing else changes.

Privacy:
    Identical to :mod:`jdp.dpsgd.clipping`: the released quantity is the same clipped sum plus one
    draw of ``N(0, (z C)^2 I)``; partitioning the computation changes no sensitivity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax
from jax.sharding import Mesh, PartitionSpec

from jdp.dpsgd.clipping import (
    ClippedSum,
    LossFn,
    Method,
    bind_model_state,
    check_clip_norm,
    clipped_grad_sum,
)


def data_mesh(devices: list | None = None, axis_name: str = "data") -> Mesh:
    """A 1-D mesh over ``devices`` (default: all devices, on all hosts)."""
    return Mesh(np.asarray(jax.devices() if devices is None else devices), (axis_name,))


def sharded_clipped_sum(
    loss_fn: LossFn,
    mesh: Mesh,
    *,
    has_aux: bool = False,
    microbatch_size: int | None = None,
    method: Method = "general",
) -> Callable:
    """``f(params, batch, mask, key, l2_clip_norm, model_state=None) -> (ClippedSum, StepInfo)``
    over ``mesh`` (the signature of :func:`jdp.dpsgd.clipping.make_clipped_sum_fn`'s function).

    The batch size must be a multiple of the number of devices (use
    ``padded_batch_size(..., multiple_of=mesh.size)``).
    """
    (axis,) = mesh.axis_names
    data = PartitionSpec(axis)
    rep = PartitionSpec()

    def local(params, batch, mask, keys, l2_clip_norm, model_state):
        part, info = clipped_grad_sum(
            bind_model_state(loss_fn, model_state),
            params,
            batch,
            mask,
            keys,
            l2_clip_norm=l2_clip_norm,
            has_aux=has_aux,
            microbatch_size=microbatch_size,
            method=method,
        )
        total = ClippedSum(jax.lax.psum(part.grads, axis), part.l2_sensitivity)
        return total, info

    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(rep, data, data, data, rep, rep),
        out_specs=(rep, data),
        check_vma=False,
    )

    def f(params, batch, mask, key, l2_clip_norm, model_state=None):
        size = mask.shape[0]
        if size % mesh.size:
            raise ValueError(
                f"expected the batch size ({size}) to be a multiple of the device count "
                f"({mesh.size})"
            )
        return sharded(params, batch, mask, jax.random.split(key, size), l2_clip_norm, model_state)

    return f


def make_parallel_dp_step(
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    mesh: Mesh,
    *,
    l2_clip_norm: Any,
    has_aux: bool = False,
    microbatch_size: int | None = None,
    method: Method = "general",
) -> Callable:
    """Multi-device twin of :func:`jdp.dpsgd.clipping.make_dp_step`: the same signature and result."""
    check_clip_norm(l2_clip_norm)
    clipped = sharded_clipped_sum(
        loss_fn, mesh, has_aux=has_aux, microbatch_size=microbatch_size, method=method
    )

    @jax.jit
    def step(params, opt_state, batch, mask, key):
        total, info = clipped(params, batch, mask, key, l2_clip_norm)
        updates, opt_state = optimizer.update(total, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, info

    return step
