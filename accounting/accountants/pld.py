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
from accounting.validation import check_nonnegative, check_open_unit, check_positive

DEFAULT_DISCRETIZATION = 1e-4
_MAX_CASES = 256


def _expand_parallel(e: ev.DpEvent, relation: ev.NeighboringRelation) -> list[ev.DpEvent]:
    """Rewrite ``e`` as the list of parallel-free events whose maximum epsilon bounds it."""
    if isinstance(e, ev.ParallelComposedDpEvent):
        if relation != ev.NeighboringRelation.ADD_OR_REMOVE_ONE:
            raise ValueError(
                "the PLD accountant supports ParallelComposedDpEvent under ADD_OR_REMOVE_ONE "
                "only; use accountant='rdp'"
            )
        return [c for x in e.events for c in _expand_parallel(x, relation)] or [ev.NoOpDpEvent()]
    if isinstance(e, ev.ComposedDpEvent):
        options = [_expand_parallel(x, relation) for x in e.events]
        if math.prod(len(o) for o in options) > _MAX_CASES:
            raise ValueError(
                "too many parallel-composition cases for the PLD accountant; use 'rdp'"
            )
        return [ev.ComposedDpEvent(list(c)) for c in itertools.product(*options)]
    if isinstance(e, ev.SelfComposedDpEvent):
        inner = _expand_parallel(e.event, relation)
        if len(inner) > 1 and e.count > 1:
            raise ValueError(
                "a ParallelComposedDpEvent repeated in a SelfComposedDpEvent cannot be analysed "
                "by the PLD accountant (a record may change partition between rounds); use 'rdp'"
            )
        return [ev.SelfComposedDpEvent(inner[0], e.count)]
    return [e]


def event_pld(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    *,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> pld_lib.PrivacyLossDistribution | None:
    """The PLD of a parallel-free event, or ``None`` when it is not private.

    ``GaussianDpEvent(z)`` has noise std ``z`` times the L2 sensitivity *under the relation*
    (the events' convention), so its pair of output distributions is ``N(0, z^2)`` vs
    ``N(1, z^2)`` under either relation. ``dp_accounting``'s ``sensitivity`` is a record's
    add/remove contribution and its REPLACE_ONE pair is ``N(-s, z^2)`` vs ``N(s, z^2)``
    (means ``2s`` apart; Poisson-subsampled: each mixed with ``N(0, z^2)``), so under
    replace-one we pass ``s = 1/2``: means 1 apart, as the multiplier states. The same holds
    for mu-GDP (a Gaussian with ``z = 1/mu``).
    """
    v = check_positive("value_discretization_interval", value_discretization_interval)
    add_remove = neighboring_relation == ev.NeighboringRelation.ADD_OR_REMOVE_ONE

    def gaussian(z: float, q: float = 1.0) -> pld_lib.PrivacyLossDistribution | None:
        if z == 0:
            return None
        return pld_lib.from_gaussian_mechanism(
            standard_deviation=z,
            sensitivity=1.0 if add_remove else 0.5,
            value_discretization_interval=v,
            sampling_prob=q,
            neighboring_relation=neighboring_relation,
        )

    def walk(e: ev.DpEvent) -> pld_lib.PrivacyLossDistribution | None:
        if isinstance(e, ev.NoOpDpEvent):
            return pld_lib.identity(value_discretization_interval=v)
        if isinstance(e, ev.NonPrivateDpEvent):
            return None
        if isinstance(e, ev.GaussianDpEvent):
            return gaussian(check_nonnegative("noise_multiplier", e.noise_multiplier))
        if isinstance(e, ev.MuGdpEvent):
            mu = check_nonnegative("mu", e.mu)
            return (
                pld_lib.identity(value_discretization_interval=v) if mu == 0 else gaussian(1 / mu)
            )
        if isinstance(e, ev.LaplaceDpEvent):
            b = check_nonnegative("noise_multiplier", e.noise_multiplier)
            if b == 0:
                return None
            return pld_lib.from_laplace_mechanism(b, value_discretization_interval=v)
        if isinstance(e, ev.PureDpEvent):
            eps = check_nonnegative("epsilon", e.epsilon)
            if eps == 0:
                return pld_lib.identity(value_discretization_interval=v)
            return pld_lib.from_privacy_parameters(
                common.DifferentialPrivacyParameters(eps, 0.0), value_discretization_interval=v
            )
        if isinstance(e, ev.PoissonSampledDpEvent):
            q = e.sampling_probability
            zs = base.gaussian_multipliers(e.event)
            if zs is not None:
                if not zs:
                    return pld_lib.identity(value_discretization_interval=v)
                return gaussian(base.effective_noise_multiplier(zs), q)
            if isinstance(e.event, ev.LaplaceDpEvent) and add_remove:
                return pld_lib.from_laplace_mechanism(
                    e.event.noise_multiplier, value_discretization_interval=v, sampling_prob=q
                )
            raise ValueError(
                "the PLD accountant supports PoissonSampledDpEvent of Gaussian (or, under "
                f"add/remove, Laplace) mechanisms only, got {type(e.event).__name__}"
            )
        if isinstance(e, ev.ComposedDpEvent):
            out = pld_lib.identity(value_discretization_interval=v)
            for x in e.events:
                p = walk(x)
                if p is None:
                    return None
                out = out.compose(p)
            return out
        if isinstance(e, ev.SelfComposedDpEvent):
            if e.count == 0:
                return pld_lib.identity(value_discretization_interval=v)
            p = walk(e.event)
            return None if p is None else p.self_compose(int(e.count))
        raise ValueError(f"the PLD accountant cannot analyse {type(e).__name__}")

    return walk(event)


def epsilon(
    event: ev.DpEvent,
    delta: float,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    *,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> float:
    """Epsilon at ``delta`` (maximum over parallel-composition cases)."""
    d = check_open_unit("delta", delta)
    out = 0.0
    for case in _expand_parallel(event, neighboring_relation):
        p = event_pld(
            case, neighboring_relation, value_discretization_interval=value_discretization_interval
        )
        if p is None:
            return math.inf
        out = max(out, float(p.get_epsilon_for_delta(d)))
    return out


def delta(
    event: ev.DpEvent,
    epsilon: float,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    *,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> float:
    """Delta at ``epsilon`` (maximum over parallel-composition cases)."""
    e = check_nonnegative("epsilon", epsilon)
    out = 0.0
    for case in _expand_parallel(event, neighboring_relation):
        p = event_pld(
            case, neighboring_relation, value_discretization_interval=value_discretization_interval
        )
        if p is None:
            return 1.0
        out = max(out, float(p.get_delta_for_epsilon(e)))
    return min(1.0, out)
