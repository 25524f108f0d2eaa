"""The accountant protocol and the one composition walker.

An accountant is a way of bounding privacy loss by a value that composes (an RDP curve, a
privacy loss distribution, ``mu``, ``(xi, rho)``, a pure ``epsilon``, log moments). It says
what the value is for each mechanism it can analyse (:meth:`Accountant.leaf`), how values
compose sequentially (:meth:`~Accountant.compose`, :meth:`~Accountant.self_compose`), how
the worst case over partitions is taken (:meth:`~Accountant.parallel`), and how a value
converts to ``epsilon``/``delta``. The structure of an event (no-op, non-private,
compositions, self-compositions, parallel compositions, the relation and the Gaussian
contents of sampled events) is walked once, here, by :meth:`Accountant.account`, in the
manner of ``dp_accounting``'s ``PrivacyAccountant`` (``supports`` / ``_maybe_compose``):

* ``NoOpDpEvent``, an empty composition, and a self-composition of count 0: the identity.
* ``NonPrivateDpEvent``, and a Gaussian or Laplace mechanism with noise multiplier 0 (the
  non-private limit, as in ``dp_accounting``): :meth:`~Accountant.non_private`.
* ``ComposedDpEvent``: the values of the parts, composed (Dwork et al. 2006; Mironov 2017,
  Prop. 1; Dong, Roth & Su 2019, Cor. 3.3; Bun & Steinke 2016, Lemma 2.3).
* ``SelfComposedDpEvent(e, k)``: ``k``-fold self-composition of the value of ``e``.
* ``ParallelComposedDpEvent``: the cases of :func:`accounting.relations.parallel_worst_cases`,
  each walked under its own relation, and their worst case (McSherry 2009, Thm. 4).
* Sampled events: ``PoissonSampledDpEvent`` is analysed under add/remove (unless the
  accountant also handles replace-one), ``SampledWithoutReplacementDpEvent`` under
  replace-one; sampling nothing costs nothing and sampling a zero-noise Gaussian is
  non-private. What remains is the accountant's leaf.
"""

from __future__ import annotations

import abc
import math
from typing import ClassVar, Generic, Literal, TypeVar

from accounting import events as ev
from accounting.relations import (
    ADD_OR_REMOVE_ONE,
    REPLACE_ONE,
    NeighboringRelation,
    check_relation,
    parallel_worst_cases,
)
from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_probability,
)

V = TypeVar("V")


class UnsupportedEventError(ValueError):
    """An accountant cannot analyse an event (its kind, its relation or its structure): the
    event may still be valid, and another accountant may analyse it. Every other
    ``ValueError`` of an accountant is a bad argument."""


SharedBatch = Literal["exact", "paper"]
SHARED_BATCH_MODES: tuple[str, ...] = ("exact", "paper")


def gaussian_multipliers(event: ev.DpEvent) -> list[float] | None:
    """The noise multipliers of ``event`` if it is a plain (composition of) Gaussian
    mechanism(s), one entry per mechanism application; ``None`` otherwise."""
    if isinstance(event, ev.GaussianDpEvent):
        return [float(event.noise_multiplier)]
    if isinstance(event, ev.SelfComposedDpEvent):
        inner = gaussian_multipliers(event.event)
        return None if inner is None else inner * int(event.count)
    if isinstance(event, ev.ComposedDpEvent):
        out: list[float] = []
        for e in event.events:
            inner = gaussian_multipliers(e)
            if inner is None:
                return None
            out.extend(inner)
        return out
    if isinstance(event, ev.NoOpDpEvent):
        return []
    return None


def effective_noise_multiplier(multipliers: list[float]) -> float:
    """The one Gaussian mechanism equivalent to releasing several on the same data.

    Jointly releasing ``f_i(D) + N(0, z_i^2 s_i^2 I)`` for ``i = 1..k`` (sensitivities
    ``s_i``) is, after rescaling each block by ``1/(z_i s_i)``, one Gaussian mechanism with
    unit noise and L2 sensitivity ``sqrt(sum_i z_i^-2)``; i.e. noise multiplier
    ``(sum_i z_i^-2)^(-1/2)``. This is exact (the privacy-loss distributions coincide), also
    after Poisson subsampling of the shared batch. ``z_i = 0`` gives 0 (non-private).
    """
    if not multipliers:
        return math.inf
    if any(z == 0 for z in multipliers):
        return 0.0
    return float(sum(z**-2 for z in multipliers) ** -0.5)


