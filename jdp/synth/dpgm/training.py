"""DPGM's ``k`` per-cluster DP-SGD runs as ONE compiled program over a leading cluster axis.

Each cluster ``j`` runs exactly the DP-SGD of :func:`jdp.dpsgd.run.start` on its own rows
(Acs et al., Alg. 4 with DPNorm's adaptive clip): its key is split as ``start`` splits it
(batch selection, noise, per-example and histogram streams), its Poisson batches are drawn
on the host from its own selection generator with its own row count, and every step is
:func:`jdp.dpsgd.step.dp_sgd`'s step (DPNorm's noisy histogram on the whole logical batch,
the clipped sum, ONE noise draw of :func:`jdp.dpsgd.noise.dp_aggregate`, the optimiser).
What changes is compute only:

* the clusters' states, rows and batch indices are stacked on a leading axis and the step
  is ``jax.vmap``-ed over it, then scanned over blocks of :func:`block_steps` steps
  (:func:`jdp.dpsgd.scan.stack_block`), so a fit compiles ONE program instead of a set of
  functions per cluster. DPNorm's norms and the clipped sum come from ONE pass of
  per-example gradients where :func:`jdp.dpsgd.step.dp_sgd` holds the step's gradients at
  once (one chunk, one micro-batch of the general path); a step of several chunks, or a
  chunk longer than the micro-batch (``"auto"`` holds 4 MiB of gradients:
  :func:`jdp.dpsgd.clipping.auto_microbatch_size`), keeps a norm pass before the clipped
  sum (``scripts/bench_dpgm_fit.py`` counts them);
* every cluster's batches are padded to one chunk length ``B``, the largest of the
  clusters' own padded lengths (:meth:`jdp.dpsgd.batch_selection.BatchSelection.padded_size`:
  compute only, as each run's own length is); the extra slots carry mask 0 and add exactly
  zero. Per-example keys are the first slots of ``split(key, B)``, which does not depend on
  ``B``. The clusters' rows lie end to end in one array on the device, a cluster's indices
  offset by where its rows start. The price: every cluster steps at the largest cluster's
  length, so on unequal clusters a step computes more padded slots than separate runs do
  (about twice on Adult-like sizes); at DPGM's default run length the one compilation saves
  far more (``docs/results/bench_dpgm_fit.md``).

The generator's public model state (the RBM's persistent chains) moves after every step by
:meth:`~jdp.synth.dpgm.generators.Generator.advance`, in the same program.

Privacy:
    Unchanged from ``k`` separate runs: the same mechanism per cluster and step on the same
    Poisson batches (:meth:`jdp.dpsgd.DPSGDConfig.event` per cluster, composed in parallel
    by the caller). The whole training is one release of the record/replay tape
    (:mod:`jdp.mechanisms.tape`), fingerprinted by its public inputs (the plan, the
    generator, the layout and the clusters' keys); the padded shapes are compute only and
    are not part of it. Whether a sampled record gave a non-finite gradient is told to the
    data holder only.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jdp.dpsgd import DPSGDConfig, Performance
from jdp.dpsgd.noise import dp_aggregate
from jdp.dpsgd.scan import BlockIndices, stack_block, take
from jdp.dpsgd.settings import AUTO_STEPS_PER_DISPATCH
from jdp.dpsgd.step import DPSGDState, StepKeys, choose_method, dp_sgd
from jdp.mechanisms.tape import public, released
from jdp.nn.heads import HeadLayout, layout_width
from jdp.nn.once import run_once
from jdp.progress import phase
from jdp.random import numpy_rng, split
from jdp.synth.dpgm.generators import Generator
from jdp.verbosity import warn_private

__all__ = ["block_steps", "train_clusters"]


def block_steps(steps: int, performance: Performance) -> int:
    """Steps per dispatch ``K``: ``performance.steps_per_dispatch`` (at most ``steps``; where
    it does not divide ``steps`` the shorter last block compiles once more), or under
    ``"auto"`` the largest divisor of ``steps`` up to :data:`AUTO_STEPS_PER_DISPATCH`, so
    that every block has the same length and the fit compiles ONE program (public: a
    function of the plan and the flags)."""
    asked = performance.steps_per_dispatch
    if asked == "auto":
        return max(d for d in range(1, min(steps, AUTO_STEPS_PER_DISPATCH) + 1) if steps % d == 0)
    return min(steps, asked)


def _fingerprint(
    keys: jax.Array,
    generator: Generator,
    layout: HeadLayout,
    dp: DPSGDConfig,
    performance: Performance,
    xs: Sequence[np.ndarray],
) -> Any:
    """The training's public fingerprint: the plan, the generator, the layout and the
    clusters' keys; the rows ``xs`` are private (their count and sizes included)."""
    del xs
    return public((generator, layout, dp, performance)), np.asarray(jax.random.key_data(keys))


