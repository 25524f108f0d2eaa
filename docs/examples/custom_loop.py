"""DP-SGD in your own JAX loop: a flax MLP, Poisson batches, clipped gradients, an accountant.

    .venv/bin/python docs/examples/custom_loop.py        # JDP_EXAMPLE_QUICK=1: a few steps

The three rules are the ones ``jdp.dpsgd.train`` uses: the batches (``poisson_batches``), the
clipped per-example gradient sum (``clipped_grad``, for ``dp_aggregate``) and the accounting
(``Accountant``: the noise multiplier, the epsilon so far and the ledger entry).
"""

import os

import flax.linen as nn
import jax
import numpy as np
import optax

from jdp import dpsgd

QUICK = os.environ.get("JDP_EXAMPLE_QUICK") == "1"
N, EPOCHS, BATCH = (256, 0.5, 64) if QUICK else (4000, 5, 200)

rng = np.random.default_rng(0)  # a synthetic two-class table (the "private" data here)
x = rng.standard_normal((N, 8)).astype(np.float32)
y = (x[:, 0] - x[:, 1] > 0).astype(np.int32)


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.relu(nn.Dense(32)(x)))


model = MLP()
params = model.init(jax.random.key(0), x[:1])


def loss_fn(params, example, key):  # the loss of ONE example (key: for dropout; unused)
    logits = model.apply(params, example["x"])
    return optax.softmax_cross_entropy_with_integer_labels(logits, example["y"])


config = dpsgd.DPSGDConfig(
    l2_clip_norm=1.0, sampling_prob=BATCH / N, expected_batch_size=BATCH, epochs=EPOCHS,
    target_epsilon=2.0, target_delta=1e-5,
)  # fmt: skip
batch_key, noise_key = jax.random.split(jax.random.key(42))  # a fixed seed: research only
acct = dpsgd.Accountant(config, params=params)  # z calibrated to the target, as train() does
optimizer = optax.chain(acct.privatizer(noise_key), optax.adam(1e-2))  # dp_aggregate first
opt_state = optimizer.init(params)
update = jax.jit(optimizer.update)
grad_fn = dpsgd.clipped_grad(loss_fn, config.l2_clip_norm)  # (params, batch, mask) -> sum

for chunks in dpsgd.poisson_batches(batch_key, N, config):  # one list of chunks per step
    sums = [grad_fn(params, {"x": x[c.indices], "y": y[c.indices]}, c.mask) for c in chunks]
    updates, opt_state = update(dpsgd.accumulate(*sums), opt_state, params)
    params = optax.apply_updates(params, updates)
    acct.step()

accuracy = float(np.mean(np.argmax(model.apply(params, x), -1) == y))
print(f"z = {acct.noise_multiplier:.3f}, {acct.steps_taken} steps, accuracy {accuracy:.3f}")
print(f"epsilon = {acct.epsilon():.3f} at delta = {config.target_delta:g}")
ledger = acct.ledger("dp-sgd")  # the entry train() would record for this plan
