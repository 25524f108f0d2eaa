"""Joint DP quantiles: accuracy within the exponential mechanism's own bound, the event, the
recursion's structure, and bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting import events as ev
from accounting.compose import compute_epsilon
from jdp.mechanisms import quantiles as qm
from jdp.mechanisms.quantiles import (
    dp_quantiles,
    geometric_edges,
    quantiles_event,
    recursion_depth,
)

FAILURE = 1e-6  # each asserted error bound fails with at most this probability


def base_mass(edges: np.ndarray, a: float, b: float) -> float:
    """The geometric base measure of ``[a, b]``: each bucket's overlap over its width."""
    left, right = edges[:-1], edges[1:]
    overlap = np.clip(np.minimum(right, b) - np.maximum(left, a), 0.0, None)
    return float(np.sum(overlap / (right - left)))


def rank_error_bound(x: np.ndarray, rank: float, eps: float, edges: np.ndarray) -> int:
    """The smallest ``d`` with ``P(|rank error| > d) <= FAILURE`` for one release.

    Outputs within ``d/2`` ranks of the target have utility ``>= -d/2`` and base mass at
    least ``m = mass[x_(k - d/2), x_(k + d/2)]``; outputs beyond ``d`` ranks have utility
    ``<= -d`` and total mass at most ``W`` (the number of buckets), so
    ``P(beyond) <= (W / m) exp(-eps d / 4)`` (McSherry & Talwar 2007, Thm. 6's argument)."""
    n, total = len(x), len(edges) - 1
    for d in range(2, n):
        k = rank * n
        lo = x[max(0, math.floor(k - d / 2))]
        hi = x[min(n - 1, math.ceil(k + d / 2))]
        mass = base_mass(edges, lo, hi)
        if mass > 0 and total / mass * math.exp(-eps * d / 4) <= FAILURE:
            return d
    return n


def test_one_release_is_within_its_bound_on_a_loose_range():
    """A long-tailed column over [0, 1e9]: the median's rank error stays inside the bound."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.lognormal(7.0, 1.5, size=5000))
    edges = geometric_edges(0.0, 1e9, qm.default_resolution(0.0, 1e9, integer=False))
    bound = rank_error_bound(x, 0.5, 1.0, edges)
    assert bound < 200  # the bound itself is informative at this size
    for seed in range(20):
        (t,), _ = dp_quantiles(
            np.random.default_rng(seed), x, (0.5,), lower=0.0, upper=1e9, epsilon=1.0
        )
        assert abs(np.searchsorted(x, t) - 0.5 * len(x)) <= bound


def test_joint_quantiles_are_ordered_and_within_the_levels_bound():
    """15 quantiles (4 levels at eps / 4 each), ordered; each within four times the root's
    one-level bound (a loose check: a child's slice is a run of the same sorted records,
    its error adds to its parent's)."""
    rng = np.random.default_rng(1)
    x = np.sort(rng.lognormal(7.0, 1.5, size=20_000))
    probs = tuple(np.arange(1, 16) / 16)
    eps = 2.0
    edges = geometric_edges(0.0, 1e9, qm.default_resolution(0.0, 1e9, integer=False))
    per_level = rank_error_bound(x, 0.5, eps / recursion_depth(len(probs)), edges)
    q, event = dp_quantiles(rng, x, probs, lower=0.0, upper=1e9, epsilon=eps)
    assert np.all(np.diff(q) >= 0)
    ranks = np.searchsorted(x, q)
    assert np.all(np.abs(ranks - np.asarray(probs) * len(x)) <= 4 * per_level)
    assert event == quantiles_event(eps, len(probs))


@pytest.mark.parametrize("m", [1, 2, 3, 7, 10, 31])
def test_the_event_lists_one_parallel_level_per_recursion_level(monkeypatch, m):
    """The event's levels and node counts are those the recursion runs, and it composes to
    exactly epsilon (pure); every release runs at epsilon / L."""
    calls: list[float] = []
    real = qm._release

    def counted(rng, x, rank, lo, hi, edges, epsilon):
        calls.append(epsilon)
        return real(rng, x, rank, lo, hi, edges, epsilon)

    monkeypatch.setattr(qm, "_release", counted)
    probs = tuple(np.arange(1, m + 1) / (m + 1))
    _, event = dp_quantiles(np.random.default_rng(2), np.arange(50.0), probs, lower=0.0,
                            upper=100.0, epsilon=3.0)  # fmt: skip
    depth = recursion_depth(m)
    assert len(calls) == m and np.allclose(calls, 3.0 / depth)
    levels = [event] if depth == 1 else list(event.events)
    assert len(levels) == depth
    assert sum(len(level.events) for level in levels) == m
    assert all(isinstance(level, ev.ParallelComposedDpEvent) for level in levels)
    assert compute_epsilon(event, 0.0, accountant="pure") == pytest.approx(3.0)


def test_integer_counts_with_a_point_mass_do_not_leave_the_range():
    """A sparse count (95% zeros) in [0, 20]: quantiles stay in the range and near the data."""
    rng = np.random.default_rng(3)
    x = (rng.integers(1, 4, size=4000) * (rng.random(4000) < 0.05)).astype(float)
    q, _ = dp_quantiles(rng, x, (0.5, 0.9, 0.99), lower=0.0, upper=20.0, epsilon=1.0, integer=True)
    assert np.all((q >= 0) & (q <= 20))
    assert q[0] < 1.0 and q[-1] < 5.0


def test_geometric_edges_double_away_from_the_anchor():
    edges = geometric_edges(0.0, 1024.0, 1.0)
    assert edges.tolist() == [
        0.0,
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
        32.0,
        64.0,
        128.0,
        256.0,
        512.0,
        1024.0,
    ]
    signed = geometric_edges(-8.0, 4.0, 1.0)
    assert signed.tolist() == [-8.0, -4.0, -2.0, -1.0, 1.0, 2.0, 4.0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"probs": (0.5, 0.5)}, "strictly increasing"),
        ({"probs": (0.0, 0.5)}, "strictly increasing"),
        ({"probs": ()}, "strictly increasing"),
        ({"epsilon": 0.0}, "epsilon > 0"),
        ({"lower": 1.0, "upper": 1.0}, "lower < upper"),
        ({"values": np.array([1.0, np.nan])}, "without NaN"),
    ],
)
def test_bad_inputs_raise(kwargs, match):
    args = {"values": np.arange(5.0), "probs": (0.5,), "lower": 0.0, "upper": 10.0, "epsilon": 1.0}
    args.update(kwargs)
    values, probs = args.pop("values"), args.pop("probs")
    with pytest.raises(ValueError, match=match):
        dp_quantiles(np.random.default_rng(0), values, probs, **args)
