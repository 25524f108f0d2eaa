"""Image utility: P3GM's small CNN (Takagi et al., Sec. VI) trained on synthetic 28 x 28
images and labels, tested on real ones (Table VII's metric)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd


class SmallCNN(nn.Module):
    """P3GM Sec. VI: conv (28 kernels 3x3), max-pool 2x2, dense [128, 10], ReLU, dropout."""

    @nn.compact
    def __call__(self, x: jax.Array, *, train: bool) -> jax.Array:
        x = nn.relu(nn.Conv(28, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.Dropout(0.5, deterministic=not train)(nn.relu(nn.Dense(128)(x)))
        return nn.Dense(10)(x)


def mnist_images(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(pixels in [0, 1] as float32 rows, integer labels) of an MNIST-schema frame."""
    pixels = [c for c in frame.columns if c != "label"]
    return frame[pixels].to_numpy(np.float32) / 255.0, frame["label"].to_numpy(np.int32)


def cnn_accuracy(
    key: jax.Array,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    epochs: int,
) -> float:
    """Train :class:`SmallCNN` (Adam 1e-3, batches of 128) on ``(x_train, y_train)`` (pixels
    in [0, 1], rows of 784) for ``epochs`` epochs and return its accuracy on the test rows."""
    model = SmallCNN()
    init_key, key = jax.random.split(key)
    params = model.init(init_key, jnp.zeros((1, 28, 28, 1)), train=False)
    opt = optax.adam(1e-3)
    state = opt.init(params)

    @jax.jit
    def step(params, state, xb, yb, k):
        def loss(p):
            logits = model.apply(p, xb, train=True, rngs={"dropout": k})
            return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

        grads = jax.grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    predict = jax.jit(lambda p, xb: jnp.argmax(model.apply(p, xb, train=False), axis=-1))
    xt = x_train.reshape(-1, 28, 28, 1).astype(np.float32)
    rng = np.random.default_rng(0)
    for _ in range(epochs):
        order = rng.permutation(len(xt))
        for j in range(0, len(order) - 127, 128):
            idx = order[j : j + 128]
            key, sub = jax.random.split(key)
            params, state = step(params, state, xt[idx], y_train[idx], sub)
    xs = x_test.reshape(-1, 28, 28, 1).astype(np.float32)
    preds = np.concatenate(
        [np.asarray(predict(params, xs[j : j + 1000])) for j in range(0, len(xs), 1000)]
    )
    return float(np.mean(preds == y_test))
