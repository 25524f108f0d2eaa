"""The vocabulary of mechanism descriptions (privacy events).

We reuse ``dp_accounting``'s ``DpEvent`` classes wherever they fit, so that a jdp ledger is
interoperable with jax-privacy and TF Privacy, and add our own (as ``attrs`` subclasses of
``DpEvent``) only for what it lacks:

* :class:`PureDpEvent` -- any mechanism proven epsilon-DP (e.g. a Laplace release whose
  sensitivity is stated in epsilon directly, or a published pure-DP algorithm).
  RDP of order alpha: ``min(epsilon, alpha * epsilon**2 / 2)`` (Bun & Steinke 2016, Prop. 3.3:
  epsilon-DP implies (epsilon**2 / 2)-zCDP; and any epsilon-DP mechanism has RDP <= epsilon).
* :class:`MuGdpEvent` -- a mechanism that is mu-Gaussian-DP (Dong, Roth & Su 2019): its
  trade-off curve is that of distinguishing N(0, 1) from N(mu, 1). A Gaussian mechanism with
  noise multiplier ``z`` is (1/z)-GDP.
* :class:`ParallelComposedDpEvent` -- mechanisms run on disjoint partitions of the data
  (PCA-Gauss per-class models, DPGM per-cluster models). See its docstring for the
  neighbouring-relation subtleties.
* :class:`NoiseCutDpEvent` -- what a finite-precision noise sampler costs: the total
  variation between its noise and the ideal noise (the ideal mass beyond the sampler's cut).

Conventions: a ``GaussianDpEvent(z)`` means noise of standard deviation ``z`` times the L2
sensitivity *under the ledger's neighbouring relation*; ``noise_multiplier = 0`` is the
non-private limit (infinite epsilon), as in ``dp_accounting``. Several Gaussian mechanisms run
on the SAME Poisson sample (DPGM Algorithms 3/4: a noisy norm histogram and a noisy gradient
on one batch) are written ``PoissonSampledDpEvent(q, ComposedDpEvent([Gaussian z1, ...]))``.

The neighbouring relation is not part of an event; it is carried by the ledger entry
(:class:`accounting.ledger.LedgerEntry`) that records the event.
"""

from __future__ import annotations

import attr
from dp_accounting import NeighboringRelation
from dp_accounting.dp_event import (
    ComposedDpEvent,
    DpEvent,
    GaussianDpEvent,
    LaplaceDpEvent,
    NonPrivateDpEvent,
    NoOpDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    UnsupportedDpEvent,
    ZCDpEvent,
)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class PureDpEvent(DpEvent):
    """A mechanism that satisfies pure ``epsilon``-DP."""

    epsilon: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class MuGdpEvent(DpEvent):
    """A mechanism that satisfies ``mu``-GDP (Dong, Roth & Su 2019, Def. 2.6)."""

    mu: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(DpEvent):
    """A mechanism proven (``epsilon``, ``delta``)-DP and nothing finer (e.g. a noisy count
    released only above a threshold: DP category discovery).

    No RDP/PLD curve describes it, so the accountants compose it by the basic composition
    theorem (Dwork & Roth 2014, Thm. 3.16) on top of their analysis of everything else: if the
    rest is (e', d')-DP then rest + this is (e' + epsilon, d' + delta)-DP
    (:func:`accounting.compose.split_approximate`). It may appear at the top level of a
    ledger, in compositions and self-compositions; inside a sampling or parallel event the
    accountants refuse it.
    """

    epsilon: float
    delta: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class NoiseCutDpEvent(DpEvent):
    """The noise of the releases composed with it came from a finite-precision sampler whose
    law is within total variation ``tail_mass`` of the ideal noise the other events assume.

    Every floating-point sampler has a cut: ``jax.random.normal`` in float32 cannot return
    more than about 5.4 standard deviations, so an output beyond ``f(D) + 5.4 sigma`` is
    impossible without a record and possible with it. A sampler that draws the ideal law
    conditioned on staying within its support (Box-Muller on a uniform with a floor ``u_0``:
    the radius of each pair is cut at ``sqrt(-2 ln u_0)``) is within total variation ``tau`` =
    the ideal mass beyond the support of the ideal one. If the ideal mechanisms compose to
    (epsilon, delta)-DP, the real ones are (epsilon, delta + (1 + e^epsilon) tau)-DP: for
    every output set ``S``, ``P[M(D) in S] <= P[M*(D) in S] + tau <= e^eps P[M*(D') in S] +
    delta + tau <= e^eps P[M(D') in S] + delta + (1 + e^eps) tau``, and the total variation of
    an adaptive composition is at most the sum of its parts' (hybrid argument), so the masses
    of all cut events of a ledger add (docs/privacy.md, "The sampler's cut").

    Its mass is a property of the sampler's runs, not of which records they saw: a sampler
    draws its noise whether or not a record was sampled and in every partition of a parallel
    composition, so masses add wherever the event stands (a ``k``-fold self-composition
    counts ``k`` times). The accountants strip it and add its mass through
    :func:`accounting.compose.split_approximate`.
    """

    tail_mass: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ParallelComposedDpEvent(DpEvent):
    """Mechanisms applied to disjoint partitions of the data (parallel composition).

    ``events[j]`` describes the mechanism run on partition ``j`` *under add/remove of one
    record of that partition* (always: that is what a partition sees when a record enters or
    leaves it).

    * Add/remove one record: the record lies in at most one partition, so only one component
      sees a change and the cost is the maximum over components (McSherry 2009, Thm. 4; for
      RDP the maximum is taken order by order, which is valid because every neighbouring
      pair is bounded by one component at every order simultaneously).
    * Replace one record: when partitions are data-dependent (class labels, cluster
      assignments) the replaced record can leave partition ``a`` and enter partition ``b``.
      Then two components change, each by one add/remove step, and the cost is the
      sequential composition of ``events[a]`` and ``events[b]``; when it stays in one
      partition the change is a replacement there, i.e. ``events[j]`` converted to
      replace-one (group privacy of size 2, :func:`accounting.relations.convert_relation`).
      The accountants take the maximum over all these cases
      (:func:`accounting.relations.parallel_worst_cases`). A parallel event nested in a
      component (a partition of a partition) is walked under replace-one in the second case,
      which charges a record moving between two of its sub-partitions: the result equals
      that of the flattened parallel event.

    Inside a ``SelfComposedDpEvent`` a record may fall into different partitions in
    different rounds; the RDP, GDP, zCDP and pure accountants remain valid there (they bound
    every round by its worst component); the PLD accountant refuses that case.
    """

    events: list[DpEvent]


__all__ = [
    "ComposedDpEvent",
    "DpEvent",
    "EpsilonDeltaDpEvent",
    "GaussianDpEvent",
    "LaplaceDpEvent",
    "MuGdpEvent",
    "NeighboringRelation",
    "NoOpDpEvent",
    "NoiseCutDpEvent",
    "NonPrivateDpEvent",
    "ParallelComposedDpEvent",
    "PoissonSampledDpEvent",
    "PureDpEvent",
    "SampledWithoutReplacementDpEvent",
    "SelfComposedDpEvent",
    "UnsupportedDpEvent",
    "ZCDpEvent",
]
