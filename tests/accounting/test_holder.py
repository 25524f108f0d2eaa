"""DPGM's generalized moments accountant (Theorem 3, Hölder): hand-computed values, validity
against the exact joint analysis, and its place among the accountants."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from accounting import compute_epsilon
from accounting import events as ev
from accounting.accountants import holder, rdp

G = ev.GaussianDpEvent
ORDERS = np.array([1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 100.0, 128.0])


def shared(q: float, zs: list[float]) -> ev.PoissonSampledDpEvent:
    return ev.PoissonSampledDpEvent(q, ev.ComposedDpEvent([G(z) for z in zs]))


def hand_unsampled_bound(zs: list[float], a: np.ndarray) -> np.ndarray:
    """``min_j sum_i (1 + (a-1)/j_i) / (2 z_i^2)`` = ``sum_i 1/(2 z_i^2) + (a-1)(sum_i 1/z_i)^2/2``
    (Lagrange: ``j_i ~ 1/z_i``)."""
    inv = np.array([1 / z for z in zs])
    return np.sum(inv**2) / 2 + (a - 1) * np.sum(inv) ** 2 / 2


def test_hand_computed_unsampled_pair():
    # z = (1, 1): the bound is 2a - 1 (weights 1/2 are on the grid, orders 2a-1 are integers)
    a = np.array([2.0, 3.0, 5.0, 10.0])
    np.testing.assert_allclose(holder.shared_batch_holder_rdp(1.0, [1.0, 1.0], a), 2 * a - 1)
    np.testing.assert_allclose(hand_unsampled_bound([1.0, 1.0], a), 2 * a - 1)
    # the exact joint release is one Gaussian of multiplier 1/sqrt(2): RDP = a
    np.testing.assert_allclose(rdp.event_rdp(shared(1.0, [1.0, 1.0]), a), a)


@pytest.mark.parametrize("zs", [[2.0, 1.0], [4.0, 1.5], [1.0, 3.0, 2.0]])
def test_unsampled_bound_is_the_hand_minimum_up_to_the_grid(zs):
    """The grid minimum is a valid bound (>= the exact minimum over all weights) and close to
    it (the grid and the integer rounding of component orders cost a little)."""
    ours = holder.shared_batch_holder_rdp(1.0, zs, ORDERS)
    hand = hand_unsampled_bound(zs, ORDERS)
    assert np.all(ours >= hand * (1 - 1e-12))
    assert np.all(ours <= hand * 1.25 + 0.05)


@pytest.mark.parametrize(
    "q,zs", [(1e-3, [4.0, 1.0]), (0.0017, [4.0, 2.0]), (0.01, [2.0, 1.1]), (0.1, [5.0, 0.8])]
)
def test_never_below_the_exact_joint_gaussian(q, zs):
    """Both are valid bounds on the same mechanism; the exact one (one subsampled Gaussian of
    multiplier (sum z_i^-2)^-1/2) is the tighter (docs/privacy.md, "Several Gaussians")."""
    z_eff = sum(z**-2 for z in zs) ** -0.5
    exact = rdp.poisson_gaussian_rdp(q, z_eff, ORDERS)
    bound = holder.shared_batch_holder_rdp(q, zs, ORDERS)
    assert np.all(bound >= exact * (1 - 1e-9))
    # and below the trivial weights j = (1/2, 1/2) of the pair
    if len(zs) == 2:
        half = sum(rdp.poisson_gaussian_rdp(q, z, 2 * ORDERS - 1) for z in zs)
        assert np.all(bound <= half * (1 + 1e-9))


@pytest.mark.parametrize("z", [0.7, 2.0, 8.0])
def test_single_gaussian_is_its_exact_rdp(z):
    """Never below (here: equal to) the exact RDP of a single Gaussian, sampled or not."""
    for event in (G(z), ev.PoissonSampledDpEvent(0.01, G(z)), shared(0.01, [z])):
        ours = compute_epsilon(event, 1e-5, accountant="holder")
        assert ours == pytest.approx(compute_epsilon(event, 1e-5, accountant="rdp"), rel=1e-12)
    a = rdp.check_orders(ORDERS)
    np.testing.assert_allclose(holder.shared_batch_holder_rdp(1.0, [z], a), a / (2 * z * z))


def test_epsilon_of_a_dpgm_run_is_above_the_exact_one():
    """A DPGM run (DPNorm histogram + gradient on one batch per step, T steps): Hölder's
    epsilon is finite and above the exact joint analysis (which jdp therefore uses)."""
    run = ev.SelfComposedDpEvent(shared(0.0017, [4.0, 2.0]), 2000)
    exact = compute_epsilon(run, 1e-5, accountant="rdp")
    paper = compute_epsilon(run, 1e-5, accountant="holder")
    assert math.isfinite(paper) and exact < paper


def test_orders_above_the_cap_are_excluded():
    out = holder.shared_batch_holder_rdp(0.01, [2.0, 1.0], [64.0, 200.0])
    assert np.isfinite(out[0]) and out[1] == np.inf


def test_rdp_refuses_paper_mode_with_a_pointer():
    with pytest.raises(ValueError, match=re.escape("use accountant='holder'")):
        compute_epsilon(shared(0.01, [2.0, 1.0]), 1e-5, shared_batch="paper")


def test_bad_input():
    with pytest.raises(ValueError, match=re.escape("expected noise_multiplier > 0, got -1.0")):
        holder.shared_batch_holder_rdp(0.01, [2.0, -1.0], ORDERS)
    with pytest.raises(ValueError, match="expected at least one noise multiplier"):
        holder.shared_batch_holder_rdp(0.01, [], ORDERS)
