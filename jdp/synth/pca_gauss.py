"""PCA-Gauss: a Gaussian (or one Gaussian per class) fitted under pure epsilon-DP on a
principal subspace, then sampled and mapped back to the data space.

Chanyaswad, Liu & Mittal, "Coupling Dimensionality Reduction with Generative Model for
Non-Interactive Private Data Release" (seed ``pca-gauss.txt``):

* Algorithm 1 (unsupervised): the PCA-induced covariance of the data, made DP, sampled.
* Algorithm 2 (supervised): the augmented covariance of the PCA features *and* the label,
  with an independently derived PCA, made DP, sampled; the label is read off the last
  coordinate of each sample.
* Algorithm 3 (classification): one Gaussian per class from DP class means and covariances;
  the classes partition the records, so the per-class releases compose in parallel.

What differs from the paper (each derived in ``docs/privacy.md``, section PCA-Gauss, and
listed in ``docs/errata.md``): the data are centred on the public centre of their declared
bounds, never on the raw mean, and the mean is released by its own mechanism; the number of
records (per class, and overall under add/remove neighbours) is released as a noisy count,
never copied; the principal subspace always comes from an independent source (public sample,
Lap-PCA or Analyze-Gauss PCA, :mod:`jdp.encoding.pca`) so that samples can be mapped back to the data
space; Laplace noise is drawn on the upper triangle of the symmetric second-moment matrix and
mirrored; noisy covariances are projected to the PSD cone before sampling.

Notation. Records ``z`` lie in the box ``[-1, 1]^d`` (the declared bounds, affinely
rescaled). ``V`` (``d x k``, orthonormal columns: :class:`Subspace` refuses any other) and a
centre ``c`` in the box are independent of the private data. Lemma 1's rescaling gives the PCA
features ``u = V^T (z - c) / R`` with ``R = max_z ||z - c||_2`` (``sqrt(d)`` at the
midpoint); since ``V^T`` is a contraction, ``||u||_2 <= 1`` (so every ``|u_j| <= 1``,
Lemma 1) and ``||u||_1 <= sqrt(k)``. With a label ``tau`` in ``[-1, 1]`` the augmented record
``w = (u, tau)`` has ``||w||_2 <= sqrt(2)`` and ``||w||_1 <= sqrt(k) + 1``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget
from accounting import events as ev
from accounting.validation import check_count, check_positive
from accounting.calibrate import calibrate
from accounting.ledger import PrivacyLedger
from jdp.data.schema import Schema, Table
from jdp.data.transforms import Span, TableEncoder
from jdp.mechanisms.moments import moment_sensitivity, moment_sums
from jdp.mechanisms.noise import laplace_mechanism
from jdp.encoding.pca import dp_pca_gaussian, dp_pca_laplace, public_pca
from jdp.random import numpy_rng
from jdp.synth.base import FittedModel, Method, Synthesizer, register

Relation = ev.NeighboringRelation
ADD_OR_REMOVE_ONE = Relation.ADD_OR_REMOVE_ONE
REPLACE_ONE = Relation.REPLACE_ONE


# -- Lemma 1: PCA features of bounded data -----------------------------------------------------
def to_unit_box(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Affine map of the declared box ``[lower, upper]`` onto ``[-1, 1]^d`` (then clipped)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    if np.any(upper <= lower):
        raise ValueError("expected upper > lower for every column of the declared bounds")
    z = (2.0 * np.asarray(x, float) - lower - upper) / (upper - lower)
    return np.clip(z, -1.0, 1.0)


def from_unit_box(z: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Inverse of :func:`to_unit_box`, clipped to the declared bounds."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    x = lower + (np.asarray(z, float) + 1.0) * (upper - lower) / 2.0
    return np.clip(x, lower, upper)


ORTHONORMAL_TOLERANCE = 1e-8  # per dimension: max |V^T V - I| <= ORTHONORMAL_TOLERANCE * d


@dataclass(frozen=True)
class Subspace:
    """A public subspace: orthonormal columns ``V`` (``d x k``) and a centre ``c`` in the box.

    Lemma 1's rescaled PCA features are ``u = V^T (z - c) / R`` with
    ``R = max_{z in [-1, 1]^d} ||z - c||_2 = ||1 + |c| ||_2`` (``sqrt(d)`` for the midpoint
    ``c = 0``); since ``V^T`` is a contraction, ``||u||_2 <= 1`` for every record.

    Every sensitivity of :func:`moment_sensitivity` rests on ``||V^T x||_2 <= ||x||_2``, so
    ``V`` must have orthonormal columns: ``max_jl |(V^T V - I)_jl| <= 1e-8 d`` (float
    round-off of an ``eigh`` or QR basis), else ``ValueError``. A raw random projection
    (Gaussian entries) is refused: orthonormalise it first (``np.linalg.qr``). The features
    are also projected onto the unit ball, so the round-off allowed by the tolerance cannot
    push ``||u||_2`` past 1.
    """

    components: np.ndarray
    centre: np.ndarray

    def __post_init__(self) -> None:
        v = np.asarray(self.components)
        if v.ndim != 2 or not 1 <= v.shape[1] <= v.shape[0]:
            raise ValueError(f"expected components of shape (d, k) with 1 <= k <= d, got {v.shape}")
        d, k = v.shape
        if self.centre.shape != (d,) or np.any(np.abs(self.centre) > 1.0):
            raise ValueError(f"expected a centre of shape ({d},) inside [-1, 1]^d")
        error = float(np.max(np.abs(v.T @ v - np.eye(k)))) if np.all(np.isfinite(v)) else math.inf
        if error > ORTHONORMAL_TOLERANCE * d:
            raise ValueError(
                "expected orthonormal columns in components (V^T V = I within "
                f"{ORTHONORMAL_TOLERANCE:g} * d), got max |V^T V - I| = {error:.3g}"
            )

    @classmethod
    def at_midpoint(cls, components: np.ndarray) -> Subspace:
        return cls(np.asarray(components, float), np.zeros(components.shape[0]))

    @property
    def radius(self) -> float:
        return float(np.linalg.norm(1.0 + np.abs(self.centre)))

    def features(self, z: np.ndarray) -> np.ndarray:
        """``u = V^T (z - c) / R`` for rows ``z`` in the box, projected onto ``||u||_2 <= 1``
        (a no-op up to round-off: ``V`` is orthonormal)."""
        u = (np.asarray(z, float) - self.centre) @ self.components / self.radius
        return u / np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), 1.0)

    def to_box(self, u: np.ndarray) -> np.ndarray:
        """Map features back: ``z = c + R V u``, clipped to ``[-1, 1]^d``."""
        return np.clip(self.centre + self.radius * np.asarray(u, float) @ self.components.T, -1.0, 1.0)


# -- sufficient statistics and their sensitivities ---------------------------------------------
def record_bounds(k: int, *, with_label: bool) -> tuple[float, float]:
    """``(l2_bound, l1_bound)`` of a PCA-feature record (plus a label in ``[-1, 1]``)."""
    check_count("k", k, minimum=1)
    if with_label:
        return math.sqrt(2.0), math.sqrt(k) + 1.0
    return 1.0, math.sqrt(k)


# -- the DP Gaussian ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gaussian:
    """A released Gaussian: noisy record count, mean and PSD covariance (post-processed)."""

    count: float
    mean: np.ndarray
    cov: np.ndarray


@dataclass(frozen=True)
class MomentBudget:
    """Epsilons of the three Laplace releases of one Gaussian (count 0: n is public)."""

    count: float
    total: float
    second: float

    @property
    def epsilon(self) -> float:
        return self.count + self.total + self.second


def project_psd(m: np.ndarray, *, max_eigenvalue: float = math.inf) -> np.ndarray:
    """Nearest (Frobenius) symmetric matrix with eigenvalues in ``[0, max_eigenvalue]``."""
    sym = (m + m.T) / 2.0
    vals, vecs = np.linalg.eigh(sym)
    return (vecs * np.clip(vals, 0.0, max_eigenvalue)) @ vecs.T


def gaussian_from_sums(
    count: float, total: np.ndarray, second: np.ndarray, *, l2_bound: float
) -> Gaussian:
    """Mean and covariance from (noisy) sums; pure post-processing.

    ``n_hat = max(count, 1)``, ``mu = total / n_hat`` projected onto the ball
    ``||mu||_2 <= l2_bound`` (every record lies in it, so the true mean does too),
    ``Sigma = second / n_hat - mu mu^T`` projected onto PSD matrices with eigenvalues at most
    ``l2_bound^2`` (the largest variance a distribution on that ball can have).
    """
    n_hat = max(float(count), 1.0)
    mean = total / n_hat
    norm = np.linalg.norm(mean)
    if norm > l2_bound:
        mean = mean * (l2_bound / norm)
    cov = project_psd(second / n_hat - np.outer(mean, mean), max_eigenvalue=l2_bound**2)
    return Gaussian(count=float(count), mean=mean, cov=cov)


def release_gaussian(
    rng: np.random.Generator,
    w: np.ndarray,
    *,
    budget: MomentBudget,
    relation: Relation,
    with_label: bool,
) -> tuple[Gaussian, list[ev.DpEvent]]:
    """Release a Gaussian fitted to the records ``w`` with three Laplace mechanisms.

    Args:
      rng: the noise source.
      w: ``(n, k)`` PCA features (``with_label``: ``(n, k + 1)``, label last), each row
        inside the bounds of :func:`record_bounds`.
      budget: epsilons of the count, the sum and the second-moment sum. ``count = 0`` means
        the number of records is public (replace-one neighbours) and is used as is.
      relation: the neighbouring relation the sensitivities are derived for.
      with_label: whether the last coordinate is a label in ``[-1, 1]``.

    Returns:
      The post-processed Gaussian and the Laplace events spent, in release order.

    Privacy:
      Sensitivities from :func:`moment_sensitivity` for the bounds of :func:`record_bounds`;
      each Laplace release is ``budget.<part>``-DP, together ``budget.epsilon``-DP
      (sequential composition). The second moment gets symmetric noise on its upper triangle.
    """
    k = w.shape[1] - (1 if with_label else 0)
    a, b = record_bounds(k, with_label=with_label)
    sens = moment_sensitivity(a, b, relation)
    n, total, second = moment_sums(w)
    events: list[ev.DpEvent] = []
    if budget.count > 0:
        n, e = laplace_mechanism(rng, np.array(n), l1_sensitivity=sens.count, epsilon=budget.count)
        n = float(n)
        events.append(e)
    elif relation == ADD_OR_REMOVE_ONE:
        raise ValueError("under add/remove neighbours the record count is private: give it a budget")
    total, e = laplace_mechanism(rng, total, l1_sensitivity=sens.total, epsilon=budget.total)
    events.append(e)
    second, e = laplace_mechanism(
        rng, second, l1_sensitivity=sens.second, epsilon=budget.second, symmetric=True
    )
    events.append(e)
    return gaussian_from_sums(n, total, second, l2_bound=a), events


def sample_gaussian(rng: np.random.Generator, g: Gaussian, n: int) -> np.ndarray:
    """``n`` draws from ``N(g.mean, g.cov)`` (``g.cov`` is PSD; rank-deficient is fine)."""
    vals, vecs = np.linalg.eigh(g.cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    return g.mean + rng.standard_normal((n, g.mean.shape[0])) @ root.T


# -- the model: Algorithms 1-3 ---------------------------------------------------------------------
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


@dataclass(frozen=True)
class PCAGaussModel:
    """A fitted PCA-Gauss model: everything in it is public (released or post-processed).

    Attributes:
      subspace: the independently derived principal subspace and its centre.
      gaussians: one Gaussian (Algorithms 1, 2) or one per class (Algorithm 3) on the PCA
        features (Algorithm 2: label last).
      mode: the algorithm, see :class:`PCAGaussConfig`.
      ledger: every release the model was built from.
    """

    subspace: Subspace
    gaussians: tuple[Gaussian, ...]
    mode: Mode
    ledger: PrivacyLedger


def fit_components(
    rng: np.random.Generator,
    z: np.ndarray,
    *,
    k: int,
    source: PcaSource,
    epsilon: float,
    delta: float,
    public: np.ndarray | None,
    model_epsilon: float = 0.0,
) -> tuple[Subspace, PrivacyLedger]:
    """The independent principal subspace of the box-scaled data ``z`` (via :mod:`jdp.encoding.pca`),
    with its centre: the box midpoint for the DP sources, the public sample's mean for
    ``"public"`` (without that centre, a centred public PCA misses the data's mean).

    * ``"lap"``: Lap-PCA on ``z`` in ``[-1, 1]^d``, centred on the box midpoint (public),
      pure ``epsilon``-DP.
    * ``"analyze-gauss"``: Analyze Gauss on ``z / sqrt(d)`` (norm <= 1, so the clip at 1 never
      binds). Its noise multiplier is the smallest for which the Gaussian release composed
      with a pure ``model_epsilon``-DP model meets ``(epsilon + model_epsilon, delta)`` under
      the ledger's RDP accountant (:func:`accounting.calibrate.calibrate`; the model's three
      Laplace releases have RDP at most that of a pure ``model_epsilon`` event).
    * ``"public"``: PCA of the declared public sample (box-scaled like ``z``), no cost.
    """
    d = z.shape[1]
    if source == "public":
        if public is None:
            raise ValueError("expected a public sample for pca_source='public', got None")
        result, ledger = public_pca(public, k)
    elif source == "lap":
        result, ledger = dp_pca_laplace(rng, z, k, epsilon=epsilon, lower=-1.0, upper=1.0)
    else:
        if not 0.0 < delta < 1.0:
            raise ValueError(f"expected delta in (0, 1) for pca_source='analyze-gauss', got {delta}")
        noise_multiplier = calibrate(
            lambda s: ev.ComposedDpEvent([ev.GaussianDpEvent(s), ev.PureDpEvent(model_epsilon)]),
            target_epsilon=epsilon + model_epsilon,
            target_delta=delta,
        )
        result, ledger = dp_pca_gaussian(rng, z / math.sqrt(d), k, noise_multiplier=noise_multiplier)
    return Subspace(np.array(result.components), np.array(result.centre)), ledger


def fit(
    rng: np.random.Generator,
    z: np.ndarray,
    *,
    epsilon: float,
    delta: float = 0.0,
    config: PCAGaussConfig,
    label: np.ndarray | None = None,
    n_classes: int | None = None,
    public: np.ndarray | None = None,
) -> PCAGaussModel:
    """Fit PCA-Gauss (Algorithm 1, 2 or 3 by ``config.mode``) to box-scaled data.

    Args:
      rng: the noise source of every mechanism.
      z: ``(n, d)`` private records in ``[-1, 1]^d`` (see :func:`to_unit_box`).
      epsilon: total epsilon (PCA + model).
      delta: used only by ``pca_source="analyze-gauss"``.
      config: the algorithm and the budget split.
      label: Algorithm 2: ``(n,)`` numeric label in ``[-1, 1]``; Algorithm 3: ``(n,)``
        integer class codes in ``0 .. n_classes - 1``.
      n_classes: Algorithm 3: the size of the public label domain.
      public: ``pca_source="public"``: a declared public sample, box-scaled like ``z``.

    Returns:
      The fitted model; ``model.ledger`` holds the PCA entries (:mod:`jdp.encoding.pca`) followed by
      those of :func:`fit_gaussians`.

    Privacy:
      Add/remove-one neighbours. The PCA (``config.pca_epsilon(epsilon)``, its own ledger
      entries) and the Gaussian model (the rest) compose sequentially; the subspace is then
      public to the model's mechanisms (adaptive composition).
    """
    epsilon = check_positive("epsilon", epsilon)
    z = _check_box(z)
    _check_concrete_mode(config)
    k = config.n_components
    if k > z.shape[1]:
        raise ValueError(f"expected n_components <= number of features {z.shape[1]}, got {k}")
    eps_pca = config.pca_epsilon(epsilon)
    subspace, ledger = fit_components(
        rng, z, k=k, source=config.pca_source, epsilon=eps_pca, delta=delta, public=public,
        model_epsilon=epsilon - eps_pca,
    )
    return fit_gaussians(
        rng, z, subspace, epsilon=epsilon - eps_pca, config=config, ledger=ledger,
        label=label, n_classes=n_classes,
    )


def fit_gaussians(
    rng: np.random.Generator,
    z: np.ndarray,
    subspace: Subspace,
    *,
    epsilon: float,
    config: PCAGaussConfig,
    ledger: PrivacyLedger | None = None,
    label: np.ndarray | None = None,
    n_classes: int | None = None,
) -> PCAGaussModel:
    """The Gaussian model of PCA-Gauss on a given, data-independent subspace.

    ``subspace`` must not depend on ``z`` except through mechanisms already in ``ledger``
    (a public or DP PCA, an orthonormalised random projection -- e.g. the Q factor of a
    Gaussian matrix; :class:`Subspace` refuses non-orthonormal columns, whose features would
    exceed the calibrated sensitivities -- or the identity: no reduction).

    Returns:
      The model; its ledger is ``ledger`` followed by ``"pca-gauss/count"``,
      ``"pca-gauss/mean"``, ``"pca-gauss/covariance"`` (Algorithms 1, 2) or by one
      ``"pca-gauss/classes"`` entry (Algorithm 3).

    Privacy:
      Add/remove-one. :func:`release_gaussian` on the Lemma-1 features (plus the label for
      Algorithm 2): pure ``epsilon``-DP. Algorithm 3 runs it on each class's records at
      ``epsilon`` each: the classes partition the records and one record touches one class,
      so they compose in parallel (``ParallelComposedDpEvent``: the maximum over classes,
      ``epsilon``); the class sizes are released as noisy counts.
    """
    epsilon = check_positive("epsilon", epsilon)
    z = _check_box(z)
    _check_concrete_mode(config)
    ledger = PrivacyLedger() if ledger is None else ledger
    u = subspace.features(z)
    budget = config.model_budget(epsilon)
    if config.mode == "mixture":
        codes = _class_codes(label, z.shape[0], n_classes)
        gaussians, events = [], []
        for c in range(n_classes):
            g, evs = release_gaussian(
                rng, u[codes == c], budget=budget, relation=ADD_OR_REMOVE_ONE, with_label=False
            )
            gaussians.append(g)
            events.append(ev.ComposedDpEvent(evs))
        ledger = ledger.record("pca-gauss/classes", ev.ParallelComposedDpEvent(events))
        return PCAGaussModel(subspace, tuple(gaussians), config.mode, ledger)
    if config.mode == "supervised":
        u = np.column_stack([u, _numeric_label(label, z.shape[0])])
    g, events = release_gaussian(
        rng, u, budget=budget, relation=ADD_OR_REMOVE_ONE, with_label=config.mode == "supervised"
    )
    for name, event in zip(("count", "mean", "covariance"), events, strict=True):
        ledger = ledger.record(f"pca-gauss/{name}", event)
    return PCAGaussModel(subspace, (g,), config.mode, ledger)


def _check_concrete_mode(config: PCAGaussConfig) -> None:
    if config.mode == "auto":
        raise ValueError("mode='auto' is resolved from a table's schema; give an explicit mode")


def _check_box(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2 or not np.all(np.isfinite(z)) or np.any(np.abs(z) > 1.0):
        raise ValueError("expected z to be a finite 2-D array inside [-1, 1]^d (use to_unit_box)")
    return z


def _class_codes(label: np.ndarray | None, n: int, n_classes: int | None) -> np.ndarray:
    if label is None or n_classes is None:
        raise ValueError("expected label and n_classes for mode='mixture', got None")
    check_count("n_classes", n_classes, minimum=1)
    codes = np.asarray(label)
    if codes.shape != (n,) or not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"expected integer class codes of shape ({n},), got {codes.dtype} {codes.shape}")
    if codes.min() < 0 or codes.max() >= n_classes:
        raise ValueError(f"expected class codes in 0..{n_classes - 1}, got {codes.min()}..{codes.max()}")
    return codes


def _numeric_label(label: np.ndarray | None, n: int) -> np.ndarray:
    if label is None:
        raise ValueError("expected a label for mode='supervised', got None")
    t = np.asarray(label, dtype=np.float64)
    if t.shape != (n,) or not np.all(np.isfinite(t)) or np.any(np.abs(t) > 1.0):
        raise ValueError(f"expected a finite label of shape ({n},) inside [-1, 1] (box-scaled)")
    return t


def class_weights(model: PCAGaussModel) -> np.ndarray:
    """Mixture weights from the noisy counts: ``max(count, 0)`` normalised; uniform if all
    counts are <= 0 (post-processing; a class with a noisy count <= 0 is never sampled)."""
    counts = np.array([max(g.count, 0.0) for g in model.gaussians])
    if counts.sum() <= 0:
        return np.full(len(counts), 1.0 / len(counts))
    return counts / counts.sum()


def sample_features(
    rng: np.random.Generator, model: PCAGaussModel, n: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``n`` synthetic records in PCA-feature space (post-processing, no privacy cost).

    Returns ``(u, label)``: Algorithm 1: label ``None``; Algorithm 2: ``u`` without the
    label column and the label clipped to ``[-1, 1]``; Algorithm 3: class codes, the class
    sizes drawn from a multinomial with :func:`class_weights`.
    """
    check_count("n", n, minimum=1)
    if model.mode == "mixture":
        sizes = rng.multinomial(n, class_weights(model))
        parts = [sample_gaussian(rng, g, m) for g, m in zip(model.gaussians, sizes, strict=True)]
        codes = np.repeat(np.arange(len(sizes)), sizes)
        order = rng.permutation(n)
        return np.concatenate(parts)[order], codes[order]
    w = sample_gaussian(rng, model.gaussians[0], n)
    if model.mode == "supervised":
        return w[:, :-1], np.clip(w[:, -1], -1.0, 1.0)
    return w, None


