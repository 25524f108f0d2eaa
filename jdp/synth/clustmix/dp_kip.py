"""DP-KIP: Kernel Inducing Points with per-target-record clipping and Gaussian noise.

The KIP loss is a mean over target records of :func:`kip.kip.per_target_loss`, each touching
ONE private record ``(x_i, y_i)`` (Vinaroz & Park 2023, Sec. 3). So the support set
``X_s`` (and ``y_s`` with ``learn_labels``) is DP-SGD's parameter vector and the target
records are its private examples: per step, a Poisson batch of target records, each record's
gradient w.r.t. the support clipped to L2 norm ``C``, summed, noised with std ``z C`` and
divided by a declared public ``B̄`` (:func:`jdp.dpsgd.train`), then Adam.

With 3A's trade-off ``alpha`` (Eq. 6, :func:`kip.kip.threea_loss`), the update is
``(1 - α) ĝ + α ∇_X ||X - X̃||^2 / ||X̃||^2`` where ``ĝ`` is the noisy KIP gradient: the anchor
term depends on the parameters and the anchor ``X̃`` only, so with a *public* anchor (strict
ClustMix: the DP-released centres) it is post-processing of ``ĝ``.

Privacy:
    Add/remove-one target record (Poisson sampling). The clipped sum has L2 sensitivity ``C``
    whatever the record (docs/privacy.md, "DP-KIP"); the run is one
    ``dpsgd_event(z, q, T)`` (:meth:`jdp.dpsgd.DPSGDConfig.event`, with the sampler's cut on
    the support: :func:`support_noise_cut`), one ledger entry labelled ``"dp-kip"``. Not
    covered: the support's *initialisation* and the anchor, which must be public or released
    by their own mechanism (the caller's ledger), and the per-step training losses, which are
    not computed.

References:
    Vinaroz, M. & Park, M. (2023). Differentially private kernel inducing points using
    features from ScatterNets (DP-KIP). TMLR, Sec. 3 (per-target-record clipping of the KIP
    gradient, DP-SGD on the support set).
    Nguyen, T., Chen, Z. & Lee, J. (2021). Dataset meta-learning from kernel ridge-regression.
    ICLR.
    Abadi, M. et al. (2016). Deep learning with differential privacy. CCS (Alg. 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from accounting.ledger import PrivacyLedger
from jdp.dpsgd import DPSGDConfig, GeneralClipping, Performance, train
from jdp.dpsgd.noise import noise_cut
from jdp.synth.clustmix.config import ClustMixConfig, Records
from kip.kip import (
    KIPConfig,
    KIPResult,
    centred_one_hot,
    check_anchor,
    check_kip_inputs,
    per_target_loss,
    relative_anchor_distance,
)

__all__ = [
    "PERFORMANCE",
    "centred_problem",
    "dp_kip",
    "dp_kip_displacement",
    "dp_kip_loss_fn",
    "support_noise_cut",
]


#: DP-KIP's compute flags: the general clipping path (per-target gradients by ``vmap``), 128
#: target records at a time (memory only).
PERFORMANCE = Performance(clipping=GeneralClipping(microbatch_size=128))


def support_noise_cut(support_size: int, n_features: int, n_labels: int | None) -> float:
    """The sampler's cut of one DP-KIP step: the support ``(support_size, n_features)`` is
    noised, and its labels ``(support_size, n_labels)`` too when they are learned
    (``n_labels`` given)."""
    shapes = [jax.ShapeDtypeStruct((support_size, n_features), jnp.float32)]
    if n_labels is not None:
        shapes.append(jax.ShapeDtypeStruct((support_size, n_labels), jnp.float32))
    return noise_cut(shapes)


def _support(params: Any, fixed_y: jax.Array, learn_labels: bool) -> tuple[Any, Any]:
    return params if learn_labels else (params, fixed_y)


def dp_kip_loss_fn(
    config: KIPConfig, fixed_y: jax.Array, kernel_fn: Callable | None = None
) -> Callable[[Any, dict, jax.Array], jax.Array]:
    """DP-SGD's loss for ONE target record ``{"x": (d,), "y": (c,)}``: ``per_target_loss``
    of the support ``params`` (``X_s``, or ``(X_s, y_s)`` with ``learn_labels``; the fixed
    labels ``fixed_y`` otherwise)."""
    kernel_fn = config.kernel_fn() if kernel_fn is None else kernel_fn

    def loss_fn(params: Any, example: dict, key: jax.Array) -> jax.Array:
        del key
        support = _support(params, fixed_y, config.learn_labels)
        return per_target_loss(
            support, (example["x"], example["y"]), kernel_fn=kernel_fn, reg=config.reg
        )

    return loss_fn


def _with_anchor_term(alpha: float, anchor: jax.Array, learn_labels: bool) -> Any:
    """``u -> (1 - α) u + α ∇ relative_anchor_distance`` (Eq. 6's trade-off applied to the
    noisy KIP gradient ``u``; a function of the parameters and the public anchor only)."""

    def update(updates: Any, state: optax.EmptyState, params: Any = None) -> tuple[Any, Any]:
        x = params[0] if learn_labels else params
        g_x = jax.grad(relative_anchor_distance)(x, anchor)
        if learn_labels:
            return ((1 - alpha) * updates[0] + alpha * g_x, (1 - alpha) * updates[1]), state
        return (1 - alpha) * updates + alpha * g_x, state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def dp_kip(
    key: jax.Array,
    support_x: Any,
    support_y: Any,
    target_x: Any,
    target_y: Any,
    config: KIPConfig,
    dpsgd_config: DPSGDConfig,
    *,
    anchor: Any = None,
    kernel_fn: Callable | None = None,
    performance: Performance = PERFORMANCE,
    label: str = "dp-kip",
) -> tuple[KIPResult, PrivacyLedger]:
    """DP-KIP: Adam on the support set with DP-SGD over the target records.

    Args:
        key: PRNG key (target batches, noise).
        support_x, support_y: the initial support set; must be public or DP-released (its
            release is the caller's to account).
        target_x, target_y: the private target records ``(n, d)``, ``(n, c)``.
        config: :class:`kip.kip.KIPConfig` (``steps``, ``learning_rate``, ``reg``,
            ``learn_labels``, ``alpha``, kernel); ``target_batch_size`` is not used (Poisson
            batches at ``dpsgd_config.sampling_prob`` instead).
        dpsgd_config: the privacy parameters (:class:`jdp.dpsgd.DPSGDConfig`: Poisson
            sampling of target records, their clip norm ``C``, a noise multiplier or a target,
            and the declared public ``B̄ = q N``, never ``q len(target_x)``); its run length
            must equal ``config.steps``.
        anchor: Eq. 6's ``X̃_s`` when ``config.alpha`` is set (default: ``support_x``); must be
            public.
        kernel_fn: overrides the config's FC NTK.
        performance: DP-SGD's compute flags (default :data:`PERFORMANCE`).
        label: the ledger entry's label.

    Returns:
        ``(KIPResult, ledger)``; ``KIPResult.losses`` is empty (a loss on private records
        would be an unaccounted release).

    Privacy:
        See the module docstring: one ``dpsgd_event(z, q, T)`` under add/remove-one.
    """
    if not isinstance(config, KIPConfig):
        raise TypeError(f"expected config to be a KIPConfig, got {type(config).__name__}")
    if not isinstance(dpsgd_config, DPSGDConfig):
        raise TypeError(
            f"expected dpsgd_config to be a DPSGDConfig, got {type(dpsgd_config).__name__}"
        )
    if dpsgd_config.num_steps != config.steps:
        raise ValueError(
            f"expected dpsgd_config's run length to equal config.steps = {config.steps}, got "
            f"{dpsgd_config.num_steps}"
        )
    sx, sy, tx, ty = check_kip_inputs(support_x, support_y, target_x, target_y)
    if config.alpha is not None:
        anchor = check_anchor(sx if anchor is None else anchor, sx)
    learn = config.learn_labels
    dtype = config.compute_dtype()  # precision only: the ledger does not depend on it
    with jax.enable_x64(dtype == "float64"):
        sx_j, sy_j = jnp.asarray(sx, dtype=dtype), jnp.asarray(sy, dtype=dtype)
        optimizer = optax.adam(config.learning_rate)
        if config.alpha is not None:
            mixer = _with_anchor_term(config.alpha, jnp.asarray(anchor, dtype=dtype), learn)
            optimizer = optax.chain(mixer, optimizer)
        result = train(
            key,
            dp_kip_loss_fn(config, sy_j, kernel_fn),
            (sx_j, sy_j) if learn else sx_j,
            optimizer,
            {"x": tx.astype(dtype), "y": ty.astype(dtype)},
            dpsgd_config,
            performance=performance,
            label=label,
        )
        x, y = _support(result.params, sy_j, learn)
        out = KIPResult(np.asarray(x), np.asarray(y), np.zeros(0))
    return out, result.ledger


def dp_kip_displacement(
    key: jax.Array,
    centres: np.ndarray,
    centre_labels: np.ndarray,
    records: Records,
    config: ClustMixConfig,
    *,
    noise_multiplier: float,
    public_size: float,
) -> tuple[np.ndarray, PrivacyLedger]:
    """Strict ClustMix's Adapt step: DP-KIP with the 3A loss on the released centres.

    Features live in ``[0, 1]`` and are centred on the box centre 0.5 (a public constant);
    labels are centred one-hot. Returns ``(adapted - centres, ledger)`` with one
    ``"clustmix/dp-kip"`` entry.

    Args:
        key: PRNG key.
        centres: ``(K, d)`` DP-released cluster centres (public: the support init and anchor).
        centre_labels: ``(K,)`` their classes (public).
        records: the private records ``(n, d)`` in ``[0, 1]``, their class codes and ``C``.
        config: the :class:`ClustMixConfig`: its KIP settings (:meth:`~ClustMixConfig.kip_config`)
            and its ``kip_dpsgd`` template (``secure_noise`` of either turns the mitigation on).
        noise_multiplier: ``z`` of the DP-SGD run (calibrated by the caller's plan).
        public_size: a public or DP-released record count ``N`` (e.g. the sum of the noisy
            cluster sizes); the update is normalised by ``B̄ = q N``, never by ``q len(x)``.
    """
    if not float(public_size) > 0:
        raise ValueError(f"expected public_size > 0, got {public_size}")
    template = config.kip_dpsgd
    dpsgd_config = dataclasses.replace(
        template,
        expected_batch_size=template.sampling_prob * float(public_size),
        secure_noise=template.secure_noise or config.secure_noise,
    ).with_noise(noise_multiplier)
    result, ledger = dp_kip(
        key,
        *centred_problem(centres, centre_labels, *records),
        config.kip_config(),
        dpsgd_config,
        label="clustmix/dp-kip",
    )
    return result.support_x + 0.5 - centres, ledger


def centred_problem(
    centres: np.ndarray, centre_labels: np.ndarray, x: np.ndarray, y: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ClustMix's KIP problem ``(support_x, support_y, target_x, target_y)``: features in
    ``[0, 1]`` centred on the public box centre 0.5, labels centred one-hot; the Adapt step of
    both modes returns ``adapted + 0.5 - centres``."""
    return (
        centres - 0.5,
        centred_one_hot(centre_labels, n_classes),
        x - 0.5,
        centred_one_hot(y, n_classes),
    )
