"""PLD accountant: never looser than RDP; pessimistic against the exact Gaussian curve."""

from __future__ import annotations

import math

import pytest

from accounting import events as ev
from accounting import gdp, pld
from accounting.compose import compute_delta, compute_epsilon

G = ev.GaussianDpEvent

EVENTS = {
    "dpsgd": ev.dpsgd_event(1.1, 0.01, 300),
    "dpsgd-large-q": ev.dpsgd_event(2.0, 0.2, 50),
    "gaussians": ev.ComposedDpEvent([G(2.0), ev.SelfComposedDpEvent(G(5.0), 20)]),
    "laplace": ev.SelfComposedDpEvent(ev.LaplaceDpEvent(5.0), 10),
    "pure+gaussian": ev.ComposedDpEvent([ev.PureDpEvent(0.5), G(3.0), ev.MuGdpEvent(0.2)]),
    "shared-batch": ev.SelfComposedDpEvent(
        ev.PoissonSampledDpEvent(0.02, ev.ComposedDpEvent([G(3.0), G(1.2)])), 300
    ),
    "parallel": ev.ComposedDpEvent(
        [
            G(4.0),
            ev.ParallelComposedDpEvent(
                [ev.dpsgd_event(1.0, 0.05, 20), ev.dpsgd_event(2.0, 0.05, 20)]
            ),
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_pld_never_looser_than_rdp(name):
    event = EVENTS[name]
    for delta in (1e-5, 1e-3):
        assert compute_epsilon(event, delta, accountant="pld") <= compute_epsilon(event, delta) * (
            1 + 1e-9
        )


def test_pld_gaussian_is_pessimistic_and_close_to_exact():
    z = 2.0
    for eps in (0.1, 0.5, 1.5):
        exact = gdp.delta_for_epsilon(1 / z, eps)
        ours = compute_delta(G(z), eps, accountant="pld")
        assert exact <= ours <= exact * 1.01 + 1e-12


def test_parallel_is_max_of_cases():
    a, b = ev.dpsgd_event(1.0, 0.05, 20), ev.dpsgd_event(2.0, 0.05, 20)
    par = compute_epsilon(ev.ParallelComposedDpEvent([a, b]), 1e-5, accountant="pld")
    assert par == pytest.approx(
        max(compute_epsilon(a, 1e-5, accountant="pld"), compute_epsilon(b, 1e-5, accountant="pld"))
    )


def test_pld_refusals():
    par = ev.ParallelComposedDpEvent([G(1.0), G(2.0)])
    with pytest.raises(ValueError, match="ADD_OR_REMOVE_ONE"):
        pld.epsilon(par, 1e-5, ev.NeighboringRelation.REPLACE_ONE)
    with pytest.raises(ValueError, match="SelfComposedDpEvent"):
        pld.epsilon(ev.SelfComposedDpEvent(par, 3), 1e-5)
    with pytest.raises(ValueError, match="PLD accountant"):
        pld.epsilon(ev.ZCDpEvent(0.1), 1e-5)
    assert math.isinf(pld.epsilon(ev.ComposedDpEvent([G(1.0), ev.NonPrivateDpEvent()]), 1e-5))
    with pytest.raises(ValueError, match="delta"):
        pld.epsilon(G(1.0), 0.0)