def sample(
    rng: np.random.Generator, model: PCAGaussModel, n: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``n`` synthetic records mapped back to the box ``[-1, 1]^d`` (clipped) and their label."""
    u, label = sample_features(rng, model, n)
    return model.subspace.to_box(u), label


# -- tables: the Synthesizer protocol -------------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    """Where the label sits in the encoded row (min-max to [-1, 1], one-hot categoricals);
    a function of the public schema and config only."""

    encoder: TableEncoder
    mode: Mode
    label: Span | None

    @classmethod
    def of(cls, schema: Schema, config: PCAGaussConfig) -> _Layout:
        mode = config.mode
        if mode == "auto":
            mode = "mixture" if schema.target is not None else "unsupervised"
        encoder = TableEncoder(schema, continuous_range=(-1.0, 1.0))
        name = config.label_column if config.label_column is not None else schema.target
        if mode == "unsupervised":
            return cls(encoder, mode, None)
        if name is None:
            raise ValueError(f"mode={mode!r} needs a label: set label_column or a schema target")
        span = next((s for s in encoder.spans if s.name == name), None)
        if span is None:
            raise ValueError(f"label column {name!r} is not in the schema")
        if mode == "mixture" and span.kind != "categorical":
            raise ValueError(f"mode='mixture' needs a categorical label, got {name!r} ({span.kind})")
        if mode == "supervised" and span.kind == "categorical" and span.size != 2:
            raise ValueError(
                f"mode='supervised' needs a numeric or two-category label, {name!r} has {span.size}"
            )
        if encoder.width - span.size < 1:
            raise ValueError("the schema has no feature column besides the label")
        return cls(encoder, mode, span)

    @property
    def feature_index(self) -> np.ndarray:
        index = np.arange(self.encoder.width)
        if self.label is None:
            return index
        return index[(index < self.label.start) | (index >= self.label.stop)]

    def split(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Encoded rows -> (box-scaled features, label: tau in [-1, 1] or class codes)."""
        z = np.clip(e[:, self.feature_index], -1.0, 1.0)
        if self.label is None:
            return z, None
        block = e[:, self.label.start : self.label.stop]
        if self.mode == "mixture":
            return z, np.argmax(block, axis=1)
        return z, block[:, 0] if self.label.size == 1 else block[:, 1] - block[:, 0]

    def join(self, z: np.ndarray, label: np.ndarray | None) -> np.ndarray:
        """Inverse of :meth:`split` (for ``TableEncoder.decode``)."""
        e = np.zeros((z.shape[0], self.encoder.width))
        e[:, self.feature_index] = z
        if self.label is not None:
            if self.mode == "mixture":
                e[np.arange(len(z)), self.label.start + label] = 1.0
            elif self.label.size == 1:
                e[:, self.label.start] = label
            else:
                e[:, self.label.start : self.label.stop] = np.column_stack([-label, label])
        return e


def fit_table(key: jax.Array, data: Table, budget: PrivacyBudget, config: PCAGaussConfig) -> FittedModel:
    """The Synthesizer-protocol ``fit`` (registered as ``"pca-gauss"``): encode the table
    with its public schema, run :func:`fit`, keep the released parameters and the ledger."""
    layout = _Layout.of(data.schema, config)
    z, label = layout.split(layout.encoder.encode(data))
    public = None
    if config.pca_source == "public":
        if config.public_data is None:
            raise ValueError("pca_source='public' needs public_data (a CSV of public records)")
        public = layout.split(layout.encoder.encode(pd.read_csv(config.public_data)))[0]
    n_classes = len(data.schema[layout.label.name].categories) if layout.mode == "mixture" else None
    model = fit(
        numpy_rng(key), z, epsilon=budget.epsilon, delta=budget.delta,
        config=dataclasses.replace(config, mode=layout.mode), label=label, n_classes=n_classes,
        public=public,
    )
    params = {
        "components": model.subspace.components,
        "centre": model.subspace.centre,
        "counts": np.array([g.count for g in model.gaussians]),
        "means": np.stack([g.mean for g in model.gaussians]),
        "covs": np.stack([g.cov for g in model.gaussians]),
    }
    return FittedModel("pca-gauss", params, data.schema, config, budget, model.ledger)


def sample_table(key: jax.Array, fitted: FittedModel, n: int) -> pd.DataFrame:
    """The Synthesizer-protocol ``sample``: draw, map back, decode (post-processing)."""
    layout = _Layout.of(fitted.schema, fitted.config)
    p = fitted.params
    gaussians = tuple(
        Gaussian(count=float(c), mean=np.asarray(m), cov=np.asarray(s))
        for c, m, s in zip(p["counts"], p["means"], p["covs"], strict=True)
    )
    subspace = Subspace(np.asarray(p["components"]), np.asarray(p["centre"]))
    model = PCAGaussModel(subspace, gaussians, layout.mode, fitted.ledger)
    z, label = sample(numpy_rng(key), model, n)
    return layout.encoder.decode(layout.join(z, label))


register(
    Method(
        name="pca-gauss",
        config_cls=PCAGaussConfig,
        fit=fit_table,
        sample=sample_table,
        description="PCA-Gauss: Gaussian / per-class Gaussians on a DP principal subspace (pure eps)",
    )
)


class PCAGauss(Synthesizer):
    """``PCAGauss(epsilon=1, schema=..., n_components=5).fit(df).sample(n)``."""

    method = "pca-gauss"
