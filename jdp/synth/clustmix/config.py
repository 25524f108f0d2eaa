"""ClustMix settings (3A: Approximate, Adapt, Anonymize; Madl et al.) and the records a fit reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

import numpy as np

from accounting.validation import check_count, check_positive
from jdp.data.quantile_scale import LOG, NumericScale
from jdp.dpsgd import DPSGDConfig, check_template
from kip.kip import DTYPES, KIPConfig

Mode = Literal["strict", "paper"]
CLUSTERINGS: tuple[str, ...] = ("kmeans", "em")
ENCODINGS: tuple[str, ...] = ("one-hot", "ordinal")
#: DP-KIP's default run: Poisson batches of target records at rate 0.05, 20 steps, clip 1 per
#: target record. A template: the fit sets its noise multiplier and its normaliser.
#: ``mixture_size="auto"``'s target: the per-feature noise std of a mixture on the ``[0, 1]``
#: feature box (a public precision: a tenth of the box).
AUTO_NOISE_STD = 0.1
KIP_DPSGD = DPSGDConfig(l2_clip_norm=1.0, sampling_prob=0.05, expected_batch_size=1.0, steps=20)


@dataclass(frozen=True, kw_only=True)
class ClustMixConfig:
    """ClustMix settings (privacy parameters live in the budget passed to ``fit``).

    The paper tunes the number of clusters, ``alpha``, the support size and ``l`` by Bayesian
    optimisation on the private data and reports none of them (docs/errata.md); the defaults
    here are ours.

    Attributes:
      mode: ``"strict"`` (DP as a whole, the default: DP clustering, noisy cluster sizes,
        per-record mixing groups, DP-KIP, every phase in the ledger) or ``"paper"`` (the
        published algorithm; its ledger and report say "paper's claimed guarantee, not
        proven"). Each names one fit function (:data:`jdp.synth.clustmix.model.MODES`).
      n_clusters: clusters per class (ClustMix is class-conditional: each class's records are
        clustered separately and its mixtures carry that class's label).
      mixture_size: ``l``, records per mixture. Paper mode: also the size constraint
        ``l_min`` of the constrained GMM, and each cluster is cut into disjoint groups of
        exactly ``l``; a class too small for ``n_clusters`` clusters of ``l`` uses the largest
        ``l`` it holds (its exact size read, as the paper reads everything) with Eq. 8's
        ``sigma`` at that ``l``. Strict mode: the expected group size (a cluster with noisy size ``s``
        gets ``floor(s / l)`` groups; in a class with fewer groups than clusters, each
        cluster without one forms one when its mixture's noise std stays within the box:
        :func:`jdp.synth.clustmix.phases.groups_per_cluster`). ``"auto"``:
        the least ``l`` whose mixtures carry per-feature noise of at most
        :data:`AUTO_NOISE_STD` at this budget (:func:`jdp.synth.clustmix.phases.mixture_size`:
        the noise is public, so the rule reads no data).
      alpha: the Eq. 6 trade-off in ``[0, 1]``: weight of the distance to the Approximate
        step's representatives (1: stay at them; 0: plain KIP loss).
      adapt: run the Adapt step (KIP in paper mode, DP-KIP in strict mode); ``False`` skips
        it (strict mode then gives its share to the mixing).
      kip_dpsgd: the Adapt step's run. Strict mode: DP-KIP's DP-SGD privacy parameters, a
        template without noise (:class:`jdp.dpsgd.DPSGDConfig`; Poisson sampling of target
        records at ``sampling_prob``, clip ``l2_clip_norm`` per target record, run length
        ``steps`` or ``epochs``): the plan calibrates its noise multiplier with the other
        phases, and its ``expected_batch_size`` is not read -- the update is normalised by
        ``sampling_prob`` times the sum of the released noisy cluster sizes (public). Its
        ``secure_noise`` or the method's turns on DP-KIP's mitigation. Paper mode reads only
        its run length (``num_steps``: the Adam steps of its non-private KIP).
      kip_learning_rate, kip_reg, kip_depth: KIP's Adam step size, ridge (relative to
        ``tr(K)/n``) and the depth of the FC ReLU NTK.
      kip_target_batch_size: paper mode: target records per KIP step.
      kip_dtype: KIP's precision, a performance flag (:attr:`kip.kip.KIPConfig.dtype`):
        ``"auto"`` (float64 on CPU, float32 on an accelerator), ``"float32"`` or
        ``"float64"``. It changes no privacy parameter and no ledger entry.
      gmm_steps: paper mode: classification-EM iterations of the constrained GMM.
      gmm_timeout_s: paper mode: fall back to constrained k-means after this many seconds
        (``None``: never).
      clustering: strict mode: ``"kmeans"`` (DP Lloyd) or ``"em"`` (DP-EM, diagonal).
      cluster_steps: strict mode: DP clustering iterations.
      cluster_share, size_share, kip_share: strict mode: shares of the privacy loss (in
        ``mu^2`` units: a Gaussian's share ``w`` gets noise multiplier ``s / sqrt(w)``, one
        scale ``s`` calibrated for the whole plan) of the DP clustering, the noisy cluster
        sizes and DP-KIP; the mixing gets the rest (and DP-KIP's share without Adapt).
      categorical_encoding: tables: ``"one-hot"`` (``K`` features per categorical column) or
        ``"ordinal"`` (one feature, the category index over ``K - 1``; the paper counts Adult's
        14 columns as 14 features). Both are public (schema only); the mixing noise grows
        with ``sqrt(D)``, so ordinal is far cheaper for many-category columns.
      secure_noise: the clamp-and-round mitigation of :mod:`jdp.mechanisms.noise` for every
        Gaussian mechanism of a strict fit (DP-KIP's included).
      scale: how numeric columns are encoded (:class:`jdp.data.quantile_scale.NumericScale`);
        default the public log scale, each column measured from the point of its range
        nearest zero (free), chosen by ``scripts/numeric_columns.py``
        (``docs/results/numeric_columns.md``).
    """

    mode: Mode = "strict"
    n_clusters: int = 10
    mixture_size: int | Literal["auto"] = 50
    alpha: float = 0.5
    adapt: bool = True
    kip_dpsgd: DPSGDConfig = KIP_DPSGD
    kip_learning_rate: float = 4e-2
    kip_reg: float = 1e-6
    kip_depth: int = 1
    kip_target_batch_size: int = 5000
    kip_dtype: str = "auto"
    gmm_steps: int = 30
    gmm_timeout_s: float | None = None
    clustering: str = "kmeans"
    cluster_steps: int = 5
    cluster_share: float = 0.2
    size_share: float = 0.05
    kip_share: float = 0.25
    categorical_encoding: str = "one-hot"
    secure_noise: bool = False
    scale: NumericScale = LOG

    def __post_init__(self) -> None:
        if self.mode not in get_args(Mode):
            raise ValueError(f"expected mode in {get_args(Mode)}, got {self.mode!r}")
        if self.categorical_encoding not in ENCODINGS:
            raise ValueError(
                f"expected categorical_encoding in {ENCODINGS}, got {self.categorical_encoding!r}"
            )
        if self.clustering not in CLUSTERINGS:
            raise ValueError(f"expected clustering in {CLUSTERINGS}, got {self.clustering!r}")
        for name in ("adapt", "secure_noise"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"expected {name} to be a bool, got {getattr(self, name)!r}")
        check_template(
            self.kip_dpsgd,
            field="kip_dpsgd",
            calibrated_by="strict mode (DP-KIP with its other phases)",
            poisson_because="add/remove-one",
        )
        check_count("n_clusters", self.n_clusters, minimum=1)
        if self.mixture_size != "auto":
            check_count("mixture_size", self.mixture_size, minimum=1)
        check_count("kip_depth", self.kip_depth, minimum=1)
        check_count("kip_target_batch_size", self.kip_target_batch_size, minimum=1)
        if self.kip_dtype not in DTYPES:
            raise ValueError(f"expected kip_dtype in {DTYPES}, got {self.kip_dtype!r}")
        check_count("gmm_steps", self.gmm_steps, minimum=1)
        check_count("cluster_steps", self.cluster_steps, minimum=1)
        if isinstance(self.alpha, bool) or not 0.0 <= float(self.alpha) <= 1.0:
            raise ValueError(f"expected alpha in [0, 1], got {self.alpha}")
        check_positive("kip_learning_rate", self.kip_learning_rate)
        if not float(self.kip_reg) >= 0.0:
            raise ValueError(f"expected kip_reg >= 0, got {self.kip_reg}")
        if self.gmm_timeout_s is not None and not float(self.gmm_timeout_s) >= 0.0:
            raise ValueError(f"expected gmm_timeout_s >= 0 or None, got {self.gmm_timeout_s}")
        for name in ("cluster_share", "size_share", "kip_share"):
            value = getattr(self, name)
            if not 0.0 < float(value) < 1.0:
                raise ValueError(f"expected {name} in (0, 1), got {value}")
        if self.mixing_share <= 0.0:
            raise ValueError(
                "expected cluster_share + size_share + kip_share < 1 (the mixing needs a share), "
                f"got {self.cluster_share + self.size_share + self.kip_share}"
            )

    @property
    def mixing_share(self) -> float:
        """Strict mode: the mixing's share of the privacy loss (what the others leave)."""
        return 1.0 - self.cluster_share - self.size_share - (self.kip_share if self.adapt else 0.0)

    def kip_config(self) -> KIPConfig:
        """The Adapt step's :class:`kip.kip.KIPConfig` (both modes; ``kip_dpsgd.num_steps``
        Adam steps; strict mode's DP-KIP samples its own Poisson target batches and ignores
        ``target_batch_size``)."""
        return KIPConfig(
            steps=self.kip_dpsgd.num_steps,
            learning_rate=self.kip_learning_rate,
            target_batch_size=self.kip_target_batch_size,
            reg=self.kip_reg,
            alpha=float(self.alpha),
            depth=self.kip_depth,
            dtype=self.kip_dtype,
        )


class Records(NamedTuple):
    """What a mode fits: private records ``x`` in ``[0, 1]^D``, their class codes ``y``, and
    ``n_classes``, the size of the public label domain."""

    x: np.ndarray
    y: np.ndarray
    n_classes: int
