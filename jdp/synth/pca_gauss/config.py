"""PCA-Gauss settings and the split of its epsilon (Chanyaswad, Liu & Mittal, Sec. V-VII)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accounting.validation import check_count


@dataclass(frozen=True)
class MomentBudget:
    """Epsilons of the three Laplace releases of one Gaussian (count 0: n is public)."""

    count: float
    total: float
    second: float

    @property
    def epsilon(self) -> float:
        return self.count + self.total + self.second


PcaSource = Literal["lap", "analyze-gauss", "public"]
Mode = Literal["auto", "unsupervised", "supervised", "mixture"]
PCA_SOURCES: tuple[str, ...] = ("lap", "analyze-gauss", "public")
MODES: tuple[str, ...] = ("auto", "unsupervised", "supervised", "mixture")


@dataclass(frozen=True, kw_only=True)
class PCAGaussConfig:
    """PCA-Gauss settings (privacy parameters live in the budget passed to ``fit``).

    Attributes:
      n_components: ``k``, the dimension of the principal subspace.
      mode: ``"unsupervised"`` (Algorithm 1: one Gaussian on the PCA features),
        ``"supervised"`` (Algorithm 2: one Gaussian on PCA features plus a numeric label),
        ``"mixture"`` (Algorithm 3: one Gaussian per class of a categorical label), or
        ``"auto"`` (tables only: ``"mixture"`` when the schema names a target, else
        ``"unsupervised"``).
      pca_source: ``"lap"`` (Lap-PCA, pure epsilon), ``"analyze-gauss"`` (Gaussian noise,
        needs ``delta > 0``) or ``"public"`` (a declared public sample, free).
      pca_fraction: share of epsilon spent on a DP PCA (ignored for ``"public"``). The
        default 0.5: the subspace only has to be roughly right, but Lap-PCA's ``d x d``
        release has an L1 sensitivity of order ``d^2`` in the data's units, against order
        ``k`` for the model's ``k x k`` statistics in Lemma 1's units.
      count_fraction, mean_fraction: shares of the model's epsilon for the noisy record
        count and the mean; the rest goes to the second moment. The paper gives the class
        mean 10% (its sensitivity is ``sqrt(k)`` against ``(1 + k) / 2``).
      label_column: tables, ``"supervised"``: the label column kept out of the PCA (a
        numeric column, or a two-category one coded -1/+1); default the schema's target.
      public_data: tables, ``pca_source="public"``: path of a CSV of *public* records with
        the schema's columns, from which the subspace is computed at no privacy cost.
    """

    n_components: int = 5
    mode: Mode = "auto"
    pca_source: PcaSource = "lap"
    pca_fraction: float = 0.5
    count_fraction: float = 0.05
    mean_fraction: float = 0.1
    label_column: str | None = None
    public_data: str | None = None

    def __post_init__(self) -> None:
        check_count("n_components", self.n_components, minimum=1)
        if self.mode not in MODES:
            raise ValueError(f"expected mode in {MODES}, got {self.mode!r}")
        if self.pca_source not in PCA_SOURCES:
            raise ValueError(f"expected pca_source in {PCA_SOURCES}, got {self.pca_source!r}")
        for name in ("pca_fraction", "count_fraction", "mean_fraction"):
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
