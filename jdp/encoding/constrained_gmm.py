"""Size-constrained clustering for 3A / ClustMix (numpy, host side).

* :func:`constrained_gmm` -- the paper's ``GMMConstrained(X, n, l_min)``: an isotropic Gaussian
  mixture whose MAP hard assignment keeps every cluster at ``>= l_min`` records (the step
  prior ``p(s) = 0`` for ``s < l_min`` of Eqs. 2-4, Jitta & Klami 2018), fitted by
  classification EM; it falls back to :func:`constrained_kmeans` at a timeout or when the
  mixture degenerates, as the paper's implementation does.
* :func:`constrained_kmeans` -- the same constrained assignment with squared distances.
* :func:`size_constrained_assignment` -- the constrained assignment step both share: the
  unconstrained best cluster of every record, then deficient clusters filled with the records
  that lose least by moving, taken only from clusters above ``l_min``.
* :func:`dp_cluster_centres` / :func:`assign_to_centres` -- strict mode: DP k-means
  (:func:`jdp.encoding.kmeans.dp_kmeans`) or DP-EM (:func:`jdp.encoding.em.dp_em`) releases
  centres; each record is then assigned to its nearest *released* centre, a function of that
  record alone (post-processing per record). No size constraint can be enforced there: it
  would make one record's cluster depend on the others.

**Privacy.** :func:`constrained_gmm` and :func:`constrained_kmeans` read the private data with
no noise: their output is not DP (ClustMix's paper mode, docs/errata.md). Only
:func:`dp_cluster_centres` is a mechanism (it returns its ledger).

References:
  Madl et al. (3A), Sec. "Approximation through Gaussian Mixture Models", Eqs. 1-4 and
  "Implementation Details"; Jitta & Klami 2018; Bradley, Bennett & Demiriz 2000
  (constrained k-means).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from accounting import events as ev
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count, check_positive
from jdp.encoding.em import dp_em, dp_em_event
from jdp.encoding.kmeans import dp_kmeans, dp_kmeans_event, nearest_centre
from jdp.mechanisms.suffstats import check_data_matrix, iter_chunks
from jdp.progress import track
from jdp.verbosity import private_detail

__all__ = [
    "Clustering",
    "assign_to_centres",
    "constrained_gmm",
    "constrained_kmeans",
    "dp_cluster_centres",
    "dp_cluster_event",
    "size_constrained_assignment",
]

DpClustering = Literal["kmeans", "em"]
DP_CLUSTERINGS: tuple[str, ...] = ("kmeans", "em")
_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True, kw_only=True)
class Clustering:
    """A size-constrained clustering (private: computed without noise).

    Attributes:
      means: ``(K, D)`` cluster means.
      variances: ``(K,)`` isotropic variances (``"gmm"``), or the mean squared distance to
        the mean per coordinate (``"kmeans"``).
      labels: ``(n,)`` cluster of each record; every cluster holds ``>= l_min`` records.
      algorithm: ``"gmm"``, or ``"kmeans"`` when the fallback ran.
    """

    means: np.ndarray
    variances: np.ndarray
    labels: np.ndarray
    algorithm: Literal["gmm", "kmeans"]

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=self.means.shape[0])


def _check_sizes(n: int, n_clusters: int, l_min: int) -> tuple[int, int]:
    k = check_count("n_clusters", n_clusters, minimum=1)
    l_min = check_count("l_min", l_min, minimum=1)
    if k * l_min > n:
        raise ValueError(
            f"l_min={l_min} is impossible for {k} clusters: it needs n_clusters * l_min records"
            + private_detail(f"{n} given")
        )
    return k, l_min


def size_constrained_assignment(cost: np.ndarray, l_min: int) -> np.ndarray:
    """A hard assignment of ``n`` records to ``K`` clusters with every cluster ``>= l_min``.

    ``cost[i, k]`` is the cost of record ``i`` in cluster ``k`` (negative log-likelihood, or a
    squared distance). Start from every record's cheapest cluster; while a cluster ``k`` has
    fewer than ``l_min`` records (most deficient first), move into it the records with the
    smallest extra cost ``cost[i, k] - cost[i, z_i]`` among clusters holding more than
    ``l_min`` (never taking a donor below ``l_min``). Each cluster is filled once, so at most
    ``K`` passes; feasible whenever ``n >= K l_min``.
    """
    cost = np.asarray(cost, dtype=np.float64)
    n, k = cost.shape
    _check_sizes(n, k, l_min)
    z = np.argmin(cost, axis=1)
    sizes = np.bincount(z, minlength=k)
    rows = np.arange(n)
    while sizes.min() < l_min:
        target = int(np.argmin(sizes))
        penalty = cost[:, target] - cost[rows, z]
        penalty[(sizes[z] <= l_min) | (z == target)] = np.inf
        for i in np.argsort(penalty, kind="stable"):
            if sizes[target] >= l_min:
                break
            if sizes[z[i]] > l_min:  # the donor may have shrunk to l_min meanwhile
                sizes[z[i]] -= 1
                z[i] = target
                sizes[target] += 1
    return z


def _init_means(rng: np.random.Generator, x: np.ndarray, k: int) -> np.ndarray:
    """k-means++ seeding (D^2 sampling)."""
    means = [x[rng.integers(x.shape[0])]]
    d2 = np.sum((x - means[0]) ** 2, axis=1)
    for _ in range(1, k):
        p = d2 / d2.sum() if d2.sum() > 0 else None
        means.append(x[rng.choice(x.shape[0], p=p)])
        d2 = np.minimum(d2, np.sum((x - means[-1]) ** 2, axis=1))
    return np.array(means)


def _sq_dist(x: np.ndarray, means: np.ndarray) -> np.ndarray:
    return np.maximum(
        np.sum(x * x, axis=1)[:, None] - 2.0 * x @ means.T + np.sum(means * means, axis=1), 0.0
    )


def _update(x: np.ndarray, z: np.ndarray, k: int, reg: float) -> tuple[np.ndarray, np.ndarray]:
    """Means and isotropic variances of the clusters of a hard assignment."""
    sizes = np.bincount(z, minlength=k).astype(np.float64)
    means = np.zeros((k, x.shape[1]))
    np.add.at(means, z, x)
    means /= sizes[:, None]
    sq = np.bincount(z, weights=np.sum((x - means[z]) ** 2, axis=1), minlength=k)
    return means, sq / (sizes * x.shape[1]) + reg


def _classification_em(
    x: np.ndarray,
    means: np.ndarray,
    l_min: int,
    *,
    cost_fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    steps: int,
    reg: float,
    deadline: float,
    desc: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Alternate the constrained assignment and the M-step until the assignment is stable.

    Returns ``(means, variances, labels, ok)``; ``ok`` is false at the deadline or when a
    cost becomes non-finite. A terminal shows the iterations (:mod:`jdp.progress`; an early
    stop ends the phase before its planned count: a non-private method, paper mode only).
    """
    k = means.shape[0]
    variances = np.full(k, max(float(np.var(x)), reg))
    weights = np.full(k, 1.0 / k)
    z = None
    for _ in track(range(steps), f"{desc} iteration"):
        if time.monotonic() > deadline:
            return means, variances, z, False
        cost = cost_fn(x, means, variances, weights)
        if not np.all(np.isfinite(cost)):
            return means, variances, z, False
        new = size_constrained_assignment(cost, l_min)
        means, variances = _update(x, new, k, reg)
        weights = np.bincount(new, minlength=k) / x.shape[0]
        if z is not None and np.array_equal(new, z):
            break
        z = new
    return means, variances, new, True


