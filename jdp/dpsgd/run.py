"""A planned DP-SGD run and the pieces of a loop over it: :func:`train`'s, or a method's own.

:func:`start` plans a run before any step: the noise multiplier (calibrated to a target or
given), the run length, the clipping path (chosen on a zero record of the data's public
shape), the padded chunk length, the batch selection and the event the run spends. A loop
then asks :meth:`Run.batches` for the logical batches (exactly the planned number, Poisson
sampling exact), takes :meth:`Run.step` on each (the clipped sums of a batch's chunks, ONE
noise draw, the optimiser update), may change the state's public ``model_state`` between
steps (dp-GAN's generator, DPGM's persistent Gibbs chains: post-processing of released
iterates), and records :meth:`Run.ledger` at the end::

    run = start(key, loss_fn, params, optax.adam(1e-3), data, config)
    state = run.init(params)
    for chunks in run.batches():
        state = run.step(state, chunks)
    ledger = run.ledger("dp-sgd")

:func:`jdp.dpsgd.train.train` runs the compiled loop (:mod:`jdp.dpsgd.scan`) where
:attr:`Run.steps_per_dispatch` is above 1: :meth:`Run.blocks` draws the same batches from the
same generator, and :meth:`Run.block` takes ``K`` steps in one dispatch::

    for block in run.blocks():
        state, _ = run.block(state, block)

Every noisy step passes the release tape (:mod:`jdp.mechanisms.tape`), one step per entry
(:meth:`Run.step`) or one block per entry (:meth:`Run.block`), so a method's own loop is
under the record/replay contract as :func:`jdp.dpsgd.train.train` is.

Privacy:
    The batch selection's relation (add/remove-one for Poisson, replace-one for fixed size).
    Each step is the Gaussian mechanism with std ``z C_t`` on a clipped sum of sensitivity
    ``C_t``, subsampled; the ledger records the selection's ``dpsgd_event(z, q, T,
    sampling=...)`` with the sampler's cut on every parameter (:meth:`DPSGDConfig.event`).
    A clip schedule changes ``C_t`` only, never ``z``. The steps' count is fixed by the plan:
    a loop that steps more raises.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from accounting.events import DpEvent
from accounting.ledger import PrivacyLedger
from jdp.dpsgd.batch_selection import PaddedBatch
from jdp.dpsgd.clip_schedules import AdaptiveClip
from jdp.dpsgd.clipping import LossFn, check_batch
from jdp.dpsgd.noise import dp_aggregate, noise_cut
from jdp.dpsgd.scan import BlockIndices, make_block_fn, owned_copy, stack_block, take
from jdp.dpsgd.settings import AUTO_STEPS_PER_DISPATCH, DPSGDConfig, Performance
from jdp.dpsgd.step import DPSGDState, StepKeys, choose_method, dp_sgd
from jdp.mechanisms.tape import public, released
from jdp.progress import current_delta, phase, track
from jdp.random import numpy_rng, split
from jdp.verbosity import warn_private

__all__ = ["Run", "run_ledger", "start", "take"]

Chunks = Sequence[tuple[Any, Any]]


def _step_fingerprint(self: Run, state: DPSGDState, chunks: Chunks) -> Any:
    """A noisy step's public fingerprint (:mod:`jdp.mechanisms.tape`): the run's plan and the
    state it starts from (released or public); the chunks are private records."""
    del chunks
    plan = (self.config, self.noise_multiplier, self.steps, self.clipping, self.noise_cut)
    return public((plan, state))


def _block_fingerprint(
    self: Run, state: DPSGDState, block: BlockIndices, iterates: bool = False
) -> Any:
    """A block's public fingerprint: the step's (:func:`_step_fingerprint`) and the block's
    length and what it returns; the indices and masks are private (who was sampled)."""
    return (_step_fingerprint(self, state, ()), block.steps, iterates)


class Run:
    """A planned DP-SGD run (see the module docstring); build with :func:`start`.

    Attributes:
        config: the privacy parameters (noise resolved: :attr:`noise_multiplier`).
        noise_multiplier: ``z``, given or calibrated.
        steps: the planned number of logical steps.
        clipping: the clipping path that runs (``"general"``, ``"ghost"`` or
            ``"ghost_penalty"``).
        noise_cut: the sampler's cut per step (:func:`jdp.dpsgd.noise.noise_cut`).
        dataset_size: ``n``, read by the batch selection only (and, for fixed-size batches,
            public under their replace-one analysis).
    """

    def __init__(
        self,
        *,
        config: DPSGDConfig,
        noise_multiplier: float,
        clipping: str,
        noise_cut: float,
        rows: Any,
        dataset_size: int,
        padded_size: int | None,
        performance: Performance,
        sample_key: jax.Array,
        sgd: Any,
    ) -> None:
        self.config = config
        self.noise_multiplier = noise_multiplier
        self.steps = config.num_steps
        self.clipping = clipping
        self.noise_cut = noise_cut
        self.dataset_size = dataset_size
        self._rows = rows
        self._padded = padded_size
        self._performance = performance
        self._sample_key = sample_key
        self._sgd = sgd
        self._device_rows: Any = None
        self._block_fns: dict[bool, Any] = {}

    def init(self, params: Any, model_state: Any = None) -> DPSGDState:
        """The state before the first step."""
        return self._sgd.init(params, model_state)

    @property
    def steps_per_dispatch(self) -> int:
        """``K``, the logical steps per dispatch of :func:`jdp.dpsgd.train.train`'s loop:
        :attr:`Performance.steps_per_dispatch` resolved (at most :attr:`steps`; ``"auto"``:
        the fewest blocks of at most :data:`AUTO_STEPS_PER_DISPATCH` steps, as equal as the
        count allows), or 1 (the step-by-step loop) with a mesh or a clip schedule (a host
        function of the step count), which the compiled loop does not take."""
        asked = self._performance.steps_per_dispatch
        if self._performance.mesh is not None or (
            callable(self.config.l2_clip_norm)
            and not isinstance(self.config.l2_clip_norm, AdaptiveClip)
        ):
            return 1
        if asked == "auto":  # equal blocks of at most AUTO_STEPS_PER_DISPATCH
            return math.ceil(self.steps / math.ceil(self.steps / AUTO_STEPS_PER_DISPATCH))
        return min(self.steps, asked)

    def _selection(self) -> Iterator[list[PaddedBatch]]:
        """The run's batch selection: :attr:`steps` lists of padded index chunks, drawn from
        the run's sampling key (the one generator both loops read)."""
        return self.config.sampling.batches(
            numpy_rng(self._sample_key),
            self.dataset_size,
            sampling_prob=self.config.sampling_prob,
            steps=self.steps,
            padded_size=self._padded,
            overflow=self._performance.overflow,
        )

    def batches(self) -> Iterator[Chunks]:
        """The run's logical batches, exactly :attr:`steps` of them, each a list of padded
        ``(records, mask)`` chunks (Poisson: each record in with probability ``q``)."""
        for chunks in self._selection():
            yield [(take(self._rows, c.indices), c.mask) for c in chunks]

    def blocks(self, size: int | None = None) -> Iterator[BlockIndices]:
        """The same batches as :meth:`batches` (the same draws, in order) as index blocks of
        ``size`` steps (default :attr:`steps_per_dispatch`; the last one shorter where
        ``size`` does not divide :attr:`steps`), for :meth:`block`."""
        selection = self._selection()
        size = self.steps_per_dispatch if size is None else size
        while batch := list(itertools.islice(selection, size)):
            yield stack_block(batch)

    @released(_step_fingerprint)
    def step(self, state: DPSGDState, chunks: Chunks) -> DPSGDState:
        """One noisy step on one logical batch (its chunks' clipped sums, one noise draw)."""
        if state.count >= self.steps:
            raise RuntimeError(
                f"the run was planned and accounted for {self.steps} steps; step "
                f"{state.count + 1} would spend more than its ledger says"
            )
        return self._sgd.step(state, chunks)

    @released(_block_fingerprint)
    def block(
        self, state: DPSGDState, block: BlockIndices, iterates: bool = False
    ) -> tuple[DPSGDState, Any]:
        """``block.steps`` noisy steps in one dispatch (:mod:`jdp.dpsgd.scan`): the records
        sent to the device once per run, the step of :meth:`step` scanned over the block, a
        fresh copy of the state's buffers donated (``state`` itself stays valid: it may be
        the caller's parameters or a recorded release).

        Returns:
            ``(state after the block, every step's parameters stacked on a leading axis
            where ``iterates``, else None)``.
        """
        if state.count + block.steps > self.steps:
            raise RuntimeError(
                f"the run was planned and accounted for {self.steps} steps; steps "
                f"{state.count + 1}..{state.count + block.steps} would spend more than its "
                "ledger says"
            )
        if self._device_rows is None:
            self._device_rows = jax.device_put(self._rows)
        if iterates not in self._block_fns:
            self._block_fns[iterates] = make_block_fn(self._sgd.step, iterates=iterates)
        carry = owned_copy(state._replace(count=jnp.asarray(state.count, jnp.int32)))
        out, stacked = self._block_fns[iterates](carry, self._device_rows, block)
        return out._replace(count=state.count + block.steps), stacked

    def event(self) -> DpEvent:
        """What the whole run spends (:meth:`DPSGDConfig.event`)."""
        return self.config.event(self.noise_multiplier, self.dataset_size, noise_cut=self.noise_cut)

    def ledger(self, label: str = "dp-sgd") -> PrivacyLedger:
        """The run's one ledger entry, noted with its plan (:func:`run_ledger`)."""
        return run_ledger(
            self.config,
            self.noise_multiplier,
            self.dataset_size,
            noise_cut=self.noise_cut,
            method=self.clipping,
            label=label,
        )

    def epsilon_after(self, steps: int, accountant: str, delta: float | None = None) -> float:
        """The epsilon at ``delta`` (default: the config's target delta) after ``steps``
        steps (progress display)."""
        return self.config.epsilon_after(
            steps,
            self.noise_multiplier,
            self.dataset_size,
            accountant,
            noise_cut=self.noise_cut,
            delta=delta,
        )

    def shown_batches(self, name: str = "DP-SGD step") -> Iterator[Chunks]:
        """:meth:`batches` as the progress phase ``name i/T`` (:mod:`jdp.progress`: shown on
        a terminal only), with the epsilon the run's first ``i`` steps spent where a delta is
        known (the config's target, else the fit's budget, :func:`jdp.progress.fit_delta`),
        by the ledger's rule (the config's accountant): after the last step it is the figure
        of the run's ledger entry. Public: a function of the plan (``z``, ``q``, the steps)
        only. :mod:`jdp.progress` spaces its evaluations so that they cost little."""
        return track(self.batches(), name, total=self.steps, epsilon=self._shown_epsilon())

    def shown_blocks(self, name: str = "DP-SGD step") -> Iterator[BlockIndices]:
        """:meth:`blocks` as the progress phase ``name i/T`` of :meth:`shown_batches`,
        advanced by a block's steps after each block."""
        with phase(name, self.steps, epsilon=self._shown_epsilon()) as shown:
            for block in self.blocks():
                yield block
                shown.update(block.steps)

    def _shown_epsilon(self) -> Callable[[int], float] | None:
        """The progress line's ``epsilon(t)`` (None where no delta is known or ``z = 0``)."""
        delta = self.config.target_delta or current_delta()
        if delta is None or self.noise_multiplier == 0:
            return None
        return lambda t: self.epsilon_after(t, self.config.accountant, delta)

    def finish(self, state: DPSGDState) -> None:
        """After the last step: whether a sampled record gave a non-finite gradient is
        private, so it is told to the data holder only (:func:`jdp.verbosity.warn_private`)."""
        if int(state.num_nonfinite) > 0:
            warn_private(
                "train: the loss gave non-finite per-example gradients on some sampled records; "
                "they were dropped from their steps (clip weight zero). This message is derived "
                "from the private data and is not covered by the ledger.",
                RuntimeWarning,
                stacklevel=3,
            )


