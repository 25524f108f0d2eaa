"""The numerical-integration moments accountant against the RDP path and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting import events as ev
from accounting.accountants import moments, rdp
from accounting.builders import dpsgd_event
from accounting.compose import compute_delta, compute_epsilon

LAMS = np.array([1.0, 2.0, 3.5, 8.0, 31.0, 64.0])


@pytest.mark.parametrize("q,z", [(1e-4, 0.5), (1e-3, 10.0), (0.01, 1.1), (0.1, 2.0), (0.5, 0.8)])
def test_log_moment_equals_lambda_times_rdp(q, z):
    """MA(lambda) = lambda * RDP(lambda + 1): quadrature vs the MTZ series (integer and
    fractional orders). Tolerance: quadrature asked for 1e-12 relative on E2 ~ 1, i.e. 1e-12
    absolute on MA, which dominates where MA itself is ~1e-10."""
    ma = moments.log_moments(q, z, LAMS)
    ref = LAMS * rdp.poisson_gaussian_rdp(q, z, LAMS + 1)
    assert np.all(np.abs(ma - ref) <= 1e-8 * np.abs(ref) + 1e-12)


def test_gaussian_moment_closed_form_and_dpgm_lemma1_is_off_by_two():
    z = 2.0
    ma = moments.log_moments(1.0, z, LAMS)
    exact = (LAMS**2 + LAMS) / (2 * z**2)
    np.testing.assert_allclose(ma, exact, rtol=1e-9)
    dpgm_lemma1 = (LAMS**2 + LAMS) / (4 * z**2)  # DPGM Lemma 1 as printed (docs/errata.md)
    assert np.all(ma > 1.9 * dpgm_lemma1)


def test_e2_dominates_e1():
    # alpha(lambda) = log max(E1, E2) and E2 is the larger one (MTZ 2019, Thm. 4): so MA equals
    # the E2 integral alone, i.e. lambda * D_{lambda+1}(mu || mu0).
    q, z = 0.05, 1.0
    for lam in [1.0, 4.0, 16.0]:
        log0, log_mix = moments._log_densities(q, z)
        lo, hi = -(lam + 1) - 40 * z, lam + 2 + 40 * z
        pts = [0.0, 0.5, 1.0, -lam, lam + 1]

        def log_e1(x, lam=lam, log0=log0, log_mix=log_mix):
            return (lam + 1) * log0(x) - lam * log_mix(x)

        def log_e2(x, lam=lam, log0=log0, log_mix=log_mix):
            return (lam + 1) * log_mix(x) - lam * log0(x)

        e1 = moments._log_integral(log_e1, lo, hi, pts)
        e2 = moments._log_integral(log_e2, lo, hi, pts)
        assert e1 <= e2


def test_epsilon_equals_classic_rdp_conversion_on_integer_orders():
    event = dpsgd_event(1.1, 0.01, 1000)
    lams = np.arange(1.0, 64.0)
    eps_ma = moments.epsilon(event, 1e-5, lambdas=lams)
    eps_rdp = rdp.epsilon_from_rdp(
        lams + 1, rdp.event_rdp(event, lams + 1), 1e-5, conversion="classic"
    )[0]
    assert eps_ma == pytest.approx(eps_rdp, rel=1e-8)
    # the improved conversion and denser grid of the RDP path can only be tighter
    assert compute_epsilon(event, 1e-5) <= eps_ma


def test_delta_tail_bound_and_accountant_dispatch():
    event = ev.ComposedDpEvent([ev.GaussianDpEvent(3.0), dpsgd_event(2.0, 0.02, 200)])
    eps = compute_epsilon(event, 1e-6, accountant="moments")
    d = compute_delta(event, eps, accountant="moments")
    assert d <= 1e-6 * (1 + 1e-6)
    assert math.isinf(compute_epsilon(ev.NonPrivateDpEvent(), 1e-6, accountant="moments"))


def test_invalid_arguments_and_unsupported_events():
    with pytest.raises(ValueError, match="noise_multiplier"):
        moments.log_moment(0.1, 0.0, 2.0)
    with pytest.raises(ValueError, match="sampling_prob"):
        moments.log_moment(0.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="lam"):
        moments.log_moment(0.1, 1.0, -1.0)
    with pytest.raises(ValueError, match="moments accountant"):
        moments.event_log_moments(ev.LaplaceDpEvent(1.0))
