"""dp-GAN (Frigerio et al., "Differentially Private Generative Adversarial Networks for Time
Series, Continuous, and Discrete Open Data", IFIP SEC 2019): a WGAN-GP whose critic is
trained by DP-SGD (per-example clipping of the whole WGAN-GP loss of a real record, Poisson
sampling, Gaussian noise, optional clipping decay) and whose generator, updated from the
critic alone, is released.

Modules: :mod:`~jdp.synth.dp_gan.config` (:class:`DPGANConfig`),
:mod:`~jdp.synth.dp_gan.losses` (the per-example critic loss, the generator update),
:mod:`~jdp.synth.dp_gan.model` (training on arrays, sampling, table glue). The networks are
:mod:`jdp.nn.gan`; the DP-SGD engine is :mod:`jdp.dpsgd`. Privacy: ``docs/privacy.md``,
section dp-GAN. Time series: ``generator="lstm"`` reads a table of ``T * F`` numeric
columns (time-major) as one series per row (:class:`jdp.nn.gan.SequenceGenerator`).
"""

from __future__ import annotations

from jdp.synth.base import Method, register
from jdp.synth.dp_gan.config import DPGANConfig
from jdp.synth.dp_gan.losses import GeneratorState, make_critic_loss, make_generator_update
from jdp.synth.dp_gan.model import fit_arrays, fit_table, sample_arrays, sample_table
from jdp.synth.estimator import Synthesizer

__all__ = [
    "DPGAN",
    "DPGANConfig",
    "GeneratorState",
    "fit_arrays",
    "fit_table",
    "make_critic_loss",
    "make_generator_update",
    "sample_arrays",
    "sample_table",
]

register(
    Method(
        name="dp-gan",
        config_cls=DPGANConfig,
        fit=fit_table,
        sample=sample_table,
        description="dp-GAN: WGAN-GP with a DP-SGD critic (Frigerio et al. 2019)",
    )
)


class DPGAN(Synthesizer):
    """dp-GAN, scikit-learn style: ``DPGAN(epsilon=1, delta=1e-5, schema=s).fit(df).sample(n)``."""

    method = "dp-gan"
