"""Data-parallel DP-SGD over several devices (and hosts) with ``jax.shard_map``.

The padded batch is split along its leading axis over a 1-D device mesh. Each device clips
its own examples and sums them; the partial sums are added with a reduce-scatter
(``psum_scatter``), so that each device ends up holding one slice of the clipped sum of every
parameter that splits evenly over the devices (``psum``, a replicated sum, for the others).
Per-example keys are split from the step key before sharding, so example ``i`` sees the same
key as on one device.

The Gaussian noise is still drawn ONCE per step, outside the sharded region, by the optimiser
chain (:func:`jdp.dpsgd.noise.dp_aggregate`) from its replicated key. Because the clipped sum
arrives sliced, XLA's partitioner slices the noise draw and the optimiser update the same way:
each device draws only its slice of the noise. The noise bits do not depend on that slicing
(JAX's counter-based PRNG with ``jax_threefry_partitionable``, the default since JAX 0.5; with
it off the partitioner draws the whole array on every device instead), so for the same key the
update equals the single-device one up to float summation order. A replicated sum (what a
plain ``psum`` returns) would make every device draw the whole noise and run the whole update:
on simulated CPU devices that share the cores this multiplied the noise cost by the device count
(scripts/multi_device_check.py, docs/results/multi_device_check.md). A jitted step therefore
returns its parameters sliced over the devices like the sum; its second call, which receives
them so, compiles once more for that layout, then no more.

:func:`shard_clipped_sum` wraps any per-device clipped-sum function; the entry points with a
``mesh=`` argument (:func:`jdp.dpsgd.step.make_clipped_sum_fn`,
:func:`jdp.dpsgd.step.make_dp_step`, :func:`jdp.dpsgd.train.train`) use it. Across hosts, call
``jax.distributed.initialize()`` on every host first, then build the mesh over all
``jax.devices()`` with :func:`data_mesh` (docs/guide.md, "Several devices and hosts").

Privacy:
    Identical to :mod:`jdp.dpsgd.clipping`: the released quantity is the same clipped sum plus
    one draw of ``N(0, (z C)^2 I)``; partitioning the computation changes no sensitivity and
    draws no extra noise (one key, one draw, sliced over devices).
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


def scatter_axis(shape: tuple[int, ...], num_devices: int) -> int | None:
    """The axis along which a clipped-sum leaf of ``shape`` is split over ``num_devices``:
    the first one whose length is a multiple of the device count (``None``: no such axis,
    the leaf's sum is replicated)."""
    return next((i for i, n in enumerate(shape) if n % num_devices == 0), None)


def shard_clipped_sum(sum_fn: Callable, mesh: Mesh) -> Callable:
    """``sum_fn(params, batch, mask, keys, l2_clip_norm, model_state) -> (ClippedSum, StepInfo)``
    run over ``mesh``: the batch, mask and per-example keys are split over the devices, the
    parameters, clip bound and model state replicated; the partial sums are reduce-scattered
    (each leaf sliced along :func:`scatter_axis`; ``psum`` where no axis fits). Same signature
    and result (up to summation order); the clipped sum comes back sharded over ``mesh``.

    Raises:
        ValueError: the batch size is not a multiple of the device count (use
            ``padded_batch_size(..., multiple_of=mesh.size)``).
    """
    (name,) = mesh.axis_names
    data = PartitionSpec(name)
    rep = PartitionSpec()

    def add_parts(part: jax.Array) -> jax.Array:
        axis = scatter_axis(part.shape, mesh.size)
        if axis is None:
            return jax.lax.psum(part, name)
        return jax.lax.psum_scatter(part, name, scatter_dimension=axis, tiled=True)

    def spec(leaf: jax.Array) -> PartitionSpec:
        axis = scatter_axis(leaf.shape, mesh.size)
        return rep if axis is None else PartitionSpec(*([None] * axis), name)

    def local(params, batch, mask, keys, l2_clip_norm, model_state):
        part, info = sum_fn(params, batch, mask, keys, l2_clip_norm, model_state)
        return ClippedSum(jax.tree.map(add_parts, part.grads), part.l2_sensitivity), info

    def f(params, batch, mask, keys, l2_clip_norm, model_state=None):
        size = mask.shape[0]
        if size % mesh.size:
            raise ValueError(
                f"expected the batch size ({size}) to be a multiple of the device count "
                f"({mesh.size})"
            )
        sharded = jax.shard_map(
            local,
            mesh=mesh,
            in_specs=(rep, data, data, data, rep, rep),
            out_specs=(ClippedSum(jax.tree.map(spec, params), rep), data),
            check_vma=False,
        )
        return sharded(params, batch, mask, keys, l2_clip_norm, model_state)

    return f
