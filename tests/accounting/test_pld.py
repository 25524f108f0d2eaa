"""PLD accountant: pessimistic against the exact Gaussian curve, both relations, refusals
(PLD <= RDP is in tests/contracts/test_accountants.py)."""

from __future__ import annotations

import math

import pytest

from accounting import events as ev
from accounting.accountants import gdp, pld
from accounting.builders import dpsgd_event
from accounting.compose import compute_delta, compute_epsilon
from accounting.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE

G = ev.GaussianDpEvent


@pytest.mark.parametrize("relation", [ADD_OR_REMOVE_ONE, REPLACE_ONE])
@pytest.mark.parametrize("event", [G(2.0), ev.MuGdpEvent(0.5)], ids=["gaussian", "mu-gdp"])
def test_pld_gaussian_matches_exact_under_both_relations(event, relation):
    # The multiplier is relative to the relation's sensitivity: N(0, 4) vs N(1, 4) (mu = 1/2)
    # under either relation, whose exact curve is the mu-GDP one.
    for eps in (0.1, 0.5, 1.5):
        exact = gdp.delta_for_epsilon(0.5, eps)
        ours = compute_delta(event, eps, accountant="pld", neighboring_relation=relation)
        assert exact <= ours <= exact * 1.01 + 1e-12


def test_pld_gaussian_is_pessimistic_and_close_to_exact():
    z = 2.0
    for eps in (0.1, 0.5, 1.5):
        exact = gdp.delta_for_epsilon(1 / z, eps)
        ours = compute_delta(G(z), eps, accountant="pld")
        assert exact <= ours <= exact * 1.01 + 1e-12


def test_parallel_is_max_of_cases():
    a, b = dpsgd_event(1.0, 0.05, 20), dpsgd_event(2.0, 0.05, 20)
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


def test_pld_poisson_gaussian_under_replace_one_is_amplified():
    # q = 1 is the plain Gaussian; q < 1 can only lower epsilon below it (mu = 1/2 exactly).
    full = gdp.epsilon_for_delta(0.5, 1e-5)
    kwargs = dict(accountant="pld", neighboring_relation=REPLACE_ONE)
    at_one = compute_epsilon(ev.PoissonSampledDpEvent(1.0, G(2.0)), 1e-5, **kwargs)
    assert full <= at_one <= full * 1.01
    assert compute_epsilon(ev.PoissonSampledDpEvent(0.5, G(2.0)), 1e-5, **kwargs) < full
