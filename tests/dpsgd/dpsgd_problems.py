"""Small models and losses shared by the DP-SGD tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
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


def classification_problem(n: int = 128, *, aux: bool = False):
    """``(loss_fn, params, data, accuracy)``: ``n`` rows of 4 standard-normal features, the
    label ``x0 + x1 / 2 > 0``, an MLP (8, 2). ``loss_fn(params, example, key)`` is one
    example's cross-entropy (with the argmax as aux when ``aux``); ``data["i"]`` is each row's
    own index, so a gathered batch shows which rows were drawn."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int32)
    model = MLP((8, 2))
    params = model.init(jax.random.key(0), jnp.zeros(4))

    def loss_fn(p, ex, key):
        del key
        logits = model.apply(p, ex["x"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, ex["y"])
        return (loss, jnp.argmax(logits)) if aux else loss

    def accuracy(p):
        return float(np.mean(np.argmax(model.apply(p, x), -1) == y))

    return loss_fn, params, {"x": x, "y": y, "i": np.arange(n)}, accuracy
