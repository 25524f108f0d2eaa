"""Small models and losses shared by the DP-SGD tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from jdp.nn.mlp import MLP


def mlp_problem(batch: int = 8, use_bias: bool = True):
    model = MLP((6, 3), use_bias=use_bias)
    params = model.init(jax.random.key(0), jnp.zeros(4))
    data = {
        "x": jax.random.normal(jax.random.key(1), (batch, 4)),
        "y": jnp.arange(batch) % 3,
    }

    def loss_fn(p, ex, key):
        del key
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, ex["x"]), ex["y"])

    return loss_fn, params, data
