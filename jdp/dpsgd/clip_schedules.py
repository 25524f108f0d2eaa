"""How the clip bound moves during training: dp-GAN's decay and DPGM's noisy-histogram choice.

* :func:`clipping_decay` (dp-GAN, Frigerio et al. 2019, Alg. 1 and Sec. 4.1): ``C`` is
  multiplied by ``decay`` every ``every`` steps. The noise std ``z C_t`` shrinks with it; the
  noise multiplier ``z`` and therefore the privacy cost do not change (the schedule is
  public, fixed before training).
* :class:`AdaptiveClip` / :func:`dpnorm` (DPGM, Chen et al. 2020, Alg. 3 "DPNorm" inside
  Alg. 4): on each Poisson batch, the per-example gradient norms are binned into ``w`` bins
  of ``(0, C_max]``; Gaussian noise is added to every count and ``C_s`` is the upper edge of
  the bin with the largest noisy count. The gradient is then clipped to ``C_s`` and noised
  with std ``z C_s``. A non-private quantile of the norms is deliberately not offered.

Privacy:
    Add/remove-one neighbours. The histogram changes in one count by at most 1 (records with
    norm above ``C_max`` or exactly 0 are in no bin), so its L2 sensitivity is 1 and noise
    std ``z_hist`` gives ``GaussianDpEvent(z_hist)``; ``C_s`` is post-processing of it. The
    gradient sum then has sensitivity ``C_s`` and noise ``z C_s``: ``GaussianDpEvent(z)``.
    Both read the SAME Poisson batch, so one step is
    ``PoissonSampledDpEvent(q, ComposedDpEvent([GaussianDpEvent(z_hist), GaussianDpEvent(z)]))``
    (DPGM Theorem 3 handles this shared sampling; :func:`adaptive_clip_event`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from accounting.builders import with_noise_cut
from accounting.events import (
    ComposedDpEvent,
    DpEvent,
    GaussianDpEvent,
    PoissonSampledDpEvent,
    SelfComposedDpEvent,
)
from accounting.validation import check_count, check_positive, check_probability
from jdp.dpsgd.noise import gaussian_noise, noise_cut


def clipping_decay(l2_clip_norm: float, decay: float, every: int = 1) -> Callable[[int], float]:
    """``step -> l2_clip_norm * decay ** (step // every)`` (dp-GAN Sec. 4.1).

    Args:
        l2_clip_norm: initial bound ``C_0 > 0``.
        decay: factor in ``(0, 1]`` (dp-GAN's ``C_decay``).
        every: steps between decays (dp-GAN decays once per generator iteration, i.e. every
            ``N_disc`` critic steps).
    """
    c0 = check_positive("l2_clip_norm", l2_clip_norm)
    d = check_probability("decay", decay)
    k = check_count("every", every, minimum=1)
    return lambda step: c0 * d ** (int(step) // k)


@dataclass(frozen=True, kw_only=True)
class AdaptiveClip:
    """DPGM's per-batch clip bound from a noisy norm histogram (Alg. 3).

    Attributes:
        max_norm: ``C_max``, the largest selectable bound (public).
        bins: ``w``, number of bins; the candidates are ``C_j = j C_max / w``.
        noise_multiplier: ``z_hist``, noise std on each histogram count (sensitivity 1).
    """

    max_norm: float
    bins: int
    noise_multiplier: float

    def __post_init__(self) -> None:
        check_positive("max_norm", self.max_norm)
        check_count("bins", self.bins, minimum=1)
        check_positive("noise_multiplier", self.noise_multiplier)


def norm_histogram(norms: jax.Array, mask: jax.Array, max_norm: float, bins: int) -> jax.Array:
    """``t_j = |{i : C_{j-1} < ||g_i|| <= C_j}|`` for ``j = 1..w`` over unmasked rows."""
    index = (
        jnp.ceil(norms * bins / max_norm).astype(jnp.int32) - 1
    )  # bin j-1 for C_{j-1} < n <= C_j
    valid = mask & (norms > 0) & (index < bins)
    return (
        jnp.zeros(bins, jnp.float32).at[jnp.where(valid, index, 0)].add(valid.astype(jnp.float32))
    )


def dpnorm(key: jax.Array, norms: jax.Array, mask: jax.Array, config: AdaptiveClip) -> jax.Array:
    """DPNorm: the upper edge of the bin with the largest noisy count.

    Privacy:
        Gaussian mechanism on a histogram of L2 sensitivity 1 (add/remove one) with noise
        std ``config.noise_multiplier`` (drawn by :func:`jdp.dpsgd.noise.gaussian_noise`):
        ``GaussianDpEvent(config.noise_multiplier)``.
    """
    counts = norm_histogram(norms, mask, config.max_norm, config.bins)
    noisy = counts + gaussian_noise(key, config.noise_multiplier, counts.shape)
    return (jnp.argmax(noisy) + 1).astype(jnp.float32) * (config.max_norm / config.bins)


def adaptive_clip_event(
    config: AdaptiveClip,
    noise_multiplier: float,
    sampling_prob: float,
    steps: int,
    *,
    noise_cut: float = 0.0,
) -> DpEvent:
    """``steps`` DPGM steps: histogram and gradient on the same Poisson batch, per step;
    ``noise_cut`` is the gradient draw's sampler cut per step, to which the histogram's
    (:func:`jdp.dpsgd.noise.noise_cut` of ``bins`` counts) is added."""
    z = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_prob", sampling_prob)
    steps = check_count("steps", steps, minimum=1)
    inner = ComposedDpEvent([GaussianDpEvent(config.noise_multiplier), GaussianDpEvent(z)])
    per_step = noise_cut + histogram_noise_cut(config)
    return with_noise_cut(
        SelfComposedDpEvent(PoissonSampledDpEvent(q, inner), steps), steps * per_step
    )


def histogram_noise_cut(config: AdaptiveClip) -> float:
    """The sampler's cut of one DPNorm histogram draw (``bins`` counts)."""
    return noise_cut(jax.ShapeDtypeStruct((config.bins,), jnp.float32))
