"""Neighbouring relations: which pairs of datasets a guarantee is stated for, and the one
place where an event changes relation.

* ``ADD_OR_REMOVE_ONE``: ``D' = D + x`` or ``D - x`` (the default; what Poisson
  subsampling's amplification assumes).
* ``REPLACE_ONE``: ``D' = D - x + x'`` (the dataset size ``n`` is public; fixed-size
  sampling without replacement is analysed under it).

A ledger composes under one relation (DESIGN.md, privacy rule 3); an event analysed under
add/remove enters a replace-one ledger only through :func:`convert_relation`. DP-SGD's
relation and sensitivity factor per sampling scheme are stated here too
(:func:`dpsgd_neighboring_relation`, :func:`dpsgd_sensitivity_factor`), as is how a
parallel composition behaves under each relation (:func:`parallel_worst_cases`).
"""

from __future__ import annotations

from accounting import events as ev

NeighboringRelation = ev.NeighboringRelation
ADD_OR_REMOVE_ONE = NeighboringRelation.ADD_OR_REMOVE_ONE
REPLACE_ONE = NeighboringRelation.REPLACE_ONE


def check_relation(relation: object) -> NeighboringRelation:
    """Return ``relation`` after checking it is ``ADD_OR_REMOVE_ONE`` or ``REPLACE_ONE``."""
    if relation not in (ADD_OR_REMOVE_ONE, REPLACE_ONE):
        raise ValueError(
            f"expected neighboring_relation ADD_OR_REMOVE_ONE or REPLACE_ONE, got {relation!r}"
        )
    return relation  # type: ignore[return-value]


def convert_relation(
    event: ev.DpEvent,
    from_relation: NeighboringRelation,
    to_relation: NeighboringRelation,
) -> ev.DpEvent:
    """Re-express an event analysed under ``from_relation`` as one valid under ``to_relation``.

    * Same relation: returned unchanged.
    * ADD_OR_REMOVE_ONE -> REPLACE_ONE: replacing a record is removing it and adding another,
      so an L2 (L1) sensitivity ``s`` under add/remove is at most ``2 s`` under replace-one
      (triangle inequality): ``Gaussian(z) -> Gaussian(z/2)``, ``Laplace(b) -> Laplace(b/2)``,
      ``Pure(eps) -> Pure(2 eps)``, ``MuGdp(mu) -> MuGdp(2 mu)``, ``ZCDp(rho) -> ZCDp(4 rho)``
      (group privacy, Bun & Steinke 2016 Prop. 1.9), recursively through compositions. A
      :class:`~accounting.events.ParallelComposedDpEvent` is returned unchanged: its
      accountants already handle both relations. Subsampled events raise: group privacy does
      not commute with amplification by subsampling; analyse them under REPLACE_ONE directly.
    * REPLACE_ONE -> ADD_OR_REMOVE_ONE: impossible in general (releasing the dataset size is
      0-DP under replace-one and not DP under add/remove): raises.

    Raises:
      ValueError: when no valid conversion exists.
    """
    src, dst = check_relation(from_relation), check_relation(to_relation)
    if src == dst:
        return event
    if src == REPLACE_ONE:
        if isinstance(event, (ev.NoOpDpEvent, ev.NonPrivateDpEvent)):
            return event
        raise ValueError(
            "cannot convert a REPLACE_ONE event to ADD_OR_REMOVE_ONE (a replace-one guarantee "
            "does not bound adding or removing a record); re-derive its sensitivity under "
            "add/remove"
        )

    def walk(e: ev.DpEvent) -> ev.DpEvent:
        if isinstance(e, (ev.NoOpDpEvent, ev.NonPrivateDpEvent, ev.ParallelComposedDpEvent)):
            return e
        if isinstance(e, ev.GaussianDpEvent):
            return ev.GaussianDpEvent(e.noise_multiplier / 2)
        if isinstance(e, ev.LaplaceDpEvent):
            return ev.LaplaceDpEvent(e.noise_multiplier / 2)
        if isinstance(e, ev.PureDpEvent):
            return ev.PureDpEvent(2 * e.epsilon)
        if isinstance(e, ev.MuGdpEvent):
            return ev.MuGdpEvent(2 * e.mu)
        if isinstance(e, ev.ZCDpEvent):
            if e.xi != 0:
                raise ValueError("cannot convert (xi, rho)-zCDP with xi != 0 to REPLACE_ONE")
            return ev.ZCDpEvent(4 * e.rho)
        if isinstance(e, ev.ComposedDpEvent):
            return ev.ComposedDpEvent([walk(x) for x in e.events])
        if isinstance(e, ev.SelfComposedDpEvent):
            return ev.SelfComposedDpEvent(walk(e.event), e.count)
        raise ValueError(
            f"cannot convert {type(e).__name__} from ADD_OR_REMOVE_ONE to REPLACE_ONE: analyse "
            "it under REPLACE_ONE directly (e.g. accountant='pld' for Poisson sampling)"
        )

    return walk(event)


