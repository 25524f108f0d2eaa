"""Data-parallel DP-SGD over several devices (and hosts) with ``jax.shard_map``.

The padded batch is split along its leading axis over a 1-D device mesh. Each device clips
its own examples and sums them; the partial sums are added with ``psum``; the Gaussian noise
is drawn ONCE, outside the sharded region, from the replicated optimiser state, so every
device applies the same noisy update. Per-example keys are split from the step key before
sharding, so example ``i`` sees the same key as on one device: for the same key the update
equals the single-device one (up to float summation order). Across hosts, initialise
``jax.distributed`` and build the mesh over ``jax.devices()``; nothing else changes.

:func:`shard_clipped_sum` wraps any per-device clipped-sum function; the entry points with a
``mesh=`` argument (:func:`jdp.dpsgd.step.make_clipped_sum_fn`,
:func:`jdp.dpsgd.step.make_dp_step`, :func:`jdp.dpsgd.train.train`) use it.

Privacy:
    Identical to :mod:`jdp.dpsgd.clipping`: the released quantity is the same clipped sum plus
    one draw of ``N(0, (z C)^2 I)``; partitioning the computation changes no sensitivity.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jdp.dpsgd.clipping import ClippedSum


def data_mesh(devices: list | None = None, axis_name: str = "data") -> Mesh:
    """A 1-D mesh over ``devices`` (default: all devices, on all hosts)."""
    return Mesh(np.asarray(jax.devices() if devices is None else devices), (axis_name,))


def shard_clipped_sum(sum_fn: Callable, mesh: Mesh) -> Callable:
    """``sum_fn(params, batch, mask, keys, l2_clip_norm, model_state) -> (ClippedSum, StepInfo)``
    run over ``mesh``: the batch, mask and per-example keys are split over the devices, the
    parameters, clip bound and model state replicated, and the partial sums added with
    ``psum``. Same signature and result (up to summation order).

    Raises:
        ValueError: the batch size is not a multiple of the device count (use
            ``padded_batch_size(..., multiple_of=mesh.size)``).
    """
    (axis,) = mesh.axis_names
    data = PartitionSpec(axis)
    rep = PartitionSpec()

    def local(params, batch, mask, keys, l2_clip_norm, model_state):
        part, info = sum_fn(params, batch, mask, keys, l2_clip_norm, model_state)
        return ClippedSum(jax.lax.psum(part.grads, axis), part.l2_sensitivity), info

    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(rep, data, data, data, rep, rep),
        out_specs=(rep, data),
        check_vma=False,
    )

    def f(params, batch, mask, keys, l2_clip_norm, model_state=None):
        size = mask.shape[0]
        if size % mesh.size:
            raise ValueError(
                f"expected the batch size ({size}) to be a multiple of the device count "
                f"({mesh.size})"
            )
        return sharded(params, batch, mask, keys, l2_clip_norm, model_state)

    return f
