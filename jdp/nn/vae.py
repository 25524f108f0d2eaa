"""Variational auto-encoder pieces for P3GM and DP-VAE (flax.linen modules + their likelihoods).

Architecture (P3GM, Takagi et al., Sec. VI "Implementations of Generative Models"): encoder
``[d, 1000, d']`` and decoder ``[d', 1000, d]`` with ReLU. In P3GM the encoder *mean* is not a
network output: it is the fixed DP-PCA projection ``c_x`` (Sec. IV-B, V-A), computed outside
this module and passed in; only the log-variance head is learned. DP-VAE learns both heads.

The decoder emits one raw vector of width ``d``; a :data:`HeadLayout` says how its segments
are read (Sec. IV-C: "a Bernoulli or Gaussian MLP depending on the type of data"):

* ``"bernoulli"`` -- values in ``[0, 1]`` (pixels, binary or min-max scaled columns); raw
  outputs are logits, the log-likelihood is the cross entropy
  ``x log p + (1 - x) log(1 - p)``.
* ``"gaussian"`` -- real values; raw outputs are means, unit variance:
  ``log N(x; m, 1) = -(x - m)^2 / 2 - log(2 pi) / 2`` per coordinate.
* ``"categorical"`` -- a one-hot block; raw outputs are logits of a softmax:
  ``sum_k x_k log softmax(l)_k``.

Everything here is a pure function of parameters and inputs; losses are written for ONE
example (batched by ``jax.vmap``), as DP-SGD's per-example clipping needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

HeadKind = Literal["bernoulli", "gaussian", "categorical"]
HeadLayout = tuple[tuple[HeadKind, int], ...]
_KINDS = ("bernoulli", "gaussian", "categorical")


def check_layout(layout: Sequence[tuple[str, int]]) -> HeadLayout:
    """Validate a head layout and return it as a tuple of ``(kind, width)`` pairs."""
    out = []
    for kind, width in layout:
        if kind not in _KINDS:
            raise ValueError(f"expected head kind in {_KINDS}, got {kind!r}")
        if int(width) < 1:
            raise ValueError(f"expected head width >= 1, got {width}")
        out.append((kind, int(width)))
    if not out:
        raise ValueError("expected a non-empty head layout, got ()")
    return tuple(out)


def layout_width(layout: HeadLayout) -> int:
    """Total width ``d`` of the decoded vector."""
    return sum(w for _, w in layout)


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


def log_likelihood(raw: jax.Array, x: jax.Array, layout: HeadLayout) -> jax.Array:
    """``log p(x | z)`` of ONE example whose decoder output is ``raw`` (see module doc)."""
    total = jnp.zeros((), raw.dtype)
    start = 0
    for kind, width in layout:
        r, v = raw[start : start + width], x[start : start + width]
        if kind == "bernoulli":
            total += jnp.sum(v * jax.nn.log_sigmoid(r) + (1.0 - v) * jax.nn.log_sigmoid(-r))
        elif kind == "gaussian":
            total += jnp.sum(-0.5 * (v - r) ** 2 - 0.5 * math.log(2 * math.pi))
        else:
            total += jnp.sum(v * jax.nn.log_softmax(r))
        start += width
    return total


def decode_sample(
    key: jax.Array, raw: jax.Array, layout: HeadLayout, *, stochastic: bool
) -> jax.Array:
    """Turn decoder outputs (any leading batch shape) into data-space values.

    ``categorical`` heads are always a one-hot draw from the decoded softmax (so a label
    column's distribution is the model's, never a copied ratio). ``bernoulli`` heads give the
    mean ``sigmoid(raw)`` and ``gaussian`` heads the mean ``raw``; with ``stochastic`` they
    give a 0/1 draw and mean + N(0, 1) instead.
    """
    parts = []
    start = 0
    for kind, width in layout:
        key, sub = jax.random.split(key)
        r = raw[..., start : start + width]
        if kind == "bernoulli":
            p = jax.nn.sigmoid(r)
            parts.append(jax.random.bernoulli(sub, p).astype(raw.dtype) if stochastic else p)
        elif kind == "gaussian":
            parts.append(r + jax.random.normal(sub, r.shape, raw.dtype) if stochastic else r)
        else:
            parts.append(jax.nn.one_hot(jax.random.categorical(sub, r), width, dtype=raw.dtype))
        start += width
    return jnp.concatenate(parts, axis=-1)


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


def kl_to_mixture(
    mean: jax.Array, logvar: jax.Array, weights: jax.Array, means: jax.Array, logvars: jax.Array
) -> jax.Array:
    """Variational approximation of ``KL(q || MoG)`` for a single Gaussian ``q``.

    Hershey & Olsen (2007), "Approximating the Kullback Leibler divergence between Gaussian
    mixture models", ICASSP, eq. (20) ``D_variational`` -- the approximation P3GM cites as
    [23] under eq. (7) (Sec. IV-D). For ``f = sum_a pi_a f_a`` and ``g = sum_b w_b g_b``:
    ``D(f||g) ~ sum_a pi_a log( sum_a' pi_a' e^{-KL(f_a||f_a')} / sum_b w_b e^{-KL(f_a||g_b)} )``.
    With one component in ``f`` (the encoder's ``q(z|x)``) the numerator is ``e^0 = 1``, so

    ``KL(q || MoG) ~ -log sum_b w_b exp(-KL(q || N(means_b, e^logvars_b)))``,

    computed stably with ``logsumexp``. (The paper's typeset formula writes the numerator's
    KL with its arguments swapped; Hershey & Olsen use ``KL(f_a || f_a')``. For one
    component the two agree.)

    Args:
      mean, logvar: ``(d',)`` parameters of ``q``.
      weights: ``(K,)`` mixture weights (summing to 1).
      means, logvars: ``(K, d')`` component parameters (diagonal covariances).
    """
    kls = kl_diag_gaussians(mean[None, :], logvar[None, :], means, logvars)
    return -jax.nn.logsumexp(jnp.log(weights) - kls)
