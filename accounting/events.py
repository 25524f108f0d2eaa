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

Conventions: a ``GaussianDpEvent(z)`` means noise of standard deviation ``z`` times the L2
sensitivity *under the ledger's neighbouring relation*; ``noise_multiplier = 0`` is the
non-private limit (infinite epsilon), as in ``dp_accounting``. Several Gaussian mechanisms run
on the SAME Poisson sample (DPGM Algorithms 3/4: a noisy norm histogram and a noisy gradient
on one batch) are written ``PoissonSampledDpEvent(q, ComposedDpEvent([Gaussian z1, ...]))``.

The neighbouring relation is not part of an event; it is carried by the ledger entry
(:class:`accounting.ledger.LedgerEntry`) that records the event.
"""

from __future__ import annotations

import math

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

from accounting.validation import check_count, check_positive, check_probability


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
      replace-one (group privacy of size 2, :func:`accounting.compose.convert_relation`).
      The accountants take the maximum over all these cases
      (:func:`parallel_worst_cases`). A parallel event nested in a component (a partition of
      a partition) is walked under replace-one in the second case, which charges a record
      moving between two of its sub-partitions: the result equals that of the flattened
      parallel event.

    Inside a ``SelfComposedDpEvent`` a record may fall into different partitions in
    different rounds; the RDP, GDP, zCDP and pure accountants remain valid there (they bound
    every round by its worst component); the PLD accountant refuses that case.
    """

    events: list[DpEvent]


def parallel_worst_cases(
    events: list[DpEvent], neighboring_relation: NeighboringRelation
) -> list[tuple[DpEvent, NeighboringRelation]]:
    """``(event, relation)`` cases whose maximum bounds a :class:`ParallelComposedDpEvent`
    under ``neighboring_relation``; each event is to be accounted under its relation.

    Add/remove: the components themselves, under add/remove. Replace-one: every pair
    ``(a, b)`` of distinct partitions composed, under add/remove (the record leaves ``a`` and
    enters ``b``), and every component converted to replace-one and accounted *under
    replace-one* (the record is replaced inside its partition). The latter is what makes
    nesting correct: a parallel event inside a component (directly or inside a composition)
    is itself walked under replace-one, so a record moving between two of its sub-partitions
    is charged their composition. For the leaves that conversion yields (Gaussian, Laplace,
    pure, mu-GDP, zCDP), the RDP/GDP/zCDP/pure formulas do not depend on the relation.
    """
    if neighboring_relation == NeighboringRelation.ADD_OR_REMOVE_ONE:
        return [(e, neighboring_relation) for e in events]
    if neighboring_relation != NeighboringRelation.REPLACE_ONE:
        raise ValueError(f"unsupported neighboring_relation {neighboring_relation!r}")
    from accounting.compose import convert_relation

    add_remove = NeighboringRelation.ADD_OR_REMOVE_ONE
    pairs = [
        (ComposedDpEvent([events[a], events[b]]), add_remove)
        for a in range(len(events))
        for b in range(a + 1, len(events))
    ]
    within = [
        (convert_relation(e, add_remove, neighboring_relation), neighboring_relation)
        for e in events
    ]
    return pairs + within


def gaussian_multipliers(event: DpEvent) -> list[float] | None:
    """The noise multipliers of ``event`` if it is a plain (composition of) Gaussian
    mechanism(s), one entry per mechanism application; ``None`` otherwise."""
    if isinstance(event, GaussianDpEvent):
        return [float(event.noise_multiplier)]
    if isinstance(event, SelfComposedDpEvent):
        inner = gaussian_multipliers(event.event)
        return None if inner is None else inner * int(event.count)
    if isinstance(event, ComposedDpEvent):
        out: list[float] = []
        for e in event.events:
            inner = gaussian_multipliers(e)
            if inner is None:
                return None
            out.extend(inner)
        return out
    if isinstance(event, NoOpDpEvent):
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