def parallel_worst_cases(
    events: list[ev.DpEvent], neighboring_relation: NeighboringRelation
) -> list[tuple[ev.DpEvent, NeighboringRelation]]:
    """``(event, relation)`` cases whose maximum bounds a
    :class:`~accounting.events.ParallelComposedDpEvent` under ``neighboring_relation``; each
    event is to be accounted under its relation.

    Add/remove: the components themselves, under add/remove (McSherry 2009, Thm. 4). Replace-one:
    every pair ``(a, b)`` of distinct partitions composed, under add/remove (the record leaves
    ``a`` and enters ``b``), and every component converted to replace-one and accounted *under
    replace-one* (the record is replaced inside its partition). The latter is what makes
    nesting correct: a parallel event inside a component (directly or inside a composition)
    is itself walked under replace-one, so a record moving between two of its sub-partitions
    is charged their composition. For the leaves that conversion yields (Gaussian, Laplace,
    pure, mu-GDP, zCDP), the RDP/GDP/zCDP/pure formulas do not depend on the relation.

    Equal cases are listed once, in first-seen order: the maximum over a list does not change
    when a repeated element is dropped, and a partition's identical runs (DPGM's ``k``
    clusters, a quantile tree's nodes) then cost one analysis instead of ``k`` (or ``k^2``
    pairs under replace-one).
    """
    kinds, counts = _distinct(events)
    if check_relation(neighboring_relation) == ADD_OR_REMOVE_ONE:
        return [(e, ADD_OR_REMOVE_ONE) for e in kinds]
    pairs = [
        (ev.ComposedDpEvent([a, b]), ADD_OR_REMOVE_ONE)
        for i, a in enumerate(kinds)
        for j, b in enumerate(kinds[i:], start=i)
        if j > i or counts[i] > 1
    ]
    within = [(convert_relation(e, ADD_OR_REMOVE_ONE, REPLACE_ONE), REPLACE_ONE) for e in kinds]
    return pairs + within


def _distinct(events: list[ev.DpEvent]) -> tuple[list[ev.DpEvent], list[int]]:
    """The distinct ``events`` (by ``==``: frozen ``attrs`` values, compared field by field)
    in first-seen order, and how often each occurs."""
    kinds: list[ev.DpEvent] = []
    counts: list[int] = []
    for e in events:
        i = next((i for i, k in enumerate(kinds) if k is e or k == e), len(kinds))
        if i == len(kinds):
            kinds.append(e)
            counts.append(0)
        counts[i] += 1
    return kinds, counts


def dpsgd_neighboring_relation(sampling: str) -> NeighboringRelation:
    """The relation DP-SGD with ``sampling`` is analysed under: add/remove-one for
    ``"poisson"`` (what Poisson amplification assumes), replace-one for
    ``"without_replacement"`` (fixed-size batches: ``n`` is public)."""
    if sampling == "poisson":
        return ADD_OR_REMOVE_ONE
    if sampling == "without_replacement":
        return REPLACE_ONE
    raise ValueError(f"expected sampling in ('poisson', 'without_replacement'), got {sampling!r}")


def dpsgd_sensitivity_factor(sampling: str) -> float:
    """L2 sensitivity of DP-SGD's clipped sum ``sum_i clip(g_i)`` in units of the clip norm
    ``C``, under :func:`dpsgd_neighboring_relation` ``(sampling)``.

    Add/remove (Poisson): adding a record adds one term of norm ``<= C``: factor 1.
    Replace-one (fixed-size batches): the replaced record may stay in the batch, and
    ``||clip(g(x)) - clip(g(x'))|| <= 2C`` (triangle inequality, equality at ``g(x') = -g(x)``):
    factor 2.
    """
    return 1.0 if dpsgd_neighboring_relation(sampling) == ADD_OR_REMOVE_ONE else 2.0


__all__ = [
    "ADD_OR_REMOVE_ONE",
    "REPLACE_ONE",
    "NeighboringRelation",
    "check_relation",
    "convert_relation",
    "dpsgd_neighboring_relation",
    "dpsgd_sensitivity_factor",
    "parallel_worst_cases",
]
