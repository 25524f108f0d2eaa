"""Calibration never overshoots the target epsilon and lands within 1% of it, measured as the
ledger measures it (the minimum over the rigorous accountants, the default of both)."""

from __future__ import annotations

import pytest

from accounting import events as ev
from accounting.builders import dpsgd_event
from accounting.calibrate import calibrate, calibrate_noise_multiplier
from accounting.compose import best_epsilon, compute_epsilon
from accounting.relations import REPLACE_ONE

CASES = [
    # (target_epsilon, delta, q, steps)
    (0.5, 1e-5, 0.001, 1000),
    (1.0, 1e-5, 0.01, 10000),
    (3.0, 1e-6, 0.05, 500),
    (8.0, 1e-5, 0.2, 100),
    (2.0, 1e-5, 1.0, 10),
]


@pytest.mark.parametrize("target,delta,q,steps", CASES)
def test_noise_multiplier_meets_target_within_one_percent(target, delta, q, steps):
    z = calibrate_noise_multiplier(
        target_epsilon=target, target_delta=delta, sampling_prob=q, steps=steps
    )
    eps = best_epsilon(dpsgd_event(z, q, steps), delta).value
    assert eps <= target
    assert eps >= 0.99 * target
    # minimality: 1% less noise would overshoot
    assert best_epsilon(dpsgd_event(0.99 * z, q, steps), delta).value > target


def test_without_replacement():
    z = calibrate_noise_multiplier(
        target_epsilon=2.0,
        target_delta=1e-5,
        sampling_prob=0.01,
        steps=200,
        sampling="without_replacement",
        dataset_size=10000,
    )
    event = dpsgd_event(z, 0.01, 200, sampling="without_replacement", dataset_size=10000)
    eps = compute_epsilon(event, 1e-5, neighboring_relation=REPLACE_ONE)
    assert 0.99 * 2.0 <= eps <= 2.0


def test_pld_calibration():
    plan = lambda s: ev.SelfComposedDpEvent(ev.GaussianDpEvent(s), 10)
    s_pld = calibrate(plan, target_epsilon=2.0, target_delta=1e-5, accountant="pld")
    assert 0.99 * 2.0 <= compute_epsilon(plan(s_pld), 1e-5, accountant="pld") <= 2.0


def test_docstring_example_runs():
    import doctest
    import importlib

    # the module, not the function `accounting.calibrate` that the package exports
    module = importlib.import_module("accounting.calibrate")
    assert doctest.testmod(module).failed == 0


def test_multi_phase_plan_scales_every_phase():
    def plan(s: float) -> ev.DpEvent:
        return ev.ComposedDpEvent(
            [
                ev.GaussianDpEvent(4.0 * s),
                ev.SelfComposedDpEvent(ev.GaussianDpEvent(8.0 * s), 100),
                dpsgd_event(1.0 * s, 0.01, 2000),
            ]
        )

    s = calibrate(plan, target_epsilon=1.0, target_delta=1e-5)
    assert 0.99 <= best_epsilon(plan(s), 1e-5).value <= 1.0


def test_bracket_expansion_lower_bound_and_unreachable():
    # the default upper bracket (100) is too small here: it is doubled
    s = calibrate(
        lambda s: ev.SelfComposedDpEvent(ev.GaussianDpEvent(s), 10**6),
        target_epsilon=0.5,
        target_delta=1e-5,
    )
    assert (
        0.99 * 0.5
        <= best_epsilon(ev.SelfComposedDpEvent(ev.GaussianDpEvent(s), 10**6), 1e-5).value
        <= 0.5
    )
    # lower already meets the target: returned as is
    assert (
        calibrate(
            lambda s: ev.GaussianDpEvent(s), target_epsilon=100.0, target_delta=1e-5, lower=1.0
        )
        == 1.0
    )
    with pytest.raises(ValueError, match="no scale"):
        calibrate(
            lambda s: ev.ComposedDpEvent([ev.GaussianDpEvent(s), ev.PureDpEvent(2.0)]),
            target_epsilon=1.0,
            target_delta=1e-5,
        )


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"target_epsilon": 0.0}, "target_epsilon"),
        ({"target_epsilon": float("inf")}, "target_epsilon"),
        ({"target_delta": 0.0}, "target_delta"),
        ({"target_delta": 1.0}, "target_delta"),
        ({"sampling_prob": 0.0}, "sampling_prob"),
        ({"sampling_prob": 1.5}, "sampling_prob"),
        ({"steps": -1}, "steps"),
        ({"steps": 0}, "steps"),
        ({"sampling": "bogus"}, "sampling"),
        ({"sampling": "without_replacement"}, "dataset_size"),
        ({"accountant": "bogus"}, "accountant"),
    ],
)
def test_invalid_arguments_raise_naming_them(kwargs, name):
    args = {
        "target_epsilon": 1.0,
        "target_delta": 1e-5,
        "sampling_prob": 0.01,
        "steps": 100,
    } | kwargs
    with pytest.raises(ValueError, match=name):
        calibrate_noise_multiplier(**args)


def test_invalid_bracket():
    with pytest.raises(ValueError, match="lower"):
        calibrate(ev.GaussianDpEvent, target_epsilon=1.0, target_delta=1e-5, lower=5.0, upper=1.0)
    with pytest.raises(ValueError, match="lower"):
        calibrate(ev.GaussianDpEvent, target_epsilon=1.0, target_delta=1e-5, lower=-1.0)


def test_budget_too_small_names_the_minimum_noise_multiplier():
    from accounting import BudgetTooSmallError

    with pytest.raises(BudgetTooSmallError, match=r"needs a noise multiplier above 1e\+06") as err:
        calibrate_noise_multiplier(
            target_epsilon=1e-9, target_delta=1e-12, sampling_prob=0.2, steps=4
        )
    assert err.value.minimum_scale == 1e6
    assert isinstance(err.value, ValueError)
