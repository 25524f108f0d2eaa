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

from scipy import optimize, special

from accounting import events as ev
from accounting import relations
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


def event_mu(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    *,
    clt: bool = False,
) -> float:
    """mu of a (composite) event; ``clt=True`` also accepts Poisson-subsampled Gaussians via the
    CLT approximation (then the result is an approximation, not a guarantee)."""

    def subsampled(e: ev.PoissonSampledDpEvent, steps: int) -> float:
        zs = base.gaussian_multipliers(e.event)
        if not clt or zs is None:
            raise ValueError(
                "the GDP accountant has no exact bound for PoissonSampledDpEvent; use "
                "accountant='rdp' or 'pld' (or 'gdp_clt' for the CLT approximation)"
            )
        if not zs:
            return 0.0
        z = base.effective_noise_multiplier(zs)
        return math.inf if z == 0 else clt_mu_approximation(e.sampling_probability, z, steps)

    def walk(e: ev.DpEvent, add_remove: bool) -> float:
        if isinstance(e, ev.NoOpDpEvent):
            return 0.0
        if isinstance(e, ev.NonPrivateDpEvent):
            return math.inf
        if isinstance(e, ev.GaussianDpEvent):
            z = check_nonnegative("noise_multiplier", e.noise_multiplier)
            return math.inf if z == 0 else 1.0 / z
        if isinstance(e, ev.MuGdpEvent):
            return check_nonnegative("mu", e.mu)
        if isinstance(e, ev.ComposedDpEvent):
            return math.sqrt(math.fsum(walk(x, add_remove) ** 2 for x in e.events))
        if isinstance(e, ev.SelfComposedDpEvent):
            if isinstance(e.event, ev.PoissonSampledDpEvent):
                return subsampled(e.event, e.count) if add_remove else walk(e.event, add_remove)
            return math.sqrt(e.count) * walk(e.event, add_remove)
        if isinstance(e, ev.ParallelComposedDpEvent):
            relation = (
                ev.NeighboringRelation.ADD_OR_REMOVE_ONE
                if add_remove
                else ev.NeighboringRelation.REPLACE_ONE
            )
            cases = relations.parallel_worst_cases(list(e.events), relation)
            add_remove_one = ev.NeighboringRelation.ADD_OR_REMOVE_ONE
            return max((walk(c, r == add_remove_one) for c, r in cases), default=0.0)
        if isinstance(e, ev.PoissonSampledDpEvent):
            if not add_remove:
                raise ValueError("the GDP CLT approximation assumes ADD_OR_REMOVE_ONE")
            return subsampled(e, 1)
        raise ValueError(f"the GDP accountant cannot analyse {type(e).__name__}")

    return walk(event, neighboring_relation == ev.NeighboringRelation.ADD_OR_REMOVE_ONE)
