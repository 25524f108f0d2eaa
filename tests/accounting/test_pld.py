"""PLD accountant: never looser than RDP; pessimistic against the exact Gaussian curve."""

from __future__ import annotations

import math

import pytest

from accounting import events as ev
from accounting.accountants import gdp, pld
from accounting.builders import dpsgd_event
from accounting.compose import compute_delta, compute_epsilon
from accounting.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE

G = ev.GaussianDpEvent

EVENTS = {
    "dpsgd": dpsgd_event(1.1, 0.01, 300),
    "dpsgd-large-q": dpsgd_event(2.0, 0.2, 50),
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
                [dpsgd_event(1.0, 0.05, 20), dpsgd_event(2.0, 0.05, 20)]
            ),
        ]
    ),
}


# Events analysed under REPLACE_ONE (no Poisson sampling or parallel parts: the RDP
# accountant refuses those there). Every event type the PLD accountant supports appears.
REPLACE_EVENTS = {
    "gaussian": G(2.0),
    "mu-gdp": ev.MuGdpEvent(0.5),
    "gaussians": EVENTS["gaussians"],
    "laplace": EVENTS["laplace"],
    "pure": ev.PureDpEvent(1.0),
    "pure+gaussian": EVENTS["pure+gaussian"],
}
CASES = [(n, ADD_OR_REMOVE_ONE) for n in sorted(EVENTS)]
CASES += [(n, REPLACE_ONE) for n in sorted(REPLACE_EVENTS)]


@pytest.mark.parametrize(("name", "relation"), CASES)
def test_pld_never_looser_than_rdp(name, relation):
    # Both are upper bounds on the same event's epsilon; PLD's discretisation rounds the
    # privacy loss up (pessimistic), and it is tight otherwise, so it never exceeds RDP.
    event = (EVENTS if relation == ADD_OR_REMOVE_ONE else REPLACE_EVENTS)[name]
    for delta in (1e-5, 1e-3):
        kwargs = dict(neighboring_relation=relation)
        assert compute_epsilon(event, delta, accountant="pld", **kwargs) <= compute_epsilon(
            event, delta, **kwargs
        ) * (1 + 1e-9)


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
