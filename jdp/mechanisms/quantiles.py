"""Joint DP quantiles of one numeric column: the one mechanism for a numeric column's scale.

:func:`dp_quantiles` releases ``m`` quantiles of a column at once, inside a coarse public
range, by the recursive exponential mechanism of Kaplan, Schnapp & Stemmer (2022,
"Differentially Private Approximate Quantiles", ICML, Algorithm ``ApproxQuantile``): the
middle quantile is released first, the records are split at it, and each side's quantiles
are released on its records only, recursively. A record is in one slice per level, so a
level costs what one release costs (parallel composition) and the ``m`` quantiles cost
``L = ceil(log2(m + 1))`` releases instead of ``m``.

Each release is the exponential mechanism of Smith (2011) with a **geometric base measure**:
the public range is cut into signed geometric buckets (:func:`geometric_edges`: widths
doubling away from an anchor, down to a public ``resolution``), every bucket has base mass 1,
spread uniformly inside it. Over a loose range (an income declared in ``[0, 10^9]``) the
empty tail above the data then weighs as many units as it has buckets (about 14 above
``10^5``) rather than its length (``10^4`` times the data's): the search for the scale and
the quantile are one mechanism, with no range search beforehand.

Privacy (add/remove one record; docs/privacy.md, "Joint DP quantiles"):
  At a node with slice ``S`` (the records in the node's range, which earlier releases fix),
  relative rank ``r`` and output ``t``, the utility is ``u(t) = -|#{x in S : x < t} - r |S||``.
  Adding a record to ``S`` moves the count by 0 or 1 and ``r |S|`` by ``r``: ``u`` changes by
  at most ``max(r, 1 - r) <= 1`` for every ``t``. Sampling ``t`` with density proportional
  to ``mu(t) exp(epsilon_l u(t) / 2)`` for the public base density ``mu`` is
  ``epsilon_l``-DP (McSherry & Talwar 2007). The nodes of one level have disjoint slices (a
  record falls in the one whose range holds it; ranges are released), so a level is
  ``ParallelComposedDpEvent`` of its nodes' ``PureDpEvent(epsilon_l)`` and the whole release
  composes ``L`` levels with ``epsilon_l = epsilon / L``: epsilon-DP.
  Integer values get independent uniform jitter in ``[-1/2, 1/2]`` first (per record, so
  neighbours stay neighbours): ties would leave zero-length intervals at the target rank.
  The Gumbel-max draw is floating point, as for every exponential mechanism here
  (docs/privacy.md, "MWEM", finite precision).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from accounting import events as ev
from accounting.validation import check_positive
from jdp.mechanisms.selection import gumbel_max
from jdp.mechanisms.tape import released

__all__ = [
    "CONTINUOUS_LEVELS",
    "check_probs",
    "default_resolution",
    "dp_quantiles",
    "geometric_edges",
    "quantiles_event",
    "recursion_depth",
]

#: Geometric levels below a continuous column's half-range (its default resolution is the
#: half-range times ``2**-CONTINUOUS_LEVELS``, about a millionth).
CONTINUOUS_LEVELS = 20
#: The most geometric levels on either side of the anchor (float64 keeps ``2**-60`` apart).
MAX_LEVELS = 60


def default_resolution(lower: float, upper: float, *, integer: bool) -> float:
    """The smallest bucket's half-width: 1 for an integer column (its values are 1 apart),
    else the half-range over ``2**CONTINUOUS_LEVELS``. A function of the public range only."""
    if integer:
        return 1.0
    anchor = min(max(0.0, lower), upper)
    return max(upper - anchor, anchor - lower) * 2.0**-CONTINUOUS_LEVELS


def geometric_edges(lower: float, upper: float, resolution: float) -> np.ndarray:
    """Edges of the signed geometric buckets of ``[lower, upper]`` (public).

    Anchor ``c = clip(0, lower, upper)``, half-width ``s = max(upper - c, c - lower)``;
    candidate edges ``c +- s 2^-j`` for ``j = 0 .. J`` with ``s 2^-J <= resolution``
    (at most :data:`MAX_LEVELS`); those inside ``(lower, upper)``, with both ends, sorted.
    One bucket of half-width at most ``resolution`` around the anchor, then widths doubling
    outwards.
    """
    check_positive("resolution", resolution)
    if not lower < upper:
        raise ValueError(f"expected lower < upper, got [{lower}, {upper}]")
    c = min(max(0.0, float(lower)), float(upper))
    s = max(float(upper) - c, c - float(lower))
    levels = min(MAX_LEVELS, max(1, math.ceil(math.log2(s / resolution))))
    steps = s * 2.0 ** -np.arange(levels, -1, -1)
    candidates = np.concatenate([c - steps, c + steps])
    inside = candidates[(candidates > lower) & (candidates < upper)]
    return np.unique(np.concatenate([[float(lower), float(upper)], inside]))


def check_probs(probs: Sequence[float]) -> tuple[float, ...]:
    """``probs`` as floats, checked strictly increasing inside ``(0, 1)``."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or len(p) == 0 or np.any(np.diff(p) <= 0) or p[0] <= 0 or p[-1] >= 1:
        raise ValueError(f"expected strictly increasing probs in (0, 1), got {probs}")
    return tuple(p.tolist())


