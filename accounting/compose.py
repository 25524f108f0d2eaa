"""One entry point for every accountant: ``compute_epsilon`` / ``compute_delta``.

Accountants (``accountant=``):

=============  ===============================================================================
``"rdp"``      Rényi DP, exact subsampled-Gaussian RDP, improved conversion (default).
``"pld"``      privacy loss distributions via ``dp_accounting`` (tightest; slower).
``"gdp"``      mu-GDP, exact for (compositions of) Gaussian / mu-GDP events.
``"gdp_clt"``  mu-GDP with the CLT *approximation* for Poisson-subsampled Gaussians.
``"zcdp"``     zCDP (no subsampling).
``"pure"``     pure epsilon-DP (delta = 0) composition.
``"moments"``  the moments accountant by numerical integration (dp-GAN eqs. 5-6; DPGM eq. 7).
=============  ===============================================================================

``delta = 0`` always asks for pure DP (finite only if every component is pure).
"""

from __future__ import annotations

import math
from typing import Literal

from accounting import events as ev
from accounting.accountants import gdp, pld, pure, rdp, zcdp
from accounting.relations import ADD_OR_REMOVE_ONE, check_relation
from accounting.validation import check_nonnegative, check_open_unit

ACCOUNTANTS = ("rdp", "pld", "gdp", "gdp_clt", "zcdp", "pure", "moments")
SharedBatch = Literal["exact", "paper"]


def _check_accountant(accountant: str) -> None:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"expected accountant in {ACCOUNTANTS}, got {accountant!r}")


def compute_epsilon(
    event: ev.DpEvent,
    delta: float,
    *,
    accountant: str = "rdp",
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    shared_batch: SharedBatch = "exact",
) -> float:
    """Smallest epsilon such that ``event`` is (epsilon, delta)-DP, per ``accountant``.

    Args:
      event: any event of :mod:`accounting.events`.
      delta: in (0, 1), or 0 for pure DP.
      accountant: one of :data:`ACCOUNTANTS`.
      neighboring_relation: the relation the event was analysed under.
      shared_batch: how Gaussians sharing one Poisson batch are analysed by ``rdp``:
        ``"exact"`` (one effective Gaussian) or ``"paper"`` (DPGM Thm. 3, Hölder bound).

    Raises:
      ValueError: bad arguments, or an event the accountant cannot analyse.
    """
    _check_accountant(accountant)
    relation = check_relation(neighboring_relation)
    if not isinstance(event, ev.DpEvent):
        raise TypeError(f"expected event to be a DpEvent, got {type(event).__name__}")
    check_nonnegative("delta", delta)
    eps_a, delta_a, rest = split_approximate(event)
    if rest is not event:
        remaining = delta - delta_a  # 0 leaves the rest to the pure accountant
        if remaining < 0:
            return math.inf
        kwargs = dict(accountant=accountant, neighboring_relation=relation, shared_batch=shared_batch)
        return eps_a + compute_epsilon(rest, remaining, **kwargs)
    if delta == 0:
        return pure.event_epsilon(event, relation)
    d = check_open_unit("delta", delta)
    if accountant == "rdp":
        curve = rdp.event_rdp(event, neighboring_relation=relation, shared_batch=shared_batch)
        # A pure eps0-DP event is (eps0, delta)-DP for every delta; the RDP conversion alone
        # can exceed eps0 (e.g. Lap-PCA + PCA-Gauss Laplace releases: 1.0008 for eps0 = 1).
        return min(
            rdp.epsilon_from_rdp(rdp.DEFAULT_ORDERS, curve, d)[0], _pure_or_inf(event, relation)
        )
    if accountant == "pld":
        return pld.epsilon(event, d, relation)
    if accountant in ("gdp", "gdp_clt"):
        return gdp.epsilon_for_delta(gdp.event_mu(event, relation, clt=accountant == "gdp_clt"), d)
    if accountant == "zcdp":
        xi, rho = zcdp.event_rho(event, relation)
        return zcdp.epsilon_for_delta(rho, d, xi=xi)
    if accountant == "pure":
        return _pure_epsilon(event, relation)
    from accounting.accountants import moments

    return moments.epsilon(event, d, relation)


