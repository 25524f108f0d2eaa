"""A small LSTM over a sequence (flax.linen), for time series (dp-GAN, Frigerio et al. 2019).

The cell is unrolled in Python over the time axis, so every gate's ``Dense`` is called once
per step with shared weights; :mod:`jdp.dpsgd.ghost_clipping` treats the calls of a shared layer
as tokens of one layer, so this module also runs on the fast DP-SGD path. With ``scan=True``
the steps run in a ``jax.lax.scan`` (:class:`flax.linen.RNN`) instead: one traced step, so
compile time and memory stay flat in ``T`` (what a long series or a double backward such as a
gradient penalty needs), at the price of the ghost path (the general path clips it).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


class LSTM(nn.Module):
    """``(..., T, F) -> (..., T, hidden)`` (or ``(..., T, out_features)`` with a head).

    Attributes:
        hidden: LSTM state width.
        out_features: width of a per-step linear head; ``None`` for no head.
        scan: run the steps in a scan (see the module docstring).
    """

    hidden: int
    out_features: int | None = None
    scan: bool = False

    @nn.compact
    def __call__(self, xs: jax.Array) -> jax.Array:
        if self.scan:
            ys = nn.RNN(nn.LSTMCell(self.hidden))(xs)
            return ys if self.out_features is None else nn.Dense(self.out_features)(ys)
        cell = nn.LSTMCell(self.hidden)
        zeros = jnp.zeros(xs.shape[:-2] + (self.hidden,), xs.dtype)
        carry = (zeros, zeros)
        outputs = []
        for t in range(xs.shape[-2]):
            carry, y = cell(carry, xs[..., t, :])
            outputs.append(y)
        ys = jnp.stack(outputs, axis=-2)
        return ys if self.out_features is None else nn.Dense(self.out_features)(ys)
