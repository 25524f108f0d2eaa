"""A Bernoulli-Bernoulli Restricted Boltzmann Machine (flax.linen) trained by persistent
contrastive divergence (DPGM Sec. 3.1; Tieleman 2008).

Energy ``E(v, h) = -v^T W h - b^T v - c^T h`` for binary ``v`` (``m`` visible units) and ``h``
(``n`` hidden units); summing out ``h`` gives the free energy

    F(v) = -b^T v - sum_j softplus(c_j + (v^T W)_j),      p(v) = exp(-F(v)) / Z.

The log-likelihood gradient is ``-grad F(v) + E_{v' ~ p}[grad F(v')]``. Persistent CD replaces
the model expectation by the mean over ``K`` *persistent chains* ``v'_1..v'_K``: Gibbs chains
that are carried from one update to the next, advanced by ``k`` Gibbs steps under the current
parameters and never restarted at data. The objective of ONE example is therefore

    loss(theta; x) = F(x) - mean_k F(stop_gradient(v'_k)),

whose gradient is the PCD estimate for that example (:func:`cd_loss`): a per-example loss that
DP-SGD clips like any other (:mod:`jdp.dpsgd`). The chains are DP-SGD's non-private
``model_state`` and their update (:func:`make_chain_update`) reads a key, the parameters and
the chains only -- never data -- so it is post-processing of the released parameters.

Everything here is a pure function of parameters and inputs; no privacy is handled here.

References:
  Acs et al., "Differentially Private Mixture of Generative Neural Networks", TKDE 2018,
  Sec. 3.1 and 6.1 (200 hidden units, weights ~ N(0, 0.01^2), zero biases);
  Tieleman, "Training restricted Boltzmann machines using approximations to the likelihood
  gradient", ICML 2008 (persistent contrastive divergence); Hinton, "A practical guide to
  training restricted Boltzmann machines", 2010 (free energy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp


class RBM(nn.Module):
    """Bernoulli RBM with ``n_visible`` visible and ``n_hidden`` hidden units.

    Parameters: ``weights`` ``(m, n)`` ~ ``N(0, 0.01^2)``, ``visible_bias`` ``(m,)`` and
    ``hidden_bias`` ``(n,)`` zero (DPGM Sec. 6.1). ``__call__`` is the free energy
    (:meth:`free_energy`) of one example ``(m,)`` or of a batch ``(..., m)``.
    """

    n_visible: int
    n_hidden: int

    def setup(self) -> None:
        self.weights = self.param(
            "weights", nn.initializers.normal(0.01), (self.n_visible, self.n_hidden)
        )
        self.visible_bias = self.param("visible_bias", nn.initializers.zeros, (self.n_visible,))
        self.hidden_bias = self.param("hidden_bias", nn.initializers.zeros, (self.n_hidden,))

    def __call__(self, v: jax.Array) -> jax.Array:
        return self.free_energy(v)

    def free_energy(self, v: jax.Array) -> jax.Array:
        """``F(v) = -b^T v - sum_j softplus(c_j + (v^T W)_j)`` over the last axis."""
        return -(v @ self.visible_bias) - jnp.sum(jax.nn.softplus(self.hidden_logits(v)), -1)

    def hidden_logits(self, v: jax.Array) -> jax.Array:
        """``c + v^T W``: logits of ``p(h_j = 1 | v)``."""
        return self.hidden_bias + v @ self.weights

    def visible_logits(self, h: jax.Array) -> jax.Array:
        """``b + W h``: logits of ``p(v_i = 1 | h)``."""
        return self.visible_bias + h @ self.weights.T


def init_chains(key: jax.Array, n_chains: int, n_visible: int) -> jax.Array:
    """``n_chains`` persistent chains started at uniform random binary vectors (no data)."""
    return jax.random.bernoulli(key, 0.5, (n_chains, n_visible)).astype(jnp.float32)


def gibbs_step(key: jax.Array, rbm: RBM, params: Any, v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One block Gibbs sweep ``v -> h ~ p(h|v) -> v' ~ p(v|h)``.

    Returns ``(v', p(v'=1 | h))`` (the binary state and the visible means of the sweep).
    """
    k_h, k_v = jax.random.split(key)
    h_logits = rbm.apply(params, v, method=RBM.hidden_logits)
    h = jax.random.bernoulli(k_h, jax.nn.sigmoid(h_logits)).astype(v.dtype)
    p_v = jax.nn.sigmoid(rbm.apply(params, h, method=RBM.visible_logits))
    return jax.random.bernoulli(k_v, p_v).astype(v.dtype), p_v


def gibbs_chain(
    key: jax.Array, rbm: RBM, params: Any, v: jax.Array, steps: int
) -> tuple[jax.Array, jax.Array]:
    """``steps`` Gibbs sweeps from ``v``; returns the final ``(v, p(v=1 | h))``."""

    def body(carry, k):
        state, _ = carry
        return gibbs_step(k, rbm, params, state), None

    init = (v, jnp.zeros_like(v))
    (v_out, p_out), _ = jax.lax.scan(body, init, jax.random.split(key, steps))
    return v_out, p_out


def cd_loss(rbm: RBM, params: Any, x: jax.Array, chains: jax.Array) -> jax.Array:
    """The PCD objective of ONE example ``x``: ``F(x) - mean_k F(stop_gradient(chains_k))``.

    Its gradient is ``grad F(x) - mean_k grad F(v'_k)``, the negative of the PCD estimate of
    ``grad log p(x)``. The negative phase reads the persistent ``chains`` only.
    """
    negative = jnp.mean(rbm.apply(params, jax.lax.stop_gradient(chains)))
    return rbm.apply(params, x) - negative


def make_chain_update(
    rbm: RBM, gibbs_steps: int = 1
) -> Callable[[jax.Array, Any, jax.Array], jax.Array]:
    """``update(key, params, chains) -> chains`` after ``gibbs_steps`` sweeps (the persistent
    chains' update between DP-SGD steps; its arguments contain no data)."""

    def update(key: jax.Array, params: Any, chains: jax.Array) -> jax.Array:
        return gibbs_chain(key, rbm, params, chains, gibbs_steps)[0]

    return update


def sample(
    key: jax.Array, rbm: RBM, params: Any, n: int, *, burn_in: int = 500
) -> tuple[jax.Array, jax.Array]:
    """``n`` independent chains from uniform random starts after ``burn_in`` Gibbs sweeps.

    Returns ``(v, p(v=1 | h))`` of the last sweep, each ``(n, m)``: binary samples and their
    visible means (smoother for display, and what a table decoder may threshold or draw from).
    """
    k_init, k_run = jax.random.split(key)
    v0 = init_chains(k_init, n, rbm.n_visible)
    return gibbs_chain(k_run, rbm, params, v0, burn_in)
