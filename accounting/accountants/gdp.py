"""Gaussian differential privacy (Dong, Roth & Su 2019): mu-GDP composition and conversion.

A mechanism is mu-GDP when distinguishing ``M(D)`` from ``M(D')`` is at least as hard as
distinguishing ``N(0,1)`` from ``N(mu,1)``.

* Gaussian mechanism with noise multiplier ``z``: ``mu = 1/z`` (exact).
* Composition: ``mu = sqrt(sum_i mu_i^2)`` (DRS 2019, Cor. 3.3; exact).
* mu-GDP is (eps, delta(eps))-DP for every eps >= 0 with
  ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (DRS 2019, Cor. 2.13),
  and this is tight.
* CLT approximation for Poisson-subsampled Gaussian steps (Bu, Dong, Long & Su 2020, Thm. 5;
  DRS 2019, Thm. 5.3): ``T`` steps at rate ``q`` with multiplier ``z`` behave like
  ``mu = q sqrt(T (e^{1/z^2} - 1))``-GDP as ``T -> inf`` with ``q sqrt(T)`` fixed. This is an
  **approximation, not a guarantee** (it can under-estimate epsilon for moderate T); it is
  available only under the accountant name ``"gdp_clt"`` and the function
  :func:`clt_mu_approximation`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from scipy import optimize, special

from accounting import events as ev
from accounting.accountants import base
from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)


def clt_mu_approximation(sampling_prob: float, noise_multiplier: float, steps: int) -> float:
    """APPROXIMATE mu of ``steps`` Poisson-subsampled Gaussian steps (CLT, not a bound)."""
    q = check_probability("sampling_prob", sampling_prob)
    z = check_positive("noise_multiplier", noise_multiplier)
    t = check_count("steps", steps)
    return q * math.sqrt(t * math.expm1(z**-2))


def delta_for_epsilon(mu: float, epsilon: float) -> float:
    """Tight delta(eps) of mu-GDP."""
    mu = check_nonnegative("mu", mu) if math.isfinite(mu) else math.inf
    eps = check_nonnegative("epsilon", epsilon)
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = special.ndtr(-eps / mu + mu / 2)
    b = math.exp(eps + special.log_ndtr(-eps / mu - mu / 2))
    return float(min(1.0, max(0.0, a - b)))


def epsilon_for_delta(mu: float, delta: float) -> float:
    """Smallest eps with ``delta(eps) <= delta`` for mu-GDP (root of the decreasing curve)."""
    d = check_open_unit("delta", delta)
    mu = check_nonnegative("mu", mu) if math.isfinite(mu) else math.inf
    if math.isinf(mu):
        return math.inf
    if delta_for_epsilon(mu, 0.0) <= d:
        return 0.0
    hi = max(1.0, mu * mu)
    while delta_for_epsilon(mu, hi) > d:
        hi *= 2
    return float(
        optimize.brentq(lambda e: delta_for_epsilon(mu, e) - d, 0.0, hi, xtol=1e-12, rtol=1e-12)
    )


def mu_for_epsilon_delta(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP (inverse conversion)."""
    eps = check_positive("epsilon", epsilon)
    d = check_open_unit("delta", delta)
    lo, hi = 1e-12, 1.0
    while delta_for_epsilon(hi, eps) < d:
        hi *= 2
    return float(
        optimize.brentq(lambda m: delta_for_epsilon(m, eps) - d, lo, hi, xtol=1e-14, rtol=1e-13)
    )


class Mu(NamedTuple):
    """The GDP accountant's value: ``mu``, and for one Poisson-subsampled Gaussian step under
    ``clt=True`` its ``(q, z)``, so that ``T`` such steps get the CLT ``mu`` of
    :func:`clt_mu_approximation` ``(q, z, T)`` exactly."""

    mu: float
    clt_step: tuple[float, float] | None = None


class GdpAccountant(base.Accountant[Mu]):
    """mu-GDP: ``mu = 1/z`` for a Gaussian, composition adds ``mu^2`` (Dong, Roth & Su 2019,
    Cor. 3.3), a parallel composition takes the maximum of its cases.

    Args:
      clt: also accept Poisson-subsampled Gaussians via the CLT approximation (then the
        result is an approximation, not a guarantee: accountant ``"gdp_clt"``).
    """

    title = "GDP"

    def __init__(self, *, clt: bool = False, shared_batch: base.SharedBatch = "exact") -> None:
        super().__init__(shared_batch=shared_batch)
        self.clt = clt

    def identity(self) -> Mu:
        return Mu(0.0)

    def non_private(self) -> Mu:
        return Mu(math.inf)

    def leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> Mu:
        if isinstance(e, ev.GaussianDpEvent):
            return Mu(1.0 / e.noise_multiplier)
        if isinstance(e, ev.MuGdpEvent):
            return Mu(check_nonnegative("mu", e.mu))
        if isinstance(e, ev.PoissonSampledDpEvent):
            if not self.clt:
                raise base.UnsupportedEventError(
                    "the GDP accountant has no exact bound for PoissonSampledDpEvent; use "
                    "accountant='rdp' or 'pld' (or 'gdp_clt' for the CLT approximation)"
                )
            q = e.sampling_probability
            z = base.effective_noise_multiplier(self.sampled_gaussians(e))
            return Mu(clt_mu_approximation(q, z, 1), clt_step=(q, z))
        raise self.unsupported(e)

    def compose(self, values: list[Mu]) -> Mu:
        return Mu(math.sqrt(math.fsum(v.mu**2 for v in values)))

    def self_compose(self, value: Mu, count: int) -> Mu:
        if value.clt_step is not None:
            return Mu(clt_mu_approximation(*value.clt_step, count))
        return Mu(math.sqrt(count) * value.mu)

    def parallel(self, values: list[Mu]) -> Mu:
        return Mu(max(v.mu for v in values))

    def epsilon_of(self, value: Mu, delta: float) -> float:
        return epsilon_for_delta(value.mu, delta)

    def delta_of(self, value: Mu, epsilon: float) -> float:
        return delta_for_epsilon(value.mu, epsilon)


def event_mu(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    *,
    clt: bool = False,
) -> float:
    """mu of a (composite) event (:class:`GdpAccountant`); ``clt=True`` also accepts
    Poisson-subsampled Gaussians via the CLT approximation (then the result is an
    approximation, not a guarantee)."""
    return GdpAccountant(clt=clt).account(event, neighboring_relation).mu
