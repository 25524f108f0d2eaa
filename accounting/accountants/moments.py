"""The moments accountant as the seed papers describe it, by numerical integration.

For one step of the Poisson-subsampled Gaussian mechanism (Abadi et al. 2016, Sec. 3.2;
dp-GAN eqs. 5-6; DPGM eq. 7), with ``mu0 = N(0, z^2)``, ``mu1 = N(1, z^2)`` and the mixture
``mu = (1-q) mu0 + q mu1``, the log moment of the privacy loss is

    alpha(lambda) = log max(E1, E2),
    E1 = int mu0 (mu0 / mu)^lambda dx,      E2 = int mu (mu / mu0)^lambda dx,

and we evaluate both integrals with ``scipy.integrate.quad`` on the log-scaled integrand. Log
moments add under composition (Abadi et al., Thm. 2.1) and the tail bound gives
``delta = min_lambda exp(alpha(lambda) - lambda eps)`` and
``eps = min_lambda (alpha(lambda) + log(1/delta)) / lambda``.

This path shares no code with :mod:`accounting.accountants.rdp`; it exists to cross-check it:
``alpha(lambda) = lambda * RDP(lambda + 1)`` (E2 is ``exp(lambda D_{lambda+1}(mu || mu0))``
and dominates E1, Mironov, Talwar & Zhang 2019, Thm. 4). For ``q = 1`` it gives
``lambda (lambda + 1) / (2 z^2)``, twice DPGM Lemma 1's value (see docs/errata.md).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate

from accounting import events as ev
from accounting.accountants import base
from accounting.validation import (
    check_positive,
    check_probability,
)

#: Integer moment orders lambda (Abadi et al. used 1..32; DPGM "usually no more than 100").
DEFAULT_LAMBDAS: np.ndarray = np.concatenate([np.arange(1, 64), np.arange(64, 257, 16)]).astype(
    np.float64
)


def _log_densities(q: float, z: float):
    """Scalar-or-array log densities of ``mu0`` and of the mixture ``mu``."""
    c = -math.log(z * math.sqrt(2 * math.pi))
    inv = 1.0 / (2 * z * z)
    l1q = math.log1p(-q) if q < 1 else -math.inf
    lq = math.log(q)

    def log0(x):
        return c - x * x * inv

    def log_mix(x):
        a = l1q + c - x * x * inv
        b = lq + c - (x - 1) * (x - 1) * inv
        return np.logaddexp(a, b)

    return log0, log_mix


def _log_integral(log_f, lo: float, hi: float, points: list[float]) -> float:
    """``log int_lo^hi exp(log_f)``, integrating ``exp(log_f - max)`` with ``quad``."""
    grid = np.linspace(lo, hi, 4001)
    m = float(np.max(log_f(grid)))
    inner = sorted(p for p in points if lo < p < hi)
    val, _ = integrate.quad(
        lambda x: math.exp(log_f(x) - m),
        lo,
        hi,
        points=inner or None,
        limit=400,
        epsabs=0.0,
        epsrel=1e-12,
    )
    return m + math.log(val)


def log_moment(sampling_prob: float, noise_multiplier: float, lam: float) -> float:
    """``alpha(lambda) = log max(E1, E2)`` of one Poisson-subsampled Gaussian step.

    Args:
      sampling_prob: ``q`` in (0, 1] (1: plain Gaussian mechanism).
      noise_multiplier: ``z > 0`` (noise std / L2 sensitivity).
      lam: moment order ``lambda > 0`` (real).
    """
    q = check_probability("sampling_prob", sampling_prob)
    z = check_positive("noise_multiplier", noise_multiplier)
    lam = check_positive("lam", lam)
    log0, log_mix = _log_densities(q, z)

    def log_e1(x):
        return (lam + 1) * log0(x) - lam * log_mix(x)

    def log_e2(x):
        return (lam + 1) * log_mix(x) - lam * log0(x)

    # Both integrands are at most Gaussian bumps of width z around points in [-lam-1, lam+2].
    lo, hi = -(lam + 1) - 40 * z, lam + 2 + 40 * z
    points = [0.0, 0.5, 1.0, -lam, lam + 1]
    return max(_log_integral(log_e1, lo, hi, points), _log_integral(log_e2, lo, hi, points))


def log_moments(
    sampling_prob: float, noise_multiplier: float, lambdas: object = DEFAULT_LAMBDAS
) -> np.ndarray:
    """:func:`log_moment` over an array of orders."""
    lams = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    return np.array([log_moment(sampling_prob, noise_multiplier, lam) for lam in lams])


class MomentsAccountant(base.Accountant[np.ndarray]):
    """Log moments over ``lambdas``: they add under composition (Abadi et al. 2016,
    Thm. 2.1). Only (Poisson-subsampled) Gaussian mechanisms, as in the seed papers; no
    parallel composition."""

    title = "moments"
    parallel_relations = ()

    def __init__(
        self, lambdas: object = DEFAULT_LAMBDAS, *, shared_batch: base.SharedBatch = "exact"
    ) -> None:
        super().__init__(shared_batch=shared_batch)
        self.lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        for lam in self.lambdas:
            check_positive("lambda", float(lam))
        self._cache: dict[tuple[float, float], np.ndarray] = {}

    def _gaussian(self, q: float, z: float) -> np.ndarray:
        if (q, z) not in self._cache:
            self._cache[(q, z)] = log_moments(q, z, self.lambdas)
        return self._cache[(q, z)]

    def identity(self) -> np.ndarray:
        return np.zeros_like(self.lambdas)

    def non_private(self) -> np.ndarray:
        return np.full_like(self.lambdas, np.inf)

    def leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> np.ndarray:
        if isinstance(e, ev.GaussianDpEvent):
            return self._gaussian(1.0, float(e.noise_multiplier))
        if isinstance(e, ev.PoissonSampledDpEvent):
            z = base.effective_noise_multiplier(self.sampled_gaussians(e))
            return self._gaussian(float(e.sampling_probability), z)
        raise self.unsupported(e)

    def compose(self, values: list[np.ndarray]) -> np.ndarray:
        return sum(values, self.identity())

    def self_compose(self, value: np.ndarray, count: int) -> np.ndarray:
        return count * value

    def epsilon_of(self, value: np.ndarray, delta: float) -> float:
        """``min_lambda (alpha(lambda) + log(1/delta)) / lambda``."""
        if np.all(value == 0):  # no privacy loss at all: the infimum over lambda is 0
            return 0.0
        return float(max(0.0, np.min((value + math.log(1 / delta)) / self.lambdas)))

    def delta_of(self, value: np.ndarray, epsilon: float) -> float:
        """``min_lambda exp(alpha(lambda) - lambda eps)`` (capped at 1)."""
        if np.all(value == 0):
            return 0.0
        with np.errstate(over="ignore"):
            return float(min(1.0, np.exp(np.min(value - self.lambdas * epsilon))))


def event_log_moments(
    event: ev.DpEvent,
    lambdas: object = DEFAULT_LAMBDAS,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> np.ndarray:
    """Composed log moments of an event made of (subsampled) Gaussian mechanisms."""
    return MomentsAccountant(lambdas).account(event, neighboring_relation)


def epsilon(
    event: ev.DpEvent,
    delta: float,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    lambdas: object = DEFAULT_LAMBDAS,
) -> float:
    """Epsilon at ``delta`` (:meth:`MomentsAccountant.epsilon_of`)."""
    return MomentsAccountant(lambdas).epsilon(event, delta, neighboring_relation)
