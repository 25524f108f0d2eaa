"""PCA-Gauss's model: Algorithms 1-3 on box-scaled arrays, sampling, and the registry's
array functions (:func:`fit_arrays`, :func:`sample_arrays` on :mod:`.codec`'s encoding).

* Algorithm 1 (unsupervised): the PCA-induced covariance of the data, made DP, sampled.
* Algorithm 2 (supervised): the augmented covariance of the PCA features *and* the label,
  with an independently derived PCA, made DP, sampled; the label is read off the last
  coordinate of each sample.
* Algorithm 3 (classification): one Gaussian per class from DP class means and covariances;
  the classes partition the records, so the per-class releases compose in parallel.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget
from accounting import events as ev
from accounting.calibrate import calibrate
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count, check_positive
from jdp.encoding.pca import dp_pca_gaussian, dp_pca_laplace, public_pca
from jdp.mechanisms.noise import gaussian_event, laplace_mechanism
from jdp.random import numpy_rng
from jdp.synth.base import Params
from jdp.synth.pca_gauss.codec import PCAGaussCodec
from jdp.synth.pca_gauss.config import (
    Mode,
    PCAGaussConfig,
    PcaSource,
    auto_components,
    auto_source,
)
from jdp.synth.pca_gauss.gaussian import (
    ADD_OR_REMOVE_ONE,
    Gaussian,
    release_gaussian,
    sample_gaussian,
)
from jdp.synth.pca_gauss.subspace import Blocks, Subspace, one_hot_centre, row_radius


@dataclass(frozen=True)
class PCAGaussModel:
    """A fitted PCA-Gauss model: everything in it is public (released or post-processed).

    Attributes:
      subspace: the independently derived principal subspace and its centre.
      gaussians: one Gaussian (Algorithms 1, 2) or one per class (Algorithm 3) on the PCA
        features (Algorithm 2: label last).
      mode: the algorithm, see :class:`PCAGaussConfig`.
      ledger: every release the model was built from (``None`` for a model rebuilt from
        saved parameters to sample, :func:`released_model`).
    """

    subspace: Subspace
    gaussians: tuple[Gaussian, ...]
    mode: Mode
    ledger: PrivacyLedger | None


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
    blocks: Blocks = (),
    secure_noise: bool = False,
) -> tuple[Subspace, PrivacyLedger]:
    """The independent principal subspace of the box-scaled data ``z`` (via :mod:`jdp.encoding.pca`),
    with its public centre ``c`` and radius ``R = max ||z - c||`` (:func:`row_radius`, which
    knows that the columns of each of ``blocks`` hold a one-hot vector): ``c`` is
    :func:`one_hot_centre` for the DP sources, the public sample's mean for ``"public"``
    (without that centre, a centred public PCA misses the data's mean).

    * ``"lap"``: Lap-PCA on ``z`` in ``[-1, 1]^d`` (its scatter centred on the box
      midpoint), pure ``epsilon``-DP.
    * ``"analyze-gauss"``: Analyze Gauss on ``(z - c) / R`` (norm <= 1, so the clip at 1 never
      binds). Its noise multiplier is the smallest for which the Gaussian release composed
      with a pure ``model_epsilon``-DP model meets ``(epsilon + model_epsilon, delta)`` under
      the figure the ledger reports, the best rigorous accountant's
      (:func:`accounting.calibrate.calibrate`; the model's three Laplace releases are
      ``model_epsilon``-DP together, so a pure ``model_epsilon`` event dominates them).
    * ``"public"``: PCA of the declared public sample (box-scaled like ``z``), no cost.

    Lap-PCA releases by Mironov's snapping mechanism (exact); ``secure_noise`` selects the
    clamp-and-round mitigation for Analyze Gauss (:mod:`jdp.mechanisms.noise`).
    """
    d = z.shape[1]
    centre = one_hot_centre(d, blocks)
    if source == "public":
        if public is None:
            raise ValueError("expected a public sample for pca_source='public', got None")
        result, ledger = public_pca(public, k)
        centre = np.array(result.centre)
    elif source == "lap":
        result, ledger = dp_pca_laplace(
            rng, z, k, epsilon=epsilon, lower=-1.0, upper=1.0, secure_noise=True
        )
    elif source == "analyze-gauss":
        if not 0.0 < delta < 1.0:
            raise ValueError(
                f"expected delta in (0, 1) for pca_source='analyze-gauss', got {delta}"
            )
        noise_multiplier = calibrate(
            lambda s: ev.ComposedDpEvent([gaussian_event(s), ev.PureDpEvent(model_epsilon)]),
            target_epsilon=epsilon + model_epsilon,
            target_delta=delta,
        )
        radius = row_radius(centre, blocks)
        result, ledger = dp_pca_gaussian(
            rng,
            (z - centre) / radius,
            k,
            noise_multiplier=noise_multiplier,
            secure_noise=secure_noise,
        )
    else:
        raise ValueError(f"expected a resolved pca_source, got {source!r}")
    components = np.array(result.components)
    return Subspace(components, centre, row_radius(centre, blocks)), ledger


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
    blocks: Blocks = (),
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
      blocks: ``(start, stop)`` column ranges of ``z`` that hold one-hot vectors (public,
        from the schema): they set the public centre and radius (:func:`row_radius`).

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
    config, ledger, eps_size = _resolve(rng, z, config, epsilon, delta, n_classes)
    epsilon -= eps_size
    eps_pca = config.pca_epsilon(epsilon)
    subspace, pca_ledger = fit_components(
        rng,
        z,
        k=config.n_components,
        source=config.pca_source,
        epsilon=eps_pca,
        delta=delta,
        public=public,
        model_epsilon=epsilon - eps_pca + eps_size,
        blocks=blocks,
        secure_noise=config.secure_noise,
    )
    ledger = ledger + pca_ledger
    return fit_gaussians(
        rng,
        z,
        subspace,
        epsilon=epsilon - eps_pca,
        config=config,
        ledger=ledger,
        label=label,
        n_classes=n_classes,
    )


def _resolve(
    rng: np.random.Generator,
    z: np.ndarray,
    config: PCAGaussConfig,
    epsilon: float,
    delta: float,
    n_classes: int | None,
) -> tuple[PCAGaussConfig, PrivacyLedger, float]:
    """The config with a concrete ``pca_source`` and ``n_components``, the ledger of what
    choosing them spent, and that epsilon.

    ``pca_source="auto"``: :func:`auto_source` (public: ``delta``). ``n_components=None``: a
    noisy record count (Laplace, sensitivity 1 under add/remove, ``size_fraction`` of
    epsilon, entry ``"pca-gauss/size"``) feeds :func:`auto_components` with the public width
    and the model's epsilon; the raw ``n`` never does.
    """
    d = z.shape[1]
    source = auto_source(delta) if config.pca_source == "auto" else config.pca_source
    config = dataclasses.replace(config, pca_source=source)
    ledger, eps_size, k = PrivacyLedger(), 0.0, config.n_components
    if k is None:
        eps_size = config.size_fraction * epsilon
        n_hat, event = laplace_mechanism(
            rng,
            np.array(float(z.shape[0])),
            l1_sensitivity=1.0,
            epsilon=eps_size,
        )
        ledger = ledger.record("pca-gauss/size", event)
        rest = epsilon - eps_size
        model_eps = config.model_budget(rest - config.pca_epsilon(rest)).second
        groups = n_classes if config.mode == "mixture" and n_classes else 1
        k = auto_components(width=d, epsilon=model_eps, n_hat=float(n_hat), n_groups=groups)
    if k > d:
        raise ValueError(f"expected n_components <= number of features {d}, got {k}")
    return dataclasses.replace(config, n_components=k), ledger, eps_size


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
                rng,
                u[codes == c],
                budget=budget,
                relation=ADD_OR_REMOVE_ONE,
                with_label=False,
            )
            gaussians.append(g)
            events.append(ev.ComposedDpEvent(evs))
        ledger = ledger.record("pca-gauss/classes", ev.ParallelComposedDpEvent(events))
        return PCAGaussModel(subspace, tuple(gaussians), config.mode, ledger)
    if config.mode == "supervised":
        u = np.column_stack([u, _numeric_label(label, z.shape[0])])
    g, events = release_gaussian(
        rng,
        u,
        budget=budget,
        relation=ADD_OR_REMOVE_ONE,
        with_label=config.mode == "supervised",
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
        raise ValueError(
            f"expected integer class codes of shape ({n},), got {codes.dtype} {codes.shape}"
        )
    if np.any((codes < 0) | (codes >= n_classes)):  # no codes (no rows) is fine
        raise ValueError(f"expected class codes in 0..{n_classes - 1}")
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


# -- the registry's array functions -----------------------------------------------------------
def model_params(model: PCAGaussModel) -> dict[str, np.ndarray]:
    """The released arrays of ``model`` a fitted model keeps (:func:`released_model` inverts)."""
    return {
        "components": model.subspace.components,
        "centre": model.subspace.centre,
        "radius": np.array(model.subspace.radius),
        "counts": np.array([g.count for g in model.gaussians]),
        "means": np.stack([g.mean for g in model.gaussians]),
        "covs": np.stack([g.cov for g in model.gaussians]),
    }


def released_model(params: Params, mode: Mode) -> PCAGaussModel:
    """The :class:`PCAGaussModel` of saved parameters (no ledger: sampling reads none)."""
    gaussians = tuple(
        Gaussian(count=float(c), mean=np.asarray(m), cov=np.asarray(s))
        for c, m, s in zip(params["counts"], params["means"], params["covs"], strict=True)
    )
    subspace = Subspace(
        np.asarray(params["components"]), np.asarray(params["centre"]), float(params["radius"])
    )
    return PCAGaussModel(subspace, gaussians, mode, None)


def fit_arrays(
    key: jax.Array,
    encoded: tuple[np.ndarray, np.ndarray | None],
    codec: PCAGaussCodec,
    budget: PrivacyBudget,
    config: PCAGaussConfig,
) -> tuple[dict[str, np.ndarray], PrivacyLedger]:
    """The registry's fit: :func:`fit` on the codec's ``(z, label)`` in its resolved mode,
    with the public sample of ``config.public_data`` encoded alike for ``pca_source="public"``."""
    z, label = encoded
    public = None
    if config.pca_source == "public":
        if config.public_data is None:
            raise ValueError("pca_source='public' needs public_data (a CSV of public records)")
        public = codec.encode(pd.read_csv(config.public_data))[0]
    model = fit(
        numpy_rng(key),
        z,
        epsilon=budget.epsilon,
        delta=budget.delta,
        config=dataclasses.replace(config, mode=codec.mode),
        label=label,
        n_classes=codec.n_classes,
        public=public,
        blocks=codec.blocks,
    )
    return model_params(model), model.ledger


def sample_arrays(
    key: jax.Array, params: Params, codec: PCAGaussCodec, config: PCAGaussConfig, n: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``n`` draws ``(z, label)`` of the released model for the codec to decode."""
    del config
    return sample(numpy_rng(key), released_model(params, codec.mode), n)
