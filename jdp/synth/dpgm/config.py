"""The configuration of DPGM (Acs et al., TKDE 2019, Algorithm 1 and Sec. 6.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accounting.validation import check_count, check_open_unit, check_positive
from jdp.data.quantile_scale import MIN_MAX, NumericScale
from jdp.dpsgd import DPSGDConfig, Performance, check_template

#: The generator networks by name (:data:`jdp.synth.dpgm.generators.GENERATORS` holds one
#: class per name).
GENERATORS: tuple[str, ...] = ("vae", "rbm")

#: ``DPGMConfig.dpsgd``'s default: ``q = 0.01``, 5 epochs, the noise unset (calibrated with
#: the k-means phase); its ``l2_clip_norm`` and ``expected_batch_size`` are placeholders that
#: DPGM replaces (see :class:`DPGMConfig`).
DPSGD_TEMPLATE = DPSGDConfig(sampling_prob=0.01, expected_batch_size=1.0, epochs=5.0)
#: ``DPGMConfig.performance``'s default: the clipping path chosen per generator
#: (:func:`jdp.dpsgd.step.choose_method`: ghost clipping where it is exact, as for the VAE's
#: dense layers, whose per-example norms DPNorm reads from a norm pass; the general path by
#: ``vmap`` otherwise, as for the RBM), blocks of steps per dispatch
#: (:func:`jdp.synth.dpgm.training.block_steps`).
PERFORMANCE = Performance(clipping="auto", steps_per_dispatch="auto")


@dataclass(frozen=True, kw_only=True)
class DPGMConfig:
    """Configuration of DPGM: DP kernel k-means on random Fourier features, then one
    generative network per cluster trained by DP-SGD with DPNorm's adaptive clipping.

    Clustering (Algorithm 2; all public, fixed before any data is read):
      n_clusters: ``k`` (DPGM MNIST: 10).
      kmeans_iterations: ``T_K`` noisy Lloyd iterations (DPGM: 20).
      rff_dim: ``D`` random Fourier features (DPGM: 200, the default); ``"auto"``: the largest
        ``D`` whose noise on a centre stays a fixed share of the features' norm, from the
        declared or released row count and the calibrated k-means noise
        (:func:`jdp.encoding.rff.dim_for_noise`, resolved before the fit): the better
        clustering (Fig. 3), but on 5,000 Adult rows a worse mixture (docs/errata.md, DPGM
        item 6).
      gamma: RBF width of ``exp(-gamma ||x - y||^2)`` on the encoded rows; ``None``: ``1 / d``
        for ``d`` encoded columns (public: the schema's width).
      kmeans_clip: ``C`` on the features (``||z(x)|| <= sqrt(2)``; DPGM's Thm. 2 value 1).
      max_kmeans_noise: the largest k-means noise multiplier the fit accepts; a budget that
        needs more noise for ``T_K`` iterations is refused before any data is read ("budget
        too small for the planned k-means iterations").
      kmeans_share: the share of epsilon the k-means phase (and the noisy cluster sizes) is
        first calibrated to; a common factor then makes the whole ledger meet the budget
        exactly (as P3GM's split).

    Generators (Sec. 3.1-3.2, 6.1; :mod:`jdp.synth.dpgm.generators`):
      generator: ``"vae"`` (any table; Bernoulli/categorical heads) or ``"rbm"`` (binary data
        only: integer columns with bounds [0, 1] and categorical one-hots).
      hidden: hidden units (DPGM: 200 for both).
      latent_dim: the VAE's latent width (DPGM: 2).
      n_chains, gibbs_steps: the RBM's persistent chains and Gibbs sweeps per DP-SGD step.
      sample_burn_in: Gibbs sweeps before an RBM sample is taken.
      learning_rate: Adam's step for either generator (DPGM: SGD at 0.01 for the RBM; Adam for
        the VAE).

    DP-SGD (Algorithm 4):
      dpsgd: the template every cluster's run is built from (:func:`cluster_dpsgd`): its
        ``sampling_prob`` ``q`` (the same public rate for all clusters: it never depends on a
        private cluster size), ``steps`` or ``epochs`` (``ceil(epochs / q)`` steps),
        ``accountant`` (of the calibration) and ``secure_noise`` are read. Its noise is unset
        (DPGM calibrates ``z`` with the k-means phase), its sampling Poisson (DPNorm's
        analysis), and its ``l2_clip_norm`` and ``expected_batch_size`` are left at the
        template's placeholders: DPGM sets the clip rule (DPNorm, below) and the normaliser
        ``q max(mean noisy cluster size, 1)`` (released) itself.
      clip_max_norm, clip_bins: DPNorm's ``C_max`` and ``w`` (DPGM: 10 and 100).
      hist_noise_ratio: the DPNorm histogram's noise multiplier as a multiple of the
        gradient's ``z`` (DPGM Fig. 2: ``sigma_C = 4`` beside ``sigma_G`` in 2..8): the clip
        rule depends on the calibrated ``z``, so these knobs are DPGM's, not the template's.
      performance: compute flags only (:class:`jdp.dpsgd.Performance`; no ``mesh``: the
        clusters train as one batched program, :mod:`jdp.synth.dpgm.training`).
      scale: numeric columns on released quantile knots, or min-max by the declared
        bounds (:class:`jdp.data.quantile_scale.NumericScale`; default: min-max).
    """

    n_clusters: int = 10
    kmeans_iterations: int = 20
    rff_dim: int | Literal["auto"] = 200
    gamma: float | None = None
    kmeans_clip: float = 1.0
    max_kmeans_noise: float = 1000.0
    kmeans_share: float = 0.3
    generator: str = "vae"
    hidden: int = 200
    latent_dim: int = 2
    n_chains: int = 64
    gibbs_steps: int = 1
    sample_burn_in: int = 500
    learning_rate: float = 1e-3
    dpsgd: DPSGDConfig = DPSGD_TEMPLATE
    clip_max_norm: float = 10.0
    clip_bins: int = 100
    hist_noise_ratio: float = 2.0
    performance: Performance = PERFORMANCE
    scale: NumericScale = MIN_MAX

    def __post_init__(self) -> None:
        check_count("n_clusters", self.n_clusters, minimum=1)
        check_count("kmeans_iterations", self.kmeans_iterations, minimum=1)
        if self.rff_dim != "auto":
            check_count("rff_dim", self.rff_dim, minimum=1)
        if self.gamma is not None:
            check_positive("gamma", self.gamma)
        check_positive("kmeans_clip", self.kmeans_clip)
        check_positive("max_kmeans_noise", self.max_kmeans_noise)
        check_open_unit("kmeans_share", self.kmeans_share)
        if self.generator not in GENERATORS:
            raise ValueError(f"expected generator in {GENERATORS}, got {self.generator!r}")
        check_count("hidden", self.hidden, minimum=1)
        check_count("latent_dim", self.latent_dim, minimum=1)
        check_count("n_chains", self.n_chains, minimum=1)
        check_count("gibbs_steps", self.gibbs_steps, minimum=1)
        check_count("sample_burn_in", self.sample_burn_in, minimum=1)
        check_positive("learning_rate", self.learning_rate)
        check_template(
            self.dpsgd,
            self.performance,
            calibrated_by="DPGM",
            poisson_because="DPNorm's analysis",
        )
        for name in ("l2_clip_norm", "expected_batch_size"):  # set per cluster by the fit
            if getattr(self.dpsgd, name) != 1.0:
                raise ValueError(
                    f"expected dpsgd.{name} left at 1.0 (a placeholder: DPGM sets it per "
                    f"cluster from DPNorm and the released sizes), got {getattr(self.dpsgd, name)!r}"
                )
        if self.performance.mesh is not None:
            raise ValueError(
                "expected performance.mesh=None (DPGM trains its clusters as one batched "
                "program on one device)"
            )
        check_positive("clip_max_norm", self.clip_max_norm)
        check_count("clip_bins", self.clip_bins, minimum=1)
        check_positive("hist_noise_ratio", self.hist_noise_ratio)
