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
    check_nonnegative,
    check_open_unit,
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


def event_log_moments(
    event: ev.DpEvent,
    lambdas: object = DEFAULT_LAMBDAS,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> np.ndarray:
    """Composed log moments of an event made of (subsampled) Gaussian mechanisms."""
    lams = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    for lam in lams:
        check_positive("lambda", float(lam))
    cache: dict[tuple[float, float], np.ndarray] = {}

    def gaussian(q: float, z: float) -> np.ndarray:
        if z == 0:
            return np.full_like(lams, np.inf)
        if (q, z) not in cache:
            cache[(q, z)] = log_moments(q, z, lams)
        return cache[(q, z)]

    def walk(e: ev.DpEvent) -> np.ndarray:
        if isinstance(e, ev.NoOpDpEvent):
            return np.zeros_like(lams)
        if isinstance(e, ev.NonPrivateDpEvent):
            return np.full_like(lams, np.inf)
        if isinstance(e, ev.GaussianDpEvent):
            return gaussian(1.0, check_nonnegative("noise_multiplier", e.noise_multiplier))
        if isinstance(e, ev.ComposedDpEvent):
            return sum((walk(x) for x in e.events), np.zeros_like(lams))
        if isinstance(e, ev.SelfComposedDpEvent):
            return np.zeros_like(lams) if e.count == 0 else e.count * walk(e.event)
        if isinstance(e, ev.PoissonSampledDpEvent):
            if neighboring_relation != ev.NeighboringRelation.ADD_OR_REMOVE_ONE:
                raise ValueError(
                    "the moments accountant analyses Poisson sampling under add/remove"
                )
            zs = base.gaussian_multipliers(e.event)
            if zs is None:
                raise ValueError(
                    "the moments accountant supports PoissonSampledDpEvent of Gaussian "
                    f"mechanisms only, got {type(e.event).__name__}"
                )
            if not zs:
                return np.zeros_like(lams)
            q = check_probability("sampling_prob", e.sampling_probability)
            return gaussian(q, base.effective_noise_multiplier(zs))
        raise ValueError(f"the moments accountant cannot analyse {type(e).__name__}")

    return walk(event)


def epsilon(
    event: ev.DpEvent,
    delta: float,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    lambdas: object = DEFAULT_LAMBDAS,
) -> float:
    """``min_lambda (alpha(lambda) + log(1/delta)) / lambda``."""
    d = check_open_unit("delta", delta)
    lams = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    alpha = event_log_moments(event, lams, neighboring_relation)
    if np.all(alpha == 0):  # no privacy loss at all: the infimum over lambda is 0
        return 0.0
    return float(max(0.0, np.min((alpha + math.log(1 / d)) / lams)))


def delta(
    event: ev.DpEvent,
    epsilon: float,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    lambdas: object = DEFAULT_LAMBDAS,
) -> float:
    """``min_lambda exp(alpha(lambda) - lambda eps)`` (capped at 1)."""
    e = check_nonnegative("epsilon", epsilon)
    lams = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    alpha = event_log_moments(event, lams, neighboring_relation)
    if np.all(alpha == 0):
        return 0.0
    with np.errstate(over="ignore"):
        return float(min(1.0, np.exp(np.min(alpha - lams * e))))