class Accountant(abc.ABC, Generic[V]):
    """One way of composing privacy events; subclasses define the value type ``V``.

    Subclasses set :attr:`title` (used in error messages) and implement the abstract
    methods; the walk over an event's structure is :meth:`account`, shared by all.

    Args:
      shared_batch: how several Gaussian mechanisms on one Poisson batch are analysed:
        ``"exact"`` (one Gaussian with :func:`effective_noise_multiplier`) or ``"paper"``
        (DPGM Thm. 3, Hölder bound: the ``"holder"`` accountant of
        :mod:`accounting.accountants.holder`; the RDP accountant refuses it with that
        pointer, the others always use the exact analysis).
    """

    #: Name in messages: ``"the {title} accountant cannot analyse ..."``.
    title: ClassVar[str]
    #: Relations under which ``ParallelComposedDpEvent`` is supported (empty: never).
    parallel_relations: ClassVar[tuple[NeighboringRelation, ...]] = (
        ADD_OR_REMOVE_ONE,
        REPLACE_ONE,
    )
    #: Relations under which ``PoissonSampledDpEvent`` is supported.
    poisson_relations: ClassVar[tuple[NeighboringRelation, ...]] = (ADD_OR_REMOVE_ONE,)

    def __init__(self, *, shared_batch: SharedBatch = "exact") -> None:
        if shared_batch not in SHARED_BATCH_MODES:
            raise ValueError(f"expected shared_batch in {SHARED_BATCH_MODES}, got {shared_batch!r}")
        self.shared_batch = shared_batch

    # -- what an accountant provides ---------------------------------------------------------
    @abc.abstractmethod
    def identity(self) -> V:
        """The value of a mechanism that releases nothing."""

    @abc.abstractmethod
    def non_private(self) -> V:
        """The value of a mechanism with no privacy guarantee (infinite loss)."""

    @abc.abstractmethod
    def leaf(self, event: ev.DpEvent, relation: NeighboringRelation) -> V:
        """The value of a non-structural event (a mechanism, or a sampled event whose
        relation the walker has checked); raise :meth:`unsupported` otherwise."""

    @abc.abstractmethod
    def compose(self, values: list[V]) -> V:
        """Sequential composition of ``values`` (any number, in order)."""

    @abc.abstractmethod
    def self_compose(self, value: V, count: int) -> V:
        """``count``-fold sequential composition of ``value`` (``count >= 1``)."""

    def parallel(self, values: list[V]) -> V:
        """The worst case of the (non-empty) ``values`` of a parallel composition; reached
        only under :attr:`parallel_relations`."""
        raise self.unsupported(ev.ParallelComposedDpEvent([]))

    @abc.abstractmethod
    def epsilon_of(self, value: V, delta: float) -> float:
        """Smallest epsilon such that ``value`` implies (epsilon, delta)-DP."""

    @abc.abstractmethod
    def delta_of(self, value: V, epsilon: float) -> float:
        """Smallest delta such that ``value`` implies (epsilon, delta)-DP."""

    # -- the walker ---------------------------------------------------------------------------
    def account(
        self, event: ev.DpEvent, neighboring_relation: NeighboringRelation = ADD_OR_REMOVE_ONE
    ) -> V:
        """The value of ``event`` analysed under ``neighboring_relation``."""
        if not isinstance(event, ev.DpEvent):
            raise TypeError(f"expected event to be a DpEvent, got {type(event).__name__}")
        return self._walk(event, check_relation(neighboring_relation))

    def _walk(self, e: ev.DpEvent, relation: NeighboringRelation) -> V:
        if isinstance(e, ev.NoOpDpEvent):
            return self.identity()
        if isinstance(e, ev.NonPrivateDpEvent):
            return self.non_private()
        if isinstance(e, ev.ComposedDpEvent):
            return self.compose([self._walk(x, relation) for x in e.events])
        if isinstance(e, ev.SelfComposedDpEvent):
            count = check_count("count", e.count)
            return (
                self.identity()
                if count == 0
                else self.self_compose(self._walk(e.event, relation), count)
            )
        if isinstance(e, ev.ParallelComposedDpEvent):
            self._check_parallel(relation)
            cases = parallel_worst_cases(list(e.events), relation)
            values = [self._walk(case, case_relation) for case, case_relation in cases]
            return self.parallel(values) if values else self.identity()
        noisy = isinstance(e, (ev.GaussianDpEvent, ev.LaplaceDpEvent))
        if noisy and check_nonnegative("noise_multiplier", e.noise_multiplier) == 0:
            return self.non_private()
        if isinstance(e, (ev.PoissonSampledDpEvent, ev.SampledWithoutReplacementDpEvent)):
            self._check_sampled(e, relation)
            zs = gaussian_multipliers(e.event)
            if zs is not None:
                for z in zs:
                    check_nonnegative("noise_multiplier", z)
                if not zs:
                    return self.identity()
                if any(z == 0 for z in zs):
                    return self.non_private()
        return self.leaf(e, relation)

    def _check_parallel(self, relation: NeighboringRelation) -> None:
        if relation in self.parallel_relations:
            return
        if not self.parallel_relations:
            raise self.unsupported(ev.ParallelComposedDpEvent([]))
        names = " or ".join(r.name for r in self.parallel_relations)
        raise UnsupportedEventError(
            f"the {self.title} accountant supports ParallelComposedDpEvent under {names} only; "
            "use accountant='rdp'"
        )

    def _check_sampled(self, e: ev.DpEvent, relation: NeighboringRelation) -> None:
        if isinstance(e, ev.SampledWithoutReplacementDpEvent):
            if relation != REPLACE_ONE:
                raise ValueError(
                    "SampledWithoutReplacementDpEvent is analysed under REPLACE_ONE; record it "
                    "with neighboring_relation=REPLACE_ONE"
                )
            return
        check_probability("sampling_prob", e.sampling_probability)
        if relation not in self.poisson_relations:
            raise UnsupportedEventError(
                f"the {self.title} accountant analyses PoissonSampledDpEvent under "
                "ADD_OR_REMOVE_ONE only; use accountant='pld' for REPLACE_ONE"
            )

    # -- helpers for leaves -----------------------------------------------------------------
    def unsupported(self, event: ev.DpEvent, hint: str = "") -> UnsupportedEventError:
        """The error for an event this accountant cannot analyse."""
        suffix = f" ({hint})" if hint else ""
        return UnsupportedEventError(
            f"the {self.title} accountant cannot analyse {type(event).__name__}{suffix}"
        )

    def sampled_gaussians(self, event: ev.DpEvent) -> list[float]:
        """The (checked, non-empty, non-zero) noise multipliers of the Gaussian mechanisms
        inside a sampled ``event``; raises when it samples anything else."""
        zs = gaussian_multipliers(event.event)
        if zs is None:
            raise UnsupportedEventError(
                f"the {self.title} accountant supports {type(event).__name__} of Gaussian "
                f"mechanisms only, got {type(event.event).__name__}"
            )
        return zs

    # -- (epsilon, delta) -------------------------------------------------------------------
    def epsilon(
        self,
        event: ev.DpEvent,
        delta: float,
        neighboring_relation: NeighboringRelation = ADD_OR_REMOVE_ONE,
    ) -> float:
        """Smallest epsilon such that ``event`` is (epsilon, delta)-DP, ``0 < delta < 1``."""
        d = check_open_unit("delta", delta)
        return self.epsilon_of(self.account(event, neighboring_relation), d)

    def delta(
        self,
        event: ev.DpEvent,
        epsilon: float,
        neighboring_relation: NeighboringRelation = ADD_OR_REMOVE_ONE,
    ) -> float:
        """Smallest delta such that ``event`` is (epsilon, delta)-DP, ``epsilon >= 0``."""
        e = check_nonnegative("epsilon", epsilon)
        return self.delta_of(self.account(event, neighboring_relation), e)