def run_ledger(
    config: DPSGDConfig,
    noise_multiplier: float,
    dataset_size: int,
    *,
    noise_cut: float,
    method: str | None,
    label: str = "dp-sgd",
    note: str = "",
) -> PrivacyLedger:
    """The one ledger entry of a DP-SGD run of ``config`` (its :meth:`DPSGDConfig.event`,
    under its relation), noted with its plan: what :meth:`Run.ledger` and a custom loop's
    :meth:`jdp.dpsgd.loop.Accountant.ledger` record. ``method``: the clipping path, where
    known; ``note``: appended to the plan's."""
    c = config
    text = (
        f"z={noise_multiplier:.6g}, q={c.sampling_prob:.6g}, steps={c.num_steps}, "
        f"sampling={c.sampling.name}"
    )
    text += "" if method is None else f", method={method}"
    text += f", {note}" if note else ""
    relation = c.neighboring_relation
    event = c.event(noise_multiplier, dataset_size, noise_cut=noise_cut)
    return PrivacyLedger(neighboring_relation=relation).record(
        label, event, neighboring_relation=relation, note=text
    )


def start(
    key: jax.Array,
    loss_fn: LossFn,
    params: Any,
    optimizer: optax.GradientTransformation,
    data: Any,
    config: DPSGDConfig,
    performance: Performance | None = None,
    *,
    model_state: Any = None,
) -> Run:
    """Plan a DP-SGD run on ``data`` (see the module docstring).

    Args:
        key: PRNG key, split once into the batch-selection, noise, per-example and
            clip-histogram streams (never reused).
        loss_fn: loss for ONE example (see :mod:`jdp.dpsgd.clipping`); with a model state
            it takes it as a fourth argument ``loss_fn(params, example, key, model_state)``.
        params: the initial parameters (their shapes set the sampler's cut).
        optimizer: any optax optimiser; the DP aggregation is chained in front of it.
        data: pytree of arrays with a shared leading axis of ``n`` records.
        config: the privacy parameters (a noise multiplier or a target).
        performance: compute flags (:class:`Performance`; default: automatic clipping path).
        model_state: the initial public model state, if the loss takes one (for the path
            choice, which traces the loss on a zero record).
    """
    if not isinstance(config, DPSGDConfig):
        raise TypeError(f"expected config to be a DPSGDConfig, got {type(config).__name__}")
    performance = Performance() if performance is None else performance
    host = jax.tree_util.tree_map(np.asarray, data)
    n = check_batch(host)
    cut = noise_cut(params)
    z = config.require_noise().calibrated_noise_multiplier(n, cut)
    padded = config.sampling.padded_size(
        n,
        config.sampling_prob,
        multiple_of=performance.chunk_multiple,
        chunk_size=performance.chunk_size,
    )
    sample_key, noise_key, example_key, clip_key = split(key, 4)
    chain = optax.chain(
        dp_aggregate(
            noise_key,
            noise_multiplier=z,
            expected_batch_size=config.expected_batch_size,
            secure_noise=config.secure_noise,
        ),
        optimizer,
    )
    # the path is chosen on a zero record of the public shape, never on a private one
    example = jax.tree_util.tree_map(lambda x: np.zeros((1, *x.shape[1:]), x.dtype), host)
    path = performance.clipping
    resolved = choose_method(loss_fn, params, example, method=path.name, model_state=model_state)
    sgd = dp_sgd(
        StepKeys(example_key, clip_key),
        loss_fn,
        chain,
        l2_clip_norm=config.l2_clip_norm,
        method=resolved,
        microbatch_size=path.microbatch_size,
        mesh=performance.mesh,
    )
    return Run(
        config=config,
        noise_multiplier=z,
        clipping=resolved,
        noise_cut=cut,
        # padding slots gather row 0 (masked); with no rows at all, row 0 of the zero record
        rows=host if n else example,
        dataset_size=n,
        padded_size=padded,
        performance=performance,
        sample_key=sample_key,
        sgd=sgd,
    )
