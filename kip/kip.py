"""Kernel Inducing Points: learn a small support set whose KRR predicts a target set well.

**KIP loss** (Nguyen, Chen & Lee 2021, Sec. 2): for a support set ``(X_s, y_s)`` and a target
batch ``(X_t, y_t)`` with ``c`` label columns,

    L_KIP = 1/(2 n_t c) || y_t - K_ts (K_ss + λ tr(K_ss)/n_s I)^{-1} y_s ||_F^2

(the mean over entries, as the reference code's ``0.5 * mean``), which is the mean over target
records of :func:`per_target_loss` ``ℓ_i = 1/(2c) ||y_i - k_is (K_ss + ...)^{-1} y_s||^2``. So
``sum_i ℓ_i = n_t L_KIP``: the loss is a sum over target records, each touching one record,
which is what DP-KIP's per-record clipping needs (Vinaroz & Park 2023).

**3A loss** (Madl et al., Eq. 6), :func:`threea_loss`::

    L(X_s, y_s) = α tr((X_s - X̃_s)^T (X_s - X̃_s)) / tr(X̃_s^T X̃_s) + (1 - α) L_KIP

``X̃_s`` is the *anchor*, the approximate set of the Approximate step (ClustMix: the cluster
representatives KIP is initialised with). What the paper states and where it is ambiguous:

* Eq. 6 prints the KIP term as ``1/2 ||y_t - K_ts (K_ss + λ I)^{-1} y_s||_2^2`` (a sum, plain
  ridge ``λ I``), while the paper says it uses the open-source KIP code, whose loss is
  ``0.5 * mean`` with the ridge ``λ tr(K_ss)/n_s``. We follow the code by default (the
  trade-off ``α`` then does not depend on the target batch size); ``reduction="sum"`` gives
  the printed sum. The ridge is always trace-normalised (``λ I`` is the special case of
  rescaling ``λ`` by ``n_s / tr(K_ss)``).
* The text after Eq. 6 says "``α = 0`` would preserve the output of the Approximate step ...
  and ``α = 1`` would simply yield the X_s most conducive to preserving classifier accuracy";
  Eq. 6 says the opposite (``α`` multiplies the distance to ``X̃_s``, so ``α = 1`` keeps
  ``X_s = X̃_s`` and ``α = 0`` is plain KIP). We implement Eq. 6 as printed.
* The paper does not say whether ``y_s`` is learned, nor which ``λ``, learning rate or number
  of steps it used (tuned by Bayesian optimisation, values not reported).

**Optimisation** (:func:`fit_support`): Adam on ``X_s`` (and ``y_s`` if ``learn_labels``), one
target batch of ``target_batch_size`` records drawn without replacement per step, KIP's
reference settings as defaults (Adam 4e-2, batch 5000, ``λ = 1e-6``, float64 on CPU).

**Precision** (:attr:`KIPConfig.dtype`, a performance flag): ``"auto"`` computes in float64 on
CPU (KIP's setting) and in float32 on an accelerator (``jax.default_backend() != "cpu"``, where
float64 is slow or emulated); ``"float32"`` / ``"float64"`` force one. The computation runs
under ``jax.enable_x64`` set to match, so a float32 run stays float32 whatever the process's
``jax_enable_x64``. ``tests/kip/test_kip_dtype.py`` bounds what float32 costs in KRR accuracy;
``scripts/bench_kip.py`` measures it (its float32 and float64 rows).

This module sees the target data in the clear; it is not private. The private variant is
``jdp.synth.clustmix.dp_kip`` (per-target clipping and Gaussian noise through ``jdp.dpsgd``).

References:
    Nguyen, T., Chen, Z. & Lee, J. (2021). Dataset meta-learning from kernel ridge-regression.
    ICLR (KIP, Algorithm 1; centred one-hot labels; ``λ tr(K)/n``).
    Madl, T., Xu, W., Choudhury, O. & Howard, M. Approximate, Adapt, Anonymize (3A), Eq. 5-6.
    Vinaroz, M. & Park, M. (2023). Differentially private kernel inducing points using
    features from ScatterNets (DP-KIP). TMLR.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kip.krr import krr_fit_predict
from kip.ntk import make_kernel_fn

__all__ = [
    "KIPConfig",
    "KIPResult",
    "centred_one_hot",
    "fit_support",
    "kip_loss",
    "per_target_loss",
    "relative_anchor_distance",
    "threea_loss",
]

KernelFn = Callable[[jax.Array, jax.Array], jax.Array]
Reduction = Literal["mean", "sum"]


def _as_2d_labels(y: jax.Array) -> jax.Array:
    return y[:, None] if jnp.ndim(y) == 1 else y


def kip_loss(
    support_x: jax.Array,
    support_y: jax.Array,
    target_x: jax.Array,
    target_y: jax.Array,
    *,
    kernel_fn: KernelFn,
    reg: float,
    reduction: Reduction = "mean",
) -> jax.Array:
    """The KIP loss of KRR-from-support predictions on a target batch.

    ``reduction="mean"``: ``1/(2 n_t c) ||y_t - K_ts (K_ss + λ tr(K_ss)/n_s I)^{-1} y_s||_F^2``
    (KIP's reference code); ``"sum"``: ``1/2 ||...||_F^2`` (the printed Eq. 5 of 3A).
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"expected reduction in ('mean', 'sum'), got {reduction!r}")
    y_s, y_t = _as_2d_labels(support_y), _as_2d_labels(target_y)
    if y_s.shape[1] != y_t.shape[1]:
        raise ValueError(
            f"expected support_y and target_y with the same label columns, got {y_s.shape[1]} "
            f"and {y_t.shape[1]}"
        )
    k_ss = kernel_fn(support_x, support_x)
    k_ts = kernel_fn(target_x, support_x)
    sq = jnp.sum((y_t - krr_fit_predict(k_ts, k_ss, y_s, reg=reg)) ** 2)
    return 0.5 * sq / (y_t.size if reduction == "mean" else 1)


