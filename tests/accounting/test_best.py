"""The default answer: the minimum over the rigorous accountants that analyse an event, named;
and its consistency with calibration (reported epsilon never above the calibrated target)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from accounting import PrivacyLedger, calibrate, calibrate_noise_multiplier
from accounting import events as ev
from accounting.accountants.base import UnsupportedEventError
from accounting.builders import dpsgd_event
from accounting.compose import (
    BEST,
    RIGOROUS,
    best_delta,
    best_epsilon,
    compute_delta,
    compute_epsilon,
)
from accounting.relations import REPLACE_ONE

G = ev.GaussianDpEvent


def _valid(event: ev.DpEvent, delta: float, **kwargs) -> dict[str, float]:
    """Every rigorous accountant's answer, skipping those that refuse the event."""
    out = {}
    for name in RIGOROUS:
        try:
            out[name] = compute_epsilon(event, delta, accountant=name, **kwargs)
        except UnsupportedEventError:
            pass
    return out


@pytest.mark.parametrize(
    ("event", "valid"),
    [
        (dpsgd_event(1.1, 0.01, 300), {"rdp", "pld"}),
        (
            ev.ComposedDpEvent([G(2.0), ev.SelfComposedDpEvent(G(5.0), 20)]),
            {"gdp"},  # exact: the search stops there (pure cannot analyse it)
        ),
        (ev.SelfComposedDpEvent(ev.LaplaceDpEvent(5.0), 10), {"pure", "zcdp", "rdp", "pld"}),
        (ev.ComposedDpEvent([ev.ZCDpEvent(0.05), G(3.0)]), {"zcdp", "rdp"}),
    ],
    ids=["dpsgd", "gaussians", "laplace", "zcdp"],
)
def test_best_is_the_minimum_over_the_accountants_that_analyse_the_event(event, valid):
    bound = best_epsilon(event, 1e-5)
    assert set(bound.by_accountant) == valid
    every = _valid(event, 1e-5)
    assert bound.by_accountant == pytest.approx({k: every[k] for k in valid}, rel=1e-12)
    assert bound.value == min(bound.by_accountant.values())
    # no accountant skipped after an exact one would have given less
    assert bound.value <= min(every.values()) * (1 + 1e-9)
    assert bound.by_accountant[bound.accountant] == bound.value
    assert compute_epsilon(event, 1e-5, accountant=BEST) == bound.value
    # delta: the same rule at the best epsilon gives at most the target delta
    d = best_delta(event, bound.value)
    assert d.value == min(d.by_accountant.values()) <= 1e-5 * (1 + 1e-6)
    assert compute_delta(event, bound.value, accountant=BEST) == d.value


def test_best_picks_the_tight_accountant_per_event():
    # Gaussians compose exactly in GDP; a long subsampled run is tightest under PLD
    assert best_epsilon(ev.SelfComposedDpEvent(G(5.0), 20), 1e-5).accountant == "gdp"
    assert best_epsilon(dpsgd_event(1.1, 0.01, 1000), 1e-5).accountant == "pld"
    # fixed-size batches: PLD cannot analyse sampling without replacement, RDP can
    wor = dpsgd_event(1.0, 0.01, 100, sampling="without_replacement", dataset_size=10_000)
    bound = best_epsilon(wor, 1e-5, neighboring_relation=REPLACE_ONE)
    assert set(bound.by_accountant) == {"rdp"}


def test_best_propagates_bad_arguments_and_refuses_what_none_analyses():
    with pytest.raises(ValueError, match="expected delta >= 0"):
        best_epsilon(G(1.0), -1.0)
    with pytest.raises(ValueError, match="expected noise_multiplier >= 0"):
        best_epsilon(G(-1.0), 1e-5)
    with pytest.raises(UnsupportedEventError, match="no accountant among"):
        best_epsilon(ev.UnsupportedDpEvent(), 1e-5)
    assert best_epsilon(ev.NonPrivateDpEvent(), 1e-5).value == math.inf


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reported_epsilon_never_exceeds_the_calibrated_target(seed):
    # calibration and the ledger use one rule (the minimum over the rigorous accountants):
    # the ledger's figure is the target up to calibration's 0.1%, and below RDP's
    rng = np.random.default_rng(seed)
    target = float(rng.uniform(0.3, 4.0))
    q = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.05))))
    steps = int(rng.integers(100, 3000))
    z = calibrate_noise_multiplier(
        target_epsilon=target, target_delta=1e-5, sampling_prob=q, steps=steps
    )
    ledger = PrivacyLedger().record("dp-sgd", dpsgd_event(z, q, steps))
    assert 0.999 * target <= ledger.epsilon(1e-5) <= target
    assert ledger.epsilon(1e-5) <= ledger.epsilon(1e-5, accountant="rdp")


