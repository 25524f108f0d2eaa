"""DPGM's generalized moments accountant (Acs et al. 2018, Sec. 5, Theorem 3): Hölder's
inequality for mechanisms that share their randomness (one Poisson batch).

Theorem 3 bounds the log moment of a composition of *dependent* mechanisms:
``alpha(lambda) <= sum_i j_i alpha_i(lambda / j_i)`` for any weights ``j_i > 0`` with
``sum_i j_i = 1`` (generalised Hölder inequality on ``E[prod_i exp(lambda P_i)]``). DPGM
applies it to Algorithm 4's two Gaussian mechanisms on one sampled batch (the DPNorm
histogram and the clipped gradient sum), Eq. (7).

In RDP terms (``alpha(lambda) = lambda RDP(lambda + 1)``, order ``a = lambda + 1``) the bound
reads ``RDP(a) <= sum_i RDP_i(1 + (a - 1) / j_i)``. We evaluate it

* on a fixed grid of weights (the paper: "it suffices to consider 10 different values of
  j_1 and j_2"); every weight vector gives a valid bound, so the minimum over any grid is
  valid;
* with each component order rounded up to an integer: Rényi divergence is non-decreasing
  in its order (van Erven & Harremoës 2014, Thm. 3), so ``RDP_i(ceil(o)) >= RDP_i(o)`` keeps
  the bound valid and uses the exact, fast integer-order series of
  :func:`accounting.accountants.rdp.poisson_gaussian_rdp`;
* for orders ``a <= 128`` only (above: ``inf``, excluded from the conversion; DPGM itself
  uses ``lambda <= 100``).

**Which is tighter.** For Gaussian mechanisms on one Poisson batch the joint release is
exactly one subsampled Gaussian with multiplier ``(sum_i z_i^-2)^-1/2``
(:func:`accounting.accountants.base.effective_noise_multiplier`, docs/privacy.md), which is
what the ``rdp`` accountant composes. Hölder's bound is never below it (tested): for two
unsampled Gaussians ``z_1 = z_2 = 1`` it gives ``RDP(a) = 2a - 1`` where the exact value is
``a``. Both are valid; jdp calibrates with the exact ``rdp`` accountant and offers this one as
``accountant="holder"`` to reproduce DPGM's numbers (``scripts/reproduce_dpgm.py``, Fig. 2).
Every other event is accounted exactly as by the RDP accountant.
"""

from __future__ import annotations

import numpy as np

from accounting.accountants import base, rdp
from accounting.validation import check_positive, check_probability

#: Largest order ``a`` at which the Hölder bound is evaluated (cost; DPGM: lambda <= 100).
MAX_ORDER = 128.0
#: Largest component order ``1 + (a - 1) / j_i`` evaluated (weights beyond it are skipped).
_MAX_COMPONENT_ORDER = 4096.0
#: The weight grid: ``j_1`` for two mechanisms; the exponent ``t`` of ``j_i ~ z_i^-t`` for more.
_PAIR_WEIGHTS = np.linspace(0.02, 0.98, 49)
_EXPONENTS = np.linspace(0.0, 3.0, 31)


def holder_weights(noise_multipliers: list[float]) -> np.ndarray:
    """The candidate weight vectors ``(m, k)`` (rows positive, summing to 1).

    Two mechanisms: ``j_1`` on a grid of 49 values in ``[0.02, 0.98]``. More: the
    one-parameter family ``j_i ~ z_i^-t``, ``t in [0, 3]`` (``t = 1`` is optimal for
    unsampled Gaussians, see :func:`shared_batch_holder_rdp`).
    """
    zs = np.asarray(noise_multipliers, dtype=np.float64)
    if zs.size == 2:
        return np.stack([_PAIR_WEIGHTS, 1.0 - _PAIR_WEIGHTS], axis=1)
    w = zs[None, :] ** -_EXPONENTS[:, None]
    return w / w.sum(axis=1, keepdims=True)


