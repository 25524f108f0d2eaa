"""dp-GAN (Frigerio et al., "Differentially Private Generative Adversarial Networks for Time
Series, Continuous, and Discrete Open Data", IFIP SEC 2019): a WGAN-GP whose critic is
trained by DP-SGD and whose generator, updated from the critic alone, is released.

Modules: :mod:`~jdp.synth.dp_gan.config` (:class:`DPGANConfig`),
:mod:`~jdp.synth.dp_gan.losses` (the per-example critic loss, the generator step),
:mod:`~jdp.synth.dp_gan.model` (codec, training loop, sampling),
:mod:`~jdp.synth.dp_gan.paper` (the paper's experiments' settings). Networks:
:mod:`jdp.nn.gan`. Privacy: ``docs/privacy.md``, section dp-GAN.
"""

from __future__ import annotations

from jdp.synth.base import Method, register
from jdp.synth.dp_gan.config import DPGANConfig
from jdp.synth.dp_gan.model import codec, fit_arrays, sample_arrays
from jdp.synth.estimator import Synthesizer
from jdp.synth.feasibility import register_minimum

__all__ = ["DPGAN", "DPGANConfig"]

register(
    Method(
        name="dp-gan",
        config_cls=DPGANConfig,
        codec=codec,
        fit_arrays=fit_arrays,
        sample_arrays=sample_arrays,
        calibrates_prior=True,
        description="dp-GAN: WGAN-GP with a DP-SGD critic (Frigerio et al. 2019)",
    )
)


# measured at or below chance on 5,000 Adult rows, above on all of Adult (numeric_columns.md)
register_minimum("dp-gan", failed="adult-5k", worked="adult")
# at or below chance on a seed of creditcard at P3GM's sampling, 5,000 rows (222 frauds; 172
# rows per width, above the row minimum), above on all of Adult (numeric_columns.md)
register_minimum("dp-gan", failed="creditcard-paper-5k", worked="adult", of="smallest class")


class DPGAN(Synthesizer):
    """dp-GAN, scikit-learn style: ``DPGAN(epsilon=1, delta=1e-5, schema=s).fit(df).sample(n)``."""

    method = "dp-gan"
