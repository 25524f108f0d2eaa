"""One contract, every registered accountant (DESIGN section 3, "Tests").

Each accountant in :data:`accounting.ACCOUNTANTS` has a :class:`Spec` here: the mechanism the
generic checks use (a Gaussian, or a Laplace mechanism for the pure accountant), whether it
analyses Poisson-subsampled Gaussians and parallel compositions, and a closed form for its
mechanism. :class:`TestAccountantContract` runs every check over every accountant:

* non-private limit: ``NonPrivateDpEvent`` and noise multiplier 0 give ``epsilon = inf``
  (``delta = 1``); releasing nothing (``NoOpDpEvent``, an empty composition, a
  self-composition of count 0) costs 0;
* monotone: more noise, less epsilon; more steps, more epsilon; more delta, less epsilon;
  ``delta(epsilon(delta)) <= delta``;
* composing an event with itself equals its self-composition of count 2;
* a parallel composition of identical events costs what one does (add/remove);
* bad input raises, with the message checked;
* the accountant agrees with the closed form of its mechanism;
* and, across accountants, PLD (tight up to pessimistic discretisation) is never looser than
  RDP on the events both analyse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import optimize, special

from accounting import ACCOUNTANTS, compute_delta, compute_epsilon, dpsgd_event
from accounting import events as ev
from accounting.accountants import moments
from accounting.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE

G = ev.GaussianDpEvent
DELTA = 1e-5


def analytic_gaussian_delta(z: float, epsilon: float) -> float:
    """Tight delta(epsilon) of the Gaussian mechanism with noise multiplier ``z`` (Balle &
    Wang 2018, Thm. 8): ``Phi(1/(2z) - eps z) - e^eps Phi(-1/(2z) - eps z)``."""
    return float(
        special.ndtr(0.5 / z - epsilon * z)
        - math.exp(epsilon) * special.ndtr(-0.5 / z - epsilon * z)
    )


def analytic_gaussian_epsilon(z: float, delta: float) -> float:
    """The tight epsilon at ``delta``: the root of the decreasing :func:`analytic_gaussian_delta`."""
    return float(
        optimize.brentq(lambda e: analytic_gaussian_delta(z, e) - delta, 0.0, 100.0, xtol=1e-14)
    )


def gaussian_rdp_classic_epsilon(z: float, delta: float) -> float:
    """``rho + 2 sqrt(rho log(1/delta))``, ``rho = 1/(2z^2)``: the classic conversion of the
    Gaussian's RDP ``alpha rho`` at the best real order (Mironov 2017, Prop. 3; Bun & Steinke
    2016, Prop. 1.3). An RDP-based accountant is never looser than it."""
    rho = 0.5 / z**2
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def gaussian_moments_epsilon(z: float, delta: float) -> float:
    """The moments accountant's epsilon for a Gaussian in closed form: its log moment is
    ``lambda (lambda + 1) / (2 z^2)`` (Abadi et al. 2016, Sec. 3.2, q = 1), so
    ``epsilon = min_lambda (lambda + 1)/(2 z^2) + log(1/delta)/lambda`` over the orders."""
    lams = moments.DEFAULT_LAMBDAS
    return float(np.min((lams + 1) / (2 * z**2) + math.log(1 / delta) / lams))


def laplace_pure_delta(b: float, epsilon: float) -> float:
    """A (1/b)-DP mechanism is (epsilon, delta)-DP with ``delta = (e^(1/b) - e^eps)/(1 +
    e^(1/b))`` for ``epsilon < 1/b`` (Kairouz, Oh & Viswanath 2015)."""
    eps0 = 1 / b
    return max(0.0, (math.exp(eps0) - math.exp(epsilon)) / (1 + math.exp(eps0)))


@dataclass(frozen=True)
class Spec:
    """What the contract needs to know about one accountant.

    Attributes:
      mechanism: noise multiplier -> the event the generic checks use.
      subsampled: whether ``dpsgd_event`` (Poisson-subsampled Gaussians) is analysed.
      parallel: whether ``ParallelComposedDpEvent`` is analysed under add/remove.
      closed_form: ``(noise multiplier, epsilon or delta) -> (kind, value, check)``: see
        :meth:`TestAccountantContract.test_agrees_with_the_closed_form`.
    """

    mechanism: Callable[[float], ev.DpEvent]
    subsampled: bool
    parallel: bool
    closed_form: Callable[[str, float], None]


def _exact_gaussian(accountant: str, rel: float) -> Callable[[str, float], None]:
    """The accountant reproduces the tight Gaussian curve (never below it)."""

    def check(name: str, z: float) -> None:
        for eps in (0.1, 0.5, 1.5):
            exact = analytic_gaussian_delta(z, eps)
            ours = compute_delta(G(z), eps, accountant=name)
            assert exact * (1 - 1e-9) <= ours <= exact * (1 + rel) + 1e-15

    return check


def _rdp_gaussian(name: str, z: float) -> None:
    eps = compute_epsilon(G(z), DELTA, accountant=name)
    assert analytic_gaussian_epsilon(z, DELTA) <= eps <= gaussian_rdp_classic_epsilon(z, DELTA)


def _moments_gaussian(name: str, z: float) -> None:
    eps = compute_epsilon(G(z), DELTA, accountant=name)
    assert eps == pytest.approx(gaussian_moments_epsilon(z, DELTA), rel=1e-6)
    assert eps >= analytic_gaussian_epsilon(z, DELTA)


def _pure_laplace(name: str, b: float) -> None:
    laplace = ev.LaplaceDpEvent(b)
    assert compute_epsilon(laplace, DELTA, accountant=name) == pytest.approx(1 / b, rel=1e-15)
    for eps in (0.1 / b, 0.5 / b, 1 / b):
        ours = compute_delta(laplace, eps, accountant=name)
        assert ours == pytest.approx(laplace_pure_delta(b, eps), rel=1e-12, abs=1e-15)


SPECS: dict[str, Spec] = {
    "rdp": Spec(G, subsampled=True, parallel=True, closed_form=_rdp_gaussian),
    "pld": Spec(G, subsampled=True, parallel=True, closed_form=_exact_gaussian("pld", 1e-2)),
    "gdp": Spec(G, subsampled=False, parallel=True, closed_form=_exact_gaussian("gdp", 1e-9)),
    "gdp_clt": Spec(
        G, subsampled=True, parallel=True, closed_form=_exact_gaussian("gdp_clt", 1e-9)
    ),
    "zcdp": Spec(G, subsampled=False, parallel=True, closed_form=_rdp_gaussian),
    "pure": Spec(ev.LaplaceDpEvent, subsampled=False, parallel=True, closed_form=_pure_laplace),
    "moments": Spec(G, subsampled=True, parallel=False, closed_form=_moments_gaussian),
    "holder": Spec(G, subsampled=True, parallel=True, closed_form=_rdp_gaussian),
}


def test_every_registered_accountant_has_a_spec():
    assert set(SPECS) == set(ACCOUNTANTS)


@pytest.mark.parametrize("name", sorted(ACCOUNTANTS))
class TestAccountantContract:
    """The contract, once per accountant ``name``."""

    def eps(self, name: str, event: ev.DpEvent, delta: float = DELTA, **kwargs) -> float:
        return compute_epsilon(event, delta, accountant=name, **kwargs)

    def test_non_private_limit(self, name):
        mechanism = SPECS[name].mechanism
        for event in (ev.NonPrivateDpEvent(), mechanism(0.0)):
            assert self.eps(name, event) == math.inf
            assert compute_delta(event, 1.0, accountant=name) == 1.0
        composed = ev.ComposedDpEvent([mechanism(2.0), ev.NonPrivateDpEvent()])
        assert self.eps(name, composed) == math.inf

    def test_releasing_nothing_costs_nothing(self, name):
        nothing = [
            ev.NoOpDpEvent(),
            ev.ComposedDpEvent([]),
            ev.SelfComposedDpEvent(SPECS[name].mechanism(1.0), 0),
        ]
        for event in nothing:
            assert self.eps(name, event) == 0.0
            assert compute_delta(event, 0.0, accountant=name) == 0.0

    def test_monotone_in_noise_multiplier(self, name):
        mechanism = SPECS[name].mechanism
        curve = [self.eps(name, ev.SelfComposedDpEvent(mechanism(z), 4)) for z in (1.0, 2.0, 4.0)]
        assert 0 < curve[2] < curve[1] < curve[0]
        if SPECS[name].subsampled:
            sgd = [self.eps(name, dpsgd_event(z, 0.05, 20)) for z in (0.8, 1.6)]
            assert 0 < sgd[1] < sgd[0]

    def test_monotone_in_steps_and_delta(self, name):
        mechanism = SPECS[name].mechanism(3.0)
        curve = [self.eps(name, ev.SelfComposedDpEvent(mechanism, k)) for k in (1, 4, 16)]
        assert 0 < curve[0] < curve[1] < curve[2]
        if SPECS[name].subsampled:
            sgd = [self.eps(name, dpsgd_event(1.0, 0.05, t)) for t in (5, 20)]
            assert 0 < sgd[0] < sgd[1]
        event = ev.SelfComposedDpEvent(mechanism, 4)
        eps = self.eps(name, event)
        if name != "pure":  # a pure epsilon does not depend on delta
            assert self.eps(name, event, 1e-3) < eps
        # each accountant inverts its own bound
        assert compute_delta(event, eps, accountant=name) <= DELTA * (1 + 1e-4)

    def test_composition_of_two_is_self_composition_of_two(self, name):
        events = [SPECS[name].mechanism(2.0)]
        if SPECS[name].subsampled:
            events.append(dpsgd_event(1.0, 0.05, 10))
        for e in events:
            twice = self.eps(name, ev.ComposedDpEvent([e, e]))
            assert twice == pytest.approx(self.eps(name, ev.SelfComposedDpEvent(e, 2)), rel=1e-9)
            assert twice > self.eps(name, e)

    def test_parallel_of_identical_events_is_one_event(self, name):
        e = ev.SelfComposedDpEvent(SPECS[name].mechanism(2.0), 3)
        parallel = ev.ParallelComposedDpEvent([e, e, e])
        if not SPECS[name].parallel:
            message = f"the {name} accountant cannot analyse ParallelComposedDpEvent"
            with pytest.raises(ValueError, match=re.escape(message)):
                self.eps(name, parallel)
            return
        assert self.eps(name, parallel) == self.eps(name, e)
        assert self.eps(name, ev.ParallelComposedDpEvent([])) == 0.0

    @pytest.mark.parametrize(
        ("call", "error", "message"),
        [
            (
                lambda n: compute_epsilon(G(2.0), -1e-9, accountant=n),
                ValueError,
                "expected delta >= 0, got -1e-09",
            ),
            (
                lambda n: compute_epsilon(G(2.0), 1.0, accountant=n),
                ValueError,
                "expected delta in (0, 1), got 1.0",
            ),
            (
                lambda n: compute_epsilon(G(2.0), math.nan, accountant=n),
                ValueError,
                "expected delta to be finite, got nan",
            ),
            (
                lambda n: compute_delta(G(2.0), -1.0, accountant=n),
                ValueError,
                "expected epsilon >= 0, got -1.0",
            ),
            (
                lambda n: compute_epsilon(G(-1.0), DELTA, accountant=n),
                ValueError,
                "expected noise_multiplier >= 0, got -1.0",
            ),
            (
                lambda n: compute_epsilon("G(1)", DELTA, accountant=n),
                TypeError,
                "expected event to be a DpEvent, got str",
            ),
            (
                lambda n: compute_epsilon(G(2.0), DELTA, accountant=n, neighboring_relation="add"),
                ValueError,
                "expected neighboring_relation ADD_OR_REMOVE_ONE or REPLACE_ONE, got 'add'",
            ),
            (
                lambda n: compute_epsilon(ev.SelfComposedDpEvent(G(2.0), -1), DELTA, accountant=n),
                ValueError,
                "expected count >= 0, got -1",
            ),
            (
                lambda n: compute_epsilon(
                    dpsgd_event(1.0, 0.1, 2, sampling="without_replacement", dataset_size=100),
                    DELTA,
                    accountant=n,
                ),
                ValueError,
                "SampledWithoutReplacementDpEvent is analysed under REPLACE_ONE",
            ),
        ],
        ids=[
            "negative-delta",
            "delta-1",
            "nan-delta",
            "negative-epsilon",
            "negative-noise",
            "not-an-event",
            "unknown-relation",
            "negative-count",
            "wor-under-add-remove",
        ],
    )
    def test_bad_input_raises_with_its_message(self, name, call, error, message):
        with pytest.raises(error, match=re.escape(message)):
            call(name)

    def test_unsupported_events_are_named(self, name):
        title = {"rdp": "RDP", "pld": "PLD", "gdp": "GDP", "gdp_clt": "GDP", "zcdp": "zCDP"}
        message = f"the {title.get(name, name)} accountant cannot analyse UnsupportedDpEvent"
        with pytest.raises(ValueError, match=re.escape(message)):
            self.eps(
                name, ev.ComposedDpEvent([SPECS[name].mechanism(2.0), ev.UnsupportedDpEvent()])
            )

    def test_unknown_accountant_name(self, name):
        with pytest.raises(ValueError, match=re.escape("expected accountant in (")):
            compute_epsilon(G(2.0), DELTA, accountant=name + "-unknown")

    @pytest.mark.parametrize("noise", [0.7, 2.0, 8.0])
    def test_agrees_with_the_closed_form(self, name, noise):
        SPECS[name].closed_form(name, noise)


# PLD <= RDP on the events both analyse. Both are upper bounds on the same epsilon; PLD's
# discretisation rounds the privacy loss up (pessimistic) and it is tight otherwise.
SHARED_EVENTS = {
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
            ev.ParallelComposedDpEvent([dpsgd_event(1.0, 0.05, 20), dpsgd_event(2.0, 0.05, 20)]),
        ]
    ),
}
# Under REPLACE_ONE, without Poisson sampling or parallel parts (RDP refuses those there);
# every event type the PLD accountant supports there appears.
SHARED_REPLACE_EVENTS = {
    "gaussian": G(2.0),
    "mu-gdp": ev.MuGdpEvent(0.5),
    "gaussians": SHARED_EVENTS["gaussians"],
    "laplace": SHARED_EVENTS["laplace"],
    "pure": ev.PureDpEvent(1.0),
    "pure+gaussian": SHARED_EVENTS["pure+gaussian"],
}
SHARED_CASES = [(n, ADD_OR_REMOVE_ONE) for n in sorted(SHARED_EVENTS)]
SHARED_CASES += [(n, REPLACE_ONE) for n in sorted(SHARED_REPLACE_EVENTS)]


@pytest.mark.parametrize(("event_name", "relation"), SHARED_CASES)
def test_pld_never_looser_than_rdp(event_name, relation):
    events = SHARED_EVENTS if relation == ADD_OR_REMOVE_ONE else SHARED_REPLACE_EVENTS
    event = events[event_name]
    for delta in (1e-5, 1e-3):
        kwargs = {"neighboring_relation": relation}
        pld = compute_epsilon(event, delta, accountant="pld", **kwargs)
        assert pld <= compute_epsilon(event, delta, accountant="rdp", **kwargs) * (1 + 1e-9)


@pytest.mark.parametrize(("event_name", "relation"), SHARED_CASES)
def test_best_is_the_minimum_of_the_valid_accountants(event_name, relation):
    # "best" (the ledger's default) is one of the rigorous accountants' answers and no
    # rigorous accountant that analyses the event gives less
    from accounting.accountants.base import UnsupportedEventError
    from accounting.compose import RIGOROUS, best_epsilon

    events = SHARED_EVENTS if relation == ADD_OR_REMOVE_ONE else SHARED_REPLACE_EVENTS
    event = events[event_name]
    bound = best_epsilon(event, DELTA, neighboring_relation=relation)
    answers = {}
    for name in RIGOROUS:
        try:
            answers[name] = compute_epsilon(
                event, DELTA, accountant=name, neighboring_relation=relation
            )
        except UnsupportedEventError:
            continue
    # the search stops at an exact accountant (GDP on Gaussians): nothing skipped is lower
    assert {"rdp", "pld"} <= set(answers) and set(bound.by_accountant) <= set(answers)
    assert bound.value == answers[bound.accountant]
    assert bound.value <= min(answers.values()) * (1 + 1e-9)
