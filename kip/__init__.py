"""Kernel Inducing Points with the Neural Tangent Kernel (3A / ClustMix).

Pure JAX; imports neither ``jdp`` nor ``accounting`` (DESIGN section 1). The public face::

    from kip import fc_relu_kernels, make_kernel_fn, krr_fit_predict, kip_loss, fit_support
    kernel_fn = make_kernel_fn(depth=1, w_std=2**0.5, b_std=0.1, get="ntk")
    result = fit_support(key, x_s, y_s, x_t, y_t, KIPConfig(steps=1000))

Modules: :mod:`kip.ntk` (closed-form FC ReLU NNGP/NTK, blocked, jit, safe diagonal
gradients), :mod:`kip.krr` (kernel ridge regression, ridge ``λ tr(K)/n``), :mod:`kip.kip` (KIP
and 3A losses, Adam on the support set). The DP variant (DP-KIP) lives in
``jdp.synth.clustmix.dp_kip``, which owns the privacy machinery.
"""

from kip.kip import (
    KIPConfig,
    KIPResult,
    centred_one_hot,
    fit_support,
    kip_loss,
    per_target_loss,
    relative_anchor_distance,
    threea_loss,
)
from kip.krr import krr_fit_predict
from kip.ntk import Kernels, fc_relu_kernels, make_kernel_fn

__all__ = [
    "KIPConfig",
    "KIPResult",
    "Kernels",
    "centred_one_hot",
    "fc_relu_kernels",
    "fit_support",
    "kip_loss",
    "krr_fit_predict",
    "make_kernel_fn",
    "per_target_loss",
    "relative_anchor_distance",
    "threea_loss",
]
