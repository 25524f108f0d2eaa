"""A small LSTM over a sequence (flax.linen), for time series (dp-GAN, Frigerio et al. 2019).

The cell is unrolled in Python over the time axis, so every gate's ``Dense`` is called once
per step with shared weights; :mod:`jdp.dpsgd.ghost_clipping` treats the calls of a shared layer
as tokens of one layer, so this module also runs on the fast DP-SGD path.
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
    """

    hidden: int
    out_features: int | None = None

    @nn.compact
    def __call__(self, xs: jax.Array) -> jax.Array:
        cell = nn.LSTMCell(self.hidden)
        zeros = jnp.zeros(xs.shape[:-2] + (self.hidden,), xs.dtype)
        carry = (zeros, zeros)
        outputs = []
        for t in range(xs.shape[-2]):
            carry, y = cell(carry, xs[..., t, :])
            outputs.append(y)
        ys = jnp.stack(outputs, axis=-2)
        return ys if self.out_features is None else nn.Dense(self.out_features)(ys)