def test_calibrating_with_best_meets_the_target_under_best():
    # one function: calibrate(accountant="best") evaluates the same minimum the ledger reports
    def plan(s: float) -> ev.DpEvent:
        return ev.ComposedDpEvent([G(4.0 * s), ev.SelfComposedDpEvent(G(8.0 * s), 20)])

    s = calibrate(plan, target_epsilon=1.0, target_delta=1e-5, accountant=BEST)
    eps = PrivacyLedger().record("plan", plan(s)).epsilon(1e-5)
    assert 0.999 * 1.0 <= eps <= 1.0
    s_rdp = calibrate(plan, target_epsilon=1.0, target_delta=1e-5, accountant="rdp")
    assert s <= s_rdp  # the tighter analysis needs no more noise


def test_best_calibration_is_the_smallest_scale_over_the_accountants():
    # {s : min_a eps_a(s) <= t} is the union of [s_a, inf): the answer is min_a s_a
    def plan(s: float) -> ev.DpEvent:
        return ev.ComposedDpEvent([G(2.0 * s), dpsgd_event(s, 0.01, 500)])

    scales = {
        name: calibrate(plan, target_epsilon=1.0, target_delta=1e-5, accountant=name)
        for name in ("rdp", "pld")
    }
    s = calibrate(plan, target_epsilon=1.0, target_delta=1e-5)
    assert min(scales.values()) * (1 - 2e-3) <= s <= min(scales.values()) * (1 + 2e-3)
    assert s < scales["rdp"]  # PLD is the tighter one here, so the noise is lower


def test_an_event_too_wide_for_pld_adds_its_pure_parts_to_the_rest():
    """Seven releases of pure parallel nodes (levels of 1, 2 and 2 nodes, each node's
    epsilon its own) beside a DP-SGD run have too many distinct parallel cases for the PLD
    accountant, which declines the whole as unsupported. Basic composition of the pure parts
    (a tenth of epsilon) with the best answer on the rest is then a candidate -- here below
    RDP's joint answer, which would otherwise count the DP-SGD run by RDP alone and overspend
    a budget calibrated by PLD. (Equal nodes, as the DP quantiles release, are one case each:
    PLD analyses those itself, at most the split's figure.)"""
    from accounting.accountants.pld import PldAccountant

    def levels(node: Callable[[int], float]) -> ev.DpEvent:  # 7 columns x 3 levels share 0.1
        return ev.ComposedDpEvent(
            [ev.ParallelComposedDpEvent([ev.PureDpEvent(node(i)) for i in range(k)])
             for k in (1, 2, 2)]
        )  # fmt: skip

    quantiles = levels(lambda i: 0.1 / 21 * (1 - 0.01 * i))
    sgd = dpsgd_event(1.0, sampling_prob=0.01, steps=100)
    event = ev.ComposedDpEvent([quantiles] * 7 + [sgd])
    with pytest.raises(UnsupportedEventError, match="too many parallel"):
        PldAccountant().epsilon(event, 1e-5)
    bound = best_epsilon(event, 1e-5)
    rest = best_epsilon(ev.ComposedDpEvent([sgd]), 1e-5)
    assert bound.accountant == f"basic+{rest.accountant}"
    assert bound.value == pytest.approx(0.1 + rest.value, rel=1e-12)
    assert bound.value < compute_epsilon(event, 1e-5, accountant="rdp")
    ledger = PrivacyLedger()
    for column in range(7):
        ledger = ledger.record(f"dp-quantiles:{column}", quantiles)
    ledger = ledger.record("dp-sgd", sgd)
    assert ledger.epsilon(1e-5) == bound.value
    assert "pure steps added to the PLD accountant" in ledger.report(1e-5)
    equal = ev.ComposedDpEvent([levels(lambda i: 0.1 / 21)] * 7 + [sgd])
    assert best_epsilon(equal, 1e-5).accountant == "pld"
    assert PldAccountant().epsilon(equal, 1e-5) <= 0.1 + rest.value
