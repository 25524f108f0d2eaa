"""Variational auto-encoder pieces for P3GM and DP-VAE (flax.linen modules + KL terms).

Architecture (P3GM, Takagi et al., Sec. VI "Implementations of Generative Models"): encoder
``[d, 1000, d']`` and decoder ``[d', 1000, d]`` with ReLU. In P3GM the encoder *mean* is not a
network output: it is the fixed DP-PCA projection ``c_x`` (Sec. IV-B, V-A), computed outside
this module and passed in; only the log-variance head is learned. DP-VAE learns both heads.

The decoder emits one raw vector of width ``d``, read by the output heads of
:mod:`jdp.nn.heads` (its log-likelihood :func:`jdp.nn.heads.log_likelihood`, its samples
:func:`jdp.nn.heads.decode_sample`; Sec. IV-C: "a Bernoulli or Gaussian MLP depending on the
type of data").

Everything here is a pure function of parameters and inputs; losses are written for ONE
example (batched by ``jax.vmap``), as DP-SGD's per-example clipping needs.
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular


class Encoder(nn.Module):
    """Gaussian encoder ``q(z | x) = N(mu(x), diag exp(logvar(x)))``.

    With ``learn_mean=False`` (P3GM) the module returns only ``logvar``; the mean is the
    fixed DP-PCA projection supplied by the caller. ``logvar_init`` is the initial bias of
    the log-variance head (0: unit variance; negative: start near the posterior mean).
    """

    hidden: int
    latent_dim: int
    learn_mean: bool
    logvar_init: float = 0.0

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array | None, jax.Array]:
        h = nn.relu(nn.Dense(self.hidden, name="hidden")(x))
        bias_init = nn.initializers.constant(self.logvar_init)
        logvar = nn.Dense(self.latent_dim, name="logvar", bias_init=bias_init)(h)
        mean = nn.Dense(self.latent_dim, name="mean")(h) if self.learn_mean else None
        return mean, logvar


class Decoder(nn.Module):
    """Decoder ``[d', hidden, d]`` with ReLU; returns raw head outputs (logits / means)."""

    hidden: int
    out_dim: int

    @nn.compact
    def __call__(self, z: jax.Array) -> jax.Array:
        h = nn.relu(nn.Dense(self.hidden, name="hidden")(z))
        return nn.Dense(self.out_dim, name="out")(h)


def kl_diag_gaussians(
    mean_a: jax.Array, logvar_a: jax.Array, mean_b: jax.Array, logvar_b: jax.Array
) -> jax.Array:
    """``KL(N(mean_a, diag e^logvar_a) || N(mean_b, diag e^logvar_b))`` over the last axis.

    ``0.5 * sum(logvar_b - logvar_a + (e^logvar_a + (mean_a - mean_b)^2) / e^logvar_b - 1)``.
    """
    return 0.5 * jnp.sum(
        logvar_b
        - logvar_a
        + (jnp.exp(logvar_a) + (mean_a - mean_b) ** 2) / jnp.exp(logvar_b)
        - 1.0,
        axis=-1,
    )


def kl_to_standard_normal(mean: jax.Array, logvar: jax.Array) -> jax.Array:
    """``KL(N(mean, diag e^logvar) || N(0, I))`` (Kingma & Welling 2013, App. B)."""
    return kl_diag_gaussians(mean, logvar, jnp.zeros_like(mean), jnp.zeros_like(logvar))


def kl_diag_to_gaussian(
    mean: jax.Array, logvar: jax.Array, mean_b: jax.Array, chol_b: jax.Array
) -> jax.Array:
    """``KL(N(mean, diag e^logvar) || N(mean_b, L L^T))`` for a lower-triangular ``L = chol_b``.

    ``0.5 * (||L^-1 diag(e^{logvar/2})||_F^2 + ||L^-1 (mean_b - mean)||^2 - d
    + 2 sum log diag L - sum logvar)``: the Gaussian KL with ``tr(Sigma_b^-1 Sigma_a)``,
    the Mahalanobis term and ``log |Sigma_b|`` read off the Cholesky factor. A diagonal
    ``Sigma_b`` is ``L = diag(e^{logvar_b / 2})`` and gives :func:`kl_diag_gaussians`.
    """
    solve = functools.partial(solve_triangular, chol_b, lower=True)
    spread = solve(jnp.diag(jnp.exp(0.5 * logvar)))
    offset = solve(mean_b - mean)
    log_det_b = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol_b)))
    return 0.5 * (
        jnp.sum(spread**2) + jnp.sum(offset**2) - mean.shape[-1] + log_det_b - jnp.sum(logvar)
    )


def kl_to_mixture(
    mean: jax.Array, logvar: jax.Array, weights: jax.Array, means: jax.Array, chols: jax.Array
) -> jax.Array:
    """Variational approximation of ``KL(q || MoG)`` for a single Gaussian ``q``.

    Hershey & Olsen (2007), "Approximating the Kullback Leibler divergence between Gaussian
    mixture models", ICASSP, eq. (20) ``D_variational`` -- the approximation P3GM cites as
    [23] under eq. (7) (Sec. IV-D). For ``f = sum_a pi_a f_a`` and ``g = sum_b w_b g_b``:
    ``D(f||g) ~ sum_a pi_a log( sum_a' pi_a' e^{-KL(f_a||f_a')} / sum_b w_b e^{-KL(f_a||g_b)} )``.
    With one component in ``f`` (the encoder's ``q(z|x)``) the numerator is ``e^0 = 1``, so

    ``KL(q || MoG) ~ -log sum_b w_b exp(-KL(q || N(means_b, Sigma_b)))``,

    computed stably with ``logsumexp``; each component's KL is :func:`kl_diag_to_gaussian`
    (full or diagonal ``Sigma_b``). With one component it is the exact KL. (The paper's
    typeset formula writes the numerator's KL with its arguments swapped; Hershey & Olsen
    use ``KL(f_a || f_a')``. For one component the two agree.)

    Args:
      mean, logvar: ``(d',)`` parameters of ``q``.
      weights: ``(K,)`` mixture weights (summing to 1).
      means: ``(K, d')`` component means.
      chols: ``(K, d', d')`` lower Cholesky factors of the component covariances.
    """
    kls = jax.vmap(kl_diag_to_gaussian, in_axes=(None, None, 0, 0))(mean, logvar, means, chols)
    return -jax.nn.logsumexp(jnp.log(weights) - kls)
