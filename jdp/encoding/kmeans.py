"""DP k-means (noisy Lloyd) on raw or random-Fourier features (DPGM Sec. 4.1).

DPGM's DPNorm (Alg. 3, the noisy norm histogram) has one copy, in the DP-SGD step where DPGM
uses it: :func:`jdp.dpsgd.clip_schedules.dpnorm`.

* :func:`dp_kmeans` -- standard DP k-means (Blum et al. 2005, "SuLQ"; the baseline of DPGM
  Fig. 3): records clipped to L2 norm ``C``, each Lloyd iteration releases noisy cluster
  counts and noisy cluster sums, centres are their ratio.
* :func:`dp_kernel_kmeans` -- DPGM Algorithm 2: the same noisy Lloyd iterations on random
  Fourier features of an RBF kernel (:mod:`jdp.encoding.rff`), whose norm is at most ``sqrt(2)``
  for any input (clipped to ``C = 1`` by default, as in DPGM Sec. 6.2).
* :func:`assign_clusters` -- the final assignment of records to the released centres.

Initial centres are public (e.g. records of a public sample) or drawn without looking at
the data. The released output is the centres; the assignment of *private* records is itself
private (see :func:`assign_clusters`).

Feature maps are applied chunk by chunk inside every pass (``feature_fn``), so a 1M-row
table never materialises its feature matrix.

The mechanisms are defined for every number of rows, 0 included: the released counts and
sums are sums over records (zero with no records; the noise makes them private all the
same), ``k`` may exceed the (private) row count, and nothing refuses, warns or branches on
it (DESIGN rule 7). Records with a NaN or infinite entry (or feature) are dropped from
the sums, as if absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.optimize import linear_sum_assignment

from accounting import events as ev
from accounting.compose import BEST
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count, check_nonnegative, check_positive
from jdp.encoding.rff import RandomFourierFeatures, draw_rff
from jdp.mechanisms.noise import clip_rows, gaussian_releases
from jdp.mechanisms.release import gaussian_iterations_event, iterate_releases, run_calibrated
from jdp.mechanisms.suffstats import check_data_matrix, chunked_sum, finite_rows, iter_chunks

FeatureFn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, kw_only=True)
class KMeansResult:
    """Released DP k-means centres (in feature space) and the public map that defines it.

    Attributes:
      centres: ``(k, D)`` centres in the space of ``clip(feature_map(x), l2_clip_norm)``.
      l2_clip_norm: ``C``, the record norm bound the centres were computed under.
      feature_map: the random Fourier feature map, or ``None`` for raw features.
    """

    centres: np.ndarray
    l2_clip_norm: float
    feature_map: RandomFourierFeatures | None = None

    def __post_init__(self) -> None:
        if self.centres.ndim != 2:
            raise ValueError(f"expected centres of shape (k, D), got {self.centres.shape}")
        self.centres.setflags(write=False)

    def features(self, chunk: np.ndarray) -> np.ndarray:
        """``clip(feature_map(chunk), C)`` for a float64 chunk of raw rows."""
        z = chunk if self.feature_map is None else self.feature_map(chunk)
        return clip_rows(z, self.l2_clip_norm)


def nearest_centre(z: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of the nearest centre (squared Euclidean) for every row of ``z``: the one
    assignment rule of k-means, DPGM's partition and ClustMix's strict clusters."""
    dist = np.sum(centres * centres, axis=1) - 2.0 * z @ centres.T
    return np.argmin(dist, axis=1)


