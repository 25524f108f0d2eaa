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
``"holder"``   RDP with DPGM's Hölder bound (Thm. 3) for Gaussians sharing one Poisson batch.
=============  ===============================================================================

and ``"best"`` (:data:`BEST`, what the ledger reports by default): the minimum over the
:data:`RIGOROUS` accountants that analyse the event (:func:`best_epsilon`). Each of them is
an upper bound on the same epsilon, so their minimum is one too; ``gdp_clt`` (an
approximation), ``moments`` (numerical integration, no error bound) and ``holder`` (a
looser variant of RDP) are not among them.

``delta = 0`` always asks for pure DP (finite only if every component is pure).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from accounting import events as ev
from accounting.accountants import base, gdp, holder, moments, pld, pure, rdp, zcdp
from accounting.accountants.base import SharedBatch
from accounting.relations import ADD_OR_REMOVE_ONE, check_relation
from accounting.validation import check_nonnegative

#: The registry: accountant name -> factory (keyword ``shared_batch``). A new accountant is a
#: module with a :class:`~accounting.accountants.base.Accountant` subclass and one line here.
ACCOUNTANTS: Mapping[str, Callable[..., base.Accountant]] = MappingProxyType(
    {
        "rdp": rdp.RdpAccountant,
        "pld": pld.PldAccountant,
        "gdp": gdp.GdpAccountant,
        "gdp_clt": functools.partial(gdp.GdpAccountant, clt=True),
        "zcdp": zcdp.ZcdpAccountant,
        "pure": functools.partial(pure.PureAccountant, strict=True),
        "moments": moments.MomentsAccountant,
        "holder": holder.HolderAccountant,
    }
)


#: The accountant name that asks for the minimum over :data:`RIGOROUS` (:func:`best_epsilon`).
BEST = "best"
#: The accountants whose answers are upper bounds (the candidates of :data:`BEST`), cheapest
#: first.
RIGOROUS: tuple[str, ...] = ("pure", "gdp", "zcdp", "rdp", "pld")
#: The rigorous accountants whose answer, when they analyse an event, is its exact epsilon
#: (GDP: compositions of Gaussians and mu-GDP events, tight composition and conversion; DRS
#: 2019, Cor. 2.13 and 3.3). No accountant can go below an exact answer, so :data:`BEST`
#: stops there; PLD on a low-noise Gaussian would otherwise build a huge grid for nothing.
EXACT: frozenset[str] = frozenset({"gdp"})


def make_accountant(name: str, *, shared_batch: SharedBatch = "exact") -> base.Accountant:
    """The accountant registered as ``name`` (one of :data:`ACCOUNTANTS`)."""
    if name not in ACCOUNTANTS:
        raise ValueError(f"expected accountant in {tuple(ACCOUNTANTS) + (BEST,)}, got {name!r}")
    return ACCOUNTANTS[name](shared_batch=shared_batch)


class Bound(NamedTuple):
    """The tightest of several valid answers, and which accountant gave it.

    Attributes:
      value: the minimum of ``by_accountant``'s values (epsilon or delta).
      accountant: the accountant that gave it (the first listed on a tie).
      by_accountant: accountant name -> its answer, for each accountant that analyses the
        event, in :data:`RIGOROUS` order.
    """

    value: float
    accountant: str
    by_accountant: dict[str, float]


def _best(compute: Callable[..., float], event: ev.DpEvent, value: float, **kwargs) -> Bound:
    answers: dict[str, float] = {}
    for name in RIGOROUS:
        try:
            answers[name] = compute(event, value, accountant=name, **kwargs)
        except base.UnsupportedEventError:
            continue
        if name in EXACT:
            break
    if not answers:
        raise base.UnsupportedEventError(
            f"no accountant among {RIGOROUS} can analyse this {type(event).__name__}"
        )
    name = min(answers, key=answers.__getitem__)
    return Bound(answers[name], name, answers)


