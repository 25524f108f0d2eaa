"""The compiled DP-SGD loop: blocks of steps in one dispatch, the data kept on the device.

:func:`jdp.dpsgd.train.train`'s loop over :class:`jdp.dpsgd.run.Run` gathers every logical
batch on the host and dispatches a step's pieces one by one. With
``Performance(steps_per_dispatch=K)`` it runs a block of ``K`` logical steps per dispatch
instead (:meth:`jdp.dpsgd.run.Run.block`):

* the batch selection is drawn on the host exactly as for the step-by-step loop (the same
  numpy generator, the same draws in the same order: Poisson sampling stays exact), and a
  block's batches are sent as one pair of ``[K, C, B]`` index and mask arrays
  (:func:`stack_block`; ``C`` the most chunks a step of the block has, a shorter step padded
  with all-masked chunks, which add exactly zero);
* the records stay on the device (sent once); each step gathers its rows there;
* :func:`scan_steps` runs ``jax.lax.scan`` over the block with the step function of
  :func:`jdp.dpsgd.step.dp_sgd` itself (the clipped sums of the chunks, ONE noise draw from
  the step's key, the optimiser update), so a block releases what ``K`` steps of the
  step-by-step loop release;
* :func:`make_block_fn` jits it with the state's buffers donated.

Privacy:
    Unchanged: the same mechanism per step on the same batches (the all-masked chunks that
    square a block off are padding of weight zero, as a chunk's padded slots are). The block
    length is public (a function of the plan and the flags).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jdp.dpsgd.batch_selection import PaddedBatch

__all__ = ["BlockIndices", "make_block_fn", "owned_copy", "scan_steps", "stack_block", "take"]

StepFn = Callable[[Any, Sequence[tuple[Any, Any]]], Any]


class BlockIndices(NamedTuple):
    """The batches of ``K`` consecutive logical steps as fixed-shape arrays.

    Attributes:
        indices: ``int32 [K, C, B]``: step ``k``'s chunk ``j`` is the rows ``indices[k, j]``
            (0 where padded).
        mask: ``bool [K, C, B]``: True for real records.
    """

    indices: np.ndarray
    mask: np.ndarray

    @property
    def steps(self) -> int:
        """``K``, the number of logical steps in the block (public)."""
        return self.indices.shape[0]


def take(data: Any, indices: Any) -> Any:
    """Rows ``indices`` of every leaf of a data pytree (numpy on the host, or traced)."""
    return jax.tree_util.tree_map(lambda x: x[indices], data)


def stack_block(batches: Sequence[Sequence[PaddedBatch]]) -> BlockIndices:
    """``K`` logical batches (each a list of equal-length chunks) as one :class:`BlockIndices`;
    a step with fewer chunks than the block's most is padded with all-masked chunks."""
    chunks = max(len(b) for b in batches)
    size = batches[0][0].indices.shape[0]
    indices = np.zeros((len(batches), chunks, size), np.int32)
    mask = np.zeros((len(batches), chunks, size), bool)
    for k, batch in enumerate(batches):
        for j, chunk in enumerate(batch):
            indices[k, j], mask[k, j] = chunk.indices, chunk.mask
    return BlockIndices(indices, mask)


def scan_steps(
    step: StepFn, state: Any, rows: Any, block: BlockIndices, *, iterates: bool = False
) -> tuple[Any, Any]:
    """``K`` applications of ``step`` by ``jax.lax.scan``, step ``k`` on the chunks
    ``(take(rows, indices[k, j]), mask[k, j])`` for ``j < C``.

    Args:
        step: ``step(state, chunks) -> state``, traceable with ``state.count`` traced
            (:func:`jdp.dpsgd.step.dp_sgd`'s step with a constant or adaptive clip rule).
        state: the carry (its ``count`` a device integer).
        rows: the records on the device (a pytree with a shared leading axis).
        block: the block's indices and masks (host or device arrays).
        iterates: also return every step's parameters, stacked on a leading ``K`` axis.

    Returns:
        ``(state after the block, stacked parameters or None)``.
    """

    def body(carry: Any, xs: tuple[Any, Any]) -> tuple[Any, Any]:
        indices, mask = xs
        chunks = [(take(rows, indices[j]), mask[j]) for j in range(indices.shape[0])]
        carry = step(carry, chunks)
        return carry, carry.params if iterates else None

    return jax.lax.scan(body, state, (block.indices, block.mask))


def make_block_fn(step: StepFn, *, iterates: bool) -> Callable[..., tuple[Any, Any]]:
    """Jitted ``block(state, rows, block) -> (state, iterates)`` (:func:`scan_steps`) whose
    ``state`` buffers are donated: the caller passes a state it owns and must not read again.
    A block of another length or chunk count compiles once more (the last, shorter block)."""

    def block_fn(state: Any, rows: Any, block: BlockIndices) -> tuple[Any, Any]:
        return scan_steps(step, state, rows, block, iterates=iterates)

    return jax.jit(block_fn, donate_argnums=0)


@jax.jit
def owned_copy(tree: Any) -> Any:
    """A copy of every array leaf of ``tree`` in fresh device buffers (what a donating call
    may consume while the original stays valid), in one dispatch."""
    return jax.tree_util.tree_map(jnp.copy, tree)