def dpsgd_neighboring_relation(sampling: str) -> NeighboringRelation:
    """The relation DP-SGD with ``sampling`` is analysed under: add/remove-one for
    ``"poisson"`` (what Poisson amplification assumes), replace-one for
    ``"without_replacement"`` (fixed-size batches: ``n`` is public)."""
    if sampling == "poisson":
        return NeighboringRelation.ADD_OR_REMOVE_ONE
    if sampling == "without_replacement":
        return NeighboringRelation.REPLACE_ONE
    raise ValueError(f"expected sampling in ('poisson', 'without_replacement'), got {sampling!r}")


def dpsgd_sensitivity_factor(sampling: str) -> float:
    """L2 sensitivity of DP-SGD's clipped sum ``sum_i clip(g_i)`` in units of the clip norm
    ``C``, under :func:`dpsgd_neighboring_relation` ``(sampling)``.

    Add/remove (Poisson): adding a record adds one term of norm ``<= C``: factor 1.
    Replace-one (fixed-size batches): the replaced record may stay in the batch, and
    ``||clip(g(x)) - clip(g(x'))|| <= 2C`` (triangle inequality, equality at ``g(x') = -g(x)``):
    factor 2.
    """
    add_remove = dpsgd_neighboring_relation(sampling) == NeighboringRelation.ADD_OR_REMOVE_ONE
    return 1.0 if add_remove else 2.0


def dpsgd_event(
    noise_multiplier: float,
    sampling_prob: float,
    steps: int,
    *,
    sampling: str = "poisson",
    dataset_size: int | None = None,
) -> DpEvent:
    """The event of ``steps`` DP-SGD steps (Abadi et al. 2016, Alg. 1), to be accounted under
    :func:`dpsgd_neighboring_relation` ``(sampling)``.

    Every caller (:func:`jdp.dpsgd.train.train`,
    :func:`accounting.calibrate.calibrate_noise_multiplier`, ``jdp account dpsgd``) builds
    its event here, so they agree.

    Args:
      noise_multiplier: ``z`` = noise std / clip norm ``C`` (as Opacus and
        ``jdp account --noise-multiplier`` mean it). The recorded Gaussian's multiplier is
        relative to the clipped sum's sensitivity under the relation (the events'
        convention): ``z / dpsgd_sensitivity_factor(sampling)``, i.e. ``z`` under Poisson and
        ``z / 2`` under fixed-size sampling (sensitivity ``2C`` under replace-one).
      sampling_prob: ``q`` = expected batch size / dataset size.
      steps: number of noisy gradient steps.
      sampling: ``"poisson"`` (each record joins each batch independently with probability
        ``q``) or ``"without_replacement"`` (fixed batches of ``round(q * dataset_size)``
        records).
      dataset_size: required for ``"without_replacement"``.

    Returns:
      ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), steps)`` or
      ``SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(z / 2)),
      steps)``.
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_prob", sampling_prob)
    steps = check_count("steps", steps)
    gaussian = GaussianDpEvent(z / dpsgd_sensitivity_factor(sampling))
    if sampling == "poisson":
        return SelfComposedDpEvent(PoissonSampledDpEvent(q, gaussian), steps)
    if dataset_size is None:
        raise ValueError("expected dataset_size for sampling='without_replacement', got None")
    n = check_count("dataset_size", dataset_size, minimum=1)
    m = round(q * n)
    if m < 1:
        raise ValueError(f"expected sampling_prob * dataset_size >= 1, got {q * n:g}")
    return SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, m, gaussian), steps)


__all__ = [
    "ComposedDpEvent",
    "DpEvent",
    "EpsilonDeltaDpEvent",
    "GaussianDpEvent",
    "LaplaceDpEvent",
    "MuGdpEvent",
    "NeighboringRelation",
    "NoOpDpEvent",
    "NonPrivateDpEvent",
    "ParallelComposedDpEvent",
    "PoissonSampledDpEvent",
    "PureDpEvent",
    "SampledWithoutReplacementDpEvent",
    "SelfComposedDpEvent",
    "UnsupportedDpEvent",
    "ZCDpEvent",
    "dpsgd_event",
    "dpsgd_neighboring_relation",
    "dpsgd_sensitivity_factor",
    "effective_noise_multiplier",
    "gaussian_multipliers",
    "parallel_worst_cases",
]
