"""A DP-SGD training loop: plan, sample, step, account (one ledger entry).

Usage (a loss written for ONE example, see :mod:`jdp.dpsgd.clipping`)::

    def loss_fn(params, example, key):
        return jnp.sum((model.apply(params, example["x"]) - example["y"]) ** 2)

    config = DPSGDConfig(l2_clip_norm=1.0, sampling_prob=0.01, expected_batch_size=200,
                         epochs=5, target_epsilon=1.0, target_delta=1e-5)
    result = train(key, loss_fn, params, optax.adam(1e-3), data, config)
    result.params, result.ledger      # trained parameters, PrivacyLedger with one "dp-sgd" entry

The privacy parameters are a :class:`~jdp.dpsgd.settings.DPSGDConfig`; the performance flags
(clipping path, chunk cap, overflow, mesh, steps per dispatch) a
:class:`~jdp.dpsgd.settings.Performance`, which changes compute, never the output
distribution or the ledger. ``Performance(steps_per_dispatch=K)`` (or ``"auto"``) compiles
the loop (:mod:`jdp.dpsgd.scan`): blocks of ``K`` steps scanned in one dispatch on records
kept on the device, releasing what the step-by-step loop (the default) releases for the same
key. ``data`` is a pytree of arrays
whose leaves share the leading (record) axis. The update is normalised by
``expected_batch_size``, a public constant the caller declares; never by ``len(data)``.

A loop of its own (a model state the loss reads and the loop changes: dp-GAN's generator,
DPGM's persistent Gibbs chains) is built from the same pieces: :func:`jdp.dpsgd.run.start`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import optax

from accounting.ledger import PrivacyLedger
from jdp.dpsgd.clipping import LossFn
from jdp.dpsgd.run import start
from jdp.dpsgd.settings import DPSGDConfig, Performance


class TrainResult(NamedTuple):
    """What :func:`train` returns.

    Attributes:
        params: trained parameters.
        ledger: a :class:`PrivacyLedger` with the run's one entry.
        noise_multiplier: the (calibrated) gradient noise multiplier.
        steps: the number of logical DP-SGD steps taken.
    """

    params: Any
    ledger: PrivacyLedger
    noise_multiplier: float
    steps: int


def train(
    key: jax.Array,
    loss_fn: LossFn,
    params: Any,
    optimizer: optax.GradientTransformation,
    data: Any,
    config: DPSGDConfig,
    *,
    performance: Performance | None = None,
    label: str = "dp-sgd",
    on_step: Callable[[int, Any], None] | None = None,
) -> TrainResult:
    """Train ``params`` with DP-SGD and return them with the run's ledger entry.

    Args:
        key: PRNG key (split by :func:`jdp.dpsgd.run.start` into its streams).
        loss_fn: loss for ONE example (see :mod:`jdp.dpsgd.clipping`).
        params: initial parameters (a pytree).
        optimizer: any optax optimiser; DP aggregation is chained in front of it.
        data: pytree of arrays with a shared leading axis of ``n`` records.
        config: the privacy parameters (:class:`DPSGDConfig`, a noise multiplier or target).
        performance: the compute flags (:class:`Performance`).
        label: the ledger label.
        on_step: ``on_step(t, params)`` for every step ``t = 1 .. steps`` on the host (e.g.
            per-epoch evaluation curves); the compiled loop calls it for each step of a block
            after the block has run (the block then also returns its iterates). DP-SGD's
            analysis covers releasing every iterate, so what it sees is already accounted; it
            must not stop or steer the run (the run length is fixed by the plan).

    A terminal shows the phase ``DP-SGD step i/T`` with the epsilon spent so far and an ETA
    (no data-derived values; :mod:`jdp.progress`, silenced by ``jdp.verbosity.no_progress``),
    advanced after every step, or every block in the compiled loop.

    Returns:
        :class:`TrainResult` ``(params, ledger, noise_multiplier, steps)``.

    Privacy:
        See :mod:`jdp.dpsgd.run`: the batch selection's relation, one subsampled Gaussian
        mechanism per step, the ledger's ``dpsgd_event(z, q, T, sampling=...)`` with the
        sampler's cut; every noisy step passes the release tape. Whether a sampled record
        gave a non-finite gradient (dropped with weight 0) is told to the data holder only.
    """
    run = start(key, loss_fn, params, optimizer, data, config, performance)
    state = run.init(params)
    if run.steps_per_dispatch == 1:
        for t, chunks in enumerate(run.shown_batches(), start=1):
            state = run.step(state, chunks)
            if on_step is not None:
                on_step(t, state.params)
    else:
        for block in run.shown_blocks():
            first = state.count
            state, iterates = run.block(state, block, on_step is not None)
            if on_step is not None:  # every step's iterate, after its block
                for k in range(block.steps):
                    on_step(first + k + 1, jax.tree_util.tree_map(lambda x, k=k: x[k], iterates))
    run.finish(state)
    return TrainResult(state.params, run.ledger(label), run.noise_multiplier, run.steps)
