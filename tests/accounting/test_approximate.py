"""(epsilon, delta) events compose by the basic theorem on top of every accountant."""

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
    eps, delta, rest = split_approximate(
        ev.SelfComposedDpEvent(ev.ComposedDpEvent([APPROX, GAUSS]), 3)
    )
    assert (eps, delta) == (1.5, pytest.approx(3e-6))
    assert rest == ev.SelfComposedDpEvent(ev.ComposedDpEvent([GAUSS]), 3)
    assert split_approximate(GAUSS) == (0.0, 0.0, GAUSS)


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
