"""PCA-Gauss settings and the split of its epsilon (Chanyaswad, Liu & Mittal, Sec. V-VII)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from accounting.validation import check_count
from jdp.data.quantile_scale import MIN_MAX, NumericScale
from jdp.synth.signal import SIGNAL_SHARE


@dataclass(frozen=True)
class MomentBudget:
    """Epsilons of the three Laplace releases of one Gaussian (count 0: n is public)."""

    count: float
    total: float
    second: float

    @property
    def epsilon(self) -> float:
        return self.count + self.total + self.second


PcaSource = Literal["auto", "lap", "analyze-gauss", "public"]
Mode = Literal["auto", "unsupervised", "supervised", "mixture"]
PCA_SOURCES: tuple[str, ...] = ("auto", "lap", "analyze-gauss", "public")

MAX_COMPONENTS = 16  # the automatic k never exceeds this (nor d)


def auto_components(*, width: int, epsilon: float, n_hat: float, n_groups: int = 1) -> int:
    """The automatic ``k`` from the public width, the model's epsilon and a *released* count.

    The second-moment release of a Gaussian on ``k`` features adds Laplace noise of scale
    ``b = (k + 1) / (2 eps_2)`` to each of its ``k (k + 1) / 2`` entries; divided by the
    group size ``m`` (``n_hat / n_groups``) each covariance entry gets noise of std
    ``sqrt(2) b / m``, and the ``k x k`` noise matrix a spectral norm of about
    ``2 sqrt(k) sqrt(2) b / m`` (the semicircle edge). The features have total variance
    ``tr Sigma <= 1`` (Lemma 1); if a share ``rho`` of it
    (:data:`jdp.synth.signal.SIGNAL_SHARE`, the same rule as the no-signal warning) is spread over
    ``k`` components, each has about ``rho / k``. Signal above noise needs
    ``sqrt(2) k^1.5 (k + 1) / (eps_2 m) <= rho``, i.e. roughly
    ``k <= (rho eps_2 m / sqrt(2))^(2/5)``: the largest such ``k`` in
    ``1 .. min(width, MAX_COMPONENTS)``, with ``eps_2`` the model's epsilon (its mean and
    count shares are small). ``n_hat`` must be a released (noisy) count, never the raw ``n``.
    """
    m = max(float(n_hat), 1.0) / n_groups
    k = int((SIGNAL_SHARE * epsilon * m / math.sqrt(2.0)) ** 0.4)
    return max(1, min(k, width, MAX_COMPONENTS))


def auto_source(delta: float) -> str:
    """``"analyze-gauss"`` when ``delta > 0``: its Frobenius sensitivity is 1 at any width,
    against Lap-PCA's L1 sensitivity of order ``d^2`` (docs/privacy.md); ``"lap"`` for pure
    epsilon."""
    return "analyze-gauss" if delta > 0 else "lap"


MODES: tuple[str, ...] = ("auto", "unsupervised", "supervised", "mixture")


@dataclass(frozen=True, kw_only=True)
class PCAGaussConfig:
    """PCA-Gauss settings (privacy parameters live in the budget passed to ``fit``).

    Attributes:
      n_components: ``k``, the dimension of the principal subspace; ``None`` (default): from
        the public width, the budget and a noisy record count released with
        ``size_fraction`` of epsilon (:func:`auto_components`).
      mode: ``"unsupervised"`` (Algorithm 1: one Gaussian on the PCA features),
        ``"supervised"`` (Algorithm 2: one Gaussian on PCA features plus a numeric label),
        ``"mixture"`` (Algorithm 3: one Gaussian per class of a categorical label), or
        ``"auto"`` (tables only: ``"mixture"`` when the schema names a target, else
        ``"unsupervised"``).
      pca_source: ``"lap"`` (Lap-PCA, pure epsilon), ``"analyze-gauss"`` (Gaussian noise,
        needs ``delta > 0``), ``"public"`` (a declared public sample, free) or ``"auto"``
        (default: Analyze Gauss when ``delta > 0``, else Lap-PCA: :func:`auto_source`).
      pca_fraction: share of epsilon spent on a DP PCA (ignored for ``"public"``). The
        default 0.5: the subspace only has to be roughly right, but Lap-PCA's ``d x d``
        release has an L1 sensitivity of order ``d^2`` in the data's units, against order
        ``k`` for the model's ``k x k`` statistics in Lemma 1's units.
      count_fraction, mean_fraction: shares of the model's epsilon for the noisy record
        count and the mean; the rest goes to the second moment. The paper gives the class
        mean 10% (its sensitivity is ``sqrt(k)`` against ``(1 + k) / 2``).
      size_fraction: share of epsilon for the noisy record count that sets the automatic
        ``k`` (spent only when ``n_components`` is ``None``).
      label_column: tables, ``"supervised"``: the label column kept out of the PCA (a
        numeric column, or a two-category one coded -1/+1); default the schema's target.
      public_data: tables, ``pca_source="public"``: path of a CSV of *public* records with
        the schema's columns, from which the subspace is computed at no privacy cost.
      secure_noise: Analyze Gauss's Gaussian by clamp-and-round (a mitigation of the
        floating-point channel without proof). Every Laplace release (Lap-PCA, the count,
        mean and second moment) always goes through Mironov's (2012) snapping mechanism,
        proved in binary64 with its cost absorbed in the noise scale: the textbook sampler
        the paper implies is broken by the audit for Lap-PCA (docs/privacy.md,
        "Floating-point noise"), and snapping costs about ``13`` microseconds a coordinate.
      scale: numeric columns on released quantile knots, or min-max by the declared
        bounds (:class:`jdp.data.quantile_scale.NumericScale`; default: min-max).
    """

    n_components: int | None = None
    mode: Mode = "auto"
    pca_source: PcaSource = "auto"
    pca_fraction: float = 0.5
    count_fraction: float = 0.05
    mean_fraction: float = 0.1
    size_fraction: float = 0.02
    label_column: str | None = None
    public_data: str | None = None
    secure_noise: bool = False
    scale: NumericScale = MIN_MAX

    def __post_init__(self) -> None:
        if self.n_components is not None:
            check_count("n_components", self.n_components, minimum=1)
        if self.mode not in MODES:
            raise ValueError(f"expected mode in {MODES}, got {self.mode!r}")
        if self.pca_source not in PCA_SOURCES:
            raise ValueError(f"expected pca_source in {PCA_SOURCES}, got {self.pca_source!r}")
        if not isinstance(self.secure_noise, bool):
            raise TypeError(f"expected secure_noise to be a bool, got {self.secure_noise!r}")
        for name in ("pca_fraction", "count_fraction", "mean_fraction", "size_fraction"):
            value = getattr(self, name)
            if not 0.0 < float(value) < 1.0:
                raise ValueError(f"expected {name} in (0, 1), got {value}")
        if self.count_fraction + self.mean_fraction >= 1.0:
            raise ValueError(
                "expected count_fraction + mean_fraction < 1, got "
                f"{self.count_fraction + self.mean_fraction}"
            )

    def pca_epsilon(self, epsilon: float) -> float:
        """The share of ``epsilon`` spent on the principal subspace (0 for a public one)."""
        return 0.0 if self.pca_source == "public" else epsilon * self.pca_fraction

    def model_budget(self, epsilon: float) -> MomentBudget:
        """Split of the Gaussian model's ``epsilon`` into count, mean and second moment."""
        count, total = self.count_fraction * epsilon, self.mean_fraction * epsilon
        return MomentBudget(count=count, total=total, second=epsilon - count - total)
