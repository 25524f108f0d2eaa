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


__all__ = [
    "ComposedDpEvent",
    "DpEvent",
    "GaussianDpEvent",
    "LaplaceDpEvent",
    "MuGdpEvent",
    "NeighboringRelation",
    "NonPrivateDpEvent",
    "NoOpDpEvent",
    "PoissonSampledDpEvent",
    "PureDpEvent",
    "SampledWithoutReplacementDpEvent",
    "SelfComposedDpEvent",
    "UnsupportedDpEvent",
    "ZCDpEvent",
]
