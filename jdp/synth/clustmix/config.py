"""ClustMix settings (3A: Approximate, Adapt, Anonymize; Madl et al.)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accounting.validation import check_count, check_positive, check_probability
from kip.kip import KIPConfig

Mode = Literal["strict", "paper"]
MODES: tuple[str, ...] = ("strict", "paper")
CLUSTERINGS: tuple[str, ...] = ("kmeans", "em")
ENCODINGS: tuple[str, ...] = ("one-hot", "ordinal")


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
        proven").
      n_clusters: clusters per class (ClustMix is class-conditional: each class's records are
        clustered separately and its mixtures carry that class's label).
      mixture_size: ``l``, records per mixture. Paper mode: also the size constraint
        ``l_min`` of the constrained GMM, and each cluster is cut into disjoint groups of
        exactly ``l``. Strict mode: the expected group size (a cluster with noisy size ``s``
        gets ``floor(s / l)`` groups; a cluster below ``l`` releases nothing).
      alpha: the Eq. 6 trade-off in ``[0, 1]``: weight of the distance to the Approximate
        step's representatives (1: stay at them; 0: plain KIP loss).
      kip_steps: Adam steps of the Adapt step (KIP in paper mode, DP-KIP in strict mode);
        0 skips Adapt.
      kip_learning_rate, kip_reg, kip_depth: KIP's Adam step size, ridge (relative to
        ``tr(K)/n``) and the depth of the FC ReLU NTK.
      kip_target_batch_size: paper mode: target records per KIP step.
      gmm_steps: paper mode: classification-EM iterations of the constrained GMM.
      gmm_timeout_s: paper mode: fall back to constrained k-means after this many seconds
        (``None``: never).
      clustering: strict mode: ``"kmeans"`` (DP Lloyd) or ``"em"`` (DP-EM, diagonal).
      cluster_steps: strict mode: DP clustering iterations.
      cluster_share, size_share, kip_share: strict mode: shares of the privacy loss (in
        ``mu^2`` units: a Gaussian's share ``w`` gets noise multiplier ``s / sqrt(w)``, one
        scale ``s`` calibrated for the whole plan) of the DP clustering, the noisy cluster
        sizes and DP-KIP; the mixing gets the rest (and DP-KIP's share when it is skipped).
      kip_sampling_prob: strict mode: DP-KIP's Poisson rate over target records.
      kip_l2_clip_norm: strict mode: DP-KIP's per-target-record gradient clip norm.
      categorical_encoding: tables: ``"one-hot"`` (``K`` features per categorical column) or
        ``"ordinal"`` (one feature, the category index over ``K - 1``; the paper counts Adult's
        14 columns as 14 features). Both are public (schema only); the mixing noise grows
        with ``sqrt(D)``, so ordinal is far cheaper for many-category columns.
      secure_noise: the clamp-and-round mitigation of :mod:`jdp.mechanisms.noise`.
    """

    mode: Mode = "strict"
    n_clusters: int = 10
    mixture_size: int = 50
    alpha: float = 0.5
    kip_steps: int = 20
    kip_learning_rate: float = 4e-2
    kip_reg: float = 1e-6
    kip_depth: int = 1
    kip_target_batch_size: int = 5000
    gmm_steps: int = 30
    gmm_timeout_s: float | None = None
    clustering: str = "kmeans"
    cluster_steps: int = 5
    cluster_share: float = 0.2
    size_share: float = 0.05
    kip_share: float = 0.25
    kip_sampling_prob: float = 0.05
    kip_l2_clip_norm: float = 1.0
    categorical_encoding: str = "one-hot"
    secure_noise: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"expected mode in {MODES}, got {self.mode!r}")
        if self.categorical_encoding not in ENCODINGS:
            raise ValueError(
                f"expected categorical_encoding in {ENCODINGS}, got {self.categorical_encoding!r}"
            )
        if self.clustering not in CLUSTERINGS:
            raise ValueError(f"expected clustering in {CLUSTERINGS}, got {self.clustering!r}")
        check_count("n_clusters", self.n_clusters, minimum=1)
        check_count("mixture_size", self.mixture_size, minimum=1)
        check_count("kip_steps", self.kip_steps)
        check_count("kip_depth", self.kip_depth, minimum=1)
        check_count("kip_target_batch_size", self.kip_target_batch_size, minimum=1)
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
        check_probability("kip_sampling_prob", self.kip_sampling_prob)
        check_positive("kip_l2_clip_norm", self.kip_l2_clip_norm)

    @property
    def adapt(self) -> bool:
        """Whether the Adapt step (KIP / DP-KIP) runs."""
        return self.kip_steps > 0

    @property
    def mixing_share(self) -> float:
        """Strict mode: the mixing's share of the privacy loss (what the others leave)."""
        return 1.0 - self.cluster_share - self.size_share - (self.kip_share if self.adapt else 0.0)

    def kip_config(self) -> KIPConfig:
        """The Adapt step's :class:`kip.kip.KIPConfig` (both modes; strict mode's DP-KIP
        samples its own Poisson target batches and ignores ``target_batch_size``)."""
        return KIPConfig(
            steps=self.kip_steps,
            learning_rate=self.kip_learning_rate,
            target_batch_size=self.kip_target_batch_size,
            reg=self.kip_reg,
            alpha=float(self.alpha),
            depth=self.kip_depth,
        )