def _stack_clusters(blocks: Sequence[BlockIndices], starts: Sequence[int]) -> BlockIndices:
    """The clusters' blocks (``[K, C_j, B]`` each, indices into the cluster's own rows) as
    one ``[k, K, C, B]`` block of indices into the rows laid end to end (cluster ``j``'s
    first row at ``starts[j]``), ``C`` the most chunks a cluster's step has; the added chunks
    are all masked (they add zero)."""
    chunks = max(b.indices.shape[1] for b in blocks)
    widen = [((0, 0), (0, chunks - b.indices.shape[1]), (0, 0)) for b in blocks]
    return BlockIndices(
        np.stack([np.pad(b.indices + s, w) for b, s, w in zip(blocks, starts, widen, strict=True)]),
        np.stack([np.pad(b.mask, w) for b, w in zip(blocks, widen, strict=True)]),
    )


@functools.lru_cache(maxsize=8)
def _program(
    generator: Generator, layout: HeadLayout, dp: DPSGDConfig, method: str, microbatch: Any
) -> Callable[..., DPSGDState]:
    """Jitted ``(states, step_keys, move_keys, rows, block) -> states``: every cluster's
    :func:`jdp.dpsgd.step.dp_sgd` step (then its model state's move) scanned over the block,
    vmapped over the leading cluster axis of all but the (shared) rows; the states' buffers
    are donated. Cached by its public arguments, so a later fit of the same plan and shapes
    reuses the compiled program."""
    loss = generator.example_loss(layout)

    def one(state: DPSGDState, keys: StepKeys, move_key: Any, rows: Any, block: BlockIndices):
        # dp_aggregate reads its key at init only; the noise key travels in ``state``
        chain = optax.chain(_aggregate(dp, state.opt_state[0].key), generator.optimizer())
        sgd = dp_sgd(
            keys, loss, chain, l2_clip_norm=dp.l2_clip_norm, method=method,
            microbatch_size=microbatch,
        )  # fmt: skip

        def body(carry: DPSGDState, xs: tuple[jax.Array, jax.Array]) -> tuple[DPSGDState, None]:
            indices, mask = xs
            chunks = [(take(rows, indices[c]), mask[c]) for c in range(indices.shape[0])]
            carry = sgd.step(carry, chunks)
            moved = generator.advance(move_key, carry.count, carry.params, carry.model_state)
            return carry._replace(model_state=moved), None

        return jax.lax.scan(body, state, (block.indices, block.mask))[0]

    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None, 0)), donate_argnums=0)


def _aggregate(dp: DPSGDConfig, key: jax.Array) -> optax.GradientTransformation:
    """DP-SGD's noisy aggregation of a cluster's run (:func:`jdp.dpsgd.noise.dp_aggregate`
    with the run's ``z``, the released normaliser and the secure-noise flag)."""
    return dp_aggregate(
        key,
        noise_multiplier=dp.noise_multiplier,
        expected_batch_size=dp.expected_batch_size,
        secure_noise=dp.secure_noise,
    )


