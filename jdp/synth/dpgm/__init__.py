"""DPGM (Acs, Melis, Castelluccia & De Cristofaro, "Differentially Private Mixture of
Generative Neural Networks", IEEE TKDE 2019): DP kernel k-means on random Fourier features
splits the data by released centres, then one generative network per cluster (a VAE, or an
RBM for binary data) is trained by DP-SGD with DPNorm's adaptive clipping; the per-cluster
runs compose in parallel; sampling picks a cluster by its noisy size and matches each state
indicator (a point mass, missing) to the cluster's noisy state counts.

Modules: :mod:`~jdp.synth.dpgm.config` (:class:`DPGMConfig`), :mod:`~jdp.synth.dpgm.model`
(the partition and its parallel event, calibration, fitting and sampling on arrays, table
glue). Building blocks: :mod:`jdp.encoding.kmeans` / :mod:`jdp.encoding.rff` (Algorithm 2),
:mod:`jdp.dpsgd` with :class:`jdp.dpsgd.AdaptiveClip` (Algorithms 3-4), :mod:`jdp.nn.vae`
and :mod:`jdp.nn.rbm`. Privacy: ``docs/privacy.md``, section DPGM; DPGM's Hölder accountant
(Theorem 3) is ``accounting``'s ``"holder"``.
"""

from __future__ import annotations

from jdp.synth.base import Method, register
from jdp.synth.dpgm.config import DPGMConfig
from jdp.synth.dpgm.model import (
    ClusterPartition,
    calibrate_noise,
    fit_arrays,
    fit_table,
    generator_noise_cut,
    parallel_training_event,
    partition_by_released_centres,
    plan_events,
    sample_arrays,
    sample_table,
)
from jdp.synth.estimator import Synthesizer

__all__ = [
    "DPGM",
    "ClusterPartition",
    "DPGMConfig",
    "calibrate_noise",
    "fit_arrays",
    "fit_table",
    "generator_noise_cut",
    "parallel_training_event",
    "partition_by_released_centres",
    "plan_events",
    "sample_arrays",
    "sample_table",
]

register(
    Method(
        name="dpgm",
        config_cls=DPGMConfig,
        fit=fit_table,
        sample=sample_table,
        description="DPGM: DP kernel k-means + one DP-SGD VAE/RBM per cluster (Acs et al. 2019)",
    )
)


class DPGM(Synthesizer):
    """DPGM, scikit-learn style: ``DPGM(epsilon=1, delta=1e-5, schema=s).fit(df).sample(n)``."""

    method = "dpgm"
