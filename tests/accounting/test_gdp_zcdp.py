"""mu-GDP and zCDP: composition and conversions against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting import events as ev
from accounting.accountants import gdp, rdp, zcdp
from accounting.builders import dpsgd_event
from accounting.compose import compute_delta, compute_epsilon


def _gaussian_delta(z: float, eps: float) -> float:
    """Exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018, Thm. 8)."""
    return stats.norm.cdf(-eps * z + 1 / (2 * z)) - math.exp(eps) * stats.norm.cdf(
        -eps * z - 1 / (2 * z)
    )


@pytest.mark.parametrize("z", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 4.0])
def test_gdp_delta_is_the_exact_gaussian_curve(z, eps):
    assert gdp.delta_for_epsilon(1 / z, eps) == pytest.approx(
        _gaussian_delta(z, eps), rel=1e-9, abs=1e-300
    )


def test_gdp_composition_and_inverses():
    event = ev.ComposedDpEvent(
        [
            ev.GaussianDpEvent(2.0),
            ev.MuGdpEvent(0.3),
            ev.SelfComposedDpEvent(ev.GaussianDpEvent(4.0), 9),
        ]
    )
    mu = gdp.event_mu(event)
    assert mu == pytest.approx(math.sqrt(0.25 + 0.09 + 9 / 16))
    eps = compute_epsilon(event, 1e-5, accountant="gdp")
    assert gdp.delta_for_epsilon(mu, eps) == pytest.approx(1e-5, rel=1e-6)
    assert compute_delta(event, eps, accountant="gdp") == pytest.approx(1e-5, rel=1e-6)
    assert gdp.mu_for_epsilon_delta(eps, 1e-5) == pytest.approx(mu, rel=1e-6)
    # composition of k Gaussians with multiplier z is one Gaussian with z / sqrt(k): exact
    k, z = 16, 3.0
    assert gdp.epsilon_for_delta(math.sqrt(k) / z, 1e-5) == pytest.approx(
        compute_epsilon(ev.GaussianDpEvent(z / math.sqrt(k)), 1e-5, accountant="gdp")
    )


def test_gdp_is_tighter_than_rdp_for_gaussians():
    event = ev.SelfComposedDpEvent(ev.GaussianDpEvent(5.0), 50)
    assert compute_epsilon(event, 1e-5, accountant="gdp") <= compute_epsilon(event, 1e-5)


def test_gdp_clt_is_labelled_and_opt_in():
    event = dpsgd_event(1.1, 0.01, 10000)
    with pytest.raises(ValueError, match="gdp_clt"):
        compute_epsilon(event, 1e-5, accountant="gdp")
    mu = gdp.event_mu(event, clt=True)
    assert mu == pytest.approx(0.01 * math.sqrt(10000 * math.expm1(1 / 1.1**2)))
    assert mu == gdp.clt_mu_approximation(0.01, 1.1, 10000)
    assert "APPROXIMATE" in gdp.clt_mu_approximation.__doc__


def test_zcdp_classic_closed_form_and_improved():
    for rho in [1e-3, 0.05, 0.5, 3.0]:
        classic = zcdp.epsilon_for_delta(rho, 1e-5, conversion="classic")
        assert classic == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e5)))
        improved = zcdp.epsilon_for_delta(rho, 1e-5)
        assert improved <= classic
        # improved = the CKS RDP conversion minimised over continuous orders: on a dense grid
        orders = 1 + np.geomspace(1e-4, 1e4, 20001)
        grid = rdp.epsilon_from_rdp(orders, rho * orders, 1e-5)[0]
        assert improved == pytest.approx(grid, rel=1e-5)
        # and the delta conversions invert the epsilon ones
        assert zcdp.delta_for_epsilon(rho, classic, conversion="classic") == pytest.approx(
            1e-5, rel=1e-6
        )
        assert zcdp.delta_for_epsilon(rho, improved) == pytest.approx(1e-5, rel=1e-4)


def test_zcdp_events():
    event = ev.ComposedDpEvent(
        [
            ev.GaussianDpEvent(2.0),
            ev.PureDpEvent(0.5),
            ev.LaplaceDpEvent(4.0),
            ev.ZCDpEvent(0.01, 0.02),
            ev.SelfComposedDpEvent(ev.MuGdpEvent(0.1), 4),
        ]
    )
    xi, rho = zcdp.event_rho(event)
    assert xi == pytest.approx(0.02)
    assert rho == pytest.approx(1 / 8 + 0.125 + 1 / 32 + 0.01 + 4 * 0.005)
    with pytest.raises(ValueError, match="subsampling"):
        zcdp.event_rho(dpsgd_event(1.0, 0.1, 10))


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: gdp.delta_for_epsilon(-1.0, 1.0), "mu"),
        (lambda: gdp.epsilon_for_delta(1.0, 0.0), "delta"),
        (lambda: gdp.epsilon_for_delta(1.0, float("nan")), "delta"),
        (lambda: gdp.clt_mu_approximation(1.5, 1.0, 10), "sampling_prob"),
        (lambda: gdp.clt_mu_approximation(0.1, 0.0, 10), "noise_multiplier"),
        (lambda: gdp.clt_mu_approximation(0.1, 1.0, -1), "steps"),
        (lambda: zcdp.epsilon_for_delta(-0.1, 1e-5), "rho"),
        (lambda: zcdp.epsilon_for_delta(0.1, 1.5), "delta"),
        (lambda: zcdp.delta_for_epsilon(0.1, -1.0), "epsilon"),
    ],
)
def test_invalid_arguments_raise_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
