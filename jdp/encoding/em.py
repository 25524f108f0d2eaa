"""DP-EM for Gaussian mixtures (Park, Foulds, Chaudhuri & Welling 2017), as used by P3GM.

Each iteration runs one E-step under the current (already public) mixture and releases the
M-step's sufficient statistics through three Gaussian mechanisms:

* soft counts ``N_k = sum_i r_ik``                       (L2 sensitivity 1),
* first moments ``S_k = sum_i r_ik x_i``                  (L2 sensitivity C),
* second moments ``Q_k = sum_i r_ik x_i x_i^T`` -- its upper triangle, or its diagonal for
  ``covariance_type="diag"``                              (L2 sensitivity C^2),

where records are clipped to L2 norm ``C`` and ``r_i`` (a probability vector) depends only
on ``x_i`` and the public mixture. The new mixture is post-processing of the noisy sums:
``pi = N / sum N``, ``mu_k = S_k / N_k`` projected into the C-ball, ``Sigma_k = Q_k / N_k -
mu_k mu_k^T`` projected onto ``{reg_covar <= eigenvalues <= C^2}`` (positive definite
whatever the noise). The initial mixture is data-independent (or a declared public one),
so there is no unaccounted initial M-step; every iteration is one ledger entry.

All sums are computed in bounded-memory chunks (:mod:`jdp.mechanisms.suffstats`). DP-EM is
defined for every number of records, 0 included: with none the sums are zero, the noise
still makes the release private, and the M-step above turns any noisy statistics (a
component whose noisy weight is ``<= 0`` included) into a valid mixture. ``K`` is never
compared with the private row count, and records with a NaN or infinite entry are dropped
from the sums, as if absent (DESIGN rule 7).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from scipy.linalg import solve_triangular

from accounting import events as ev
from accounting.compose import BEST
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count, check_nonnegative, check_positive
from jdp.mechanisms.noise import clip_rows, gaussian_releases
from jdp.mechanisms.release import gaussian_iterations_event, iterate_releases, run_calibrated
from jdp.mechanisms.suffstats import check_data_matrix, chunk_rows, chunked_sum

CovarianceType = Literal["diag", "full"]
_LOG_2PI = np.log(2.0 * np.pi)


@dataclass(frozen=True, kw_only=True)
class Mixture:
    """A Gaussian mixture ``sum_k weights_k N(means_k, covariances_k)``.

    Attributes:
      weights: ``(K,)`` positive, summing to 1.
      means: ``(K, d)``.
      covariances: ``(K, d, d)`` positive definite (``"full"``) or ``(K, d)`` positive
        variances (``"diag"``).
      covariance_type: ``"full"`` or ``"diag"``.
    """

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    covariance_type: CovarianceType

    def __post_init__(self) -> None:
        if self.covariance_type not in ("diag", "full"):
            raise ValueError(
                f"expected covariance_type in ('diag', 'full'), got {self.covariance_type!r}"
            )
        k, d = self.means.shape
        expected = (k, d) if self.covariance_type == "diag" else (k, d, d)
        if self.weights.shape != (k,) or self.covariances.shape != expected:
            raise ValueError(
                f"expected weights ({k},) and covariances {expected}, got {self.weights.shape} "
                f"and {self.covariances.shape}"
            )
        if not np.all(self.weights > 0) or abs(self.weights.sum() - 1.0) > 1e-9:
            raise ValueError("expected positive mixture weights summing to 1")
        for a in (self.weights, self.means, self.covariances):
            a.setflags(write=False)

    @property
    def n_components(self) -> int:
        return self.means.shape[0]

    @property
    def n_features(self) -> int:
        return self.means.shape[1]

    def log_prob(self, x: np.ndarray) -> np.ndarray:
        """Per-row log density ``log sum_k pi_k N(x; mu_k, Sigma_k)``."""
        x = check_data_matrix(x, n_cols=self.n_features)
        return _logsumexp_rows(_component_log_prob(self, np.asarray(x, dtype=np.float64)))[:, 0]


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """``log sum_k exp(a_ik)`` per row, shape ``(n, 1)`` (stable; faster than scipy's here)."""
    top = a.max(axis=1, keepdims=True)
    return top + np.log(np.exp(a - top).sum(axis=1, keepdims=True))


def _component_log_prob(mixture: Mixture, x: np.ndarray) -> np.ndarray:
    """``(n, K)`` matrix of ``log pi_k + log N(x_i; mu_k, Sigma_k)``."""
    if mixture.covariance_type == "diag":
        return _diag_log_prob(mixture, x, x * x)
    mu, cov = mixture.means, mixture.covariances
    maha = np.empty((x.shape[0], mixture.n_components))
    logdet = np.empty(mixture.n_components)
    for k in range(mixture.n_components):
        # Sigma = L L^T  =>  (x - mu)^T Sigma^-1 (x - mu) = ||(x - mu) L^-T||^2
        chol = np.linalg.cholesky(cov[k])
        inv_t = solve_triangular(chol, np.eye(mixture.n_features), lower=True).T
        y = x @ inv_t - mu[k] @ inv_t
        maha[:, k] = np.einsum("ij,ij->i", y, y)
        logdet[k] = 2.0 * np.sum(np.log(np.diag(chol)))
    return np.log(mixture.weights) - 0.5 * (mixture.n_features * _LOG_2PI + logdet + maha)


def _diag_log_prob(mixture: Mixture, x: np.ndarray, x_sq: np.ndarray) -> np.ndarray:
    """Diagonal case: ``sum_j (x_j - mu_kj)^2 / v_kj = x^2 @ (1/v)^T - 2 x @ (mu/v)^T +
    sum_j mu_kj^2 / v_kj``."""
    mu, var = mixture.means, mixture.covariances
    prec = 1.0 / var
    const = np.log(mixture.weights) - 0.5 * (
        mixture.n_features * _LOG_2PI + np.sum(np.log(var), axis=1) + np.sum(mu * mu * prec, axis=1)
    )
    out = x_sq @ (-0.5 * prec).T
    out += x @ (mu * prec).T
    out += const
    return out


def _clip_with_squares(x: np.ndarray, l2_clip_norm: float) -> tuple[np.ndarray, np.ndarray]:
    """``(clip_rows(x, C), clip_rows(x, C) ** 2)`` from one squaring pass (the EM hot loop
    needs both; same clipping rule as :func:`jdp.mechanisms.noise.clip_rows`)."""
    sq = x * x
    norms = np.sqrt(sq.sum(axis=1))
    if norms.max(initial=0.0) <= l2_clip_norm:
        return x, sq
    factor = np.minimum(1.0, l2_clip_norm / np.maximum(norms, np.finfo(np.float64).tiny))[:, None]
    return x * factor, sq * (factor * factor)


def _responsibilities(logp: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``(n, K)`` log-probabilities."""
    e = np.exp(logp - logp.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def em_statistics(
    x: np.ndarray, mixture: Mixture, *, l2_clip_norm: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pre-noise sufficient statistics of one DP-EM iteration (exact, private values).

    Returns ``(N, S, Q)``: ``N`` ``(K,)``; ``S`` ``(K, d)``; ``Q`` ``(K, d)`` (diagonal) or
    ``(K, d(d+1)/2)`` (upper triangle, row-major, diagonal included), each a sum over the
    clipped records ``x_i <- clip(x_i, C)`` with responsibilities under ``mixture``. Zeros
    for no records; a record with a non-finite entry counts nowhere.
    """
    d, kk = mixture.n_features, mixture.n_components
    rows = chunk_rows(d + kk + (d if mixture.covariance_type == "full" else 0))
    iu = np.triu_indices(d) if mixture.covariance_type == "full" else None

    def part(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c, c_sq = _clip_with_squares(chunk, l2_clip_norm)
        if iu is None:
            r = _responsibilities(_diag_log_prob(mixture, c, c_sq))
            return r.sum(axis=0), r.T @ c, r.T @ c_sq
        r = _responsibilities(_component_log_prob(mixture, c))
        second = np.stack([((c * r[:, k : k + 1]).T @ c)[iu] for k in range(kk)])
        return r.sum(axis=0), r.T @ c, second

    return chunked_sum(part, x, rows=rows, drop_nonfinite=True)


def _m_step(
    counts: np.ndarray,
    sums: np.ndarray,
    second: np.ndarray,
    covariance_type: CovarianceType,
    *,
    l2_clip_norm: float,
    reg_covar: float,
) -> Mixture:
    """Post-processing of (noisy) sufficient statistics into a valid mixture, whatever their
    values: noisy counts are floored at a small positive constant (so a component whose
    noisy weight is ``<= 0`` keeps a tiny positive weight), means are projected into the
    C-ball and covariance eigenvalues into ``[reg_covar, C^2 + reg_covar]``."""
    kk, d = sums.shape
    floor = 1e-8
    n_k = np.maximum(counts, floor)
    weights = n_k / n_k.sum()
    means = clip_rows(sums / n_k[:, None], l2_clip_norm)
    top = l2_clip_norm**2 + reg_covar
    if covariance_type == "diag":
        var = second / n_k[:, None] - means**2 + reg_covar
        covs = np.clip(var, reg_covar, top)
    else:
        iu = np.triu_indices(d)
        full = np.zeros((kk, d, d))
        full[:, iu[0], iu[1]] = second
        full = full + np.triu(full, 1).transpose(0, 2, 1)
        cov = (
            full / n_k[:, None, None]
            - means[:, :, None] * means[:, None, :]
            + reg_covar * np.eye(d)
        )
        values, vectors = np.linalg.eigh(cov)
        values = np.clip(values, reg_covar, top)
        covs = (vectors * values[:, None, :]) @ vectors.transpose(0, 2, 1)
        covs = (covs + covs.transpose(0, 2, 1)) / 2.0
    return Mixture(weights=weights, means=means, covariances=covs, covariance_type=covariance_type)


def initial_mixture(
    rng: np.random.Generator,
    n_components: int,
    n_features: int,
    *,
    covariance_type: CovarianceType = "diag",
    l2_clip_norm: float = 1.0,
) -> Mixture:
    """A data-independent starting mixture (no privacy cost).

    Uniform weights; means i.i.d. ``N(0, C^2 / (4 d) I)`` projected into the C-ball (spread
    over the region the clipped records occupy); covariances ``(C^2 / d) I``, the average
    per-coordinate second moment of a record on the C-sphere.
    """
    k = check_count("n_components", n_components, minimum=1)
    d = check_count("n_features", n_features, minimum=1)
    c = check_positive("l2_clip_norm", l2_clip_norm)
    means = clip_rows(rng.normal(0.0, c / (2.0 * np.sqrt(d)), size=(k, d)), c)
    var = np.full((k, d), c**2 / d)
    covs = var if covariance_type == "diag" else var[:, :, None] * np.eye(d)
    return Mixture(
        weights=np.full(k, 1.0 / k), means=means, covariances=covs, covariance_type=covariance_type
    )


@dataclass(frozen=True, kw_only=True)
class EmResult:
    """Output of :func:`dp_em`.

    Attributes:
      mixture: the final (DP) mixture.
      log_likelihood: mean per-row log-likelihood of ``diagnostic_x`` after each iteration,
        or ``()`` when no ``diagnostic_x`` was given. If ``diagnostic_x`` is private data this
        diagnostic is NOT differentially private: use it for testing/tuning on
        non-sensitive data, never release it.
    """

    mixture: Mixture
    log_likelihood: tuple[float, ...] = ()


def dp_em(
    rng: np.random.Generator,
    x: np.ndarray,
    n_components: int,
    *,
    noise_multiplier: float,
    steps: int,
    covariance_type: CovarianceType = "diag",
    l2_clip_norm: float = 1.0,
    reg_covar: float = 1e-6,
    init: Mixture | None = None,
    diagnostic_x: np.ndarray | None = None,
    secure_noise: bool = False,
) -> tuple[EmResult, PrivacyLedger]:
    """DP expectation-maximisation for a Gaussian mixture.

    Args:
      rng: noise source (also draws the data-independent initial mixture).
      x: ``(n, d)`` private records, any ``n >= 0``; rows are clipped to L2 norm
        ``l2_clip_norm``; a record with a NaN or infinite entry is dropped.
      n_components: ``K`` (any ``K >= 1``: the row count is private and never compared
        with ``K``).
      noise_multiplier: ``z``: noise std ``z``, ``z C`` and ``z C^2`` on N, S and Q.
      steps: number of EM iterations ``T`` (each one ledger entry "dp-em").
      covariance_type: ``"diag"`` (P3GM) or ``"full"``.
      l2_clip_norm: ``C``, the declared record norm bound.
      reg_covar: floor on covariance eigenvalues (added to the diagonal, as sklearn does).
      init: a declared public starting mixture; default :func:`initial_mixture` drawn from
        ``rng`` (data-independent).
      diagnostic_x: rows whose mean log-likelihood is reported after every iteration (see
        :class:`EmResult` for why this is not private when it is the training data).
      secure_noise: round the Gaussian releases to a power-of-two grid, clamped to a public
        bound: a mitigation of Mironov's (2012) floating-point channel, not a proof
        (:mod:`jdp.mechanisms.noise`); the events are unchanged.

    Returns:
      ``(EmResult, ledger)``; the ledger has ``steps`` entries, each
      ``ComposedDpEvent([GaussianDpEvent(z)] * 3)``.

    Privacy:
      Add/remove-one. Adding a clipped record ``x`` with responsibilities ``r``
      (``sum_k r_k = 1``) changes N by ``r`` (``||r||_2 <= 1``), S by ``r x^T``
      (Frobenius norm ``||r||_2 ||x|| <= C``) and each upper triangle of Q by
      ``r_k triu(x x^T)`` (joint norm ``<= ||r||_2 ||x||^2 <= C^2``; the diagonal
      ``(r_k x_j^2)`` too). So one iteration is three Gaussian mechanisms with multiplier
      ``z``, i.e. Gaussian with multiplier ``z / sqrt(3)`` in RDP, *independently of K*;
      P3GM's Eq. (3) charges ``2K + 1`` (docs/privacy.md "DP-EM", docs/errata.md).
      Defined for every ``n`` including 0, with the same ledger.

    References:
      Park et al. 2017, DP-EM (AISTATS), Sec. 4 (Gaussian mixtures); P3GM Sec. II-D.
    """
    x = check_data_matrix(x, private=True)  # any row count: no check reads the rows
    k = check_count("n_components", n_components, minimum=1)
    steps = check_count("steps", steps, minimum=1)
    check_nonnegative("noise_multiplier", noise_multiplier)
    c = check_positive("l2_clip_norm", l2_clip_norm)
    reg_covar = check_positive("reg_covar", reg_covar)
    if covariance_type not in ("diag", "full"):
        raise ValueError(f"expected covariance_type in ('diag', 'full'), got {covariance_type!r}")
    d = x.shape[1]
    if init is None:
        mixture = initial_mixture(rng, k, d, covariance_type=covariance_type, l2_clip_norm=c)
    else:
        if (init.n_components, init.n_features, init.covariance_type) != (k, d, covariance_type):
            raise ValueError(
                f"expected init with {k} components, {d} features and {covariance_type!r} "
                f"covariances, got {init.n_components}, {init.n_features}, {init.covariance_type!r}"
            )
        mixture = init
    if diagnostic_x is not None:
        diagnostic_x = check_data_matrix(diagnostic_x, name="diagnostic_x", n_cols=d)
    trace = []

    def step(current: Mixture) -> tuple[Mixture, ev.ComposedDpEvent]:
        new, event = dp_em_step(
            rng,
            x,
            current,
            noise_multiplier=noise_multiplier,
            l2_clip_norm=c,
            reg_covar=reg_covar,
            secure_noise=secure_noise,
        )
        if diagnostic_x is not None:
            trace.append(float(np.mean(new.log_prob(diagnostic_x))))
        return new, event

    mixture, ledger = iterate_releases(step, mixture, steps, "dp-em", name="DP-EM iteration")
    return EmResult(mixture=mixture, log_likelihood=tuple(trace)), ledger


def dp_em_event(noise_multiplier: float, steps: int) -> ev.DpEvent:
    """What :func:`dp_em` spends (data-free, for planning and calibration)."""
    return gaussian_iterations_event(noise_multiplier, releases=3, steps=steps)


def dp_em_calibrated(
    rng: np.random.Generator,
    x: np.ndarray,
    n_components: int,
    *,
    target_epsilon: float,
    target_delta: float,
    steps: int,
    accountant: str = BEST,
    **kwargs: object,
) -> tuple[EmResult, PrivacyLedger]:
    """:func:`dp_em` with the smallest noise multiplier meeting ``(target_epsilon,
    target_delta)`` for ``steps`` iterations (:func:`jdp.mechanisms.release.run_calibrated`);
    ``kwargs`` go to :func:`dp_em`."""
    run = partial(dp_em, rng, x, n_components, steps=steps, **kwargs)
    plan = partial(dp_em_event, steps=steps)
    return run_calibrated(run, plan, target_epsilon, target_delta, accountant=accountant)


def dp_em_step(
    rng: np.random.Generator,
    x: np.ndarray,
    mixture: Mixture,
    *,
    noise_multiplier: float,
    l2_clip_norm: float,
    reg_covar: float = 1e-6,
    secure_noise: bool = False,
) -> tuple[Mixture, ev.ComposedDpEvent]:
    """One DP-EM iteration: :func:`noisy_em_statistics`, then the projected M-step."""
    (counts, sums, second), event = noisy_em_statistics(
        rng,
        x,
        mixture,
        noise_multiplier=noise_multiplier,
        l2_clip_norm=l2_clip_norm,
        secure_noise=secure_noise,
    )
    new = _m_step(
        counts,
        sums,
        second,
        mixture.covariance_type,
        l2_clip_norm=l2_clip_norm,
        reg_covar=reg_covar,
    )
    return new, event


def noisy_em_statistics(
    rng: np.random.Generator,
    x: np.ndarray,
    mixture: Mixture,
    *,
    noise_multiplier: float,
    l2_clip_norm: float,
    secure_noise: bool = False,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ev.ComposedDpEvent]:
    """The DP-EM release: :func:`em_statistics` plus Gaussian noise of std ``z``, ``z C``
    and ``z C^2`` on (N, S, Q); ``mixture`` must be public. See :func:`dp_em` for the
    privacy statement; the event is ``ComposedDpEvent([GaussianDpEvent(z)] * 3)``.
    """
    return gaussian_releases(
        rng,
        em_statistics(x, mixture, l2_clip_norm=l2_clip_norm),
        (1.0, l2_clip_norm, l2_clip_norm**2),
        noise_multiplier=noise_multiplier,
        secure_noise=secure_noise,
    )


def sample(rng: np.random.Generator, mixture: Mixture, n: int) -> np.ndarray:
    """Draw ``n`` rows from ``mixture`` (post-processing: free), in random order."""
    n = check_count("n", n, minimum=0)
    counts = rng.multinomial(n, mixture.weights)
    d = mixture.n_features
    parts = []
    for k, m in enumerate(counts):
        z = rng.standard_normal((m, d))
        if mixture.covariance_type == "diag":
            parts.append(mixture.means[k] + z * np.sqrt(mixture.covariances[k]))
        else:
            parts.append(mixture.means[k] + z @ np.linalg.cholesky(mixture.covariances[k]).T)
    out = np.concatenate(parts, axis=0) if parts else np.empty((0, d))
    return out[rng.permutation(n)]