@released(_fingerprint)
def train_clusters(
    keys: jax.Array,
    generator: Generator,
    layout: HeadLayout,
    dp: DPSGDConfig,
    performance: Performance,
    xs: Sequence[np.ndarray],
) -> list[Any]:
    """DP-SGD on every cluster's rows at once; returns each cluster's trained parameters.

    Args:
      keys: ``(k,)`` cluster keys; cluster ``j`` splits ``keys[j]`` into its initialisation
        and its training key, the latter as :meth:`Generator.start` and
        :func:`jdp.dpsgd.run.start` do.
      generator: the clusters' generator (:mod:`jdp.synth.dpgm.generators`).
      layout: the encoded table's head layout (public).
      dp: every cluster's DP-SGD run (noise multiplier set, an
        :class:`~jdp.dpsgd.AdaptiveClip` or a bound as clip rule, Poisson sampling).
      performance: compute flags: the clipping path, ``chunk_size``, ``overflow`` and
        ``steps_per_dispatch`` (no ``mesh``).
      xs: the ``k`` clusters' private rows; each gets one extra all-zero row of weight 0 (so
        an empty cluster trains too: noise only); its gradient is 0 and its norm 0 falls in
        no DPNorm bin.

    Returns:
      ``k`` parameter trees (numpy), in cluster order.
    """
    width = layout_width(layout)
    sizes = [len(x) + 1 for x in xs]
    starts = np.cumsum([0, *sizes[:-1]])
    rows = {  # the clusters end to end, each its rows (weight 1) and then its zero row
        "x": jnp.asarray(np.concatenate([np.vstack([x, np.zeros((1, width))]) for x in xs]),
                         jnp.float32),
        "w": jnp.asarray(np.concatenate([np.r_[np.ones(len(x)), 0.0] for x in xs]), jnp.float32),
    }  # fmt: skip
    path = performance.clipping
    padded = max(
        dp.sampling.padded_size(
            n, dp.sampling_prob, multiple_of=performance.chunk_multiple,
            chunk_size=performance.chunk_size,
        )
        for n in sizes
    )  # fmt: skip

    def start(key: jax.Array) -> tuple[DPSGDState, StepKeys, Any, jax.Array]:
        init_key, train_key = split(key)
        params = generator.init(init_key, width)
        run_key, model_state, move_key = generator.start(train_key, width)
        sample_key, noise_key, example_key, clip_key = jax.random.split(run_key, 4)
        opt_state = optax.chain(_aggregate(dp, noise_key), generator.optimizer()).init(params)
        zero = jnp.zeros((), jnp.int32)
        state = DPSGDState(params, opt_state, model_state, zero, zero)
        return state, StepKeys(example_key, clip_key), move_key, sample_key

    # every cluster's start, stacked on a leading cluster axis, as one program
    state, step_keys, move_keys, sample_keys = run_once(jax.vmap(start), keys)
    first, *_ = jax.eval_shape(start, keys[0])  # shapes: the choice is structural
    method = choose_method(  # on a zero record of the public shape
        generator.example_loss(layout), first.params,
        {"x": jnp.zeros((1, width)), "w": jnp.zeros((1,))},
        method=path.name, model_state=first.model_state,
    )  # fmt: skip
    selections = [
        dp.sampling.batches(
            numpy_rng(sample_key), n, sampling_prob=dp.sampling_prob, steps=dp.num_steps,
            padded_size=padded, overflow=performance.overflow,
        )
        for sample_key, n in zip(sample_keys, sizes, strict=True)
    ]  # fmt: skip
    program = _program(generator, layout, dp, method, path.microbatch_size)
    size = block_steps(dp.num_steps, performance)
    with phase(f"DP-SGD step ({len(xs)} clusters)", dp.num_steps) as shown:
        for _ in range(math.ceil(dp.num_steps / size)):
            batches = [list(itertools.islice(s, size)) for s in selections]
            block = _stack_clusters([stack_block(b) for b in batches], starts)
            state = program(state, step_keys, move_keys, rows, block)
            shown.update(len(batches[0]))  # the block's steps (block.steps counts clusters)
    if int(state.num_nonfinite.sum()) > 0:
        warn_private(
            "dpgm: the loss gave non-finite per-example gradients on some sampled records; "
            "they were dropped from their steps (clip weight zero). This message is derived "
            "from the private data and is not covered by the ledger.",
            RuntimeWarning,
            stacklevel=3,
        )
    params = jax.tree_util.tree_map(np.asarray, state.params)
    return [jax.tree_util.tree_map(lambda a, j=j: a[j], params) for j in range(len(xs))]
