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

**Discretisation, chosen adaptively.** Every PLD here is built with ``dp_accounting``'s
pessimistic estimate (``pessimistic_estimate=True``, its default: connect-the-dots for the
Gaussian and Laplace mechanisms, Doroshenko et al. 2022, Thm. 4.4; losses rounded up for
randomized response) and compositions move truncated tail mass to the infinite loss, so the
answer at *any* interval is an upper bound (checked against closed forms in
``tests/accounting/test_pld.py``). The bound's slack grows with the number of compositions:
at interval ``1e-4`` a run of ``3e5`` DP-SGD steps with ``q = 1.3e-4``, ``z = 6.5`` reads
epsilon 0.062 where RDP gives 0.032 and the limit is about 0.028. So by default
(``value_discretization_interval=None``) the accountant halves the interval from
:data:`DEFAULT_DISCRETIZATION` until the answer moves by at most ``rtol`` (relative) between
two passes, or the next pass would exceed ``max_points`` grid points, and returns the
*minimum* over the passes (each an upper bound, so their minimum is one). Pass a fixed
``value_discretization_interval`` for one pass at that grid.

**Deterministic by default.** The stopping rule reads only the answers and the grid sizes, so
one event gives one figure on every machine and under any load. Calibration relies on this
(:func:`accounting.calibrate.calibrate` chooses the noise at which this figure meets the
budget, and the fitted ledger recomputes the same figure). An optional wall-clock
``time_budget_s`` exists for interactive use; with it the answer is still an upper bound but
depends on the machine.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from accounting import events as ev
from accounting.accountants import base
from accounting.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE
from accounting.validation import check_nonnegative, check_positive

