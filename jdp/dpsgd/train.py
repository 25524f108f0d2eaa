"""A DP-SGD training loop: calibrate, sample, clip, noise, update, account.

Usage (a loss written for ONE example, see :mod:`jdp.dpsgd.clipping`)::

    def loss_fn(params, example, key):            # or -> (loss, aux) with has_aux=True
        return jnp.sum((model.apply(params, example["x"]) - example["y"]) ** 2)

    result = train(key, loss_fn, params, optax.adam(1e-3), data,
                   l2_clip_norm=1.0, sampling_prob=0.01, expected_batch_size=200,
                   epochs=5, target_epsilon=1.0, target_delta=1e-5)
    result.params, result.ledger      # trained parameters, PrivacyLedger with one "dp-sgd" entry

``data`` is a pytree of arrays whose leaves share the leading (record) axis. The update is
normalised by ``expected_batch_size``, a public constant the caller declares (typically
``q`` times a declared public dataset size); it is never computed from ``len(data)``.

Models with state that is *not* computed from private data (an RBM's persistent Gibbs
chains) pass ``model_state=`` and ``state_update_fn(key, params, model_state) -> model_state``;
the loss then takes it as a fourth argument ``loss_fn(params, example, key, model_state)``.
The update sees only parameters and a key, never data, so it is post-processing.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh
from tqdm.auto import tqdm

from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)
from accounting.builders import dpsgd_event
from accounting.events import DpEvent, NeighboringRelation, NonPrivateDpEvent
from accounting.relations import dpsgd_neighboring_relation
from accounting.ledger import PrivacyLedger
from jdp.dpsgd import batch_selection as smp
from jdp.dpsgd.clip_schedules import AdaptiveClip, adaptive_clip_event, dpnorm
from jdp.dpsgd.clipping import (
    ClippedSum,
    LossFn,
    Method,
    add_clipped_sums,
    bind_model_state,
    check_batch,
    check_clip_norm,
    dp_aggregate,
    make_clipped_sum_fn,
)
from jdp.dpsgd.ghost_clipping import ghost_support
from jdp.dpsgd.parallel import sharded_clipped_sum
from jdp.random import numpy_rng

ClipSchedule = Callable[[int], Any]


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


@dataclass(frozen=True, kw_only=True)
class DPSGDConfig:
    """Privacy parameters of one DP-SGD run (performance flags live in :func:`train`'s kwargs).

    Exactly one of ``steps``/``epochs`` and one of ``noise_multiplier``/``target_epsilon``.
    ``epochs`` means ``steps = ceil(epochs / q)``.
    """

    l2_clip_norm: Any
    sampling_prob: float
    steps: int | None = None
    epochs: float | None = None
    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    target_delta: float | None = None
    sampling: smp.Sampling = "poisson"
    accountant: str = "rdp"

    def __post_init__(self) -> None:
        if isinstance(self.l2_clip_norm, AdaptiveClip):
            if self.noise_multiplier is None or self.sampling != "poisson":
                raise ValueError(
                    "expected noise_multiplier (not target_epsilon) and sampling='poisson' with "
                    "AdaptiveClip; its two-mechanism step is calibrated by hand"
                )
        elif not callable(self.l2_clip_norm):
            check_clip_norm(self.l2_clip_norm)
        check_probability("sampling_prob", self.sampling_prob)
        if (self.steps is None) == (self.epochs is None):
            raise ValueError("expected exactly one of steps or epochs")
        if self.steps is not None:
            check_count("steps", self.steps, minimum=1)
        else:
            check_positive("epochs", self.epochs)
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
        if self.sampling not in ("poisson", "without_replacement"):
            raise ValueError(
                f"expected sampling in ('poisson', 'without_replacement'), got {self.sampling!r}"
            )

    @property
    def num_steps(self) -> int:
        if self.steps is not None:
            return int(self.steps)
        return max(1, math.ceil(self.epochs / self.sampling_prob))

    def calibrated_noise_multiplier(self, dataset_size: int) -> float:
        """``noise_multiplier``, or the smallest one meeting (target_epsilon, target_delta)
        (both in units of noise std / ``C``, as :func:`accounting.builders.dpsgd_event` takes)."""
        if self.noise_multiplier is not None:
            return float(self.noise_multiplier)
        from accounting.calibrate import calibrate_noise_multiplier

        return float(
            calibrate_noise_multiplier(
                target_epsilon=self.target_epsilon,
                target_delta=self.target_delta,
                sampling_prob=self.sampling_prob,
                steps=self.num_steps,
                sampling=self.sampling,
                dataset_size=dataset_size,
                accountant=self.accountant,
            )
        )

    @property
    def neighboring_relation(self) -> NeighboringRelation:
        """Add/remove-one for Poisson sampling, replace-one for fixed-size batches
        (:func:`accounting.relations.dpsgd_neighboring_relation`)."""
        return dpsgd_neighboring_relation(self.sampling)

    def event(self, noise_multiplier: float, dataset_size: int) -> DpEvent:
        """The accounted event of the whole run (``NonPrivateDpEvent`` when ``z = 0``).

        ``noise_multiplier`` is ``z`` = noise std / ``C``;
        :func:`accounting.builders.dpsgd_event` accounts for the clipped sum's sensitivity under
        the relation (``C`` under add/remove, ``2C`` under replace-one)."""
        if noise_multiplier == 0:
            return NonPrivateDpEvent()
        if isinstance(self.l2_clip_norm, AdaptiveClip):
            return adaptive_clip_event(
                self.l2_clip_norm, noise_multiplier, self.sampling_prob, self.num_steps
            )
        return dpsgd_event(
            noise_multiplier,
            self.sampling_prob,
            self.num_steps,
            sampling=self.sampling,
            dataset_size=dataset_size if self.sampling == "without_replacement" else None,
        )


def take(data: Any, indices: np.ndarray) -> Any:
    """Rows ``indices`` of every leaf of a host-side data pytree."""
    return jax.tree_util.tree_map(lambda x: x[indices], data)


def clip_at(l2_clip_norm: Any, step: int) -> Any:
    """The clip bound at ``step``: a constant, or a schedule evaluated on the host."""
    return l2_clip_norm(step) if callable(l2_clip_norm) else l2_clip_norm


def train(
    key: jax.Array,
    loss_fn: LossFn,
    params: Any,
    optimizer: optax.GradientTransformation,
    data: Any,
    *,
    l2_clip_norm: float | Any | ClipSchedule | AdaptiveClip,
    sampling_prob: float,
    expected_batch_size: float,
    steps: int | None = None,
    epochs: float | None = None,
    noise_multiplier: float | None = None,
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    sampling: smp.Sampling = "poisson",
    accountant: str = "rdp",
    secure_noise: bool = False,
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
) -> TrainResult:
    """Train ``params`` with DP-SGD and return them with the run's ledger entry.

    Args:
        key: PRNG key (sampling, per-example keys, noise; split, never reused).
        loss_fn: loss for ONE example (see :mod:`jdp.dpsgd.clipping`).
        params: initial parameters (a pytree).
        optimizer: any optax optimiser; DP aggregation is chained in front of it.
        data: pytree of arrays with a shared leading axis of ``n`` records.
        l2_clip_norm: global bound ``C``, a pytree of per-leaf bounds, a schedule
            ``step -> bound`` (e.g. :func:`jdp.dpsgd.clip_schedules.clipping_decay`), or a
            :class:`jdp.dpsgd.clip_schedules.AdaptiveClip` (DPGM's noisy-histogram bound, one
            extra Gaussian mechanism per step, accounted; needs ``noise_multiplier``).
        sampling_prob: ``q``.
        expected_batch_size: the public constant ``B̄`` the noisy sum is divided by
            (required): ``q N`` for a declared public dataset size ``N``, or the fixed batch
            size ``L`` with ``"without_replacement"``. It is a step-size scale only (any
            positive constant is private); it must not be computed from the private data.
        steps, epochs: run length (exactly one).
        noise_multiplier, target_epsilon, target_delta: either ``z`` or a target to
            calibrate it for (:func:`accounting.calibrate.calibrate_noise_multiplier`).
        sampling: ``"poisson"`` or ``"without_replacement"`` (batch ``round(q n)``).
        secure_noise: the floating-point mitigation of :func:`jdp.dpsgd.clipping.secure_gaussian_sum`
            (noise from 24-bit integers, noisy sum rounded to a power-of-two grid near
            ``z C / 256``); default off, like the papers reimplemented.
        has_aux: the loss returns ``(loss, aux)``; aux is computed but not returned (it is
            derived from private data).
        model_state, state_update_fn: non-private model state (see module docstring).
        method: ``"auto"`` (ghost clipping where it is exact), ``"general"``, ``"ghost"``.
        microbatch_size: per-example gradients held at once on the general path.
        overflow: Poisson overflow policy (:mod:`jdp.dpsgd.batch_selection`).
        chunk_size: cap on the padded chunk length. A logical (Poisson) batch larger than it
            is processed as several chunks whose clipped sums are accumulated before ONE
            noise draw (gradient accumulation: logical batches larger than memory).
        mesh: a 1-D device mesh (:func:`jdp.dpsgd.parallel.data_mesh`) to shard each batch over;
            the noise is still drawn once per step.
        ledger: an existing ledger to extend.
        label: the ledger label.
        progress: show a tqdm bar (no data-derived values are displayed).

    Returns:
        :class:`TrainResult` ``(params, ledger, model_state, noise_multiplier, steps)``.

    Warns:
        RuntimeWarning: when some sampled example had a non-finite gradient (dropped from
            its step with weight 0, see :mod:`jdp.dpsgd.clipping`). The warning states no count,
            but it is derived from the private data and not covered by the ledger.

    Privacy:
        Add/remove-one neighbours (replace-one for ``without_replacement``). Each step is
        the Gaussian mechanism with std ``z C_t`` on a clipped sum of sensitivity ``C_t``,
        subsampled; the ledger records ``dpsgd_event(z, q, T, sampling=...)``. A clip
        schedule changes ``C_t`` only, never ``z``, so the cost is unchanged. Dividing by
        the declared ``expected_batch_size`` is post-processing.
    """
    config = DPSGDConfig(
        l2_clip_norm=l2_clip_norm,
        sampling_prob=sampling_prob,
        steps=steps,
        epochs=epochs,
        noise_multiplier=noise_multiplier,
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        sampling=sampling,
        accountant=accountant,
    )
    host_data = jax.tree_util.tree_map(np.asarray, data)
    n = check_batch(host_data)
    z = config.calibrated_noise_multiplier(n)
    num_steps = config.num_steps
    normaliser = check_positive("expected_batch_size", expected_batch_size)
    multiple = (
        1 if microbatch_size is None else check_count("microbatch_size", microbatch_size, minimum=1)
    )
    multiple = multiple if mesh is None else math.lcm(multiple, mesh.size)
    padded = (
        smp.padded_batch_size(n, sampling_prob, multiple_of=multiple)
        if sampling == "poisson"
        else None
    )
    if chunk_size is not None:
        if sampling != "poisson":
            raise ValueError("expected chunk_size only with sampling='poisson'")
        chunk = check_count("chunk_size", chunk_size, minimum=1)
        if chunk % multiple:
            raise ValueError(f"expected chunk_size to be a multiple of {multiple}, got {chunk}")
        padded = min(padded, chunk)

    sample_key, noise_key, step_key, state_key, hist_key = jax.random.split(key, 5)
    chain = optax.chain(
        dp_aggregate(
            noise_key,
            noise_multiplier=z,
            expected_batch_size=normaliser,
            secure_noise=secure_noise,
        ),
        optimizer,
    )
    opt_state = chain.init(params)
    example = take(host_data, np.zeros(1, dtype=np.int64))
    resolved = _resolve_method(method, loss_fn, params, example, has_aux, model_state)
    if mesh is None:
        sum_fn = make_clipped_sum_fn(
            loss_fn, has_aux=has_aux, microbatch_size=microbatch_size, method=resolved
        )
    else:
        sum_fn = jax.jit(
            sharded_clipped_sum(
                loss_fn, mesh, has_aux=has_aux, microbatch_size=microbatch_size, method=resolved
            )
        )
    apply_fn = jax.jit(_apply_update(chain))
    update_state = None if state_update_fn is None else jax.jit(state_update_fn)

    batches = smp.batches(
        numpy_rng(sample_key),
        n,
        sampling_prob=sampling_prob,
        steps=num_steps,
        sampling=sampling,
        padded_size=padded,
        overflow=overflow,
    )
    hist_fn = jax.jit(dpnorm, static_argnums=3)
    nonfinite = jnp.zeros((), jnp.int32)  # summed on the device: no per-step host sync
    for t, chunks in enumerate(tqdm(batches, total=num_steps, disable=not progress, desc=label)):
        t_key = jax.random.fold_in(step_key, t)
        parts = [
            (take(host_data, c.indices), c.mask, jax.random.fold_in(t_key, j))
            for j, c in enumerate(chunks)
        ]
        if isinstance(l2_clip_norm, AdaptiveClip):
            # DPGM Alg. 4: norms on the whole logical batch, noisy histogram, then clip to C_s.
            infos = [sum_fn(params, x, m, k, np.inf, model_state)[1] for x, m, k in parts]
            norms = jnp.concatenate([i.norms for i in infos])
            masks = jnp.concatenate([jnp.asarray(m) for _, m, _ in parts])
            clip = hist_fn(jax.random.fold_in(hist_key, t), norms, masks, l2_clip_norm)
        else:
            clip = clip_at(l2_clip_norm, t)
        total: ClippedSum | None = None
        for x, m, k in parts:
            part, info = sum_fn(params, x, m, k, clip, model_state)
            total = part if total is None else add_clipped_sums(total, part)
            nonfinite = nonfinite + info.num_nonfinite
        params, opt_state = apply_fn(params, opt_state, total)
        if update_state is not None:
            model_state = update_state(jax.random.fold_in(state_key, t), params, model_state)

    if int(nonfinite) > 0:
        warnings.warn(
            "train: the loss gave non-finite per-example gradients on some sampled records; "
            "they were dropped from their steps (clip weight zero). This message is derived "
            "from the private data and is not covered by the ledger.",
            RuntimeWarning,
            stacklevel=2,
        )
    base = (
        PrivacyLedger(neighboring_relation=config.neighboring_relation)
        if ledger is None
        else ledger
    )
    note = (
        f"z={z:.6g}, q={sampling_prob:.6g}, steps={num_steps}, sampling={sampling}, "
        f"method={resolved}"
    )
    out_ledger = base.record(
        label, config.event(z, n), neighboring_relation=config.neighboring_relation, note=note
    )
    return TrainResult(params, out_ledger, model_state, z, num_steps)


def _apply_update(chain: optax.GradientTransformation) -> Callable:
    def apply(params: Any, opt_state: Any, clipped: ClippedSum) -> tuple[Any, Any]:
        updates, opt_state = chain.update(clipped, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return apply


def _resolve_method(
    method: Method, loss_fn: LossFn, params: Any, example: Any, has_aux: bool, model_state: Any
) -> str:
    """``"general"`` as asked; ``"ghost"`` only where :func:`ghost_support` finds it exact
    (a wrong ghost norm would void the sensitivity bound), ``"auto"`` picks."""
    if method == "general":
        return method
    if method not in ("auto", "ghost"):
        raise ValueError(f"expected method in ('auto', 'general', 'ghost'), got {method!r}")
    reason = ghost_support(bind_model_state(loss_fn, model_state), params, example, has_aux=has_aux)
    if reason is not None and method == "ghost":
        raise ValueError(f"method='ghost' is not exact for this loss: {reason}")
    return "general" if reason is not None else "ghost"
