"""A DP-SGD training loop: calibrate, sample, step, account (one ledger entry).

Usage (a loss written for ONE example, see :mod:`jdp.dpsgd.clipping`)::

    def loss_fn(params, example, key):            # or -> (loss, aux) with has_aux=True
        return jnp.sum((model.apply(params, example["x"]) - example["y"]) ** 2)

    config = DPSGDConfig(l2_clip_norm=1.0, sampling_prob=0.01, expected_batch_size=200,
                         epochs=5, target_epsilon=1.0, target_delta=1e-5)
    result = train(key, loss_fn, params, optax.adam(1e-3), data, config)
    result.params, result.ledger      # trained parameters, PrivacyLedger with one "dp-sgd" entry

The privacy parameters are :class:`DPSGDConfig` (clip rule, ``q``, the declared normaliser,
run length, noise or target, batch selection, accountant, secure noise); :func:`train`'s
keywords are the rest: the loss's form (``has_aux``, model state) and performance flags
(clipping path, micro-batch, chunk size, mesh, progress), which change compute, never the
output distribution or the ledger.

``data`` is a pytree of arrays whose leaves share the leading (record) axis. The update is
normalised by ``expected_batch_size``, a public constant the caller declares (typically
``q`` times a declared public dataset size); it is never computed from ``len(data)``.

Models with state that is *not* computed from private data (an RBM's persistent Gibbs
chains) pass ``model_state=`` and ``state_update_fn(key, params, model_state) -> model_state``;
the loss then takes it as a fourth argument ``loss_fn(params, example, key, model_state)``.
The update sees only parameters and a key, never data, so it is post-processing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np
import optax
from jax.sharding import Mesh
from tqdm.auto import tqdm

from accounting.compose import BEST, compute_epsilon
from accounting.events import DpEvent, NeighboringRelation, NonPrivateDpEvent
from accounting.ledger import PrivacyLedger
from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)
from jdp.dpsgd import batch_selection as smp
from jdp.dpsgd.clip_schedules import AdaptiveClip, adaptive_clip_event
from jdp.dpsgd.clipping import LossFn, Method, check_batch
from jdp.dpsgd.noise import dp_aggregate, noise_cut
from jdp.dpsgd.step import ClipRule, StepKeys, check_clip_rule, choose_method, dp_sgd
from jdp.mechanisms.tape import public, released
from jdp.random import numpy_rng
from jdp.verbosity import warn_private

#: The accountant of the progress bar's running figure: fast, and an upper bound on the
#: ledger's (the minimum over the rigorous accountants, RDP among them).
_RUNNING_ACCOUNTANT = "rdp"


class TrainResult(NamedTuple):
    """What :func:`train` returns.

    Attributes:
        params: trained parameters.
        ledger: a :class:`PrivacyLedger` with one ``"dp-sgd"`` entry (plus ``ledger`` passed in).
        model_state: the final non-private model state (``None`` when not used).
        noise_multiplier: the (calibrated) gradient noise multiplier.
        steps: the number of logical DP-SGD steps taken.
    """

    params: Any
    ledger: PrivacyLedger
    model_state: Any
    noise_multiplier: float
    steps: int


def planned_steps(*, steps: int | None, epochs: float | None, sampling_prob: float) -> int:
    """The planned number of DP-SGD steps, fixed before any data is read: ``steps``, or
    ``ceil(epochs / q)`` (at least 1). Exactly one of ``steps`` and ``epochs`` is given.

    Every config with a DP-SGD run length (:class:`DPSGDConfig`, the methods' configs) goes
    through this one rule, so its validation and its count are the ones accounted.
    """
    q = check_probability("sampling_prob", sampling_prob)
    if (steps is None) == (epochs is None):
        raise ValueError("expected exactly one of steps or epochs (set the other to null)")
    if steps is not None:
        return check_count("steps", steps, minimum=1)
    return max(1, math.ceil(check_positive("epochs", epochs) / q))


@dataclass(frozen=True, kw_only=True)
class DPSGDConfig:
    """The privacy parameters of one DP-SGD run (performance flags are :func:`train`'s).

    Exactly one of ``steps``/``epochs`` (``epochs`` means ``steps = ceil(epochs / q)``) and
    one of ``noise_multiplier``/``target_epsilon``.

    Attributes:
        l2_clip_norm: global bound ``C``, a pytree of per-leaf bounds, a schedule
            ``step -> bound`` (e.g. :func:`jdp.dpsgd.clip_schedules.clipping_decay`), or a
            :class:`jdp.dpsgd.clip_schedules.AdaptiveClip` (DPGM's noisy-histogram bound, one
            extra Gaussian mechanism per step, accounted; needs ``noise_multiplier``).
        sampling_prob: ``q``.
        expected_batch_size: the public constant ``B̄`` the noisy sum is divided by: ``q N``
            for a declared public dataset size ``N``, or the fixed batch size ``L`` with
            fixed-size sampling. A step-size scale only (any positive constant is private);
            it must not be computed from the private data.
        steps, epochs: run length (exactly one).
        noise_multiplier: ``z`` = noise std / ``C`` (units of
            :func:`accounting.builders.dpsgd_event`), or
        target_epsilon, target_delta: a target to calibrate ``z`` for
            (:func:`accounting.calibrate.calibrate_noise_multiplier`).
        sampling: the batch selection: a :class:`jdp.dpsgd.batch_selection.BatchSelection` or
            its name (``"poisson"``, ``"without_replacement"``: batches of ``round(q n)``);
            stored as the strategy object.
        accountant: the accountant that calibrates ``z`` for a target (default: the
            ledger's own rule, :data:`accounting.compose.BEST`).
        secure_noise: the floating-point mitigation of
            :func:`jdp.dpsgd.noise.secure_gaussian_sum` (noise from 24-bit integers, noisy
            sum rounded to a power-of-two grid near ``z C / 256``); off by default, like the
            papers reimplemented.
    """

    l2_clip_norm: ClipRule
    sampling_prob: float
    expected_batch_size: float
    steps: int | None = None
    epochs: float | None = None
    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    target_delta: float | None = None
    sampling: smp.BatchSelection | smp.Sampling = "poisson"
    accountant: str = BEST
    secure_noise: bool = False

    def __post_init__(self) -> None:
        # the strategy object, whether given by name or as itself (frozen: set once, here)
        object.__setattr__(self, "sampling", smp.as_batch_selection(self.sampling))
        if isinstance(self.l2_clip_norm, AdaptiveClip) and (
            self.noise_multiplier is None or self.sampling != smp.PoissonSampling()
        ):
            raise ValueError(
                "expected noise_multiplier (not target_epsilon) and sampling='poisson' with "
                "AdaptiveClip; its two-mechanism step is calibrated by hand"
            )
        check_clip_rule(self.l2_clip_norm)
        check_positive("expected_batch_size", self.expected_batch_size)
        planned_steps(steps=self.steps, epochs=self.epochs, sampling_prob=self.sampling_prob)
        if (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise ValueError("expected exactly one of noise_multiplier or target_epsilon")
        if self.noise_multiplier is not None:
            check_nonnegative("noise_multiplier", self.noise_multiplier)
        else:
            check_positive("target_epsilon", self.target_epsilon)
            if self.target_delta is None:
                raise ValueError("expected target_delta with target_epsilon")
        if self.target_delta is not None:
            check_open_unit("target_delta", self.target_delta)

    @property
    def num_steps(self) -> int:
        """:func:`planned_steps` of this config."""
        return planned_steps(steps=self.steps, epochs=self.epochs, sampling_prob=self.sampling_prob)

    def calibrated_noise_multiplier(self, dataset_size: int, noise_cut: float = 0.0) -> float:
        """``noise_multiplier``, or the smallest one meeting (target_epsilon, target_delta)
        (both in units of noise std / ``C``, as :func:`accounting.builders.dpsgd_event` takes)
        with the sampler's ``noise_cut`` per step (:func:`jdp.dpsgd.noise.noise_cut`)."""
        if self.noise_multiplier is not None:
            return float(self.noise_multiplier)
        from accounting.calibrate import calibrate_noise_multiplier

        return float(
            calibrate_noise_multiplier(
                target_epsilon=self.target_epsilon,
                target_delta=self.target_delta,
                sampling_prob=self.sampling_prob,
                steps=self.num_steps,
                sampling=self.sampling.name,
                dataset_size=dataset_size,
                accountant=self.accountant,
                noise_cut=noise_cut,
            )
        )

    @property
    def neighboring_relation(self) -> NeighboringRelation:
        """The batch selection's relation: add/remove-one for Poisson sampling, replace-one
        for fixed-size batches."""
        return self.sampling.neighboring_relation

    def epsilon_after(
        self,
        steps: int,
        noise_multiplier: float,
        dataset_size: int,
        accountant: str = BEST,
        *,
        noise_cut: float = 0.0,
    ) -> float:
        """The epsilon at ``target_delta`` spent by the first ``steps`` steps of this run
        (what the progress bar shows; the ledger holds the whole run's event). By default the
        ledger's own rule (:data:`accounting.compose.BEST`), so after the last step it is the
        epsilon the run's ledger entry reports."""
        partial = dataclasses.replace(self, steps=steps, epochs=None)
        return compute_epsilon(
            partial.event(noise_multiplier, dataset_size, noise_cut=noise_cut),
            self.target_delta,
            accountant=accountant,
            neighboring_relation=self.neighboring_relation,
        )

    def event(
        self, noise_multiplier: float, dataset_size: int, *, noise_cut: float = 0.0
    ) -> DpEvent:
        """The accounted event of the whole run (``NonPrivateDpEvent`` when ``z = 0``).

        ``noise_multiplier`` is ``z`` = noise std / ``C``; the batch selection's event
        (:func:`accounting.builders.dpsgd_event`) accounts for the clipped sum's sensitivity
        under its relation (``C`` under add/remove, ``2C`` under replace-one). ``noise_cut``
        is the sampler's cut per step on the model's parameters
        (:func:`jdp.dpsgd.noise.noise_cut` of their shapes, what :func:`train` records; a
        method that plans a run before it has parameters passes ``jax.eval_shape`` of its
        initialiser); an :class:`AdaptiveClip` adds its histogram's."""
        if noise_multiplier == 0:
            return NonPrivateDpEvent()
        if isinstance(self.l2_clip_norm, AdaptiveClip):
            return adaptive_clip_event(
                self.l2_clip_norm,
                noise_multiplier,
                self.sampling_prob,
                self.num_steps,
                noise_cut=noise_cut,
            )
        return self.sampling.event(
            noise_multiplier, self.sampling_prob, self.num_steps, dataset_size, noise_cut=noise_cut
        )


def take(data: Any, indices: np.ndarray) -> Any:
    """Rows ``indices`` of every leaf of a host-side data pytree."""
    return jax.tree_util.tree_map(lambda x: x[indices], data)


def _chunk_multiple(microbatch_size: int | None, mesh: Mesh | None) -> int:
    """What every padded chunk length must be a multiple of: the micro-batch and device count."""
    m = 1 if microbatch_size is None else check_count("microbatch_size", microbatch_size, minimum=1)
    return m if mesh is None else math.lcm(m, mesh.size)


def _warn_nonfinite(num_nonfinite: jax.Array) -> None:
    """Whether a record gave a non-finite gradient is private: the data holder's only."""
    if int(num_nonfinite) > 0:
        warn_private(
            "train: the loss gave non-finite per-example gradients on some sampled records; "
            "they were dropped from their steps (clip weight zero). This message is derived "
            "from the private data and is not covered by the ledger.",
            RuntimeWarning,
            stacklevel=3,
        )


def _run_fingerprint(
    key: jax.Array,
    loss_fn: LossFn,
    params: Any,
    optimizer: Any,
    data: Any,
    config: Any,
    **flags: Any,
) -> Any:
    """A run's public fingerprint (:mod:`jdp.mechanisms.tape`): the key, the loss, the initial
    parameters, the optimiser, the config, every flag but the progress display, and the
    shape of one record (the leading axis, the private row count, is not public)."""
    del flags["progress"], flags["on_step"]
    records = jax.tree_util.tree_map(lambda x: (np.shape(x)[1:], np.asarray(x).dtype.str), data)
    key_data = np.asarray(jax.random.key_data(key))
    return public((key_data, loss_fn, params, optimizer, config, records, flags))


@released(_run_fingerprint)
def train(
    key: jax.Array,
    loss_fn: LossFn,
    params: Any,
    optimizer: optax.GradientTransformation,
    data: Any,
    config: DPSGDConfig,
    *,
    has_aux: bool = False,
    model_state: Any = None,
    state_update_fn: Callable | None = None,
    method: Method = "auto",
    microbatch_size: int | None = None,
    overflow: smp.OverflowPolicy = "accumulate",
    chunk_size: int | None = None,
    mesh: Mesh | None = None,
    ledger: PrivacyLedger | None = None,
    label: str = "dp-sgd",
    progress: bool = True,
    on_step: Callable[[int, Any, Any], None] | None = None,
) -> TrainResult:
    """Train ``params`` with DP-SGD and return them with the run's ledger entry.

    Args:
        key: PRNG key, split once into the batch-selection, noise, per-example, model-state
            and clip-histogram streams (never reused).
        loss_fn: loss for ONE example (see :mod:`jdp.dpsgd.clipping`).
        params: initial parameters (a pytree).
        optimizer: any optax optimiser; DP aggregation is chained in front of it.
        data: pytree of arrays with a shared leading axis of ``n`` records.
        config: the privacy parameters (:class:`DPSGDConfig`).
        has_aux: the loss returns ``(loss, aux)``; aux is computed but not returned (it is
            derived from private data).
        model_state, state_update_fn: non-private model state (see module docstring).
        method: ``"auto"`` (ghost clipping where it is exact), ``"general"``, ``"ghost"``.
        microbatch_size: per-example gradients held at once on the general path.
        overflow: Poisson overflow policy (:mod:`jdp.dpsgd.batch_selection`).
        chunk_size: cap on the padded chunk length (Poisson only). A logical batch larger
            than it is processed as several chunks whose clipped sums are accumulated before
            ONE noise draw (gradient accumulation: logical batches larger than memory).
        mesh: a 1-D device mesh (:func:`jdp.dpsgd.parallel.data_mesh`) to shard each batch over;
            the noise is still drawn once per step.
        ledger: an existing ledger to extend.
        label: the ledger label.
        progress: show a tqdm bar with the running epsilon (no data-derived values).
        on_step: ``on_step(t, params, model_state)`` after step ``t = 1 .. steps`` on the
            host (e.g. per-epoch evaluation curves). DP-SGD's analysis covers releasing
            every iterate, so what it sees is already accounted; it must not stop or steer
            the run (the run length is fixed by the plan).

    Returns:
        :class:`TrainResult` ``(params, ledger, model_state, noise_multiplier, steps)``.

    Warns:
        RuntimeWarning: when some sampled example had a non-finite gradient (dropped from
            its step with weight 0, see :mod:`jdp.dpsgd.clipping`). It is derived from the
            private data and not covered by the ledger, so it is shown only under
            :func:`jdp.verbosity.show_private_details` (:func:`jdp.verbosity.warn_private`).

    Privacy:
        The batch selection's relation (add/remove-one for Poisson, replace-one for fixed
        size). Each step is the Gaussian mechanism with std ``z C_t`` on a clipped sum of
        sensitivity ``C_t``, subsampled; the ledger records the selection's
        ``dpsgd_event(z, q, T, sampling=...)`` (:meth:`DPSGDConfig.event`). A clip schedule
        changes ``C_t`` only, never ``z``, so the cost is unchanged. Dividing by the declared
        ``expected_batch_size`` is post-processing.
    """
    if not isinstance(config, DPSGDConfig):
        raise TypeError(f"expected config to be a DPSGDConfig, got {type(config).__name__}")
    host_data = jax.tree_util.tree_map(np.asarray, data)
    n = check_batch(host_data)
    cut = noise_cut(params)
    z = config.calibrated_noise_multiplier(n, cut)
    selection, q, num_steps = config.sampling, config.sampling_prob, config.num_steps
    padded = selection.padded_size(
        n, q, multiple_of=_chunk_multiple(microbatch_size, mesh), chunk_size=chunk_size
    )
    sample_key, noise_key, example_key, state_key, clip_key = jax.random.split(key, 5)
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
    example = jax.tree_util.tree_map(lambda x: np.zeros((1, *x.shape[1:]), x.dtype), host_data)
    # padding slots gather row 0 (masked); with no rows at all, row 0 of that zero record
    rows = host_data if n else example
    resolved = choose_method(
        loss_fn, params, example, has_aux=has_aux, method=method, model_state=model_state
    )
    sgd = dp_sgd(
        StepKeys(example_key, state_key, clip_key),
        loss_fn,
        chain,
        l2_clip_norm=config.l2_clip_norm,
        has_aux=has_aux,
        method=resolved,
        microbatch_size=microbatch_size,
        mesh=mesh,
        state_update_fn=state_update_fn,
    )
    state = sgd.init(params, model_state)
    batches = selection.batches(
        numpy_rng(sample_key),
        n,
        sampling_prob=q,
        steps=num_steps,
        padded_size=padded,
        overflow=overflow,
    )
    bar = tqdm(batches, total=num_steps, disable=not progress, desc=label)
    every = max(1, num_steps // 20)
    for t, chunks in enumerate(bar, start=1):
        state = sgd.step(state, [(take(rows, c.indices), c.mask) for c in chunks])
        if on_step is not None:
            on_step(t, state.params, state.model_state)
        if progress and config.target_delta is not None and (t % every == 0 or t == num_steps):
            # running: RDP (fast, an upper bound); at the end: the ledger's figure
            if t == num_steps:
                shown = f"eps={config.epsilon_after(t, z, n, noise_cut=cut):.3g}"
            else:
                running = config.epsilon_after(t, z, n, _RUNNING_ACCOUNTANT, noise_cut=cut)
                shown = f"eps<={running:.3g}"
            bar.set_postfix_str(shown, refresh=False)
    _warn_nonfinite(state.num_nonfinite)

    base = (
        PrivacyLedger(neighboring_relation=config.neighboring_relation)
        if ledger is None
        else ledger
    )
    note = f"z={z:.6g}, q={q:.6g}, steps={num_steps}, sampling={selection.name}, method={resolved}"
    out_ledger = base.record(
        label,
        config.event(z, n, noise_cut=cut),
        neighboring_relation=config.neighboring_relation,
        note=note,
    )
    return TrainResult(state.params, out_ledger, state.model_state, z, num_steps)