def lloyd_statistics(
    x: np.ndarray, centres: np.ndarray, *, l2_clip_norm: float, feature_fn: FeatureFn | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pre-noise statistics of one Lloyd iteration: per-cluster counts ``(k,)`` and sums
    ``(k, D)`` of the clipped features ``clip(feature_fn(x_i), C)`` of the records whose
    nearest centre is ``k`` (the exact, private values). Zeros for no records; a record
    with a non-finite entry or feature counts nowhere."""
    k = centres.shape[0]

    def part(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = chunk if feature_fn is None else finite_rows(feature_fn(chunk))
        z = clip_rows(z, l2_clip_norm)
        onehot = np.eye(k)[nearest_centre(z, centres)]
        return onehot.sum(axis=0), onehot.T @ z

    return chunked_sum(part, x, drop_nonfinite=True)


def noisy_lloyd_step(
    rng: np.random.Generator,
    x: np.ndarray,
    centres: np.ndarray,
    *,
    noise_multiplier: float,
    l2_clip_norm: float,
    feature_fn: FeatureFn | None = None,
    secure_noise: bool = False,
) -> tuple[np.ndarray, ev.ComposedDpEvent, tuple[np.ndarray, np.ndarray]]:
    """One DP Lloyd iteration (DPGM Alg. 2 lines 8-11).

    Releases ``counts + N(0, z^2)`` and ``sums + N(0, (z C)^2 I)``; new centre
    ``sums_k / counts_k`` (noisy) projected into the C-ball, or the old centre where the
    noisy count is below 1 (post-processing of the release: safe for any counts, e.g. a
    cluster with no record, or no record at all).

    Returns:
      ``(new_centres, ComposedDpEvent([GaussianDpEvent(z)] * 2), (noisy_counts, noisy_sums))``.

    Privacy:
      Add/remove-one: one record adds 1 to one count (L2 sensitivity 1) and its clipped
      feature (norm ``<= C``) to one sum (sensitivity ``C``). DPGM states ``sqrt(2)`` and
      ``sqrt(2) C`` for replace-one; the sums' replace-one value is ``2C`` (docs/privacy.md
      "DP Lloyd", docs/errata.md). ``secure_noise``: a clamp-and-round mitigation
      without proof (:mod:`jdp.mechanisms.noise`).
    """
    (counts, sums), event = gaussian_releases(
        rng,
        lloyd_statistics(x, centres, l2_clip_norm=l2_clip_norm, feature_fn=feature_fn),
        (1.0, l2_clip_norm),
        noise_multiplier=noise_multiplier,
        secure_noise=secure_noise,
    )
    ok = counts >= 1.0
    new = np.array(centres, dtype=np.float64)
    new[ok] = clip_rows(sums[ok] / counts[ok, None], l2_clip_norm)
    return new, event, (counts, sums)


def random_centres(
    rng: np.random.Generator, k: int, dim: int, *, l2_clip_norm: float
) -> np.ndarray:
    """Data-independent initial centres: i.i.d. ``N(0, C^2 / (4 D))`` coordinates, in the C-ball."""
    k = check_count("k", k, minimum=1)
    dim = check_count("dim", dim, minimum=1)
    return clip_rows(
        rng.normal(0.0, l2_clip_norm / (2.0 * np.sqrt(dim)), size=(k, dim)), l2_clip_norm
    )


def _check_common(
    x: object, k: int, steps: int, noise_multiplier: float
) -> tuple[np.ndarray, int, int]:
    x = check_data_matrix(x, private=True)  # any row count: no check reads the rows
    k = check_count("k", k, minimum=1)
    check_nonnegative("noise_multiplier", noise_multiplier)
    return x, k, check_count("steps", steps, minimum=1)


def _check_init(init: object, k: int, dim: int, what: str) -> np.ndarray:
    init = check_data_matrix(init, name="init")
    if init.shape != (k, dim):
        raise ValueError(f"expected init of shape ({k}, {dim}) ({what}), got {init.shape}")
    return np.asarray(init, dtype=np.float64)


def dp_kmeans(
    rng: np.random.Generator,
    x: np.ndarray,
    k: int,
    *,
    noise_multiplier: float,
    steps: int,
    l2_clip_norm: float,
    init: np.ndarray | None = None,
    feature_map: RandomFourierFeatures | None = None,
    secure_noise: bool = False,
) -> tuple[KMeansResult, PrivacyLedger]:
    """Standard DP k-means (DPGM's baseline, Blum et al. 2005): noisy Lloyd iterations on
    the raw features, or on ``feature_map(x)`` (the loop of :func:`dp_kernel_kmeans`).

    Args:
      rng: noise source (and the data-independent initial centres).
      x: ``(n, m)`` private records, any ``n >= 0``; their (mapped) features are clipped to
        L2 norm ``l2_clip_norm``; a record with a NaN or infinite entry is dropped.
      k: number of clusters (any ``k >= 1``: the row count is private and never compared
        with ``k``).
      noise_multiplier: ``z``: noise std ``z`` on counts and ``z C`` on sums.
      steps: Lloyd iterations ``T``, each one ledger entry "dp-kmeans".
      l2_clip_norm: ``C``, declared (e.g. ``sqrt(m)`` for pixels in [0, 1], as DPGM Sec. 6.2
        uses 28 for MNIST).
      init: ``(k, D)`` public initial centres in feature space (``D = m`` for raw features;
        e.g. public records); default :func:`random_centres`.
      feature_map: a public feature map (drawn without the data); ``None``: raw features.
      secure_noise: round the Gaussian releases to a power-of-two grid, clamped to a public
        bound: a mitigation of Mironov's (2012) floating-point channel, not a proof
        (:mod:`jdp.mechanisms.noise`); the events are unchanged.

    Returns:
      ``(KMeansResult, ledger)``; ``T`` entries of ``ComposedDpEvent([GaussianDpEvent(z)]*2)``.

    Privacy:
      See :func:`noisy_lloyd_step`: add/remove-one, sensitivities 1 (counts) and ``C``
      (sums) per iteration; ``T``-fold adaptive composition. Defined for every ``n``
      including 0, with the same ledger (nothing depends on the private row count).
    """
    x, k, steps = _check_common(x, k, steps, noise_multiplier)
    c = check_positive("l2_clip_norm", l2_clip_norm)
    _check_feature_map(feature_map, x.shape[1])
    dim = x.shape[1] if feature_map is None else feature_map.n_components
    centres = (
        random_centres(rng, k, dim, l2_clip_norm=c)
        if init is None
        else clip_rows(_check_init(init, k, dim, "centres in feature space"), c)
    )

    def step(current: np.ndarray) -> tuple[np.ndarray, ev.ComposedDpEvent]:
        new, event, _ = noisy_lloyd_step(
            rng,
            x,
            current,
            noise_multiplier=noise_multiplier,
            l2_clip_norm=c,
            feature_fn=feature_map,
            secure_noise=secure_noise,
        )
        return new, event

    centres, ledger = iterate_releases(
        step, centres, steps, "dp-kmeans", name="DP k-means iteration"
    )
    return KMeansResult(centres=centres, l2_clip_norm=c, feature_map=feature_map), ledger


def _check_feature_map(feature_map: RandomFourierFeatures | None, n_features_in: int) -> None:
    if feature_map is not None and feature_map.n_features_in != n_features_in:
        raise ValueError(
            f"expected a feature map for {n_features_in} inputs, got {feature_map.n_features_in}"
        )


def dp_kernel_kmeans(
    rng: np.random.Generator,
    x: np.ndarray,
    k: int,
    *,
    noise_multiplier: float,
    steps: int,
    gamma: float,
    n_components: int = 200,
    l2_clip_norm: float = 1.0,
    init_public: np.ndarray | None = None,
    feature_map: RandomFourierFeatures | None = None,
    secure_noise: bool = False,
) -> tuple[KMeansResult, PrivacyLedger]:
    """Private kernel k-means with random Fourier features (DPGM Algorithm 2, RBF kernel).

    Draws ``z`` (:func:`jdp.encoding.rff.draw_rff`; free), then runs :func:`dp_kmeans`'s noisy Lloyd
    iterations on ``clip(z(x), C)``, computing the features chunk by chunk.

    Args:
      rng: noise source; also draws the feature map and (without ``init_public``) the
        initial centres.
      x: ``(n, m)`` private records, any ``n >= 0`` (as :func:`dp_kmeans`).
      k: number of clusters (any ``k >= 1``).
      noise_multiplier: ``z`` (std ``z`` on counts, ``z C`` on feature sums).
      steps: Lloyd iterations (DPGM: 20).
      gamma: RBF width of ``exp(-gamma ||x - y||^2)``.
      n_components: ``D``, the number of Fourier features (DPGM: 200).
      l2_clip_norm: ``C``; ``||z(x)|| <= sqrt(2)`` always, ``E ||z(x)|| <= 1`` (DPGM Thm. 2),
        so ``C = 1`` (DPGM's choice, enforced here by clipping) loses little and
        ``C = sqrt(2)`` clips nothing.
      init_public: ``(k, m)`` *public* raw records whose features are the initial centres
        (DPGM footnote 3); default: random features of :func:`random_centres` in feature space.
      feature_map: a previously drawn map (public) to reuse instead of drawing one.

    Returns:
      ``(KMeansResult, ledger)`` as :func:`dp_kmeans`; ``result.feature_map`` is the map.

    Privacy:
      As :func:`dp_kmeans` with sensitivities 1 and ``C``; the feature map and the public
      initial centres cost nothing. No DPNorm call is needed: the bound is a-priori
      (DPGM Sec. 5: ``alpha_G1 = 0``).
    """
    x, k, steps = _check_common(x, k, steps, noise_multiplier)
    c = check_positive("l2_clip_norm", l2_clip_norm)
    _check_feature_map(feature_map, x.shape[1])
    if feature_map is None:
        feature_map = draw_rff(rng, x.shape[1], n_components, gamma=gamma)
    init = (
        None
        if init_public is None
        else feature_map(_check_init(init_public, k, x.shape[1], "public raw records"))
    )
    return dp_kmeans(
        rng,
        x,
        k,
        noise_multiplier=noise_multiplier,
        steps=steps,
        l2_clip_norm=c,
        init=init,
        feature_map=feature_map,
        secure_noise=secure_noise,
    )


def dp_kmeans_event(noise_multiplier: float, steps: int) -> ev.DpEvent:
    """What :func:`dp_kmeans` / :func:`dp_kernel_kmeans` spend (data-free, for planning)."""
    return gaussian_iterations_event(noise_multiplier, releases=2, steps=steps)


def dp_kmeans_calibrated(
    rng: np.random.Generator,
    x: np.ndarray,
    k: int,
    *,
    target_epsilon: float,
    target_delta: float,
    steps: int,
    accountant: str = BEST,
    **kwargs: object,
) -> tuple[KMeansResult, PrivacyLedger]:
    """:func:`dp_kmeans` with the smallest noise multiplier meeting ``(target_epsilon,
    target_delta)`` over ``steps`` Lloyd iterations
    (:func:`jdp.mechanisms.release.run_calibrated` on :func:`dp_kmeans_event`); ``kwargs``
    go to :func:`dp_kmeans` (pass ``feature_map=`` for kernel k-means on drawn features)."""
    run = partial(dp_kmeans, rng, x, k, steps=steps, **kwargs)
    plan = partial(dp_kmeans_event, steps=steps)
    return run_calibrated(run, plan, target_epsilon, target_delta, accountant=accountant)


def assign_clusters(result: KMeansResult, x: np.ndarray) -> np.ndarray:
    """Index of the nearest released centre for every row of ``x`` (chunked).

    **Privacy: the assignment of private records is private, data-dependent output.** It
    is not covered by the ledger of the k-means run and must never be released (nor its
    cluster sizes). It may only feed later *accounted* mechanisms -- e.g. DPGM's per-cluster
    DP-SGD, where each record is in exactly one cluster so the per-cluster trainings are a
    parallel composition -- or be applied to public/synthetic rows, which is free.

    Any number of rows, 0 included (an empty assignment). A row with a non-finite entry is
    not refused (that would depend on the private data): it gets an arbitrary cluster by the
    same per-record rule, and the accounted mechanisms downstream drop it.
    """
    dim = (
        result.centres.shape[1] if result.feature_map is None else result.feature_map.n_features_in
    )
    x = check_data_matrix(x, n_cols=dim, private=True)
    parts = [nearest_centre(result.features(c), result.centres) for c in iter_chunks(x)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def clustering_accuracy(labels_true: np.ndarray, labels_pred: np.ndarray) -> float:
    """Unsupervised clustering accuracy (ACC) with the best one-to-one Hungarian matching
    of cluster indices to labels (DPGM Sec. 6.2)."""
    labels_true, labels_pred = np.asarray(labels_true), np.asarray(labels_pred)
    if labels_true.shape != labels_pred.shape or labels_true.ndim != 1:
        raise ValueError(
            f"expected two 1-D label arrays of equal length, got {labels_true.shape} and {labels_pred.shape}"
        )
    _, t = np.unique(labels_true, return_inverse=True)
    _, p = np.unique(labels_pred, return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1))
    np.add.at(table, (p, t), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / len(labels_true))