#: The first (coarsest) interval of the adaptive refinement, and ``dp_accounting``'s default.
DEFAULT_DISCRETIZATION = 1e-3
#: Stop refining when two successive passes differ by at most this (relative).
DEFAULT_RTOL = 5e-3
#: No pass whose composed PLD would hold more grid points than this (about 0.3 GB of FFT).
DEFAULT_MAX_POINTS = 2**22
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
        value_discretization_interval: float | None = None,
        rtol: float = DEFAULT_RTOL,
        max_points: int = DEFAULT_MAX_POINTS,
        time_budget_s: float | None = None,
        shared_batch: base.SharedBatch = "exact",
    ) -> None:
        """Args:
        value_discretization_interval: one pass at this interval; ``None`` (default):
          refine adaptively from :data:`DEFAULT_DISCRETIZATION` (see the module docstring).
        rtol: relative change between two passes at which refinement stops, in (0, 1).
        max_points: the largest composed PLD (grid points) a refinement pass may build.
        time_budget_s: wall-clock seconds after which no further pass starts (the answer
          is then the best so far: still an upper bound, but machine-dependent); ``None``
          (default): no wall-clock limit, so the answer is deterministic.
        shared_batch: see :class:`~accounting.accountants.base.Accountant`.
        """
        super().__init__(shared_batch=shared_batch)
        self.adaptive = value_discretization_interval is None
        self.interval = check_positive(
            "value_discretization_interval",
            DEFAULT_DISCRETIZATION
            if value_discretization_interval is None
            else value_discretization_interval,
        )
        if not 0 < rtol < 1:
            raise ValueError(f"expected rtol in (0, 1), got {rtol}")
        self.rtol = float(rtol)
        self.max_points = int(check_positive("max_points", max_points))
        self.time_budget_s = (
            None if time_budget_s is None else check_positive("time_budget_s", time_budget_s)
        )
        #: ``(interval, answer, seconds, grid points)`` of each pass of the last adaptive call.
        self.passes: list[tuple[float, float, float, int]] = []
        #: Grid points of the largest PLD behind the last answer.
        self.points = 0

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
            raise base.UnsupportedEventError(
                "too many parallel-composition cases for the PLD accountant; use 'rdp'"
            )
        return [self._compose_case(list(case)) for case in itertools.product(*values)]

    def _compose_case(self, plds: list[Pld | None]) -> Pld | None:
        """In order; a composition of one PLD is that PLD, unconvolved (so a ledger of one
        entry reports exactly what its event alone does)."""
        if any(p is None for p in plds):
            return None
        if not plds:
            return self._identity()
        out = plds[0]
        for p in plds[1:]:
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

    # -- adaptive discretisation ------------------------------------------------------------
    def epsilon(
        self,
        event: ev.DpEvent,
        delta: float,
        neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    ) -> float:
        """Smallest epsilon at ``delta`` (refined adaptively unless the interval is fixed)."""
        if not self.adaptive:
            return super().epsilon(event, delta, neighboring_relation)
        return self._refine(lambda fixed: fixed.epsilon(event, delta, neighboring_relation))

    def delta(
        self,
        event: ev.DpEvent,
        epsilon: float,
        neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    ) -> float:
        """Smallest delta at ``epsilon`` (refined adaptively unless the interval is fixed)."""
        if not self.adaptive:
            return super().delta(event, epsilon, neighboring_relation)
        return self._refine(lambda fixed: fixed.delta(event, epsilon, neighboring_relation))

    def _refine(self, answer: Callable[[PldAccountant], float]) -> float:
        """The minimum of ``answer`` over passes at intervals ``v0, v0/2, v0/4, ...``.

        Stops when two successive answers differ by at most ``rtol`` relative (the
        discretisation error is about linear in the interval, so this difference estimates
        what is left), when an answer is infinite or zero, or before a pass predicted to
        exceed ``max_points`` grid points or the optional time budget (a pass costs about
        twice the previous one).
        """
        start = time.perf_counter()
        self.passes = []
        interval, previous, best = self.interval, math.inf, math.inf
        while True:
            fixed = PldAccountant(
                value_discretization_interval=interval, shared_batch=self.shared_batch
            )
            t0 = time.perf_counter()
            value = answer(fixed)
            seconds = time.perf_counter() - t0
            self.passes.append((interval, value, seconds, fixed.points))
            best = min(best, value)
            if value == 0 or math.isinf(value) or abs(previous - value) <= self.rtol * value:
                return best
            next_too_big = 2 * fixed.points > self.max_points
            next_too_slow = (
                self.time_budget_s is not None
                and time.perf_counter() - start + 2.2 * seconds > self.time_budget_s
            )
            if next_too_big or next_too_slow:
                return best
            interval, previous = interval / 2, value

    def _count_points(self, value: Cases) -> None:
        """Record in :attr:`points` the largest grid of the PLDs in ``value``."""
        sizes = [
            pmf.size
            for p in value
            if p is not None
            for pmf in (p._pmf_remove, p._pmf_add)  # dp_accounting's PMFs
            if pmf is not None
        ]
        self.points = max([0] + sizes)

    def epsilon_of(self, value: Cases, delta: float) -> float:
        """The maximum over the cases."""
        self._count_points(value)
        if any(p is None for p in value):
            return math.inf
        return max([0.0] + [float(p.get_epsilon_for_delta(delta)) for p in value])

    def delta_of(self, value: Cases, epsilon: float) -> float:
        """The maximum over the cases."""
        self._count_points(value)
        if any(p is None for p in value):
            return 1.0
        return min(1.0, max([0.0] + [float(p.get_delta_for_epsilon(epsilon)) for p in value]))


def epsilon(
    event: ev.DpEvent,
    delta: float,
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    *,
    value_discretization_interval: float | None = None,
) -> float:
    """Epsilon at ``delta`` (maximum over parallel-composition cases; :class:`PldAccountant`,
    adaptive unless ``value_discretization_interval`` is given)."""
    accountant = PldAccountant(value_discretization_interval=value_discretization_interval)
    return accountant.epsilon(event, delta, neighboring_relation)
