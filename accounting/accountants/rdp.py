"""Rényi differential privacy (Mironov 2017): per-order RDP curves and conversion to (eps, delta).

Every function returns an array over ``orders`` (vectorised: composing ``T`` identical steps
is one multiplication, so 10^6 DP-SGD steps cost what one step costs).

RDP of order ``alpha > 1`` of a mechanism ``M``: ``sup D_alpha(M(D) || M(D'))`` over
neighbouring ``D, D'``, with ``D_alpha(P||Q) = log E_Q[(P/Q)^alpha] / (alpha - 1)``.

* Gaussian, noise multiplier ``z``: ``alpha / (2 z^2)`` (Mironov 2017, Prop. 7).
* Poisson-subsampled Gaussian (rate ``q``): ``log(A_alpha) / (alpha - 1)`` with
  ``A_alpha = E_{x~mu0}[((1-q) + q mu1(x)/mu0(x))^alpha]``, ``mu0 = N(0, z^2)``,
  ``mu1 = N(1, z^2)``, computed exactly for integer and fractional orders (Mironov, Talwar &
  Zhang 2019, Sec. 3.3; see :func:`poisson_gaussian_rdp`).
* Laplace, scale ``b`` per unit L1 sensitivity:
  ``log(alpha/(2alpha-1) e^{(alpha-1)/b} + (alpha-1)/(2alpha-1) e^{-alpha/b}) / (alpha-1)``
  (Mironov 2017, Prop. 6).
* Pure ``eps``-DP: ``(log cosh((2alpha-1) eps/2) - log cosh(eps/2)) / (alpha - 1)``, the RDP of
  randomized response, which dominates every ``eps``-DP mechanism (Bun & Steinke 2016,
  Prop. 3.3 gives the weaker ``min(eps, alpha eps^2 / 2)``; this one is at most that).
* (xi, rho)-zCDP: ``xi + rho alpha``; mu-GDP: ``alpha mu^2 / 2``.
* Sampling without replacement (fixed batch, replace-one relation): Wang, Balle &
  Kasiviswanathan 2019, Thm. 9, delegated to ``dp_accounting`` (its implementation is long
  and already cross-checked there).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import special

from accounting import events as ev
from accounting.accountants import base, pure
from accounting.validation import (
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)

Conversion = Literal["improved", "classic"]

#: Orders used when none are given: a superset of ``dp_accounting``'s default grid (so we are
#: never looser than it), plus fractional orders closer to 1 (large-epsilon regime) and more
#: integers between 64 and 1024 (tiny-epsilon regime).
DEFAULT_ORDERS: np.ndarray = np.unique(
    np.concatenate(
        [
            1.0 + np.arange(1, 10) / 100.0,
            1.0 + np.arange(1, 100) / 10.0,
            np.arange(11, 64),
            np.arange(64, 129, 8),
            [160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024],
        ]
    ).astype(np.float64)
)

# Largest orders evaluated for sampling without replacement (cost).
_MAX_WOR_ORDER = 128.0
# Most series terms for fractional orders (see _log_a_fractional).
_MAX_TERMS = 1 << 15


def check_orders(orders: object) -> np.ndarray:
    """Return ``orders`` as a float array after checking every order is finite and > 1."""
    arr = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"expected orders to be a non-empty 1-d sequence, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"expected orders to be finite, got {arr[~np.isfinite(arr)][0]}")
    if not np.all(arr > 1):
        raise ValueError(f"expected orders > 1, got {arr[arr <= 1][0]:g}")
    return arr


# --------------------------------------------------------------------------------------------
# Single mechanisms
# --------------------------------------------------------------------------------------------
def gaussian_rdp(noise_multiplier: float, orders: object = DEFAULT_ORDERS) -> np.ndarray:
    """RDP of the Gaussian mechanism: ``alpha / (2 z^2)``."""
    z = check_positive("noise_multiplier", noise_multiplier)
    a = check_orders(orders)
    return a / (2.0 * z * z)


def laplace_rdp(noise_multiplier: float, orders: object = DEFAULT_ORDERS) -> np.ndarray:
    """RDP of the Laplace mechanism with scale ``b = noise_multiplier`` x L1 sensitivity."""
    b = check_positive("noise_multiplier", noise_multiplier)
    a = check_orders(orders)
    log_m = np.logaddexp(
        np.log(a / (2 * a - 1)) + (a - 1) / b, np.log((a - 1) / (2 * a - 1)) - a / b
    )
    return np.minimum(log_m / (a - 1), 1.0 / b)


def _log_cosh(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return x + np.log1p(np.exp(-2 * x)) - math.log(2)


def pure_rdp(epsilon: float, orders: object = DEFAULT_ORDERS) -> np.ndarray:
    """Tight RDP bound of any ``epsilon``-DP mechanism (randomized response's RDP)."""
    eps = check_nonnegative("epsilon", epsilon)
    a = check_orders(orders)
    if eps == 0:
        return np.zeros_like(a)
    out = (_log_cosh((2 * a - 1) * eps / 2) - _log_cosh(np.array(eps / 2))) / (a - 1)
    return np.clip(out, 0.0, eps)


def zcdp_rdp(rho: float, xi: float = 0.0, orders: object = DEFAULT_ORDERS) -> np.ndarray:
    """RDP of (xi, rho)-zCDP: ``xi + rho alpha`` (Bun & Steinke 2016, Def. 1.1)."""
    rho = check_nonnegative("rho", rho)
    xi = check_nonnegative("xi", xi)
    return xi + rho * check_orders(orders)


def _log_binom_signed(alpha: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log|binom(alpha, k)|`` and its sign, for real ``alpha`` (not an integer) and k >= 0."""
    x = alpha - k + 1
    log_abs = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(x)
    return log_abs, special.gammasgn(x)


def _log_a_integer(q: float, z: float, alpha: np.ndarray) -> np.ndarray:
    """``log A_alpha`` for integer orders, as ``log1p(A_alpha - 1)``.

    ``A_alpha = sum_k binom(alpha,k) (1-q)^(alpha-k) q^k exp((k^2-k)/(2z^2))`` and the binomial
    weights sum to one, so ``A_alpha - 1 = sum_{k>=2} w_k expm1((k^2-k)/(2z^2))``: a sum of
    positive terms, accurate even when ``A_alpha - 1`` is far below machine epsilon.
    """
    kmax = int(alpha.max())
    k = np.arange(2, kmax + 1, dtype=np.float64)[None, :]
    a = alpha[:, None]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        log_w = (
            special.gammaln(a + 1)
            - special.gammaln(k + 1)
            - special.gammaln(np.maximum(a - k + 1, 1.0))
            + k * math.log(q)
            + (a - k) * math.log1p(-q)
        )
        c = (k * k - k) / (2 * z * z)
        log_t = log_w + np.where(c > 30, c, np.log(np.expm1(c)))
    log_t = np.where(k <= a, log_t, -np.inf)
    log_s = special.logsumexp(log_t, axis=1)
    return np.where(log_s > 30, log_s, np.log1p(np.exp(np.minimum(log_s, 30))))


def _log_a_fractional_terms(
    q: float, z: float, alpha: np.ndarray, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Log-magnitudes and signs of the terms of A_alpha = A1 + A2 (MTZ 2019, Sec. 3.3).

    With ``z0 = z^2 log(1/q - 1) + 1/2`` (where ``(1-q) mu0 = q mu1``),
    ``A1 = sum_k binom(alpha,k) (1-q)^(alpha-k) q^k e^((k^2-k)/(2z^2)) Phi((z0-k)/z)`` and
    ``A2 = sum_k binom(alpha,k) (1-q)^k q^(alpha-k) e^((j^2-j)/(2z^2)) Phi((j-z0)/z)``,
    ``j = alpha - k``: the two halves of the integral split at ``z0``, each expanded by the
    binomial series where it converges.
    """
    a = alpha[:, None]
    kk = k[None, :]
    j = a - kk
    log_c, sign = _log_binom_signed(a, kk)
    z0 = z * z * math.log(1 / q - 1) + 0.5
    lq, l1q = math.log(q), math.log1p(-q)
    t1 = log_c + kk * lq + j * l1q + (kk * kk - kk) / (2 * z * z) + special.log_ndtr((z0 - kk) / z)
    t2 = log_c + kk * l1q + j * lq + (j * j - j) / (2 * z * z) + special.log_ndtr((j - z0) / z)
    return np.concatenate([t1, t2], axis=1), np.concatenate([sign, sign], axis=1)


def _log_a_fractional(q: float, z: float, alpha: np.ndarray) -> np.ndarray:
    """``log A_alpha`` for fractional orders, as a rigorous upper bound within 1e-10 relative
    of ``A_alpha - 1``.

    The combined terms ``c_k`` (the k-th term of A1 plus that of A2; both carry the sign of
    ``binom(alpha, k)``) alternate in sign for ``k > alpha`` with eventually decreasing
    magnitude, so the limit lies between consecutive partial sums: we return ``S_K`` plus
    ``|c_{K-1}|`` when the last term was negative. The number of terms doubles until
    ``|c_{K-1}| <= 1e-10 (A - 1)`` (or machine precision of A). Orders still unconverged after
    2^15 terms fall back to the chord of the convex function ``(alpha-1) RDP(alpha)`` between
    the neighbouring integer orders (an upper bound; exact at the integers).
    """
    out = np.full(alpha.shape, np.nan)
    todo = np.arange(alpha.size)
    n_terms = 256
    while todo.size and n_terms <= _MAX_TERMS:
        k = np.arange(n_terms, dtype=np.float64)
        log_t, sign = _log_a_fractional_terms(q, z, alpha[todo], k)
        log_c = np.logaddexp(log_t[:, :n_terms], log_t[:, n_terms:])
        sign = sign[:, :n_terms]
        m = np.max(log_c, axis=1, keepdims=True)
        scaled = sign * np.exp(log_c - m)
        total = np.sum(scaled, axis=1)
        last, prev = scaled[:, -1], scaled[:, -2]
        upper = total + np.maximum(0.0, -last)
        slack = 1e-10 * np.abs(upper - np.exp(-m[:, 0])) + 1e-15 * upper
        done = (
            (np.abs(last) <= slack)
            & (np.abs(last) <= np.abs(prev))
            & (alpha[todo] + 2 < n_terms)
            & (upper > 0)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            out[todo[done]] = np.log(upper[done]) + m[done, 0]
        todo = todo[~done]
        n_terms *= 2
    if todo.size:
        lo, hi = np.floor(alpha[todo]), np.floor(alpha[todo]) + 1
        f_lo = np.where(lo > 1, _log_a_integer(q, z, np.maximum(lo, 2.0)), 0.0)
        f_hi = _log_a_integer(q, z, hi)
        w = alpha[todo] - lo
        out[todo] = (1 - w) * f_lo + w * f_hi
    return out


def poisson_gaussian_rdp(
    sampling_prob: float, noise_multiplier: float, orders: object = DEFAULT_ORDERS
) -> np.ndarray:
    """RDP of the Poisson-subsampled Gaussian mechanism (add/remove one record).

    Exact: ``log(A_alpha)/(alpha-1)``, ``A_alpha = E_{mu0}[(mu/mu0)^alpha]``, ``mu = (1-q)
    mu0 + q mu1`` (Mironov, Talwar & Zhang 2019, Thm. 4 shows this direction dominates).
    Integer orders: finite binomial sum (positive terms, see :func:`_log_a_integer`).
    Fractional orders: the two-series formula of MTZ 2019 Sec. 3.3.

    Args:
      sampling_prob: ``q`` in (0, 1].
      noise_multiplier: ``z > 0``.
      orders: RDP orders, each > 1.
    """
    q = check_probability("sampling_prob", sampling_prob)
    z = check_positive("noise_multiplier", noise_multiplier)
    a = check_orders(orders)
    if q == 1.0:
        return a / (2 * z * z)
    log_a = np.empty_like(a)
    is_int = a == np.round(a)
    if is_int.any():
        log_a[is_int] = _log_a_integer(q, z, a[is_int])
    if (~is_int).any():
        log_a[~is_int] = _log_a_fractional(q, z, a[~is_int])
    return np.maximum(log_a, 0.0) / (a - 1)


def sampled_without_replacement_gaussian_rdp(
    sample_size: int, dataset_size: int, noise_multiplier: float, orders: object = DEFAULT_ORDERS
) -> np.ndarray:
    """RDP (replace-one) of a Gaussian mechanism on a uniformly random fixed-size subset.

    Wang, Balle & Kasiviswanathan 2019, Thm. 9 (integer orders; fractional orders by the
    convexity of ``(alpha-1) RDP``); delegated to ``dp_accounting``'s implementation, whose
    cost grows quickly with the order: orders above 128 are reported as ``inf`` (excluded
    from the conversion, which stays valid).
    """
    from dp_accounting.rdp import RdpAccountant

    z = check_positive("noise_multiplier", noise_multiplier)
    a = check_orders(orders)
    out = np.full_like(a, np.inf)
    keep = a <= _MAX_WOR_ORDER
    if keep.any():
        acc = RdpAccountant(
            orders=list(a[keep]), neighboring_relation=ev.NeighboringRelation.REPLACE_ONE
        )
        acc.compose(
            ev.SampledWithoutReplacementDpEvent(
                int(dataset_size), int(sample_size), ev.GaussianDpEvent(z)
            )
        )
        out[keep] = np.asarray(acc.rdp, dtype=np.float64)
    return out


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------
class RdpAccountant(base.Accountant[np.ndarray]):
    """RDP curves over ``orders``: composition adds curves (Mironov 2017, Prop. 1), a parallel
    composition takes the maximum order by order.

    ``PoissonSampledDpEvent(q, ComposedDpEvent([Gaussians]))`` (several Gaussian releases on
    one sampled batch) is analysed exactly, as one Gaussian with the effective multiplier
    (:func:`accounting.accountants.base.effective_noise_multiplier`; :meth:`shared_batch_rdp`).
    DPGM's Hölder bound for the same event is the ``"holder"`` accountant
    (:class:`accounting.accountants.holder.HolderAccountant`), so ``shared_batch="paper"`` is
    refused here with a pointer to it (one copy of the bound, in ``holder.py``).
    """

    title = "RDP"

    def __init__(
        self, orders: object = DEFAULT_ORDERS, *, shared_batch: base.SharedBatch = "exact"
    ) -> None:
        if shared_batch == "paper":
            raise ValueError(
                "DPGM's Hölder bound (shared_batch='paper') is the 'holder' accountant: "
                "use accountant='holder'"
            )
        super().__init__(shared_batch=shared_batch)
        self.orders = check_orders(orders)

    def shared_batch_rdp(self, sampling_prob: float, noise_multipliers: list[float]) -> np.ndarray:
        """RDP of Gaussians ``z_i`` on one Poisson batch: exactly one subsampled Gaussian."""
        z = base.effective_noise_multiplier(noise_multipliers)
        return poisson_gaussian_rdp(sampling_prob, z, self.orders)

    def identity(self) -> np.ndarray:
        return np.zeros_like(self.orders)

    def non_private(self) -> np.ndarray:
        return np.full_like(self.orders, np.inf)

    def leaf(self, e: ev.DpEvent, relation: ev.NeighboringRelation) -> np.ndarray:
        a = self.orders
        if isinstance(e, ev.GaussianDpEvent):
            return gaussian_rdp(e.noise_multiplier, a)
        if isinstance(e, ev.LaplaceDpEvent):
            return laplace_rdp(e.noise_multiplier, a)
        if isinstance(e, ev.PureDpEvent):
            return pure_rdp(e.epsilon, a)
        if isinstance(e, ev.MuGdpEvent):
            return a * check_nonnegative("mu", e.mu) ** 2 / 2
        if isinstance(e, ev.ZCDpEvent):
            return zcdp_rdp(e.rho, e.xi, a)
        if isinstance(e, ev.PoissonSampledDpEvent):
            return self.shared_batch_rdp(e.sampling_probability, self.sampled_gaussians(e))
        if isinstance(e, ev.SampledWithoutReplacementDpEvent):
            zs = self.sampled_gaussians(e)
            if len(zs) != 1:
                raise base.UnsupportedEventError(
                    "the RDP accountant supports SampledWithoutReplacementDpEvent of one "
                    f"Gaussian mechanism only, got {len(zs)}"
                )
            return sampled_without_replacement_gaussian_rdp(
                e.sample_size, e.source_dataset_size, zs[0], a
            )
        raise self.unsupported(e)

    def compose(self, values: list[np.ndarray]) -> np.ndarray:
        return sum(values, self.identity())

    def self_compose(self, value: np.ndarray, count: int) -> np.ndarray:
        return count * value

    def parallel(self, values: list[np.ndarray]) -> np.ndarray:
        return np.max(values, axis=0)

    def epsilon_of(self, value: np.ndarray, delta: float) -> float:
        return epsilon_from_rdp(self.orders, value, delta)[0]

    def delta_of(self, value: np.ndarray, epsilon: float) -> float:
        return delta_from_rdp(self.orders, value, epsilon)[0]

    def epsilon(
        self,
        event: ev.DpEvent,
        delta: float,
        neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
    ) -> float:
        """The RDP conversion, or the event's pure epsilon where that is smaller: a pure
        ``eps0``-DP event is (eps0, delta)-DP for every delta, and the RDP conversion alone can
        exceed ``eps0`` (e.g. Lap-PCA + PCA-Gauss Laplace releases: 1.0008 for eps0 = 1)."""
        from_rdp = super().epsilon(event, delta, neighboring_relation)
        return min(from_rdp, pure.pure_epsilon_or_inf(event, neighboring_relation))


def event_rdp(
    event: ev.DpEvent,
    orders: object = DEFAULT_ORDERS,
    *,
    neighboring_relation: ev.NeighboringRelation = ev.NeighboringRelation.ADD_OR_REMOVE_ONE,
) -> np.ndarray:
    """RDP curve of a (composite) event over ``orders``; ``inf`` where it is not private
    (:class:`RdpAccountant`).

    Raises:
      ValueError: for events this accountant cannot analyse, naming the event.
    """
    return RdpAccountant(orders).account(event, neighboring_relation)


# --------------------------------------------------------------------------------------------
# Conversion to (epsilon, delta)
# --------------------------------------------------------------------------------------------
def epsilon_from_rdp(
    orders: object, rdp: object, delta: float, *, conversion: Conversion = "improved"
) -> tuple[float, float]:
    """Smallest epsilon over ``orders`` such that the RDP curve implies (epsilon, delta)-DP.

    * ``"classic"``: ``eps = RDP(a) + log(1/delta) / (a-1)`` (Mironov 2017, Prop. 3; P3GM
      Thm. 2).
    * ``"improved"``: ``eps = RDP(a) + log((a-1)/a) - (log delta + log a) / (a-1)`` (Canonne,
      Kamath & Steinke 2020, Prop. 12; Balle et al. 2020, Thm. 21), together with the
      KL bound ``delta >= sqrt(1 - exp(-RDP(a)))  =>  eps = 0`` (Pinsker/Bretagnolle-Huber,
      since ``KL <= D_a``).

    Returns:
      ``(epsilon, optimal_order)``; epsilon is ``inf`` if no order gives a finite bound.
    """
    a = check_orders(orders)
    r = np.asarray(rdp, dtype=np.float64)
    if r.shape != a.shape:
        raise ValueError(f"expected rdp of shape {a.shape}, got {r.shape}")
    d = check_open_unit("delta", delta)
    if conversion not in ("improved", "classic"):
        raise ValueError(f"expected conversion in ('improved', 'classic'), got {conversion!r}")
    r = np.maximum(r, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        if conversion == "classic":
            eps = r + math.log(1 / d) / (a - 1)
        else:
            eps = r + np.log1p(-1 / a) - (math.log(d) + np.log(a)) / (a - 1)
            eps = np.where(d * d + np.expm1(-r) > 0, 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


def delta_from_rdp(
    orders: object, rdp: object, epsilon: float, *, conversion: Conversion = "improved"
) -> tuple[float, float]:
    """Smallest delta over ``orders`` such that the RDP curve implies (epsilon, delta)-DP.

    The inverse of :func:`epsilon_from_rdp` for each order: ``"classic"``
    ``log delta = (a-1)(RDP(a) - eps)``; ``"improved"`` ``log delta = (a-1)(RDP(a) - eps +
    log(1-1/a)) - log a``, and the KL bound ``delta <= sqrt(1 - exp(-RDP(a)))``.
    """
    a = check_orders(orders)
    r = np.maximum(np.asarray(rdp, dtype=np.float64), 0.0)
    if r.shape != a.shape:
        raise ValueError(f"expected rdp of shape {a.shape}, got {r.shape}")
    eps = check_nonnegative("epsilon", epsilon)
    if conversion not in ("improved", "classic"):
        raise ValueError(f"expected conversion in ('improved', 'classic'), got {conversion!r}")
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if conversion == "classic":
            log_d = (a - 1) * (r - eps)
        else:
            log_d = (a - 1) * (r - eps + np.log1p(-1 / a)) - np.log(a)
            log_d = np.minimum(log_d, 0.5 * np.log1p(-np.exp(-r)))
    log_d = np.where(np.isnan(log_d), np.inf, log_d)
    i = int(np.argmin(log_d))
    return float(min(1.0, math.exp(min(log_d[i], 0.0)))), float(a[i])