def shared_batch_holder_rdp(
    sampling_prob: float, noise_multipliers: list[float], orders: object = rdp.DEFAULT_ORDERS
) -> np.ndarray:
    """DPGM Theorem 3 for Gaussian mechanisms on one shared Poisson batch, as an RDP curve.

    ``RDP(a) <= min_j sum_i RDP_i(ceil(1 + (a - 1) / j_i))`` over :func:`holder_weights`,
    ``RDP_i`` the Poisson-subsampled Gaussian of multiplier ``z_i``
    (:func:`accounting.accountants.rdp.poisson_gaussian_rdp`).

    Hand check (``q = 1``): ``RDP_i(a) = a / (2 z_i^2)`` and the minimum over all weights of
    ``sum_i (1 + (a - 1)/j_i) / (2 z_i^2)`` is at ``j_i ~ 1/z_i``:
    ``sum_i 1/(2 z_i^2) + (a - 1)(sum_i 1/z_i)^2 / 2``; the exact joint value is
    ``a sum_i 1/(2 z_i^2)``.

    Args:
      sampling_prob: ``q`` in (0, 1] (1: the mechanisms are not subsampled).
      noise_multipliers: ``z_i > 0`` of the Gaussian mechanisms sharing the batch.
      orders: RDP orders; those above :data:`MAX_ORDER` get ``inf``.

    Returns:
      the bound over ``orders`` (one mechanism: its exact curve).

    References:
      Acs et al., "Differentially Private Mixture of Generative Neural Networks", TKDE 2018,
      Sec. 5, Theorem 3 and Eq. (7).
    """
    q = check_probability("sampling_prob", sampling_prob)
    zs = [check_positive("noise_multiplier", z) for z in noise_multipliers]
    a = rdp.check_orders(orders)
    if not zs:
        raise ValueError("expected at least one noise multiplier")
    if len(zs) == 1:
        return rdp.poisson_gaussian_rdp(q, zs[0], a)
    out = np.full_like(a, np.inf)
    keep = a <= MAX_ORDER
    if not keep.any():
        return out
    weights = holder_weights(zs)  # (m, k)
    # component orders (m, k, A), rounded up to integers (valid: RDP is non-decreasing)
    comp = np.ceil(1.0 + (a[keep][None, None, :] - 1.0) / weights[:, :, None])
    comp = np.maximum(comp, 2.0)
    total = np.zeros((weights.shape[0], int(keep.sum())))
    for i, z in enumerate(zs):
        col = comp[:, i, :]
        ok = col <= _MAX_COMPONENT_ORDER
        values = np.full(col.shape, np.inf)
        unique = np.unique(col[ok])
        if unique.size:
            curve = dict(zip(unique, rdp.poisson_gaussian_rdp(q, z, unique)))
            values[ok] = [curve[o] for o in col[ok]]
        total += values
    out[keep] = np.min(total, axis=0)
    return out


class HolderAccountant(rdp.RdpAccountant):
    """RDP curves, with DPGM's Hölder bound for Gaussians sharing one Poisson batch
    (:func:`shared_batch_holder_rdp`) instead of the exact effective-noise analysis; every
    other event as :class:`~accounting.accountants.rdp.RdpAccountant` (which it is, otherwise).

    ``shared_batch`` is accepted for the registry's signature and ignored: this accountant
    *is* the paper's shared-batch analysis.
    """

    title = "holder"

    def __init__(
        self, orders: object = rdp.DEFAULT_ORDERS, *, shared_batch: base.SharedBatch = "paper"
    ) -> None:
        super().__init__(orders)
        self.shared_batch = "paper"

    def shared_batch_rdp(self, sampling_prob: float, noise_multipliers: list[float]) -> np.ndarray:
        return shared_batch_holder_rdp(sampling_prob, noise_multipliers, self.orders)
