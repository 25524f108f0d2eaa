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
from accounting.accountants import base
from accounting.validation import check_nonnegative, check_probability


def amplify_by_sampling(epsilon: float, sampling_prob: float) -> float:
    """``log(1 + q (e^eps - 1))``: pure DP after sampling each record with probability q."""
    eps = check_nonnegative("epsilon", epsilon)
    q = check_probability("sampling_prob", sampling_prob)
    return math.log1p(q * math.expm1(eps)) if eps < 700 else eps + math.log(q)


class PureAccountant(base.Accountant[float]):
    """Pure epsilon: composition adds (Dwork et al. 2006), a parallel composition takes the
    maximum of its cases, sampling amplifies (:func:`amplify_by_sampling`).

    Args:
      strict: raise on mechanisms that are not pure DP (Gaussian, mu-GDP, zCDP with
        ``rho > 0``), as the ``"pure"`` accountant does; otherwise they count as ``inf``
        (the pure epsilon read off any event, e.g. for ``delta = 0``).
    """

    title = "pure"

    def __init__(self, *, strict: bool = False, shared_batch: base.SharedBatch = "exact") -> None:
        super().__init__(shared_batch=shared_batch)
        self.strict = strict

    def identity(self) -> float:
        return 0.0

    def non_private(self) -> float:
        return math.inf

    def leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> float:
        if isinstance(e, ev.PureDpEvent):
            return check_nonnegative("epsilon", e.epsilon)
        if isinstance(e, ev.LaplaceDpEvent):
            return 1.0 / e.noise_multiplier
        if isinstance(e, ev.ZCDpEvent) and e.rho == 0 and e.xi == 0:
            return 0.0
        if isinstance(e, (ev.GaussianDpEvent, ev.MuGdpEvent, ev.ZCDpEvent)):
            if self.strict:
                raise base.UnsupportedEventError(
                    "the pure accountant needs pure-DP events (Laplace, PureDpEvent, ...), "
                    f"got {type(e).__name__}"
                )
            return math.inf
        if isinstance(e, (ev.PoissonSampledDpEvent, ev.SampledWithoutReplacementDpEvent)):
            inner = self._walk(e.event, relation)
            if isinstance(e, ev.PoissonSampledDpEvent):
                q = e.sampling_probability
            else:
                q = e.sample_size / e.source_dataset_size
            return inner if math.isinf(inner) else amplify_by_sampling(inner, q)
        raise self.unsupported(e)

    def compose(self, values: list[float]) -> float:
        return math.fsum(values)

    def self_compose(self, value: float, count: int) -> float:
        return count * value

    def parallel(self, values: list[float]) -> float:
        return max(values)

    def epsilon_of(self, value: float, delta: float) -> float:
        return value

    def delta_of(self, value: float, epsilon: float) -> float:
        return delta_for_epsilon(value, epsilon)


def event_epsilon(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> float:
    """The pure epsilon of ``event`` (``inf`` when some component is not pure DP)."""
    return PureAccountant().account(event, neighboring_relation)


def pure_epsilon_or_inf(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> float:
    """:func:`event_epsilon`, or ``inf`` where the pure accountant cannot analyse ``event``."""
    try:
        return event_epsilon(event, neighboring_relation)
    except ValueError:
        return math.inf


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
