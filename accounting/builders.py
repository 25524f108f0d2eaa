"""Event builders: the one copy of each multi-step mechanism's event.

A builder turns a mechanism's public parameters into the :mod:`accounting.events` event it
spends, so that the code that runs the mechanism, the calibration that sizes its noise and the
command line that reports its epsilon all account the same thing.
"""

from __future__ import annotations

from accounting import events as ev
from accounting.relations import dpsgd_sensitivity_factor
from accounting.validation import (
    check_count,
    check_nonnegative,
    check_positive,
    check_probability,
)


def dpsgd_event(
    noise_multiplier: float,
    sampling_prob: float,
    steps: int,
    *,
    sampling: str = "poisson",
    dataset_size: int | None = None,
    noise_cut: float = 0.0,
) -> ev.DpEvent:
    """The event of ``steps`` DP-SGD steps (Abadi et al. 2016, Alg. 1), to be accounted under
    :func:`accounting.relations.dpsgd_neighboring_relation` ``(sampling)``.

    Every caller (:func:`jdp.dpsgd.train.train`,
    :func:`accounting.calibrate.calibrate_noise_multiplier`, ``jdp account dpsgd``) builds
    its event here, so they agree.

    Args:
      noise_multiplier: ``z`` = noise std / clip norm ``C`` (as Opacus and
        ``jdp account --noise-multiplier`` mean it). The recorded Gaussian's multiplier is
        relative to the clipped sum's sensitivity under the relation (the events'
        convention): ``z / dpsgd_sensitivity_factor(sampling)``, i.e. ``z`` under Poisson and
        ``z / 2`` under fixed-size sampling (sensitivity ``2C`` under replace-one).
      sampling_prob: ``q`` = expected batch size / dataset size.
      steps: number of noisy gradient steps.
      sampling: ``"poisson"`` (each record joins each batch independently with probability
        ``q``) or ``"without_replacement"`` (fixed batches of ``round(q * dataset_size)``
        records).
      dataset_size: required for ``"without_replacement"``.
      noise_cut: the total variation between one step's noise draw and the ideal Gaussian
        (the noise sampler's cut, e.g. :func:`jdp.dpsgd.noise.noise_cut`); ``steps`` times it
        is recorded beside the steps as a :class:`~accounting.events.NoiseCutDpEvent`.

    Returns:
      ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), steps)`` or
      ``SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(z / 2)),
      steps)``; with a ``noise_cut``, composed with ``NoiseCutDpEvent(steps * noise_cut)``.
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_prob", sampling_prob)
    steps = check_count("steps", steps)
    gaussian = ev.GaussianDpEvent(z / dpsgd_sensitivity_factor(sampling))
    if sampling == "poisson":
        steps_event = ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(q, gaussian), steps)
    else:
        if dataset_size is None:
            raise ValueError("expected dataset_size for sampling='without_replacement', got None")
        n = check_count("dataset_size", dataset_size, minimum=1)
        m = round(q * n)
        if m < 1:
            raise ValueError(f"expected sampling_prob * dataset_size >= 1, got {q * n:g}")
        sampled = ev.SampledWithoutReplacementDpEvent(n, m, gaussian)
        steps_event = ev.SelfComposedDpEvent(sampled, steps)
    return with_noise_cut(steps_event, steps * check_nonnegative("noise_cut", noise_cut))


def with_noise_cut(event: ev.DpEvent, tail_mass: float) -> ev.DpEvent:
    """``event`` composed with ``NoiseCutDpEvent(tail_mass)``; ``event`` itself when the
    mass is 0 (an ideal sampler). The one way a release attaches its sampler's cut."""
    if check_nonnegative("tail_mass", tail_mass) == 0:
        return event
    return ev.ComposedDpEvent([event, ev.NoiseCutDpEvent(float(tail_mass))])


__all__ = ["dpsgd_event", "with_noise_cut"]