def split_approximate(event: ev.DpEvent) -> tuple[float, float, ev.DpEvent]:
    """Separate the :class:`~accounting.events.EpsilonDeltaDpEvent` components of ``event``.

    Returns ``(epsilon_a, delta_a, rest)``: the basic-composition sums of the (epsilon, delta)
    components found in (self-)compositions, and the event without them. ``rest is event``
    exactly when there is none. The accountants analyse ``rest`` at ``delta - delta_a`` and add
    ``epsilon_a`` (basic composition, Dwork & Roth 2014, Thm. 3.16).
    """

    def walk(e: ev.DpEvent) -> tuple[float, float, ev.DpEvent | None]:
        if isinstance(e, ev.EpsilonDeltaDpEvent):
            check_nonnegative("epsilon", e.epsilon)
            d = check_nonnegative("delta", e.delta)
            if d >= 1:
                raise ValueError(f"expected delta < 1, got {e.delta}")
            return float(e.epsilon), d, None
        if isinstance(e, ev.ComposedDpEvent):
            parts = [walk(x) for x in e.events]
            if all(r is x for (_, _, r), x in zip(parts, e.events)):
                return 0.0, 0.0, e
            kept = [r for _, _, r in parts if r is not None]
            return (
                math.fsum(p[0] for p in parts),
                math.fsum(p[1] for p in parts),
                ev.ComposedDpEvent(kept),
            )
        if isinstance(e, ev.SelfComposedDpEvent):
            eps, d, r = walk(e.event)
            if r is e.event:
                return 0.0, 0.0, e
            inner = None if r is None else ev.SelfComposedDpEvent(r, e.count)
            return e.count * eps, e.count * d, inner
        return 0.0, 0.0, e

    eps_a, delta_a, rest = walk(event)
    return eps_a, delta_a, ev.ComposedDpEvent([]) if rest is None else rest


def _pure_epsilon(event: ev.DpEvent, relation: ev.NeighboringRelation) -> float:
    """The pure epsilon of ``event``; raises where some component is not pure DP."""
    eps0 = pure.event_epsilon(event, relation)
    if math.isinf(eps0):
        raise ValueError("the pure accountant needs pure-DP events (Laplace, PureDpEvent, ...)")
    return eps0


def _pure_or_inf(event: ev.DpEvent, relation: ev.NeighboringRelation) -> float:
    """The pure epsilon of ``event``, or ``inf`` where the pure accountant cannot analyse it."""
    try:
        return pure.event_epsilon(event, relation)
    except ValueError:
        return math.inf


def compute_delta(
    event: ev.DpEvent,
    epsilon: float,
    *,
    accountant: str = "rdp",
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    shared_batch: SharedBatch = "exact",
) -> float:
    """Smallest delta such that ``event`` is (epsilon, delta)-DP, per ``accountant``."""
    _check_accountant(accountant)
    relation = check_relation(neighboring_relation)
    if not isinstance(event, ev.DpEvent):
        raise TypeError(f"expected event to be a DpEvent, got {type(event).__name__}")
    e = check_nonnegative("epsilon", epsilon)
    eps_a, delta_a, rest = split_approximate(event)
    if rest is not event:
        if e < eps_a:
            return 1.0
        kwargs = dict(accountant=accountant, neighboring_relation=relation, shared_batch=shared_batch)
        return min(1.0, delta_a + compute_delta(rest, e - eps_a, **kwargs))
    if accountant == "rdp":
        curve = rdp.event_rdp(event, neighboring_relation=relation, shared_batch=shared_batch)
        return rdp.delta_from_rdp(rdp.DEFAULT_ORDERS, curve, e)[0]
    if accountant == "pld":
        return pld.delta(event, e, relation)
    if accountant in ("gdp", "gdp_clt"):
        return gdp.delta_for_epsilon(gdp.event_mu(event, relation, clt=accountant == "gdp_clt"), e)
    if accountant == "zcdp":
        xi, rho = zcdp.event_rho(event, relation)
        return zcdp.delta_for_epsilon(rho, e, xi=xi)
    if accountant == "pure":
        return pure.delta_for_epsilon(_pure_epsilon(event, relation), e)
    from accounting.accountants import moments

    return moments.delta(event, e, relation)