def per_target_loss(
    support: tuple[jax.Array, jax.Array],
    target_record: tuple[jax.Array, jax.Array],
    *,
    kernel_fn: KernelFn,
    reg: float,
) -> jax.Array:
    """The KIP loss of ONE target record ``(x_i, y_i)``: ``1/(2c) ||y_i - k_is (K_ss +
    λ tr(K_ss)/n_s I)^{-1} y_s||^2``, so that ``sum_i per_target_loss = n_t kip_loss``.

    Args:
        support: ``(X_s, y_s)``, the trainable parameters (a pytree).
        target_record: ``(x_i, y_i)`` with ``x_i`` of shape ``(d,)`` and ``y_i`` of ``(c,)``
            (or a scalar).
        kernel_fn: ``kernel_fn(x1, x2) -> (n1, n2)``.
        reg: the ridge ``λ``.
    """
    support_x, support_y = support
    x_i, y_i = target_record
    return kip_loss(
        support_x, support_y, x_i[None, :], jnp.reshape(y_i, (1, -1)), kernel_fn=kernel_fn, reg=reg
    )


def relative_anchor_distance(support_x: jax.Array, anchor: jax.Array) -> jax.Array:
    """``tr((X_s - X̃_s)^T (X_s - X̃_s)) / tr(X̃_s^T X̃_s)``, Eq. 6's first term (without α)."""
    return jnp.sum((support_x - anchor) ** 2) / jnp.sum(anchor**2)


def _check_alpha(alpha: float) -> float:
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"expected alpha in [0, 1], got {alpha}")
    return float(alpha)


def _check_anchor_shape(anchor: Any, support_x: Any) -> None:
    if jnp.shape(anchor) != jnp.shape(support_x):
        raise ValueError(
            f"expected anchor of the support's shape {jnp.shape(support_x)}, "
            f"got {jnp.shape(anchor)}"
        )


def check_anchor(anchor: Any, support_x: np.ndarray) -> np.ndarray:
    """The anchor ``X̃_s`` as host float64, checked: the support's shape, finite, not all
    zero (Eq. 6 divides by ``tr(X̃^T X̃)``)."""
    anchor = np.asarray(anchor, dtype=np.float64)
    _check_anchor_shape(anchor, support_x)
    if not np.all(np.isfinite(anchor)):
        raise ValueError("expected a finite anchor, got NaN or inf")
    if not float(np.sum(anchor**2)) > 0:
        raise ValueError("expected an anchor with tr(X̃^T X̃) > 0, got an all-zero anchor")
    return anchor


def threea_loss(
    support_x: jax.Array,
    support_y: jax.Array,
    target_x: jax.Array,
    target_y: jax.Array,
    *,
    anchor: jax.Array,
    alpha: float,
    kernel_fn: KernelFn,
    reg: float,
    reduction: Reduction = "mean",
) -> jax.Array:
    """The 3A Adapt objective (Madl et al., Eq. 6; see the module docstring for its reading):

        α ||X_s - X̃_s||_F^2 / ||X̃_s||_F^2 + (1 - α) kip_loss(X_s, y_s, X_t, y_t)

    Args:
        anchor: ``X̃_s``, the approximate set (same shape as ``support_x``, not all zero).
        alpha: trade-off in ``[0, 1]``: 1 keeps ``X_s = X̃_s``, 0 is plain KIP.
        reduction: of the KIP term (``"mean"``: KIP's code; ``"sum"``: Eq. 6 as printed).
    """
    alpha = _check_alpha(alpha)
    _check_anchor_shape(anchor, support_x)
    fit = kip_loss(
        support_x, support_y, target_x, target_y, kernel_fn=kernel_fn, reg=reg, reduction=reduction
    )
    return alpha * relative_anchor_distance(support_x, anchor) + (1.0 - alpha) * fit