def recursion_depth(m: int) -> int:
    """``L = ceil(log2(m + 1))``: the levels of :func:`dp_quantiles` for ``m`` quantiles."""
    return max(1, math.ceil(math.log2(m + 1)))


def quantiles_event(epsilon: float, m: int) -> ev.DpEvent:
    """What :func:`dp_quantiles` of ``m`` quantiles at ``epsilon`` spends (data-free): level
    ``l`` runs ``2**l`` nodes on disjoint slices at ``epsilon / L`` each (fewer on the last
    level when ``m + 1`` is not a power of two; listing ``2**l`` is an upper bound only under
    replace-one, and the same under add/remove)."""
    check_positive("epsilon", epsilon)
    depth = recursion_depth(m)
    per_level = ev.PureDpEvent(epsilon=float(epsilon) / depth)
    levels = [
        ev.ParallelComposedDpEvent([per_level] * _nodes_at(m, level)) for level in range(depth)
    ]
    return levels[0] if depth == 1 else ev.ComposedDpEvent(levels)


def _nodes_at(m: int, level: int) -> int:
    """How many releases level ``level`` of the recursion makes for ``m`` quantiles."""
    sizes = [m]
    for _ in range(level):
        sizes = [s for size in sizes for s in (size // 2, size - size // 2 - 1) if size]
    return sum(1 for s in sizes if s > 0)


def _release(
    rng: np.random.Generator,
    x: np.ndarray,
    rank: float,
    lo: float,
    hi: float,
    edges: np.ndarray,
    epsilon: float,
) -> float:
    """One exponential-mechanism draw on the sorted slice ``x`` inside ``[lo, hi]``: density
    proportional to (geometric base density) ``exp(-epsilon |#{x < t} - rank |x|| / 2)``."""
    inner = edges[(edges > lo) & (edges < hi)]
    points = np.concatenate([[lo], x, inner, [hi]])
    is_record = np.concatenate([[0], np.ones(len(x)), np.zeros(len(inner)), [0]])
    order = np.argsort(points, kind="stable")
    points, is_record = points[order], is_record[order]
    below = np.cumsum(is_record)[:-1]  # records at or below each interval's left end
    lengths = np.diff(points)
    middle = points[:-1] + lengths / 2
    bucket = np.clip(np.searchsorted(edges, middle, side="right") - 1, 0, len(edges) - 2)
    widths = np.diff(edges)[bucket]
    with np.errstate(divide="ignore"):
        logits = np.log(lengths) - np.log(widths) - epsilon * np.abs(below - rank * len(x)) / 2
    k = gumbel_max(rng, logits)
    return float(points[k] + rng.random() * lengths[k])


@released(
    lambda rng, values, probs, lower, upper, epsilon, resolution, integer: (
        tuple(probs),
        lower,
        upper,
        epsilon,
        resolution,
        integer,
    )
)
def dp_quantiles(
    rng: np.random.Generator,
    values: np.ndarray,
    probs: tuple[float, ...],
    *,
    lower: float,
    upper: float,
    epsilon: float,
    resolution: float | None = None,
    integer: bool = False,
) -> tuple[np.ndarray, ev.DpEvent]:
    """The quantiles ``probs`` (strictly increasing, in ``(0, 1)``) of ``values`` clipped to
    ``[lower, upper]``, released jointly (see the module docstring).

    Args:
      rng: the noise source.
      values: the column's values (private; NaN not allowed: leave missing values and point
        masses out first, a per-record public filter).
      probs: the quantile levels, public.
      lower, upper: the coarse public range (may be very loose).
      epsilon: the budget of the whole release.
      resolution: the smallest bucket's half-width (default :func:`default_resolution`).
      integer: jitter the values by ``U[-1/2, 1/2]`` first (ties).

    Returns:
      ``(quantiles, event)``: nondecreasing values in ``[lower, upper]``, and
      :func:`quantiles_event` ``(epsilon, len(probs))``.
    """
    check_positive("epsilon", epsilon)
    p = np.asarray(check_probs(probs))
    if not lower < upper:
        raise ValueError(f"expected lower < upper, got [{lower}, {upper}]")
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or np.isnan(x).any():
        raise ValueError("expected a 1-D array of values without NaN")
    if resolution is None:
        resolution = default_resolution(lower, upper, integer=integer)
    if integer:
        x = x + rng.uniform(-0.5, 0.5, size=len(x))
    x = np.sort(np.clip(x, lower, upper))
    edges = geometric_edges(lower, upper, resolution)
    eps_level = epsilon / recursion_depth(len(p))
    out = np.empty(len(p))

    def node(xs: np.ndarray, first: int, stop: int, p_lo: float, p_hi: float, lo: float,
             hi: float) -> None:  # fmt: skip
        if first == stop:
            return
        j = first + (stop - first) // 2
        t = _release(rng, xs, (p[j] - p_lo) / (p_hi - p_lo), lo, hi, edges, eps_level)
        out[j] = t
        cut = int(np.searchsorted(xs, t, side="left"))
        node(xs[:cut], first, j, p_lo, p[j], lo, t)
        node(xs[cut:], j + 1, stop, p[j], p_hi, t, hi)

    node(x, 0, len(p), 0.0, 1.0, float(lower), float(upper))
    return out, quantiles_event(epsilon, len(p))
