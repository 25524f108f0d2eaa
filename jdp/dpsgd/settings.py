"""DP-SGD's settings: the privacy parameters (:class:`DPSGDConfig`) apart from the performance
flags (:class:`Performance`), as DESIGN section 3 asks.

:class:`DPSGDConfig` is everything the ledger reads: the clip rule, the sampling rate and
scheme, the declared normaliser, the run length, the noise (a multiplier or a target) and the
accountant. A method keeps one as a *template* in its config (``P3GMConfig.dpsgd``) with the
noise left unset: the method calibrates it jointly with its other phases and fills it in
(:meth:`DPSGDConfig.with_noise`). :class:`Performance` is everything that changes compute
only: the clipping path (an object: :class:`AutoClipping`, :class:`GeneralClipping`,
:class:`GhostClipping`, :class:`GhostPenaltyClipping`), the padded chunk cap, the overflow
policy and the device mesh. Neither changes the other.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from jax.sharding import Mesh

from accounting.compose import BEST, compute_epsilon
from accounting.events import DpEvent, NeighboringRelation, NonPrivateDpEvent
from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)
from jdp.dpsgd import batch_selection as smp
from jdp.dpsgd.clip_schedules import AdaptiveClip, adaptive_clip_event
from jdp.dpsgd.step import ClipRule, check_clip_rule

__all__ = [
    "AutoClipping",
    "ClippingPath",
    "DPSGDConfig",
    "GeneralClipping",
    "GhostClipping",
    "GhostPenaltyClipping",
    "Performance",
    "check_template",
    "clipping_path",
    "planned_steps",
]


#: ``DPSGDConfig.sampling_prob``'s value that :meth:`DPSGDConfig.for_rows` resolves.
AUTO_RATE = "auto"


def planned_steps(*, steps: int | None, epochs: float | None, sampling_prob: float) -> int:
    """The planned number of DP-SGD steps, fixed before any data is read: ``steps``, or
    ``ceil(epochs / q)`` (at least 1). Exactly one of ``steps`` and ``epochs`` is given.

    Every config with a DP-SGD run length goes through this one rule, so its validation and
    its count are the ones accounted.
    """
    q = check_probability("sampling_prob", sampling_prob)
    if (steps is None) == (epochs is None):
        raise ValueError("expected exactly one of steps or epochs (set the other to null)")
    if steps is not None:
        return check_count("steps", steps, minimum=1)
    return max(1, math.ceil(check_positive("epochs", epochs) / q))


@dataclass(frozen=True, kw_only=True)
class DPSGDConfig:
    """The privacy parameters of one DP-SGD run.

    Exactly one of ``steps``/``epochs`` (``epochs`` means ``steps = ceil(epochs / q)``) and at
    most one of ``noise_multiplier``/``target_epsilon``; a run needs one of them
    (:meth:`require_noise`), a method's template leaves both unset for its own calibration.

    Attributes:
        l2_clip_norm: global bound ``C``, a pytree of per-leaf bounds, a schedule
            ``step -> bound`` (e.g. :func:`jdp.dpsgd.clip_schedules.clipping_decay`), or a
            :class:`jdp.dpsgd.clip_schedules.AdaptiveClip` (DPGM's noisy-histogram bound, one
            extra Gaussian mechanism per step, accounted; needs ``noise_multiplier``).
        sampling_prob: ``q``, or ``"auto"``: ``min(1, B̄ / N)`` for the declared or released
            row count ``N`` (:meth:`for_rows`, which a method calls from the public shape
            before it plans; a run refuses an unresolved ``"auto"``), so the expected batch
            is ``B̄`` on any table rather than the paper's on the paper's table.
        expected_batch_size: the public constant ``B̄`` the noisy sum is divided by: ``q N``
            for a declared public dataset size ``N``, or the fixed batch size ``L`` with
            fixed-size sampling. A step-size scale only; it must not be computed from the
            private data.
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
            :func:`jdp.dpsgd.noise.secure_gaussian_sum`; off by default, like the papers.
    """

    l2_clip_norm: ClipRule = 1.0
    sampling_prob: float | Literal["auto"]
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
            self.target_epsilon is not None or self.sampling != smp.PoissonSampling()
        ):
            raise ValueError(
                "expected noise_multiplier (not target_epsilon) and sampling='poisson' with "
                "AdaptiveClip; its two-mechanism step is calibrated by hand"
            )
        check_clip_rule(self.l2_clip_norm)
        check_positive("expected_batch_size", self.expected_batch_size)
        if self.sampling_prob != AUTO_RATE:  # "auto" is checked by for_rows when resolved
            planned_steps(steps=self.steps, epochs=self.epochs, sampling_prob=self.sampling_prob)
        elif (self.steps is None) == (self.epochs is None):
            raise ValueError("expected exactly one of steps or epochs (set the other to null)")
        if self.noise_multiplier is not None and self.target_epsilon is not None:
            raise ValueError("expected at most one of noise_multiplier and target_epsilon")
        if self.noise_multiplier is not None:
            check_nonnegative("noise_multiplier", self.noise_multiplier)
        if self.target_epsilon is not None:
            check_positive("target_epsilon", self.target_epsilon)
            if self.target_delta is None:
                raise ValueError("expected target_delta with target_epsilon")
        if self.target_delta is not None:
            check_open_unit("target_delta", self.target_delta)
        if not isinstance(self.secure_noise, bool):
            raise TypeError(f"expected secure_noise to be a bool, got {self.secure_noise!r}")

    def require_noise(self) -> DPSGDConfig:
        """This config, checked to say its noise (a run needs a multiplier or a target)."""
        if self.noise_multiplier is None and self.target_epsilon is None:
            raise ValueError("expected exactly one of noise_multiplier or target_epsilon")
        return self

    def with_noise(self, noise_multiplier: float) -> DPSGDConfig:
        """This template with its noise multiplier set (the target, if any, dropped)."""
        return dataclasses.replace(
            self, noise_multiplier=noise_multiplier, target_epsilon=None, target_delta=None
        )

    def without_noise(self) -> DPSGDConfig:
        """This config as a template (no noise fixed: a method calibrates it)."""
        return dataclasses.replace(
            self, noise_multiplier=None, target_epsilon=None, target_delta=None
        )

    def for_rows(self, rows: float) -> DPSGDConfig:
        """This config with ``sampling_prob="auto"`` resolved to ``min(1, B̄ / rows)`` for a
        public (declared or released) row count ``rows``; any other config unchanged. A
        function of public values only."""
        if self.sampling_prob != AUTO_RATE:
            return self
        q = min(1.0, self.expected_batch_size / check_positive("rows", rows))
        return dataclasses.replace(self, sampling_prob=q)

    @property
    def num_steps(self) -> int:
        """:func:`planned_steps` of this config."""
        if self.sampling_prob == AUTO_RATE:
            raise ValueError(
                "sampling_prob='auto' is resolved from a public row count before a run "
                "(DPSGDConfig.for_rows); set a rate (e.g. --set dpsgd.sampling_prob=0.01) or "
                "fit through the table adapter, which resolves it"
            )
        return planned_steps(steps=self.steps, epochs=self.epochs, sampling_prob=self.sampling_prob)

    @property
    def neighboring_relation(self) -> NeighboringRelation:
        """The batch selection's relation: add/remove-one for Poisson sampling, replace-one
        for fixed-size batches."""
        return self.sampling.neighboring_relation

    def calibrated_noise_multiplier(
        self, dataset_size: int | None, noise_cut: float = 0.0, prior: DpEvent | None = None
    ) -> float:
        """``noise_multiplier``, or the smallest one meeting (target_epsilon, target_delta)
        (both in units of noise std / ``C``, as :func:`accounting.builders.dpsgd_event` takes)
        with the sampler's ``noise_cut`` per step (:func:`jdp.dpsgd.noise.noise_cut`), after
        ``prior`` (what was spent before the run, :attr:`accounting.PrivacyBudget.prior`)."""
        self.require_noise()
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
                prior=prior,
            )
        )

    def first_steps(self, steps: int) -> DPSGDConfig:
        """This run cut to its first ``steps`` steps (``steps`` given, ``epochs`` dropped): the
        config whose :meth:`event` is what those steps spent (:meth:`epsilon_after`, and the
        ledger of a custom loop stopped early, :class:`jdp.dpsgd.loop.Accountant`)."""
        return dataclasses.replace(self, steps=steps, epochs=None)

    def epsilon_after(
        self,
        steps: int,
        noise_multiplier: float,
        dataset_size: int,
        accountant: str = BEST,
        *,
        noise_cut: float = 0.0,
        delta: float | None = None,
    ) -> float:
        """The epsilon at ``delta`` (default ``target_delta``) spent by the first ``steps``
        steps of this run (what the progress line shows; the ledger holds the whole run's
        event). By default the ledger's own rule (:data:`accounting.compose.BEST`), so after
        the last step it is the epsilon the run's ledger entry reports."""
        partial = self.first_steps(steps)
        delta = self.target_delta if delta is None else delta
        if delta is None:
            raise ValueError("expected a delta: the config has no target_delta")
        return compute_epsilon(
            partial.event(noise_multiplier, dataset_size, noise_cut=noise_cut),
            delta,
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
        (:func:`jdp.dpsgd.noise.noise_cut` of their shapes, what :func:`jdp.dpsgd.train.train`
        records; a method that plans a run before it has parameters passes
        ``jax.eval_shape`` of its initialiser); an :class:`AdaptiveClip` adds its histogram's."""
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


# -- the performance flags ----------------------------------------------------------------------


@dataclass(frozen=True)
class AutoClipping:
    """An exact ghost path where its structural check accepts the loss (WGAN-GP's critic loss
    of a piecewise-linear Dense critic: :func:`jdp.dpsgd.ghost_penalty.penalty_support`; any
    other loss: :func:`jdp.dpsgd.ghost_clipping.ghost_support`), the general path otherwise
    (then with ``microbatch_size`` per-example gradients at a time: ``"auto"``, the default,
    :func:`jdp.dpsgd.clipping.auto_microbatch_size`; ``None`` the whole padded chunk)."""

    microbatch_size: int | Literal["auto"] | None = "auto"
    name: ClassVar[str] = "auto"

    def __post_init__(self) -> None:
        _check_microbatch(self.microbatch_size)


@dataclass(frozen=True)
class GeneralClipping:
    """Per-example gradients by ``vmap``, ``microbatch_size`` at a time: any loss.
    ``"auto"`` (the default) is :func:`jdp.dpsgd.clipping.auto_microbatch_size`, the largest
    power of two whose per-example gradients fit 4 MiB (a function of the parameter count and
    the padded chunk length only: public); ``None`` the whole padded chunk at once."""

    microbatch_size: int | Literal["auto"] | None = "auto"
    name: ClassVar[str] = "general"

    def __post_init__(self) -> None:
        _check_microbatch(self.microbatch_size)


@dataclass(frozen=True)
class GhostClipping:
    """Ghost clipping (exact per-example norms without per-example gradients); refused for a
    loss it is not exact for."""

    name: ClassVar[str] = "ghost"

    @property
    def microbatch_size(self) -> None:
        return None


@dataclass(frozen=True)
class GhostPenaltyClipping:
    """Exact per-example norms for WGAN-GP's critic loss (gradient penalty included) of a
    piecewise-linear Dense critic, without per-example gradients
    (:mod:`jdp.dpsgd.ghost_penalty`); refused for any other loss."""

    name: ClassVar[str] = "ghost_penalty"

    @property
    def microbatch_size(self) -> None:
        return None


ClippingPath = AutoClipping | GeneralClipping | GhostClipping | GhostPenaltyClipping
_PATHS: dict[str, type] = {
    "auto": AutoClipping,
    "general": GeneralClipping,
    "ghost": GhostClipping,
    "ghost_penalty": GhostPenaltyClipping,
}


def _check_microbatch(microbatch_size: int | str | None) -> None:
    if microbatch_size is not None and microbatch_size != "auto":
        if isinstance(microbatch_size, str):
            raise ValueError(
                f"expected microbatch_size to be a count, 'auto' or None, got {microbatch_size!r}"
            )
        check_count("microbatch_size", microbatch_size, minimum=1)


def clipping_path(value: ClippingPath | str) -> ClippingPath:
    """A clipping path object, or one named ``"auto"``, ``"general"``, ``"ghost"`` or
    ``"ghost_penalty"``."""
    if isinstance(value, AutoClipping | GeneralClipping | GhostClipping | GhostPenaltyClipping):
        return value
    if value not in _PATHS:
        raise ValueError(f"expected a clipping path in {tuple(_PATHS)}, got {value!r}")
    return _PATHS[value]()


OverflowPolicy = Literal["accumulate", "raise"]
#: What ``Performance(steps_per_dispatch="auto")`` resolves to (at most the run's steps).
AUTO_STEPS_PER_DISPATCH = 32


@dataclass(frozen=True, kw_only=True)
class Performance:
    """DP-SGD's performance flags: they change compute and memory, never the output
    distribution or the ledger.

    Attributes:
        clipping: the per-example clipping path (:class:`AutoClipping` by default; a name is
            accepted and stored as the object).
        chunk_size: cap on the padded chunk length (Poisson only): a logical batch larger
            than it is processed as several chunks whose clipped sums are added before ONE
            noise draw (gradient accumulation).
        overflow: ``"accumulate"`` (split an overflowing Poisson batch into more chunks) or
            ``"raise"``.
        mesh: a 1-D device mesh (:func:`jdp.dpsgd.parallel.data_mesh`) to shard each batch
            over; the noise is still drawn once per step. A runtime choice: a model saved
            with a mesh is refused (:mod:`jdp.synth.io`).
        steps_per_dispatch: logical steps per dispatch of :func:`jdp.dpsgd.train.train`'s
            loop: ``K > 1`` runs the compiled loop (:mod:`jdp.dpsgd.scan`: the records on the
            device, ``K`` steps scanned in one jitted call, the same batches and the same
            release as step by step), ``"auto"`` the run in the fewest blocks of at most
            :data:`AUTO_STEPS_PER_DISPATCH` steps, 1 (the default) the step-by-step loop: on
            CPU a step's time is the device's (the noise draw and the clipped sum) and the
            compiled loop measured no faster (``scripts/bench_scan_loop.py``); it removes
            the host's share of a step, which counts where steps are short (accelerators). A run with a mesh or a clip schedule steps one
            at a time (:attr:`jdp.dpsgd.run.Run.steps_per_dispatch`).
    """

    clipping: ClippingPath = AutoClipping()
    chunk_size: int | None = None
    overflow: OverflowPolicy = "accumulate"
    mesh: Mesh | None = None
    steps_per_dispatch: int | Literal["auto"] = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "clipping", clipping_path(self.clipping))
        if self.chunk_size is not None:
            check_count("chunk_size", self.chunk_size, minimum=1)
        if self.overflow not in ("accumulate", "raise"):
            raise ValueError(f"expected overflow in ('accumulate', 'raise'), got {self.overflow!r}")
        if self.mesh is not None and not isinstance(self.mesh, Mesh):
            raise TypeError(f"expected mesh to be a jax Mesh, got {type(self.mesh).__name__}")
        if self.steps_per_dispatch != "auto":
            if isinstance(self.steps_per_dispatch, str):
                raise ValueError(
                    "expected steps_per_dispatch to be a count or 'auto', got "
                    f"{self.steps_per_dispatch!r}"
                )
            count = check_count("steps_per_dispatch", self.steps_per_dispatch, minimum=1)
            object.__setattr__(self, "steps_per_dispatch", count)

    @property
    def chunk_multiple(self) -> int:
        """What every padded chunk length must be a multiple of: a fixed micro-batch size and
        the device count (an ``"auto"`` micro-batch pads the chunk itself)."""
        m = self.clipping.microbatch_size
        m = m if isinstance(m, int) else 1
        return m if self.mesh is None else math.lcm(m, self.mesh.size)


