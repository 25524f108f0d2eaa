"""Privacy loss distributions (tight numerical accounting) through ``dp_accounting.pld``.

The PLD of a mechanism is the distribution of its privacy loss under the worst-case pair of
neighbouring inputs; composition convolves PLDs and (eps, delta) is read off exactly, up to a
pessimistic discretisation of the loss (``value_discretization_interval``), so the result is
an upper bound (Meiser & Mohammadi 2018; Koskela et al. 2020; Doroshenko et al. 2022).

Supported: Gaussian, Laplace, pure eps (the randomized-response PLD, tight for any
eps-DP mechanism), mu-GDP (a Gaussian with sensitivity mu), Poisson-subsampled Gaussian (also
several Gaussians on one batch, as one effective Gaussian) and Laplace, compositions, and
:class:`~accounting.events.ParallelComposedDpEvent` under add/remove when it is not repeated
inside a self-composition (the epsilon is the maximum over which partition the record is in).
"""

from __future__ import annotations

import itertools
import math

from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from accounting import events as ev
from accounting.accountants import base
from accounting.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE
from accounting.validation import check_nonnegative, check_positive

DEFAULT_DISCRETIZATION = 1e-4
_MAX_CASES = 256


Pld = pld_lib.PrivacyLossDistribution
#: The PLD accountant's value: the PLDs of the cases whose worst bounds the event (one case
#: unless it holds parallel compositions); ``None`` is a non-private case.
Cases = list[Pld | None]


class PldAccountant(base.Accountant[Cases]):
    """Privacy loss distributions: composition convolves them (in order, from the identity);
    a parallel composition (add/remove only) is the list of its cases, which compositions
    multiply out, and epsilon is the maximum over the cases.

    ``GaussianDpEvent(z)`` has noise std ``z`` times the L2 sensitivity *under the relation*
    (the events' convention), so its pair of output distributions is ``N(0, z^2)`` vs
    ``N(1, z^2)`` under either relation. ``dp_accounting``'s ``sensitivity`` is a record's
    add/remove contribution and its REPLACE_ONE pair is ``N(-s, z^2)`` vs ``N(s, z^2)``
    (means ``2s`` apart; Poisson-subsampled: each mixed with ``N(0, z^2)``), so under
    replace-one we pass ``s = 1/2``: means 1 apart, as the multiplier states. The same holds
    for mu-GDP (a Gaussian with ``z = 1/mu``).
    """

    title = "PLD"
    parallel_relations = (ADD_OR_REMOVE_ONE,)
    poisson_relations = (ADD_OR_REMOVE_ONE, REPLACE_ONE)

    def __init__(
        self,
        *,
        value_discretization_interval: float = DEFAULT_DISCRETIZATION,
        shared_batch: base.SharedBatch = "exact",
    ) -> None:
        super().__init__(shared_batch=shared_batch)
        self.interval = check_positive(
            "value_discretization_interval", value_discretization_interval
        )

    def _identity(self) -> Pld:
        return pld_lib.identity(value_discretization_interval=self.interval)

    def _gaussian(self, z: float, relation: ev.NeighboringRelation, q: float = 1.0) -> Pld:
        return pld_lib.from_gaussian_mechanism(
            standard_deviation=z,
            sensitivity=1.0 if relation == ADD_OR_REMOVE_ONE else 0.5,
            value_discretization_interval=self.interval,
            sampling_prob=q,
            neighboring_relation=relation,
        )

    def identity(self) -> Cases:
        return [self._identity()]

    def non_private(self) -> Cases:
        return [None]

    def leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> Cases:
        return [self._leaf(e, relation)]

    def _leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> Pld:
        v = self.interval
        if isinstance(e, ev.GaussianDpEvent):
            return self._gaussian(e.noise_multiplier, relation)
        if isinstance(e, ev.MuGdpEvent):
            mu = check_nonnegative("mu", e.mu)
            return self._identity() if mu == 0 else self._gaussian(1 / mu, relation)
        if isinstance(e, ev.LaplaceDpEvent):
            return pld_lib.from_laplace_mechanism(
                e.noise_multiplier, value_discretization_interval=v
            )
        if isinstance(e, ev.PureDpEvent):
            eps = check_nonnegative("epsilon", e.epsilon)
            if eps == 0:
                return self._identity()
            return pld_lib.from_privacy_parameters(
                common.DifferentialPrivacyParameters(eps, 0.0), value_discretization_interval=v
            )
        if isinstance(e, ev.PoissonSampledDpEvent):
            q = e.sampling_probability
            zs = base.gaussian_multipliers(e.event)
            if zs is not None:
                return self._gaussian(base.effective_noise_multiplier(zs), relation, q)
            if isinstance(e.event, ev.LaplaceDpEvent) and relation == ADD_OR_REMOVE_ONE:
                return pld_lib.from_laplace_mechanism(
                    e.event.noise_multiplier, value_discretization_interval=v, sampling_prob=q
                )
            raise ValueError(
                "the PLD accountant supports PoissonSampledDpEvent of Gaussian (or, under "
                f"add/remove, Laplace) mechanisms only, got {type(e.event).__name__}"
            )
        raise self.unsupported(e)

    def compose(self, values: list[Cases]) -> Cases:
        if math.prod(len(cases) for cases in values) > _MAX_CASES:
            raise ValueError(
                "too many parallel-composition cases for the PLD accountant; use 'rdp'"
            )
        return [self._compose_case(list(case)) for case in itertools.product(*values)]

    def _compose_case(self, plds: list[Pld | None]) -> Pld | None:
        out = self._identity()
        for p in plds:
            if p is None:
                return None
            out = out.compose(p)
        return out

    def self_compose(self, value: Cases, count: int) -> Cases:
        if len(value) > 1 and count > 1:
            raise ValueError(
                "a ParallelComposedDpEvent repeated in a SelfComposedDpEvent cannot be analysed "
                "by the PLD accountant (a record may change partition between rounds); use 'rdp'"
            )
        return [None if p is None else p.self_compose(count) for p in value]

    def parallel(self, values: list[Cases]) -> Cases:
        return [p for cases in values for p in cases]

    def epsilon_of(self, value: Cases, delta: float) -> float:
        """The maximum over the cases."""
        if any(p is None for p in value):
            return math.inf
        return max([0.0] + [float(p.get_epsilon_for_delta(delta)) for p in value])

    def delta_of(self, value: Cases, epsilon: float) -> float:
        """The maximum over the cases."""
        if any(p is None for p in value):
            return 1.0
        return min(1.0, max([0.0] + [float(p.get_delta_for_epsilon(epsilon)) for p in value]))


def epsilon(
    event: ev.DpEvent,
    delta: float,
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    *,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> float:
    """Epsilon at ``delta`` (maximum over parallel-composition cases; :class:`PldAccountant`)."""
    accountant = PldAccountant(value_discretization_interval=value_discretization_interval)
    return accountant.epsilon(event, delta, neighboring_relation)