def _kmeans_cost(x, means, variances, weights) -> np.ndarray:
    return _sq_dist(x, means)


def _gmm_cost(x, means, variances, weights) -> np.ndarray:
    """``-log(w_k N(x; mu_k, v_k I))``."""
    d = x.shape[1]
    return (
        _sq_dist(x, means) / (2.0 * variances)
        + 0.5 * d * (_LOG_2PI + np.log(variances))
        - np.log(weights)
    )


def constrained_kmeans(
    rng: np.random.Generator,
    x: np.ndarray,
    n_clusters: int,
    l_min: int,
    *,
    steps: int = 50,
) -> Clustering:
    """Constrained k-means (Bradley et al. 2000): Lloyd iterations whose assignment step is
    :func:`size_constrained_assignment` on squared distances; k-means++ seeding from ``rng``.

    Raises ``ValueError`` when ``n_clusters * l_min`` exceeds the number of records.
    **Not DP** (reads the records without noise).
    """
    x = check_data_matrix(x)
    k, l_min = _check_sizes(x.shape[0], n_clusters, l_min)
    means, variances, labels, _ = _classification_em(
        x,
        _init_means(rng, x, k),
        l_min,
        cost_fn=_kmeans_cost,
        steps=check_count("steps", steps, minimum=1),
        reg=0.0,
        deadline=math.inf,
        desc="constrained k-means",
    )
    return Clustering(means=means, variances=variances, labels=labels, algorithm="kmeans")


