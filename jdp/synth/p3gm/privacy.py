"""P3GM's privacy: the events of its phases and their joint calibration (Theorem 4).

The ledger of a P3GM fit holds ``["dp-mean", "dp-pca", "dp-em" x T_e, "dp-sgd"]``.
:func:`calibrate_noise` chooses the phases' noise multipliers from ONE ``(epsilon, delta)``:
the shares ``split_i`` set the ratios between the phases' multipliers, then one common factor
on all of them is calibrated (:func:`accounting.calibrate.calibrate_shares`) so that the
composition of all events, as the ledger reports it, meets ``epsilon`` exactly
(``docs/privacy.md``, "P3GM composition"; P3GM Theorem 4, computed rather than assumed).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from jdp.mechanisms.noise import gaussian_event
from jdp.synth.p3gm.config import PHASES, P3GMConfig
from jdp.synth.p3gm.variants import Variant, get_variant


def single_phase_events(
    config: P3GMConfig, phase: str, noise_multiplier: float, *, noise_cut: float
) -> list[tuple[str, ev.DpEvent]]:
    """The labelled events one phase records at noise multiplier ``z``.

    They mirror what :func:`jdp.encoding.pca.dp_pca_gaussian` (``centre="dp"``: a DP mean,
    then the scatter release), :func:`jdp.encoding.em.dp_em` (three Gaussian releases per
    iteration) and :func:`jdp.dpsgd.train.train` record, each with its sampler's cut
    (``noise_cut``: DP-SGD's per step, :func:`jdp.synth.p3gm.phases.sgd_noise_cut`); the
    DP-SGD event is the template's own (:meth:`DPSGDConfig.event`, the rule the run's ledger
    uses). The tests pin a fitted ledger to these events.
    """
    z = noise_multiplier
    if phase == "pca":  # without a reduction (latent_dim=None) only the DP centre
        mean = [("dp-mean", gaussian_event(z))]
        return mean if config.latent_dim is None else [*mean, ("dp-pca", gaussian_event(z))]
    if phase == "em":
        return [("dp-em", ev.ComposedDpEvent([gaussian_event(z)] * 3))] * config.em_steps
    if phase == "sgd":  # Poisson sampling (P3GMConfig): the event does not read n
        return [("dp-sgd", config.dpsgd.event(z, dataset_size=None, noise_cut=noise_cut))]
    raise ValueError(f"expected phase in {PHASES}, got {phase!r}")


def phase_events(
    config: P3GMConfig, multipliers: Mapping[str, float], *, noise_cut: float
) -> list[tuple[str, ev.DpEvent]]:
    """All labelled events of a fit with these per-phase multipliers, in ledger order."""
    return [
        e
        for p in PHASES
        if p in multipliers
        for e in single_phase_events(config, p, multipliers[p], noise_cut=noise_cut)
    ]


def calibrate_noise(
    config: P3GMConfig, variant: Variant | str, budget: PrivacyBudget, *, noise_cut: float
) -> dict[str, float]:
    """Noise multipliers of the variant's phases for ONE ``(epsilon, delta)`` (Theorem 4).

    A function of public values only, so it is cached: refitting with the same config and
    budget skips the calibration (seconds under the PLD accountant).

    Phase ``i`` with share ``s_i`` (renormalised over the phases present:
    :meth:`Variant.phases`) sets the ratios and one common factor makes the composition of
    all phases ``epsilon``-DP at ``delta`` under the template's accountant
    ``config.dpsgd.accountant`` (default: the ledger's own rule), by
    :func:`accounting.calibrate.calibrate_shares`. ``noise_cut``: DP-SGD's
    sampler cut per step (:func:`jdp.synth.p3gm.phases.sgd_noise_cut`).
    """
    return dict(_calibrated(config, get_variant(variant), budget, noise_cut))


@functools.lru_cache(maxsize=64)
def _calibrated(
    config: P3GMConfig, variant: Variant, budget: PrivacyBudget, noise_cut: float
) -> tuple[tuple[str, float], ...]:
    from accounting.calibrate import calibrate_shares

    phases = variant.phases(config)

    def composed(z: Mapping[str, float]) -> ev.DpEvent:
        return ev.ComposedDpEvent([e for _, e in phase_events(config, z, noise_cut=noise_cut)])

    z = calibrate_shares(
        composed,
        {p: config.budget_split[PHASES.index(p)] for p in phases},
        target_epsilon=budget.epsilon,
        target_delta=budget.delta,
        accountant=config.dpsgd.accountant,
        prior=budget.prior,
    )
    return tuple(z.items())


def non_private_ledger(phases: tuple[str, ...]) -> PrivacyLedger:
    """PGM's ledger: one ``NonPrivateDpEvent`` per phase (infinite epsilon, by design)."""
    ledger = PrivacyLedger()
    for phase in phases:
        ledger = ledger.record(
            f"{phase} (non-private)", ev.NonPrivateDpEvent(), note="PGM: no noise, no clipping"
        )
    return ledger
