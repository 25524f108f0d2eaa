"""Pure epsilon-DP accounting: sequential and parallel composition, amplification by sampling.

* Sequential composition: epsilons add (Dwork et al. 2006).
* Parallel composition over disjoint partitions: the maximum under add/remove (McSherry 2009);
  under replace-one, ``max(max_{a != b} eps_a + eps_b, 2 max_j eps_j)``
  (:class:`accounting.events.ParallelComposedDpEvent`).
* Laplace with scale ``b`` per unit L1 sensitivity: ``1/b``.
* Poisson subsampling at rate ``q`` (add/remove): ``log(1 + q (e^eps - 1))``; fixed-size
  sampling of ``m`` of ``n`` without replacement (replace-one): the same with ``q = m/n``
  (Balle, Barthe & Gaboardi 2018, Thms. 8 and 10).
* A pure ``eps0``-DP mechanism is ``(eps, delta)``-DP for ``eps < eps0`` with
  ``delta = (e^eps0 - e^eps) / (1 + e^eps0)`` (its privacy region lies inside randomized
  response's; Kairouz, Oh & Viswanath 2015).
"""

from __future__ import annotations

import math

from accounting import events as ev
from accounting import relations
from accounting.validation import check_nonnegative, check_probability


def amplify_by_sampling(epsilon: float, sampling_prob: float) -> float:
    """``log(1 + q (e^eps - 1))``: pure DP after sampling each record with probability q."""
    eps = check_nonnegative("epsilon", epsilon)
    q = check_probability("sampling_prob", sampling_prob)
    return math.log1p(q * math.expm1(eps)) if eps < 700 else eps + math.log(q)


def event_epsilon(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> float:
    """The pure epsilon of ``event`` (``inf`` when some component is not pure DP)."""
    add_remove = neighboring_relation == ev.NeighboringRelation.ADD_OR_REMOVE_ONE

    def walk(e: ev.DpEvent, add_remove: bool) -> float:
        if isinstance(e, ev.NoOpDpEvent):
            return 0.0
        if isinstance(e, (ev.NonPrivateDpEvent, ev.GaussianDpEvent, ev.MuGdpEvent)):
            return math.inf
        if isinstance(e, ev.ZCDpEvent):
            return 0.0 if e.rho == 0 and e.xi == 0 else math.inf
        if isinstance(e, ev.PureDpEvent):
            return check_nonnegative("epsilon", e.epsilon)
        if isinstance(e, ev.LaplaceDpEvent):
            b = check_nonnegative("noise_multiplier", e.noise_multiplier)
            return math.inf if b == 0 else 1.0 / b
        if isinstance(e, ev.ComposedDpEvent):
            return math.fsum(walk(x, add_remove) for x in e.events)
        if isinstance(e, ev.SelfComposedDpEvent):
            return 0.0 if e.count == 0 else e.count * walk(e.event, add_remove)
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
                raise ValueError(
                    "pure-DP amplification of PoissonSampledDpEvent is implemented for "
                    "ADD_OR_REMOVE_ONE only"
                )
            inner = walk(e.event, add_remove)
            return (
                inner if math.isinf(inner) else amplify_by_sampling(inner, e.sampling_probability)
            )
        if isinstance(e, ev.SampledWithoutReplacementDpEvent):
            if add_remove:
                raise ValueError("SampledWithoutReplacementDpEvent is analysed under REPLACE_ONE")
            inner = walk(e.event, add_remove)
            q = e.sample_size / e.source_dataset_size
            return inner if math.isinf(inner) else amplify_by_sampling(inner, q)
        raise ValueError(f"the pure accountant cannot analyse {type(e).__name__}")

    return walk(event, add_remove)


def delta_for_epsilon(pure_epsilon: float, epsilon: float) -> float:
    """Smallest delta with which a ``pure_epsilon``-DP mechanism is ``(epsilon, delta)``-DP."""
    eps0 = (
        check_nonnegative("pure_epsilon", pure_epsilon) if math.isfinite(pure_epsilon) else math.inf
    )
    eps = check_nonnegative("epsilon", epsilon)
    if eps >= eps0:
        return 0.0
    if math.isinf(eps0):
        return 1.0
    # (e^eps0 - e^eps) / (1 + e^eps0), written to avoid overflow.
    return float(-math.expm1(eps - eps0) / (1 + math.exp(-eps0)))