def constrained_gmm(
    rng: np.random.Generator,
    x: np.ndarray,
    n_clusters: int,
    l_min: int,
    *,
    steps: int = 50,
    reg_covar: float = 1e-6,
    timeout_s: float | None = None,
) -> Clustering:
    """``GMMConstrained(X, n, l_min)`` (3A, Eqs. 2-4): isotropic Gaussian mixture with every
    cluster holding ``>= l_min`` records.

    Classification EM on the joint log-likelihood of Eq. 3 with the step prior on cluster
    sizes: the E-step is the MAP hard assignment under the size constraint
    (:func:`size_constrained_assignment` on ``-log(pi_k N(x; mu_k, v_k I))``), the M-step the
    means, isotropic variances (plus ``reg_covar``) and weights of the assigned records.
    Seeded by k-means++ from ``rng``.

    Falls back to :func:`constrained_kmeans` (result ``algorithm="kmeans"``) when ``timeout_s``
    elapses or a likelihood becomes non-finite, as the paper's implementation does.

    Raises ``ValueError`` when ``n_clusters * l_min`` exceeds the number of records.
    **Not DP** (reads the records without noise; ClustMix paper mode only).
    """
    x = check_data_matrix(x)
    k, l_min = _check_sizes(x.shape[0], n_clusters, l_min)
    steps = check_count("steps", steps, minimum=1)
    reg = check_positive("reg_covar", reg_covar)
    deadline = math.inf if timeout_s is None else time.monotonic() + float(timeout_s)
    means, variances, labels, ok = _classification_em(
        x,
        _init_means(rng, x, k),
        l_min,
        cost_fn=_gmm_cost,
        steps=steps,
        reg=reg,
        deadline=deadline,
        desc="constrained GMM",
    )
    if not ok:
        return constrained_kmeans(rng, x, k, l_min, steps=steps)
    return Clustering(means=means, variances=variances, labels=labels, algorithm="gmm")


def dp_cluster_event(algorithm: DpClustering, noise_multiplier: float, steps: int) -> ev.DpEvent:
    """What :func:`dp_cluster_centres` spends (data-free, for planning)."""
    if algorithm == "kmeans":
        return dp_kmeans_event(noise_multiplier, steps)
    if algorithm == "em":
        return dp_em_event(noise_multiplier, steps)
    raise ValueError(f"expected algorithm in {DP_CLUSTERINGS}, got {algorithm!r}")


def releases_per_step(algorithm: DpClustering) -> int:
    """Gaussian releases per iteration: 2 for DP k-means (counts, sums), 3 for DP-EM."""
    return {"kmeans": 2, "em": 3}[algorithm]


def dp_cluster_centres(
    rng: np.random.Generator,
    x: np.ndarray,
    n_clusters: int,
    *,
    algorithm: DpClustering = "kmeans",
    noise_multiplier: float,
    steps: int,
    secure_noise: bool = False,
) -> tuple[np.ndarray, PrivacyLedger]:
    """DP cluster centres of records in ``[0, 1]^D`` (strict ClustMix's Approximate step).

    The records are centred on the box centre, ``x - 1/2`` (norm ``<= sqrt(D)/2``, so the
    clip norm ``C = sqrt(D)/2`` never binds), and handed to :func:`jdp.encoding.kmeans.dp_kmeans`
    (``"kmeans"``) or :func:`jdp.encoding.em.dp_em` with diagonal covariances (``"em"``), both
    started from data-independent centres.

    Returns:
      ``((K, D) released centres in [0, 1]^D, ledger)``: the ledger of the DP run
      (:func:`dp_cluster_event` ``(algorithm, z, steps)``).

    Privacy:
      Add/remove-one, as the underlying algorithm (docs/privacy.md, "DP Lloyd" and "DP-EM").
      Any number of records, 0 included, with the same ledger: a class's size is private
      and never compared with ``n_clusters`` (DESIGN rule 7).
    """
    if algorithm not in DP_CLUSTERINGS:
        raise ValueError(f"expected algorithm in {DP_CLUSTERINGS}, got {algorithm!r}")
    x = check_data_matrix(x, private=True)
    centred = x - 0.5
    clip = math.sqrt(x.shape[1]) / 2.0
    if algorithm == "kmeans":
        result, ledger = dp_kmeans(
            rng,
            centred,
            n_clusters,
            noise_multiplier=noise_multiplier,
            steps=steps,
            l2_clip_norm=clip,
            secure_noise=secure_noise,
        )
        centres = result.centres
    else:
        result, ledger = dp_em(
            rng,
            centred,
            n_clusters,
            noise_multiplier=noise_multiplier,
            steps=steps,
            covariance_type="diag",
            l2_clip_norm=clip,
            secure_noise=secure_noise,
        )
        centres = result.mixture.means
    return np.clip(np.asarray(centres) + 0.5, 0.0, 1.0), ledger


def assign_to_centres(centres: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Nearest released centre of every record (a per-record function: post-processing).

    **Privacy:** the assignment of private records is private; it may only feed accounted
    mechanisms (ClustMix: the noisy cluster sizes and the mixing groups). Any number of
    records, 0 included (an empty class gives an empty assignment).
    """
    centres = np.asarray(centres, dtype=np.float64)
    x = check_data_matrix(x, n_cols=centres.shape[1], private=True)
    parts = [nearest_centre(c, centres) for c in iter_chunks(x)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