def best_epsilon(
    event: ev.DpEvent,
    delta: float,
    *,
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    shared_batch: SharedBatch = "exact",
) -> Bound:
    """The smallest epsilon at ``delta`` over the :data:`RIGOROUS` accountants that analyse
    ``event`` (those that raise :class:`~accounting.accountants.base.UnsupportedEventError`
    are skipped), naming the one that gave it.

    **Privacy:** each answer is an upper bound on the event's epsilon at ``delta``, so their
    minimum is one; the PLD answer is refined adaptively
    (:class:`~accounting.accountants.pld.PldAccountant`). The search stops at an
    :data:`EXACT` accountant that analyses the event (nothing can be below it).
    """
    return _best(
        compute_epsilon,
        event,
        delta,
        neighboring_relation=neighboring_relation,
        shared_batch=shared_batch,
    )


def best_delta(
    event: ev.DpEvent,
    epsilon: float,
    *,
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    shared_batch: SharedBatch = "exact",
) -> Bound:
    """The smallest delta at ``epsilon`` over the :data:`RIGOROUS` accountants (as
    :func:`best_epsilon`)."""
    return _best(
        compute_delta,
        event,
        epsilon,
        neighboring_relation=neighboring_relation,
        shared_batch=shared_batch,
    )


def _prepare(
    event: ev.DpEvent,
    accountant: str,
    neighboring_relation: ev.NeighboringRelation,
    shared_batch: SharedBatch,
) -> tuple[base.Accountant, ev.NeighboringRelation, tuple[float, float, ev.DpEvent]]:
    """The checked accountant and relation, and :func:`split_approximate` of ``event``."""
    acc = make_accountant(accountant, shared_batch=shared_batch)
    relation = check_relation(neighboring_relation)
    if not isinstance(event, ev.DpEvent):
        raise TypeError(f"expected event to be a DpEvent, got {type(event).__name__}")
    return acc, relation, split_approximate(event)


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
      accountant: one of :data:`ACCOUNTANTS`, or :data:`BEST` (:func:`best_epsilon`).
      neighboring_relation: the relation the event was analysed under.
      shared_batch: how Gaussians sharing one Poisson batch are analysed: ``"exact"`` (one
        effective Gaussian). DPGM's Hölder bound (Thm. 3) is ``accountant="holder"``;
        ``rdp`` refuses ``"paper"`` with that pointer.

    Raises:
      ValueError: bad arguments, or an event the accountant cannot analyse
        (:class:`~accounting.accountants.base.UnsupportedEventError`).
    """
    if accountant == BEST:
        return best_epsilon(
            event, delta, neighboring_relation=neighboring_relation, shared_batch=shared_batch
        ).value
    acc, relation, (eps_a, delta_a, rest) = _prepare(
        event, accountant, neighboring_relation, shared_batch
    )
    remaining = check_nonnegative("delta", delta) - delta_a
    if remaining < 0:
        return math.inf
    if remaining == 0:  # pure DP asked for (or left over): the pure epsilon of the rest
        return eps_a + pure.event_epsilon(rest, relation)
    return eps_a + acc.epsilon(rest, remaining, relation)


def compute_delta(
    event: ev.DpEvent,
    epsilon: float,
    *,
    accountant: str = "rdp",
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    shared_batch: SharedBatch = "exact",
) -> float:
    """Smallest delta such that ``event`` is (epsilon, delta)-DP, per ``accountant`` (as
    :func:`compute_epsilon`)."""
    if accountant == BEST:
        return best_delta(
            event, epsilon, neighboring_relation=neighboring_relation, shared_batch=shared_batch
        ).value
    acc, relation, (eps_a, delta_a, rest) = _prepare(
        event, accountant, neighboring_relation, shared_batch
    )
    e = check_nonnegative("epsilon", epsilon)
    if e < eps_a:
        return 1.0
    return min(1.0, delta_a + acc.delta(rest, e - eps_a, relation))


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
