"""One contract, every accountant: non-private limit, no-op, monotonicity, bad input."""

from __future__ import annotations

import math

import pytest

from accounting import events as ev
from accounting.compose import ACCOUNTANTS, compute_delta, compute_epsilon

# accountants that take (compositions of) plain Gaussian mechanisms
GAUSSIAN_ACCOUNTANTS = [a for a in ACCOUNTANTS if a != "pure"]


@pytest.mark.parametrize("accountant", GAUSSIAN_ACCOUNTANTS)
def test_contract(accountant):
    g = ev.SelfComposedDpEvent(ev.GaussianDpEvent(3.0), 4)
    # sigma = 0 is the non-private limit
    assert math.isinf(compute_epsilon(ev.GaussianDpEvent(0.0), 1e-5, accountant=accountant))
    assert compute_delta(ev.NonPrivateDpEvent(), 1.0, accountant=accountant) == 1.0
    # doing nothing costs nothing
    assert compute_epsilon(ev.NoOpDpEvent(), 1e-5, accountant=accountant) == 0.0
    # more noise, less epsilon; more delta, less epsilon
    eps = compute_epsilon(g, 1e-5, accountant=accountant)
    noisier = ev.SelfComposedDpEvent(ev.GaussianDpEvent(4.0), 4)
    assert 0 < compute_epsilon(noisier, 1e-5, accountant=accountant) < eps
    assert compute_epsilon(g, 1e-3, accountant=accountant) < eps
    # delta(epsilon(delta)) <= delta (each accountant inverts its own bound)
    assert compute_delta(g, eps, accountant=accountant) <= 1e-5 * (1 + 1e-4)
    # bad input names the argument
    for bad in (0.0 - 1e-9, 1.0, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            compute_epsilon(g, bad, accountant=accountant)
    with pytest.raises(ValueError, match="epsilon"):
        compute_delta(g, -1.0, accountant=accountant)
    with pytest.raises(ValueError, match="noise_multiplier"):
        compute_epsilon(ev.GaussianDpEvent(-1.0), 1e-5, accountant=accountant)
