"""The networks of a (WGAN-GP) GAN over one encoded record (flax.linen, no privacy here).

* :class:`Generator`: latent ``z`` -> raw output of width ``raw_width(layout)``; the head
  vocabulary :mod:`jdp.nn.heads` reads it: ``activate`` (tanh for continuous columns scaled
  to ``[-1, 1]`` by their public bounds, one softmax per categorical variable) is the
  differentiable output the critic sees; ``decode_sample`` turns it into data-space values
  (a one-hot draw per categorical) when sampling.
* :class:`SequenceGenerator`: the time-series generator (Frigerio et al. Sec. 4: an LSTM
  inside the generator): ``z`` fed at every one of ``length`` steps of an LSTM
  (:class:`jdp.nn.lstm.LSTM`) with a per-step linear head of ``features`` values; the
  ``(length, features)`` output is flattened time-major, so the same head layout, critic and
  losses apply to a series as to a table row.
* :class:`Critic`: a record (the generator's output space) -> one real score (no sigmoid:
  a Wasserstein critic).
* :class:`SequenceCritic`: the same score for a time-major flattened series, read by an
  LSTM whose last state feeds a linear score (Sec. 4 allows an LSTM in either network).

References:
    Frigerio et al., "Differentially Private Generative Adversarial Networks for Time Series,
    Continuous, and Discrete Open Data", IFIP SEC 2019, Sec. 4 (MLP generator/discriminator,
    softmax per one-hot block); Gulrajani et al., "Improved Training of Wasserstein GANs",
    NeurIPS 2017 (the critic).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jdp.nn.heads import HeadLayout, activate, raw_width
from jdp.nn.lstm import LSTM
from jdp.nn.mlp import MLP


class Generator(nn.Module):
    """``z -> raw`` (``raw`` of width :func:`~jdp.nn.heads.raw_width` of the layout);
    :meth:`output` is the activated record.

    Attributes:
        hidden: hidden widths (ReLU between layers).
        layout: the output heads (:data:`jdp.nn.heads.HeadLayout`).
    """

    hidden: Sequence[int]
    layout: HeadLayout

    @nn.compact
    def __call__(self, z: jax.Array) -> jax.Array:
        return MLP((*self.hidden, raw_width(self.layout)))(z)

    def output(self, z: jax.Array) -> jax.Array:
        """The activated record (tanh / softmax / ... per head): what the critic scores."""
        return activate(self(z), self.layout)


class SequenceGenerator(nn.Module):
    """``z -> raw`` of width ``length * features`` (time-major flattening of the series).

    Attributes:
        hidden: LSTM state width.
        length: number of time steps ``T``.
        features: values per step ``F``.
        layout: the output heads over the flattened ``T * F`` values.
    """

    hidden: int
    length: int
    features: int
    layout: HeadLayout

    @nn.compact
    def __call__(self, z: jax.Array) -> jax.Array:
        if raw_width(self.layout) != self.length * self.features:
            raise ValueError(
                f"expected a head layout of width length * features = "
                f"{self.length * self.features}, got {raw_width(self.layout)}"
            )
        xs = jnp.broadcast_to(z[..., None, :], (*z.shape[:-1], self.length, z.shape[-1]))
        ys = LSTM(self.hidden, self.features)(xs)
        return ys.reshape(*ys.shape[:-2], self.length * self.features)

    def output(self, z: jax.Array) -> jax.Array:
        """The activated series, flattened (what the critic scores)."""
        return activate(self(z), self.layout)


class Critic(nn.Module):
    """``x -> score`` (a scalar for one record, ``(..., )`` for a batch); leaky-ReLU MLP.

    Attributes:
        hidden: hidden widths.
    """

    hidden: Sequence[int]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return MLP((*self.hidden, 1), activation=nn.leaky_relu)(x)[..., 0]


class SequenceCritic(nn.Module):
    """``x -> score`` for a flattened time-major series ``x`` of width ``length * features``:
    an LSTM over the ``length`` steps (scanned: the gradient penalty's double backward through
    an unrolled LSTM compiles in time and memory growing with ``T``), a linear score of its
    last output.

    Attributes:
        hidden: LSTM state width.
        length: number of time steps ``T``.
        features: values per step ``F``.
    """

    hidden: int
    length: int
    features: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        xs = x.reshape(*x.shape[:-1], self.length, self.features)
        ys = LSTM(self.hidden, scan=True)(xs)
        return nn.Dense(1)(ys[..., -1, :])[..., 0]
