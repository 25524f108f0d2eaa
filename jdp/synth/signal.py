"""Too little budget for any signal: one rule over every method's released statistics.

A DP release is a statistic plus noise. When the noise is as large as anything the statistic
could show, the synthetic data drawn from it is noise, and a user who sees only the output
cannot tell. The rule here: a method describes each statistic it released as a
:class:`Release` -- the typical size of its noise (a standard deviation; for a matrix the
spectral norm of its noise, about ``2 sqrt(m) s`` for an ``m x m`` symmetric matrix of entries
with standard deviation ``s``) against the size its signal would have, computed from public
bounds and *released* values only (a noisy count, never the raw ``n``). A statistic whose
noise is at least its signal (:attr:`Release.ratio` ``>= 1``) carries no signal.

Where the bound on a statistic is public but its value is not (a covariance's trace is at
most 1 on records in the unit ball), the signal is the share :data:`SIGNAL_SHARE` of that
bound: real tables use a small part of their declared range (Adult's encoded rows put about
3% of the unit ball's variance budget in their covariance), so the full bound would call
pure noise "signal".

:func:`check_signal` is called once by :func:`jdp.synth.base.fit_model` for every method; a
method takes part by registering a function from its fitted model to its releases
(:func:`register_releases`). The warning names the statistics and their noise-to-signal
ratios, never a private count; the released counts appear only when the data holder asked
for private details (:mod:`jdp.verbosity`, ``jdp fit --verbose``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from jdp.data.quantile_scale import KnotSpend, knot_buckets
from jdp.mechanisms.quantiles import recursion_depth
from jdp.verbosity import private_detail

SIGNAL_SHARE = 0.05

#: A released mean carries signal when two noise sds are within half its distance from the
#: column's lower bound (then it is within half of its value about 95% of the time): its
#: signal is that distance times ``1 / (2 * 2)`` (:func:`mean_release`).
MEAN_PRECISION = 0.25


class FittedModel(Protocol):
    """What the rule needs of :class:`jdp.synth.base.FittedModel` (not imported: base calls
    this module)."""

    method: str


#: Weak statistics a no-signal message names, the worst first (the rest are counted; every
#: one is on the warning's ``releases``).
SHOWN = 8


class NoSignalWarning(UserWarning):
    """The budget is too small for any signal in some released statistic; ``releases`` holds
    every weak one (the message names the :data:`SHOWN` worst)."""

    def __init__(self, message: str, releases: tuple[Release, ...] = ()) -> None:
        super().__init__(message)
        self.releases = releases


@dataclass(frozen=True)
class Release:
    """One released statistic: the typical size of its ``noise`` and of its ``signal``
    (public bound times :data:`SIGNAL_SHARE`, or a released value), in the same units."""

    name: str
    noise: float
    signal: float

    @property
    def ratio(self) -> float:
        """Noise over signal (``inf`` for a signal <= 0)."""
        return self.noise / self.signal if self.signal > 0 else math.inf


def mean_release(column: str, mean: float, noise: float, lower: float) -> Release:
    """A numeric column's mean as the released values give it, with the standard deviation
    ``noise`` of its DP noise: signal :data:`MEAN_PRECISION` times ``mean - lower``."""
    return Release(f"mean of {column} (to within half)", noise, MEAN_PRECISION * (mean - lower))


def laplace_std(l1_sensitivity: float, epsilon: float) -> float:
    """Standard deviation ``sqrt(2) Delta_1 / epsilon`` of a Laplace release."""
    return math.sqrt(2.0) * l1_sensitivity / epsilon


def spectral_noise(entry_std: float, size: int) -> float:
    """About the spectral norm ``2 sqrt(m) s`` of an ``m x m`` symmetric noise matrix with
    i.i.d. entries of standard deviation ``s`` (the semicircle law's edge)."""
    return 2.0 * math.sqrt(size) * entry_std


def weak_releases(releases: Iterable[Release]) -> list[Release]:
    """The releases whose noise is at least their signal (``ratio >= 1``)."""
    return [r for r in releases if r.ratio >= 1.0]


_REPORTERS: dict[str, Callable[[FittedModel], list[Release]]] = {}


def register_releases(method: str, releases_fn: Callable[[FittedModel], list[Release]]) -> None:
    """Let :func:`check_signal` judge ``method``'s fitted models by ``releases_fn``."""
    _REPORTERS[method] = releases_fn


def check_signal(model: FittedModel) -> list[Release]:
    """Warn (:class:`NoSignalWarning`) when a statistic ``model`` released carries no signal.

    The message gives the :data:`SHOWN` worst weak statistics' names and noise/signal ratios
    (the warning's ``releases`` holds all of them, worst first); their noise and signal sizes
    (a released count is a signal) only under private details.

    Args:
      model: a fitted model; methods without registered releases are not judged.

    Returns:
      The weak releases (empty when all carry signal or the method reports none).
    """
    reporter = _REPORTERS.get(model.method)
    if reporter is None:
        return []
    return warn_weak(model.method, reporter(model), stacklevel=4)


def knot_releases(knots: Iterable[KnotSpend], probs: Sequence[float]) -> list[Release]:
    """Each column's released knots (:func:`jdp.data.quantile_scale.release_all_knots`) as a
    release: noise ``8 log(4 B_c) / epsilon_l`` records against the signal ``n_c``, its
    released value count (``B_c`` its geometric buckets, ``epsilon_l = epsilon_c / L`` per level
    of the ``L``; the rule is derived in :mod:`jdp.data.quantile_scale` and docs/privacy.md,
    "As an encoding")."""
    depth = recursion_depth(len(probs))
    return [
        Release(
            f"knots of {k.column.name}",
            8.0 * math.log(4.0 * knot_buckets(k.column)) * depth / k.epsilon,
            k.count,
        )
        for k in knots
    ]


def warn_weak(method: str, releases: list[Release], *, stacklevel: int = 3) -> list[Release]:
    """Warn (:class:`NoSignalWarning`, see :func:`check_signal`) when any of ``method``'s
    ``releases`` carries no signal; returns the weak ones, worst first."""
    weak = sorted(weak_releases(releases), key=lambda r: -r.ratio)
    if weak:
        worst = ", ".join(f"{r.name} {r.ratio:.2g}" for r in weak[:SHOWN])
        more = f" and {len(weak) - SHOWN} more" if len(weak) > SHOWN else ""
        message = (
            f"{method}: the budget is too small for any signal in {len(weak)} of "
            f"{len(releases)} released statistics (noise/signal: {worst}{more}); what they "
            "describe in the synthetic data is mostly noise. More epsilon, more rows or fewer "
            "columns help"
            + private_detail(
                "; ".join(f"{r.name}: noise {r.noise:.3g}, signal {r.signal:.3g}" for r in weak)
            )
        )
        warnings.warn(NoSignalWarning(message, tuple(weak)), stacklevel=stacklevel)
    return weak
