"""PLD accountant: pessimistic against the exact Gaussian curve, both relations, refusals
(PLD <= RDP is in tests/contracts/test_accountants.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special

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
        assert exact * (1 - 1e-12) <= ours <= exact * 1.01 + 1e-12  # float rounding only


def test_pld_gaussian_is_pessimistic_and_close_to_exact():
    z = 2.0
    for eps in (0.1, 0.5, 1.5):
        exact = gdp.delta_for_epsilon(1 / z, eps)
        ours = compute_delta(G(z), eps, accountant="pld")
        assert exact * (1 - 1e-12) <= ours <= exact * 1.01 + 1e-12  # float rounding only


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
    kwargs = {"accountant": "pld", "neighboring_relation": REPLACE_ONE}
    at_one = compute_epsilon(ev.PoissonSampledDpEvent(1.0, G(2.0)), 1e-5, **kwargs)
    assert full <= at_one <= full * 1.01
    assert compute_epsilon(ev.PoissonSampledDpEvent(0.5, G(2.0)), 1e-5, **kwargs) < full


# -- pessimism: an upper bound at ANY discretisation ---------------------------------------------
def _poisson_gaussian_delta(q: float, z: float, eps: float) -> float:
    """Exact delta(eps) of one Poisson-subsampled Gaussian step under add/remove: the larger
    hockey-stick divergence of P = (1-q) N(0, z^2) + q N(1, z^2) and Q = N(0, z^2), both ways.
    The likelihood ratio P/Q = (1-q) + q exp((2x-1)/(2z^2)) is increasing in x, so each
    divergence is a tail difference at the crossing point."""
    sf, cdf = special.ndtr, special.ndtr
    x = z**2 * math.log((math.exp(eps) - (1 - q)) / q) + 0.5  # P/Q = e^eps
    remove = (1 - q) * sf(-x / z) + q * sf(-(x - 1) / z) - math.exp(eps) * sf(-x / z)
    add = 0.0
    if math.exp(-eps) > 1 - q:  # Q/P > e^eps somewhere on the left
        y = z**2 * math.log((math.exp(-eps) - (1 - q)) / q) + 0.5
        add = cdf(y / z) - math.exp(eps) * ((1 - q) * cdf(y / z) + q * cdf((y - 1) / z))
    return max(remove, add, 0.0)


@pytest.mark.parametrize("interval", [1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize(("q", "z"), [(0.01, 0.8), (0.1, 1.5), (0.5, 3.0), (1e-3, 0.5)])
def test_pld_is_pessimistic_for_a_subsampled_step_at_any_interval(q, z, interval):
    # dp_accounting's pessimistic estimate (connect-the-dots) must dominate the exact curve
    # however coarse the grid; with pessimistic_estimate=False this fails (checked by hand).
    acc = pld.PldAccountant(value_discretization_interval=interval)
    value = acc.account(ev.PoissonSampledDpEvent(q, G(z)))
    for eps in (0.05, 0.3, 1.0, 2.0):
        exact = _poisson_gaussian_delta(q, z, eps)
        assert acc.delta_of(value, eps) >= exact * (1 - 1e-9) - 1e-15


@pytest.mark.parametrize("interval", [1e-2, 1e-3])
def test_pld_composition_is_pessimistic_at_coarse_intervals(interval):
    # k Gaussians with multiplier z compose to mu = sqrt(k)/z exactly (Dong, Roth & Su 2019)
    acc = pld.PldAccountant(value_discretization_interval=interval)
    for z, k in [(5.0, 100), (20.0, 1000)]:
        exact = gdp.epsilon_for_delta(math.sqrt(k) / z, 1e-5)
        assert acc.epsilon(ev.SelfComposedDpEvent(G(z), k), 1e-5) >= exact * (1 - 1e-9)


# -- adaptive discretisation ---------------------------------------------------------------------
def test_adaptive_pld_closes_the_gap_that_the_default_grid_leaves():
    # at dp_accounting's default grid (1e-4) this run reads ~1.9x RDP; refined, below RDP
    event = dpsgd_event(6.52, 1.26e-4, 287_945)
    rdp_eps = compute_epsilon(event, 1e-5, accountant="rdp")
    coarse = pld.epsilon(event, 1e-5, value_discretization_interval=1e-4)
    assert coarse > 1.5 * rdp_eps
    acc = pld.PldAccountant()
    adaptive = acc.epsilon(event, 1e-5)
    assert adaptive < 0.95 * rdp_eps
    intervals = [p[0] for p in acc.passes]
    answers = [p[1] for p in acc.passes]
    assert intervals[0] == pld.DEFAULT_DISCRETIZATION
    assert all(b == a / 2 for a, b in itertools.pairwise(intervals))
    assert adaptive == min(answers)
    assert abs(answers[-1] - answers[-2]) <= acc.rtol * answers[-1]  # stopped: converged
    # the default accountant ("pld" in compute_epsilon) is the adaptive one
    assert compute_epsilon(event, 1e-5, accountant="pld") == adaptive


def test_adaptive_pld_matches_dp_accounting_at_a_finer_grid():
    # oracle: dp_accounting's own PLDAccountant at half our finest interval agrees within
    # twice the stopping tolerance (the answer stopped moving), and our answer is above it
    # by no more than that (both are pessimistic: refining can only tighten here).
    from dp_accounting.pld import PLDAccountant

    event = dpsgd_event(3.37, 6.45e-4, 12_076)
    acc = pld.PldAccountant()
    ours = acc.epsilon(event, 1e-5)
    oracle = PLDAccountant(value_discretization_interval=acc.passes[-1][0] / 2)
    oracle.compose(event)
    theirs = oracle.get_epsilon(1e-5)
    assert theirs * (1 - 1e-9) <= ours <= theirs * (1 + 2 * acc.rtol)


def test_adaptive_pld_respects_its_budgets():
    event = dpsgd_event(6.52, 1.26e-4, 287_945)
    small = pld.PldAccountant(max_points=10_000)
    eps = small.epsilon(event, 1e-5)
    assert eps == min(p[1] for p in small.passes)
    assert all(p[3] <= 10_000 or i == len(small.passes) - 1 for i, p in enumerate(small.passes))
    assert len(small.passes) < len(_full_passes(event))
    quick = pld.PldAccountant(time_budget_s=1e-9)
    quick.epsilon(event, 1e-5)
    assert len(quick.passes) == 1  # the first pass always runs, no second one
    with pytest.raises(ValueError, match="rtol"):
        pld.PldAccountant(rtol=0.0)
    with pytest.raises(ValueError, match="max_points"):
        pld.PldAccountant(max_points=0)


def _full_passes(event: ev.DpEvent) -> list:
    acc = pld.PldAccountant()
    acc.epsilon(event, 1e-5)
    return acc.passes


def _random_dpsgd(rng: np.random.Generator) -> tuple[float, float, int]:
    z = float(np.exp(rng.uniform(np.log(0.8), np.log(10.0))))
    q = float(np.exp(rng.uniform(np.log(1e-4), np.log(0.02))))
    return z, q, int(10 ** rng.uniform(4, 6))


@pytest.mark.parametrize("seed", [0, 1])
def test_adaptive_pld_never_looser_than_rdp_on_long_dpsgd_runs(seed):
    # random DP-SGD runs of 10^4-10^6 steps: refined PLD <= RDP (both upper bounds; PLD is
    # tight up to its converged discretisation)
    z, q, steps = _random_dpsgd(np.random.default_rng(seed))
    event = dpsgd_event(z, q, steps)
    ours = compute_epsilon(event, 1e-5, accountant="pld")
    assert ours <= compute_epsilon(event, 1e-5, accountant="rdp") * (1 + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 12))
def test_adaptive_pld_never_looser_than_rdp_on_long_dpsgd_runs_slow(seed):
    test_adaptive_pld_never_looser_than_rdp_on_long_dpsgd_runs(seed)
