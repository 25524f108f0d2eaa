"""Zero-concentrated DP (Bun & Steinke 2016): composition and conversion to (eps, delta).

(xi, rho)-zCDP means RDP(alpha) <= xi + rho alpha for every alpha > 1.

* Gaussian, multiplier ``z``: ``rho = 1/(2 z^2)`` (BS16, Prop. 1.6); mu-GDP: ``rho = mu^2/2``.
* Pure eps-DP (and Laplace with ``eps = 1/b``): ``rho = eps^2/2`` (BS16, Prop. 1.4).
* Composition adds (xi, rho) (BS16, Lemma 2.3).
* Conversion: ``"classic"`` ``eps = xi + rho + 2 sqrt(rho log(1/delta))`` (BS16, Prop. 1.3);
  ``"improved"``: the RDP conversion of Canonne, Kamath & Steinke 2020 (Prop. 12) minimised
  over continuous alpha.

zCDP does not capture amplification by subsampling: subsampled events raise (use ``rdp``).
This is the baseline the P3GM paper compares against in its Fig. 9 (zCDP for DP-EM).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from scipy import optimize

from accounting import events as ev
from accounting.accountants import base
from accounting.validation import check_nonnegative, check_open_unit

XiRho = tuple[float, float]


class ZcdpAccountant(base.Accountant[XiRho]):
    """``(xi, rho)``-zCDP: composition adds both (Bun & Steinke 2016, Lemma 2.3); a parallel
    composition takes the maximum of each over its cases. No amplification by subsampling."""

    title = "zCDP"

    def identity(self) -> XiRho:
        return 0.0, 0.0

    def non_private(self) -> XiRho:
        return 0.0, math.inf

    def leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> XiRho:
        if isinstance(e, (ev.GaussianDpEvent, ev.LaplaceDpEvent)):
            return 0.0, 0.5 / e.noise_multiplier**2
        if isinstance(e, ev.MuGdpEvent):
            return 0.0, check_nonnegative("mu", e.mu) ** 2 / 2
        if isinstance(e, ev.PureDpEvent):
            return 0.0, check_nonnegative("epsilon", e.epsilon) ** 2 / 2
        if isinstance(e, ev.ZCDpEvent):
            return check_nonnegative("xi", e.xi), check_nonnegative("rho", e.rho)
        raise self.unsupported(e, "zCDP has no amplification by subsampling; use accountant='rdp'")

    def compose(self, values: list[XiRho]) -> XiRho:
        return math.fsum(v[0] for v in values), math.fsum(v[1] for v in values)

    def self_compose(self, value: XiRho, count: int) -> XiRho:
        return count * value[0], count * value[1]

    def parallel(self, values: list[XiRho]) -> XiRho:
        return max(v[0] for v in values), max(v[1] for v in values)

    def epsilon_of(self, value: XiRho, delta: float) -> float:
        return epsilon_for_delta(value[1], delta, xi=value[0])

    def delta_of(self, value: XiRho, epsilon: float) -> float:
        return delta_for_epsilon(value[1], epsilon, xi=value[0])


def event_rho(
    event: ev.DpEvent,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> XiRho:
    """``(xi, rho)`` of a (composite) event (:class:`ZcdpAccountant`)."""
    return ZcdpAccountant().account(event, neighboring_relation)


def _min_over_orders(f: Callable[[float], float]) -> float:
    """``min_{alpha > 1} f(alpha)``, searched over ``log(alpha - 1)`` in [-12, 12] (the RDP
    conversion of Canonne, Kamath & Steinke 2020, Prop. 12, at continuous orders)."""
    res = optimize.minimize_scalar(
        lambda log_am1: f(1 + math.exp(log_am1)),
        bounds=(-12.0, 12.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.fun)


def _check(xi: float, rho: float, conversion: str) -> None:
    check_nonnegative("xi", xi)
    if not (isinstance(rho, float) and math.isinf(rho)):
        check_nonnegative("rho", rho)
    if conversion not in ("improved", "classic"):
        raise ValueError(f"expected conversion in ('improved', 'classic'), got {conversion!r}")


def epsilon_for_delta(
    rho: float,
    delta: float,
    *,
    xi: float = 0.0,
    conversion: Literal["improved", "classic"] = "improved",
) -> float:
    """Epsilon of (xi, rho)-zCDP at ``delta``."""
    d = check_open_unit("delta", delta)
    _check(xi, rho, conversion)
    if math.isinf(rho):
        return math.inf
    if rho == 0:
        return xi
    classic = xi + rho + 2 * math.sqrt(rho * math.log(1 / d))
    if conversion == "classic":
        return classic

    def eps(a: float) -> float:
        return xi + rho * a + math.log1p(-1 / a) - (math.log(d) + math.log(a)) / (a - 1)

    return float(max(0.0, min(classic, _min_over_orders(eps))))


def delta_for_epsilon(
    rho: float,
    epsilon: float,
    *,
    xi: float = 0.0,
    conversion: Literal["improved", "classic"] = "improved",
) -> float:
    """Delta of (xi, rho)-zCDP at ``epsilon``."""
    e = check_nonnegative("epsilon", epsilon)
    _check(xi, rho, conversion)
    if math.isinf(rho):
        return 1.0
    if rho == 0:
        return 0.0 if e >= xi else 1.0
    if e <= xi + rho:
        classic = 1.0
    else:
        classic = math.exp(-((e - xi - rho) ** 2) / (4 * rho))
    if conversion == "classic":
        return classic

    def log_delta(a: float) -> float:
        return (a - 1) * (xi + rho * a - e + math.log1p(-1 / a)) - math.log(a)

    return float(min(classic, 1.0, math.exp(min(0.0, _min_over_orders(log_delta)))))
