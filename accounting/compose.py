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

Two kinds of component are taken out before an accountant sees an event
(:func:`split_approximate`): (epsilon, delta) components, added by basic composition, and
sampler cuts (:class:`~accounting.events.NoiseCutDpEvent`), whose summed total variation
``tau`` costs ``(1 + e^epsilon) tau`` of delta on top of what the accountant finds for the
ideal mechanisms (so a ledger with a cut is never pure DP).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

import attr

from accounting import events as ev
from accounting.accountants import base, gdp, holder, moments, pld, pure, rdp, zcdp
from accounting.accountants.base import SharedBatch
from accounting.relations import ADD_OR_REMOVE_ONE, check_relation
from accounting.validation import check_count, check_nonnegative

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
    are skipped), naming the one that gave it; one more candidate is basic composition of
    the event's pure parts with the best answer on the rest (:func:`pure_split`), named
    ``"basic+<accountant>"``: the PLD accountant declines a ledger whose pure releases hold
    many distinct parallel cases (equal ones count once:
    :func:`accounting.relations.parallel_worst_cases`), and without the split the DP-SGD
    beside them would be accounted by RDP alone.

    **Privacy:** each answer is an upper bound on the event's epsilon at ``delta`` (the
    split one by adaptive basic composition: a pure ``epsilon_p``-DP part and an
    ``(epsilon_r, delta)``-DP rest are ``(epsilon_p + epsilon_r, delta)``-DP), so their
    minimum is one; the PLD answer is refined adaptively
    (:class:`~accounting.accountants.pld.PldAccountant`). The search stops at an
    :data:`EXACT` accountant that analyses the event (nothing can be below it).
    """
    kwargs = {"neighboring_relation": neighboring_relation, "shared_batch": shared_batch}
    bound: Bound | None = None
    failure: base.UnsupportedEventError | None = None
    try:
        bound = _best(compute_epsilon, event, delta, **kwargs)
    except base.UnsupportedEventError as err:
        failure = err
    eps_pure, rest = pure_split(event, check_relation(neighboring_relation))
    if rest is not None:
        try:
            other = _best(compute_epsilon, rest, delta, **kwargs)
        except base.UnsupportedEventError:
            other = None
        if other is not None and (bound is None or eps_pure + other.value < bound.value):
            name = f"basic+{other.accountant}"
            answers = {**(bound.by_accountant if bound else {}), name: eps_pure + other.value}
            bound = Bound(eps_pure + other.value, name, answers)
    if bound is None:
        raise failure  # type: ignore[misc]
    return bound


def pure_split(
    event: ev.DpEvent, relation: ev.NeighboringRelation
) -> tuple[float, ev.DpEvent | None]:
    """``(epsilon_p, rest)``: the summed pure epsilon of the top-level components of a
    :class:`~accounting.events.ComposedDpEvent` that are pure DP, and the composition of the
    others; ``(0, None)`` when the event has no pure component or nothing else."""
    if not isinstance(event, ev.ComposedDpEvent):
        return 0.0, None
    eps, rest = 0.0, []
    for child in event.events:
        e = pure.pure_epsilon_or_inf(child, relation)
        if math.isfinite(e):
            eps += e
        else:
            rest.append(child)
    if eps == 0 or not rest:
        return 0.0, None
    return eps, ev.ComposedDpEvent(rest)


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
) -> tuple[base.Accountant, ev.NeighboringRelation, Split]:
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
    acc, relation, (eps_a, delta_a, tail, rest) = _prepare(
        event, accountant, neighboring_relation, shared_batch
    )
    remaining = check_nonnegative("delta", delta) - delta_a
    if remaining < 0 or (remaining == 0 and tail > 0):
        return math.inf
    if remaining == 0:  # pure DP asked for (or left over): the pure epsilon of the rest
        return eps_a + pure.event_epsilon(rest, relation)
    return _epsilon_with_cut(lambda d: eps_a + acc.epsilon(rest, d, relation), remaining, tail)


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
    acc, relation, (eps_a, delta_a, tail, rest) = _prepare(
        event, accountant, neighboring_relation, shared_batch
    )
    e = check_nonnegative("epsilon", epsilon)
    if e < eps_a:
        return 1.0
    return min(1.0, delta_a + acc.delta(rest, e - eps_a, relation) + _cut_charge(e, tail))


class Split(NamedTuple):
    """An event taken apart by :func:`split_approximate`.

    Attributes:
      epsilon, delta: the basic-composition sums of its
        :class:`~accounting.events.EpsilonDeltaDpEvent` components.
      tail_mass: the sum of its :class:`~accounting.events.NoiseCutDpEvent` masses (the
        total variation between its samplers and the ideal noise).
      rest: the event without either.
    """

    epsilon: float
    delta: float
    tail_mass: float
    rest: ev.DpEvent


def split_approximate(event: ev.DpEvent) -> Split:
    """Separate the (epsilon, delta) and sampler-cut components of ``event``.

    :class:`~accounting.events.EpsilonDeltaDpEvent` components of (self-)compositions are
    summed by basic composition (Dwork & Roth 2014, Thm. 3.16): the accountants analyse
    ``rest`` at ``delta - delta_a`` and add ``epsilon_a``. :class:`~accounting.events.NoiseCutDpEvent`
    masses are summed wherever they stand (a sampler runs in every partition and whether or
    not a record was sampled; a ``k``-fold self-composition counts ``k`` times); the
    ideal events in ``rest`` then pay ``(1 + e^epsilon) tail_mass`` of delta
    (:func:`compute_epsilon`, :func:`compute_delta`). ``rest is event`` exactly when there is
    neither.
    """
    tail, without_cuts = _strip_cuts(event)

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

    eps_a, delta_a, rest = walk(without_cuts)
    if rest is None:
        rest = ev.ComposedDpEvent([])
    return Split(eps_a, delta_a, tail, event if rest is event else rest)


def _strip_cuts(e: ev.DpEvent) -> tuple[float, ev.DpEvent | None]:
    """``(sum of the NoiseCut masses in e, e without them)``; ``None`` when ``e`` was a cut;
    the same object when it held none."""
    if isinstance(e, ev.NoiseCutDpEvent):
        mass = check_nonnegative("tail_mass", e.tail_mass)
        if mass > 1:
            raise ValueError(f"expected tail_mass <= 1, got {e.tail_mass}")
        return float(mass), None
    if isinstance(e, (ev.ComposedDpEvent, ev.ParallelComposedDpEvent)):
        parts = [_strip_cuts(x) for x in e.events]
        if all(r is x for (_, r), x in zip(parts, e.events)):
            return 0.0, e
        if isinstance(e, ev.ComposedDpEvent):
            kept = [r for _, r in parts if r is not None]
            if len(kept) == 1:  # a composition of one is that event
                return math.fsum(t for t, _ in parts), kept[0]
        else:  # a partition whose only release was the cut releases nothing
            kept = [ev.ComposedDpEvent([]) if r is None else r for _, r in parts]
        return math.fsum(t for t, _ in parts), type(e)(kept)
    if isinstance(e, ev.SelfComposedDpEvent):
        mass, inner = _strip_cuts(e.event)
        if inner is e.event:
            return 0.0, e
        count = check_count("count", e.count)
        rest = None if inner is None else ev.SelfComposedDpEvent(inner, count)
        return count * mass, rest
    if isinstance(e, (ev.PoissonSampledDpEvent, ev.SampledWithoutReplacementDpEvent)):
        mass, inner = _strip_cuts(e.event)
        if inner is e.event:
            return 0.0, e
        return mass, attr.evolve(e, event=ev.ComposedDpEvent([]) if inner is None else inner)
    return 0.0, e


def pure_spend(event: ev.DpEvent) -> tuple[float, float]:
    """``(epsilon, delta)`` of an event whose rest (:func:`split_approximate`) is pure:
    ``epsilon = epsilon_a + pure epsilon of the rest`` and ``delta = delta_a + (1 +
    e^epsilon) tail_mass`` (basic composition and the sampler-cut charge). The figure a
    pure-DP release (a DP schema) subtracts from a budget."""
    split = split_approximate(event)
    eps = split.epsilon + pure.event_epsilon(split.rest, ADD_OR_REMOVE_ONE)
    return eps, split.delta + _cut_charge(eps, split.tail_mass)


def _cut_charge(epsilon: float, tail_mass: float) -> float:
    """``(1 + e^epsilon) tail_mass``: the delta a sampler cut of total variation
    ``tail_mass`` adds at ``epsilon`` (:class:`~accounting.events.NoiseCutDpEvent`)."""
    if tail_mass == 0:
        return 0.0
    return math.inf if epsilon > 700 else (1.0 + math.exp(epsilon)) * tail_mass


#: The shares of delta tried, in order, as the room left for a sampler cut's charge
#: (:func:`_epsilon_with_cut`): ``1e-9`` of delta changes no epsilon visibly and serves every
#: sampler the library ships; the larger ones serve coarse samplers.
_CUT_SHARES = (1e-9, 1e-6, 1e-4, 1e-2, 0.1, 0.3, 0.5, 0.7, 0.9)


def _epsilon_with_cut(epsilon_at: Callable[[float], float], delta: float, tail: float) -> float:
    """An epsilon with ``epsilon_at(d)``'s delta plus the cut charge at most ``delta``.

    ``e = epsilon_at(delta - s)`` is valid when the charge ``(1 + e^e) tail <= s``; the room
    ``s`` is tried at :data:`_CUT_SHARES` of ``delta`` (at least ``2 tail``, the charge at
    ``e = 0``) in increasing order and the first valid ``e`` is returned (a smaller room gives
    a smaller ``e``). ``inf`` when none is valid: an upper bound, conservative when the cut is
    a large share of ``delta``.
    """
    if tail == 0:
        return epsilon_at(delta)
    rooms = sorted({max(2.0 * tail, share * delta) for share in _CUT_SHARES})
    for room in rooms:
        if room >= delta:
            break
        e = epsilon_at(delta - room)
        if _cut_charge(e, tail) <= room:
            return e
    return math.inf