def centred_one_hot(labels: Any, n_classes: int) -> np.ndarray:
    """One-hot labels minus ``1 / n_classes`` (KIP's centred targets), ``(n, n_classes)``."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f"expected n_classes >= 2, got {n_classes}")
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"expected a 1-D integer label array, got shape {labels.shape} dtype {labels.dtype}"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(
            f"expected labels in [0, {n_classes}), got range [{labels.min()}, {labels.max()}]"
        )
    return np.eye(n_classes)[labels] - 1.0 / n_classes


#: :attr:`KIPConfig.dtype`'s values.
DTYPES: tuple[str, ...] = ("auto", "float32", "float64")


@dataclass(frozen=True, kw_only=True)
class KIPConfig:
    """Settings of a KIP run (defaults: KIP's reference FC settings).

    Attributes:
        steps: Adam steps.
        learning_rate: Adam step size.
        target_batch_size: target records per step (drawn without replacement; all of them
            when the target set is smaller).
        reg: ridge ``λ`` relative to ``tr(K_ss)/n_s``.
        learn_labels: also optimise the support labels.
        alpha: the 3A trade-off of Eq. 6 in ``[0, 1]``; ``None`` is plain KIP.
        depth, w_std, b_std: the FC ReLU NTK (:func:`kip.ntk.fc_relu_kernels`).
        dtype: ``"auto"`` (float64 on CPU, float32 on an accelerator), ``"float32"`` or
            ``"float64"``: a performance/precision flag (module docstring, "Precision");
            :meth:`compute_dtype` resolves it.
    """

    steps: int = 1000
    learning_rate: float = 4e-2
    target_batch_size: int = 5000
    reg: float = 1e-6
    learn_labels: bool = False
    alpha: float | None = None
    depth: int = 1
    w_std: float = 2**0.5
    b_std: float = 0.1
    dtype: str = "auto"

    def __post_init__(self) -> None:
        for name in ("steps", "target_batch_size", "depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"expected {name} to be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"expected {name} >= 1, got {value}")
        for name in ("learning_rate", "w_std"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"expected {name} > 0, got {value}")
        for name in ("reg", "b_std"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"expected {name} >= 0, got {value}")
        if self.alpha is not None:
            _check_alpha(self.alpha)
        if not isinstance(self.learn_labels, bool):
            raise TypeError(f"expected learn_labels to be a bool, got {self.learn_labels!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"expected dtype in {DTYPES}, got {self.dtype!r}")

    def compute_dtype(self) -> str:
        """``"float32"`` or ``"float64"``: :attr:`dtype` with ``"auto"`` resolved on the
        default backend (float64 on CPU, float32 elsewhere)."""
        if self.dtype != "auto":
            return self.dtype
        return "float64" if jax.default_backend() == "cpu" else "float32"

    def kernel_fn(self) -> KernelFn:
        """The NTK of this config's FC ReLU network."""
        return make_kernel_fn(depth=self.depth, w_std=self.w_std, b_std=self.b_std, get="ntk")


class KIPResult(NamedTuple):
    """What :func:`fit_support` returns (host numpy arrays).

    Attributes:
        support_x: ``(n_s, d)`` learned support inputs.
        support_y: ``(n_s, c)`` support labels (learned if ``learn_labels``).
        losses: ``(steps,)`` training loss on each step's target batch (before its update).
    """

    support_x: np.ndarray
    support_y: np.ndarray
    losses: np.ndarray


def check_kip_inputs(
    support_x: Any, support_y: Any, target_x: Any, target_y: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Host float64 copies, 2-D labels, shapes and finiteness checked (one-line errors)."""
    arrays = []
    for name, value in (
        ("support_x", support_x),
        ("support_y", support_y),
        ("target_x", target_x),
        ("target_y", target_y),
    ):
        a = np.asarray(value, dtype=np.float64)
        a = a[:, None] if name.endswith("_y") and a.ndim == 1 else a
        if a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(f"expected {name} of shape (n, k) with n >= 1, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"expected finite {name}, got NaN or inf")
        arrays.append(a)
    sx, sy, tx, ty = arrays
    if sx.shape[0] != sy.shape[0] or tx.shape[0] != ty.shape[0]:
        raise ValueError(
            f"expected as many labels as inputs, got support {sx.shape[0]} vs {sy.shape[0]}, "
            f"target {tx.shape[0]} vs {ty.shape[0]}"
        )
    if sx.shape[1] != tx.shape[1] or sy.shape[1] != ty.shape[1]:
        raise ValueError(
            f"expected support and target with the same columns, got x {sx.shape[1]} vs "
            f"{tx.shape[1]}, y {sy.shape[1]} vs {ty.shape[1]}"
        )
    return sx, sy, tx, ty


def _support_params(x: jax.Array, y: jax.Array, learn_labels: bool) -> Any:
    return (x, y) if learn_labels else x


def _support_of(params: Any, fixed_y: jax.Array, learn_labels: bool) -> tuple[Any, Any]:
    return params if learn_labels else (params, fixed_y)


@functools.lru_cache(maxsize=32)
def _kip_step(
    kernel_fn: KernelFn,
    reg: float,
    alpha: float | None,
    learn_labels: bool,
    batch: int,
    learning_rate: float,
) -> tuple[optax.GradientTransformation, Callable]:
    """Adam and one jitted KIP step (cached: data are arguments, not compiled-in constants)."""
    optimizer = optax.adam(learning_rate)

    def loss(params: Any, fixed_y: jax.Array, anchor: jax.Array, bx: jax.Array, by: jax.Array):
        x, y = _support_of(params, fixed_y, learn_labels)
        if alpha is None:
            return kip_loss(x, y, bx, by, kernel_fn=kernel_fn, reg=reg)
        return threea_loss(x, y, bx, by, anchor=anchor, alpha=alpha, kernel_fn=kernel_fn, reg=reg)

    @jax.jit
    def step(params, opt_state, step_key, tx, ty, fixed_y, anchor):
        idx = jax.random.permutation(step_key, tx.shape[0])[:batch]
        value, grads = jax.value_and_grad(loss)(params, fixed_y, anchor, tx[idx], ty[idx])
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return optimizer, step


def fit_support(
    key: jax.Array,
    support_x: Any,
    support_y: Any,
    target_x: Any,
    target_y: Any,
    config: KIPConfig,
    *,
    anchor: Any = None,
    kernel_fn: KernelFn | None = None,
    on_step: Callable[[int], None] | None = None,
) -> KIPResult:
    """Optimise the support set with Adam on the KIP (or, with ``config.alpha``, the 3A) loss.

    Args:
        key: PRNG key for the target batches.
        support_x, support_y: initial support set ``(n_s, d)``, ``(n_s, c)``.
        target_x, target_y: the target set ``(n_t, d)``, ``(n_t, c)`` (read in the clear).
        config: :class:`KIPConfig`.
        anchor: ``X̃_s`` of Eq. 6 when ``config.alpha`` is set; default the initial support.
        kernel_fn: overrides the config's FC NTK (e.g. a neural-tangents ``stax`` kernel).
        on_step: ``on_step(t)`` on the host after step ``t = 1 .. steps`` (a progress
            display: ``jdp.synth.clustmix`` shows the steps on a terminal).

    Returns:
        :class:`KIPResult`.

    Privacy:
        None: every target record is read without noise. Use
        ``jdp.synth.clustmix.dp_kip.dp_kip`` for the DP variant.
    """
    if not isinstance(config, KIPConfig):
        raise TypeError(f"expected config to be a KIPConfig, got {type(config).__name__}")
    sx, sy, tx, ty = check_kip_inputs(support_x, support_y, target_x, target_y)
    if config.alpha is not None:
        anchor = check_anchor(sx if anchor is None else anchor, sx)
    kernel_fn = config.kernel_fn() if kernel_fn is None else kernel_fn
    n_t = tx.shape[0]
    learn = config.learn_labels
    dtype = config.compute_dtype()
    with jax.enable_x64(dtype == "float64"):
        sx_j, sy_j, tx_j, ty_j = (jnp.asarray(a, dtype=dtype) for a in (sx, sy, tx, ty))
        anchor_j = sx_j if anchor is None else jnp.asarray(anchor, dtype=dtype)
        optimizer, step = _kip_step(
            kernel_fn, config.reg, config.alpha, learn, min(config.target_batch_size, n_t),
            config.learning_rate,
        )  # fmt: skip
        params = _support_params(sx_j, sy_j, learn)
        opt_state = optimizer.init(params)
        losses = []
        for t, step_key in enumerate(jax.random.split(key, config.steps), start=1):
            params, opt_state, value = step(params, opt_state, step_key, tx_j, ty_j, sy_j, anchor_j)
            losses.append(value)
            if on_step is not None:
                on_step(t)
        x, y = _support_of(params, sy_j, learn)
        return KIPResult(
            np.asarray(x), np.asarray(y), np.asarray(jnp.stack(losses), dtype=np.float64)
        )
