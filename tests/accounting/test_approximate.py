"""(epsilon, delta) events compose by the basic theorem on top of every accountant; a sampler's
cut (NoiseCutDpEvent) costs (1 + e^epsilon) times its mass of delta."""

from __future__ import annotations

import math

import pytest

from accounting import events as ev
from accounting.compose import compute_delta, compute_epsilon, split_approximate
from accounting.ledger import PrivacyLedger

APPROX = ev.EpsilonDeltaDpEvent(epsilon=0.5, delta=1e-6)
GAUSS = ev.GaussianDpEvent(noise_multiplier=2.0)


@pytest.mark.parametrize("accountant", ["rdp", "pld", "gdp", "zcdp", "moments"])
def test_basic_composition_on_top_of_each_accountant(accountant):
    both = ev.ComposedDpEvent([APPROX, GAUSS])
    rest = compute_epsilon(GAUSS, 1e-5 - 1e-6, accountant=accountant)
    assert compute_epsilon(both, 1e-5, accountant=accountant) == pytest.approx(
        0.5 + rest, rel=1e-12
    )
    assert compute_delta(both, 0.5 + rest, accountant=accountant) == pytest.approx(1e-5, rel=1e-3)


def test_delta_at_or_below_the_approximate_part():
    both = ev.ComposedDpEvent([APPROX, GAUSS])
    assert math.isinf(compute_epsilon(both, 1e-7))  # cannot meet a delta below 1e-6
    assert math.isinf(compute_epsilon(both, 0))  # never pure
    assert math.isinf(compute_epsilon(both, 1e-6))  # Gaussian rest left with delta 0
    pure_rest = ev.ComposedDpEvent([APPROX, ev.LaplaceDpEvent(noise_multiplier=1.0)])
    assert compute_epsilon(pure_rest, 1e-6) == pytest.approx(1.5)
    assert compute_epsilon(APPROX, 1e-6) == 0.5


def test_compute_delta_below_the_approximate_epsilon_is_one():
    assert compute_delta(ev.ComposedDpEvent([APPROX, GAUSS]), 0.4) == 1.0
    assert compute_delta(APPROX, 0.5) == pytest.approx(1e-6)


def test_split_multiplies_self_compositions_and_keeps_the_rest():
    eps, delta, tail, rest = split_approximate(
        ev.SelfComposedDpEvent(ev.ComposedDpEvent([APPROX, GAUSS]), 3)
    )
    assert (eps, delta, tail) == (1.5, pytest.approx(3e-6), 0.0)
    assert rest == ev.SelfComposedDpEvent(ev.ComposedDpEvent([GAUSS]), 3)
    assert split_approximate(GAUSS) == (0.0, 0.0, 0.0, GAUSS)


def test_refused_inside_sampling_and_checked():
    with pytest.raises(ValueError):
        compute_epsilon(ev.PoissonSampledDpEvent(0.1, APPROX), 1e-5)
    with pytest.raises(ValueError, match="delta < 1"):
        compute_epsilon(ev.EpsilonDeltaDpEvent(epsilon=1.0, delta=1.0), 0.5)
    with pytest.raises(ValueError, match="epsilon >= 0"):
        compute_epsilon(ev.EpsilonDeltaDpEvent(epsilon=-1.0, delta=0.0), 0.5)


def test_ledger_round_trip_and_epsilon():
    ledger = PrivacyLedger().record("dp-categories", APPROX).record("dp-sgd", GAUSS)
    assert PrivacyLedger.from_json(ledger.to_json()) == ledger
    # basic composition on top of each accountant; the ledger reports the best of them
    assert ledger.epsilon(1e-5) == pytest.approx(
        0.5 + compute_epsilon(GAUSS, 9e-6, accountant="best")
    )
    assert ledger.epsilon(1e-5, accountant="rdp") == pytest.approx(
        0.5 + compute_epsilon(GAUSS, 9e-6)
    )


CUT = ev.NoiseCutDpEvent(tail_mass=1e-8)


@pytest.mark.parametrize("accountant", ["rdp", "pld", "gdp", "zcdp"])
def test_a_cut_costs_one_plus_e_to_the_epsilon_times_its_mass(accountant):
    """delta(eps) of an ideal release plus a cut of total variation tau is the ideal one plus
    (1 + e^eps) tau (docs/privacy.md, "The sampler's cut"); the epsilon found at delta
    spends no more than delta that way, and never less than without the cut."""
    both = ev.ComposedDpEvent([GAUSS, CUT])
    for eps in (0.5, 2.0):
        ideal = compute_delta(GAUSS, eps, accountant=accountant)
        cut = compute_delta(both, eps, accountant=accountant)
        assert cut == pytest.approx(ideal + (1 + math.exp(eps)) * 1e-8, rel=1e-9)
    eps = compute_epsilon(both, 1e-5, accountant=accountant)
    assert eps > compute_epsilon(GAUSS, 1e-5, accountant=accountant)
    assert compute_delta(both, eps, accountant=accountant) <= 1e-5 * (1 + 1e-9)


def test_a_cut_is_never_pure_and_too_coarse_a_cut_is_infinite():
    assert math.isinf(compute_epsilon(ev.ComposedDpEvent([ev.LaplaceDpEvent(1.0), CUT]), 0.0))
    assert compute_epsilon(ev.LaplaceDpEvent(1.0), 0.0) == 1.0
    coarse = ev.ComposedDpEvent([GAUSS, ev.NoiseCutDpEvent(tail_mass=1e-5)])
    assert math.isinf(compute_epsilon(coarse, 1e-5))  # (1 + e^eps) 1e-5 > 1e-5 for any eps


def test_cut_masses_add_wherever_they_stand():
    """A sampler runs whether or not a record was sampled and in every partition: masses add
    in compositions, parallel compositions and sampled events, times a self-composition's
    count; what is left is the ideal event."""
    inner = ev.PoissonSampledDpEvent(0.1, ev.ComposedDpEvent([GAUSS, CUT]))
    parallel = ev.ParallelComposedDpEvent([ev.ComposedDpEvent([GAUSS, CUT])] * 3)
    split = split_approximate(
        ev.ComposedDpEvent([ev.SelfComposedDpEvent(inner, 4), parallel, CUT, APPROX])
    )
    assert split.tail_mass == pytest.approx(8 * 1e-8)
    assert (split.epsilon, split.delta) == (0.5, 1e-6)
    assert split.rest == ev.ComposedDpEvent(
        [
            ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.1, GAUSS), 4),
            ev.ParallelComposedDpEvent([GAUSS] * 3),
        ]
    )
    with pytest.raises(ValueError, match="tail_mass"):
        split_approximate(ev.NoiseCutDpEvent(tail_mass=-1.0))


def test_a_cut_round_trips_through_the_ledger():
    ledger = PrivacyLedger().record("dp-pca", ev.ComposedDpEvent([GAUSS, CUT]))
    assert PrivacyLedger.from_json(ledger.to_json()) == ledger
    assert ledger.epsilon(1e-5) > PrivacyLedger().record("dp-pca", GAUSS).epsilon(1e-5)