def check_template(
    dpsgd: object,
    performance: object = None,
    *,
    field: str = "dpsgd",
    calibrated_by: str,
    poisson_because: str,
) -> None:
    """A method's DP-SGD template and performance flags, the one check of every method config
    that holds them: ``dpsgd`` (named ``field`` in messages) is a :class:`DPSGDConfig` with no
    noise of its own (``calibrated_by`` sets it from the budget) and Poisson sampling (needed
    ``poisson_because``); ``performance``, when the config holds one, a :class:`Performance`."""
    if not isinstance(dpsgd, DPSGDConfig):
        raise TypeError(f"expected {field} to be a DPSGDConfig, got {type(dpsgd).__name__}")
    if dpsgd != dpsgd.without_noise():
        raise ValueError(
            f"expected {field} without noise_multiplier, target_epsilon or target_delta (a "
            f"template: {calibrated_by} calibrates its noise from the budget), got {dpsgd}"
        )
    if dpsgd.sampling != smp.PoissonSampling():
        raise ValueError(
            f"expected {field}.sampling='poisson' ({poisson_because}), got {dpsgd.sampling.name!r}"
        )
    if performance is not None and not isinstance(performance, Performance):
        raise TypeError(
            f"expected performance to be a Performance, got {type(performance).__name__}"
        )
