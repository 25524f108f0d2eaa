"""RDP accountant: exactness against dp-accounting (integer orders), quadrature (fractional
orders), closed forms, conversions, and argument validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
from scipy import integrate, special

from accounting import events as ev
from accounting.accountants import rdp
from accounting.builders import dpsgd_event

QS = [1e-4, 1e-3, 0.01, 0.1, 0.5]
ZS = [0.5, 1.0, 2.0, 5.0, 10.0]
INT_ORDERS = [2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
FRAC_ORDERS = [1.01, 1.1, 1.5, 2.5, 4.75, 10.5, 30.25]


def _dp_accounting_rdp(event: ev.DpEvent, orders: list[float]) -> np.ndarray:
    acc = RdpAccountant(orders=orders)
    acc.compose(event)
    return np.asarray(acc.rdp)


def _quadrature_rdp(q: float, z: float, a: float) -> float:
    """log E_{mu0}[(mu/mu0)^a] / (a-1) by adaptive quadrature of the log-scaled integrand."""

    def log_f(x):
        return (
            -x * x / (2 * z * z)
            + a * np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * z * z))
            - math.log(z * math.sqrt(2 * math.pi))
        )

    lo, hi = -60 * z, a + 60 * z
    grid = np.linspace(lo, hi, 20001)
    m = float(np.max(log_f(grid)))
    val, _ = integrate.quad(
        lambda x: math.exp(log_f(x) - m),
        lo,
        hi,
        points=[0.0, 1.0, a, grid[np.argmax(log_f(grid))]],
        limit=500,
        epsabs=0,
        epsrel=1e-12,
    )
    return (m + math.log(val)) / (a - 1)


@pytest.mark.parametrize("steps", [1, 1000, 10**6])
def test_integer_orders_match_dp_accounting(steps):
    # 1e-6 relative over q in [1e-4, 0.5], z in [0.5, 10], orders up to 256.
    for q in QS:
        for z in ZS:
            event = ev.SelfComposedDpEvent(
                ev.PoissonSampledDpEvent(q, ev.GaussianDpEvent(z)), steps
            )
            ours = rdp.event_rdp(event, INT_ORDERS)
            ref = _dp_accounting_rdp(event, INT_ORDERS)
            np.testing.assert_allclose(ours, ref, rtol=1e-6, err_msg=f"q={q} z={z}")


@pytest.mark.slow
def test_integer_orders_match_dp_accounting_exhaustive():
    orders = list(range(2, 257))
    for q in np.geomspace(1e-4, 0.5, 12):
        for z in np.geomspace(0.5, 10, 12):
            ours = rdp.poisson_gaussian_rdp(q, z, orders)
            ref = _dp_accounting_rdp(ev.PoissonSampledDpEvent(q, ev.GaussianDpEvent(z)), orders)
            np.testing.assert_allclose(ours, ref, rtol=1e-6, err_msg=f"q={q} z={z}")


@pytest.mark.parametrize(
    "q,z", [(1e-4, 0.5), (1e-3, 10.0), (0.01, 1.1), (0.1, 2.0), (0.5, 0.5), (0.5, 10.0)]
)
def test_fractional_orders_are_exact(q, z):
    ours = rdp.poisson_gaussian_rdp(q, z, FRAC_ORDERS)
    ref = np.array([_quadrature_rdp(q, z, a) for a in FRAC_ORDERS])
    # The quadrature is asked for relative error 1e-12 on A_alpha (~1), i.e. up to
    # 1e-12 / (alpha - 1) absolute on the RDP; that dominates only where RDP itself is tiny.
    atol = 1e-12 / (np.array(FRAC_ORDERS) - 1)
    assert np.all(np.abs(ours - ref) <= 1e-7 * np.abs(ref) + atol)


@pytest.mark.parametrize("q,z", [(1e-3, 1.0), (0.01, 1.1), (0.1, 2.0), (0.5, 10.0)])
def test_fractional_orders_vs_dp_accounting(q, z):
    """dp-accounting 0.6 sums |terms| of the alternating MTZ series for fractional orders: an
    upper bound (up to ~8x above exact at q=0.5, z=10). We are never above it, and the same
    series with absolute values reproduces its numbers, which pins down the discrepancy."""
    orders = [o for o in FRAC_ORDERS if o < 20]
    ours = rdp.poisson_gaussian_rdp(q, z, orders)
    ref = _dp_accounting_rdp(ev.PoissonSampledDpEvent(q, ev.GaussianDpEvent(z)), orders)
    finite = np.isfinite(ref)
    assert np.all(ours[finite] <= ref[finite] * (1 + 1e-9))
    log_t, _ = rdp._log_a_fractional_terms(q, z, np.array(orders), np.arange(1000.0))
    abs_series = special.logsumexp(log_t, axis=1) / (np.array(orders) - 1)
    # (dp-accounting stops its sum at a relative threshold of e^-30 on each term, hence 1e-4.)
    np.testing.assert_allclose(abs_series[finite], ref[finite], rtol=1e-4)


def test_epsilon_never_looser_than_dp_accounting_default_grid():
    assert set(DEFAULT_RDP_ORDERS) <= set(rdp.DEFAULT_ORDERS.tolist())
    for q, z, steps in [(0.01, 1.1, 10000), (1e-3, 0.8, 10**6), (0.1, 5.0, 100), (0.5, 2.0, 10)]:
        event = dpsgd_event(z, q, steps)
        acc = RdpAccountant()
        acc.compose(event)
        ref = acc.get_epsilon(1e-5)
        ours = rdp.epsilon_from_rdp(rdp.DEFAULT_ORDERS, rdp.event_rdp(event), 1e-5)[0]
        assert ours <= ref * (1 + 1e-9)
        assert ours >= 0.9 * ref  # same mechanism; the gain comes only from exact fractional orders


def test_million_steps_is_one_multiplication():
    one = rdp.event_rdp(dpsgd_event(1.1, 0.01, 1))
    many = rdp.event_rdp(dpsgd_event(1.1, 0.01, 10**6))
    np.testing.assert_allclose(many, 10**6 * one, rtol=1e-12)


def test_gaussian_and_q1_closed_form():
    a = rdp.DEFAULT_ORDERS
    np.testing.assert_allclose(rdp.gaussian_rdp(2.0, a), a / 8)
    np.testing.assert_allclose(rdp.poisson_gaussian_rdp(1.0, 2.0, a), a / 8)


def test_subsampling_only_helps_and_is_monotone_in_order():
    a = rdp.DEFAULT_ORDERS
    for q in QS:
        r = rdp.poisson_gaussian_rdp(q, 1.0, a)
        assert np.all(r <= rdp.gaussian_rdp(1.0, a) * (1 + 1e-12))
        assert np.all(np.diff(r) >= -1e-15)  # RDP is non-decreasing in the order


def test_laplace_matches_dp_accounting():
    orders = [1.5, 2.0, 3.0, 10.0, 64.0]
    for b in [0.3, 1.0, 4.0]:
        ours = rdp.laplace_rdp(b, orders)
        ref = _dp_accounting_rdp(ev.LaplaceDpEvent(b), orders)
        np.testing.assert_allclose(ours, ref, rtol=1e-9)


def test_pure_rdp_is_randomized_response_and_below_known_bounds():
    a = rdp.DEFAULT_ORDERS
    for eps in [0.01, 0.5, 2.0, 20.0]:
        r = rdp.pure_rdp(eps, a)
        assert np.all(r <= np.minimum(eps, a * eps**2 / 2) * (1 + 1e-9))
        # randomized response with p = e^eps / (1 + e^eps): D_a(P||Q) computed directly
        lp, l1p = -math.log1p(math.exp(-eps)), -math.log1p(math.exp(eps))
        direct = np.logaddexp(a * lp + (1 - a) * l1p, a * l1p + (1 - a) * lp) / (a - 1)
        np.testing.assert_allclose(r, direct, rtol=1e-9)


def test_conversions():
    a = rdp.DEFAULT_ORDERS
    r = rdp.gaussian_rdp(3.0, a)
    classic, order = rdp.epsilon_from_rdp(a, r, 1e-5, conversion="classic")
    i = list(a).index(order)
    assert classic == pytest.approx(r[i] + math.log(1e5) / (order - 1))
    improved, _ = rdp.epsilon_from_rdp(a, r, 1e-5)
    assert improved < classic
    # delta at the epsilon found gives back (at most) the delta
    d, _ = rdp.delta_from_rdp(a, r, improved)
    assert d <= 1e-5 * (1 + 1e-9)
    d_classic, _ = rdp.delta_from_rdp(a, r, classic, conversion="classic")
    assert d_classic <= 1e-5 * (1 + 1e-9)


def test_shared_batch_is_one_effective_gaussian():
    """Gaussians on one Poisson batch: one subsampled Gaussian with the effective multiplier
    (DPGM's Hölder bound for the same event: tests/accounting/test_holder.py)."""
    q, zs = 0.01, [2.0, 1.1]
    exact = rdp.event_rdp(
        ev.PoissonSampledDpEvent(q, ev.ComposedDpEvent([ev.GaussianDpEvent(z) for z in zs]))
    )
    z_eff = (2.0**-2 + 1.1**-2) ** -0.5
    np.testing.assert_allclose(exact, rdp.poisson_gaussian_rdp(q, z_eff))


def test_fractional_fallback_is_an_upper_bound(monkeypatch):
    monkeypatch.setattr(rdp, "_MAX_TERMS", 128)  # force the chord fallback
    orders = np.array([1.5, 2.5, 7.5])
    bound = rdp.poisson_gaussian_rdp(0.5, 10.0, orders)
    monkeypatch.undo()
    exact = rdp.poisson_gaussian_rdp(0.5, 10.0, orders)
    assert np.all(bound >= exact * (1 - 1e-12))


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: rdp.gaussian_rdp(0.0), "noise_multiplier"),
        (lambda: rdp.gaussian_rdp(-1.0), "noise_multiplier"),
        (lambda: rdp.gaussian_rdp(float("nan")), "noise_multiplier"),
        (lambda: rdp.poisson_gaussian_rdp(0.0, 1.0), "sampling_prob"),
        (lambda: rdp.poisson_gaussian_rdp(1.5, 1.0), "sampling_prob"),
        (lambda: rdp.poisson_gaussian_rdp(float("inf"), 1.0), "sampling_prob"),
        (lambda: rdp.gaussian_rdp(1.0, [0.5, 2.0]), "orders"),
        (lambda: rdp.gaussian_rdp(1.0, [1.0]), "orders"),
        (lambda: rdp.gaussian_rdp(1.0, [float("nan")]), "orders"),
        (lambda: rdp.epsilon_from_rdp([2.0], [0.1], 0.0), "delta"),
        (lambda: rdp.epsilon_from_rdp([2.0], [0.1], 1.0), "delta"),
        (lambda: rdp.delta_from_rdp([2.0], [0.1], -1.0), "epsilon"),
        (lambda: rdp.laplace_rdp(0.0), "noise_multiplier"),
        (lambda: rdp.pure_rdp(-1.0), "epsilon"),
        (lambda: rdp.event_rdp(ev.GaussianDpEvent(-1.0)), "noise_multiplier"),
        (
            lambda: rdp.event_rdp(ev.PoissonSampledDpEvent(2.0, ev.GaussianDpEvent(1.0))),
            "sampling_prob",
        ),
    ],
)
def test_invalid_arguments_raise_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_unsupported_events_raise():
    with pytest.raises(ValueError, match="RDP accountant"):
        rdp.event_rdp(ev.PoissonSampledDpEvent(0.1, ev.LaplaceDpEvent(1.0)))
    with pytest.raises(ValueError, match="REPLACE_ONE"):
        rdp.event_rdp(ev.SampledWithoutReplacementDpEvent(100, 10, ev.GaussianDpEvent(1.0)))
    with pytest.raises(ValueError, match="pld"):
        rdp.event_rdp(
            dpsgd_event(1.0, 0.1, 1), neighboring_relation=ev.NeighboringRelation.REPLACE_ONE
        )


def test_non_private_limits():
    assert np.all(np.isinf(rdp.event_rdp(ev.GaussianDpEvent(0.0))))
    assert np.all(np.isinf(rdp.event_rdp(ev.NonPrivateDpEvent())))
    assert np.all(rdp.event_rdp(ev.NoOpDpEvent()) == 0)
