"""Event builders: the one copy of each multi-step mechanism's event.

A builder turns a mechanism's public parameters into the :mod:`accounting.events` event it
spends, so that the code that runs the mechanism, the calibration that sizes its noise and the
command line that reports its epsilon all account the same thing.
"""

from __future__ import annotations

from accounting import events as ev
from accounting.relations import dpsgd_sensitivity_factor
from accounting.validation import check_count, check_positive, check_probability


def dpsgd_event(
    noise_multiplier: float,
    sampling_prob: float,
    steps: int,
    *,
    sampling: str = "poisson",
    dataset_size: int | None = None,
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

    Returns:
      ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), steps)`` or
      ``SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(z / 2)),
      steps)``.
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_prob", sampling_prob)
    steps = check_count("steps", steps)
    gaussian = ev.GaussianDpEvent(z / dpsgd_sensitivity_factor(sampling))
    if sampling == "poisson":
        return ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(q, gaussian), steps)
    if dataset_size is None:
        raise ValueError("expected dataset_size for sampling='without_replacement', got None")
    n = check_count("dataset_size", dataset_size, minimum=1)
    m = round(q * n)
    if m < 1:
        raise ValueError(f"expected sampling_prob * dataset_size >= 1, got {q * n:g}")
    return ev.SelfComposedDpEvent(ev.SampledWithoutReplacementDpEvent(n, m, gaussian), steps)


__all__ = ["dpsgd_event"]
