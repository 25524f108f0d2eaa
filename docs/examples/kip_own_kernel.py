"""KIP with your own kernel, in the clear and under DP: any JAX function as ``kernel_fn``.

    .venv/bin/python docs/examples/kip_own_kernel.py     # JDP_EXAMPLE_QUICK=1: a few steps

``kip.fit_support`` learns a small support set whose kernel ridge regression predicts the
target set; it reads the target records in the clear (KIP itself is not private).
``dp_kip`` optimises the same loss with DP-SGD over the target records (Poisson batches,
per-record clipping, Gaussian noise) and returns the ledger of that run. Any differentiable
``kernel_fn(x1, x2) -> (n1, n2)`` works: here a Gaussian (RBF) kernel written in three lines
beside the library's own ReLU NTK (``kip.make_kernel_fn``); a ``neural_tangents.stax``
kernel is passed the same way (``lambda a, b: nt_kernel_fn(a, b, "ntk")``). The initial
support set must be public (here: random points), or released with DP and accounted by you.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np

from jdp.dpsgd import DPSGDConfig
from jdp.synth.clustmix.dp_kip import dp_kip
from kip import KIPConfig, centred_one_hot, fit_support, krr_fit_predict, make_kernel_fn

QUICK = os.environ.get("JDP_EXAMPLE_QUICK") == "1"
N, SUPPORT, STEPS = (300, 8, 3) if QUICK else (4000, 20, 300)

rng = np.random.default_rng(0)  # a synthetic two-class table: the "private" target records
x = rng.standard_normal((N + 1000, 4))
labels = (x[:, 0] * x[:, 1] > 0).astype(int)  # XOR of two signs: needs a non-linear kernel
x_target, y_target = x[:N], centred_one_hot(labels[:N], 2)
x_test, labels_test = x[N:], labels[N:]


def rbf(x1, x2, width=1.5):  # your own kernel: any JAX function of two batches
    d2 = jnp.sum(x1**2, 1)[:, None] + jnp.sum(x2**2, 1)[None, :] - 2 * x1 @ x2.T
    return jnp.exp(-jnp.maximum(d2, 0.0) / (2 * width**2))


support_x = rng.standard_normal((SUPPORT, 4))  # public initial support: random points
support_y = centred_one_hot(np.arange(SUPPORT) % 2, 2)
config = KIPConfig(steps=STEPS, learning_rate=0.04, target_batch_size=256, reg=1e-4)


def accuracy(kernel_fn, sx, sy):
    """Kernel ridge regression on the support set, scored on held-out points."""
    predicted = krr_fit_predict(kernel_fn(x_test, sx), kernel_fn(sx, sx), sy, reg=config.reg)
    return float(np.mean(np.argmax(predicted, -1) == labels_test))


dpsgd_config = DPSGDConfig(
    l2_clip_norm=1.0, sampling_prob=200 / N, expected_batch_size=200, steps=STEPS,
    target_epsilon=3.0, target_delta=1e-5,
)  # fmt: skip
kernels = {"RBF": rbf, "ReLU NTK": make_kernel_fn(depth=1, get="ntk")}
for name, kernel_fn in list(kernels.items())[: 1 if QUICK else 2]:
    clear = fit_support(jax.random.key(1), support_x, support_y, x_target, y_target, config,
                        kernel_fn=kernel_fn)  # fmt: skip
    private, ledger = dp_kip(jax.random.key(2), support_x, support_y, x_target, y_target,
                             config, dpsgd_config, kernel_fn=kernel_fn)  # fmt: skip
    print(
        f"{name}: accuracy of the initial support {accuracy(kernel_fn, support_x, support_y):.3f}"
        f", after KIP (not private) {accuracy(kernel_fn, clear.support_x, clear.support_y):.3f}"
        f", after DP-KIP {accuracy(kernel_fn, private.support_x, private.support_y):.3f}"
    )
print(ledger.report(1e-5))
