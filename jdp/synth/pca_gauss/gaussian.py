"""PCA-Gauss's DP Gaussian: three Laplace releases of the moment sums, then post-processing.

With a label ``tau`` in ``[-1, 1]`` the augmented record ``w = (u, tau)`` has
``||w||_2 <= sqrt(2)`` and ``||w||_1 <= sqrt(k) + 1`` (:func:`record_bounds`); the moment
sums and their sensitivities are :mod:`jdp.mechanisms.moments`' (derived in
``docs/privacy.md``, section PCA-Gauss). Noise is drawn on the upper triangle of the symmetric
second-moment matrix and mirrored; noisy covariances are projected to the PSD cone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting import events as ev
from accounting.validation import check_count
from jdp.mechanisms.moments import moment_sensitivity, moment_sums
from jdp.mechanisms.noise import laplace_mechanism
from jdp.synth.pca_gauss.config import MomentBudget

Relation = ev.NeighboringRelation
ADD_OR_REMOVE_ONE = Relation.ADD_OR_REMOVE_ONE
REPLACE_ONE = Relation.REPLACE_ONE


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
      (sequential composition), by Mironov's snapping mechanism (exact in binary64:
      :func:`jdp.mechanisms.noise.laplace_mechanism`'s default). The second moment gets symmetric noise on its upper triangle.
    """
    k = w.shape[1] - (1 if with_label else 0)
    a, b = record_bounds(k, with_label=with_label)
    sens = moment_sensitivity(a, b, relation)
    n, total, second = moment_sums(w)
    events: list[ev.DpEvent] = []
    if budget.count > 0:
        n, e = laplace_mechanism(
            rng,
            np.array(n),
            l1_sensitivity=sens.count,
            epsilon=budget.count,
        )
        n = float(n)
        events.append(e)
    elif relation == ADD_OR_REMOVE_ONE:
        raise ValueError(
            "under add/remove neighbours the record count is private: give it a budget"
        )
    total, e = laplace_mechanism(rng, total, l1_sensitivity=sens.total, epsilon=budget.total)
    events.append(e)
    second, e = laplace_mechanism(
        rng,
        second,
        l1_sensitivity=sens.second,
        epsilon=budget.second,
        symmetric=True,
    )
    events.append(e)
    return gaussian_from_sums(n, total, second, l2_bound=a), events


def sample_gaussian(rng: np.random.Generator, g: Gaussian, n: int) -> np.ndarray:
    """``n`` draws from ``N(g.mean, g.cov)`` (``g.cov`` is PSD; rank-deficient is fine)."""
    vals, vecs = np.linalg.eigh(g.cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    return g.mean + rng.standard_normal((n, g.mean.shape[0])) @ root.T
