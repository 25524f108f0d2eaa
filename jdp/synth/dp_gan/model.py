"""dp-GAN's training and sampling on encoded arrays, and the table glue.

Training (Alg. 1): the critic is trained by :func:`jdp.dpsgd.train` on the per-example
WGAN-GP loss (:func:`~jdp.synth.dp_gan.losses.make_critic_loss`), Poisson batches, the noise
multiplier calibrated to the fit's budget for the planned number of critic steps, the clip
bound optionally decayed once per generator step (:func:`jdp.dpsgd.clipping_decay`, a public
schedule). The generator rides along as DP-SGD's non-private ``model_state``: its Adam step
every ``n_critic`` critic steps reads the critic's parameters and fresh noise only.

Privacy:
    Add/remove-one neighbours. Each critic step is the subsampled Gaussian mechanism on a
    clipped sum of sensitivity ``C_t`` (noise std ``z C_t``); the ledger records one
    ``"dp-sgd"`` entry for all critic steps. The generator is a function of the released
    critic parameters, public noise and its own past (post-processing), so it costs nothing;
    its released parameters are the model. ``docs/privacy.md``, section dp-GAN.

References:
    Frigerio et al. 2019, Sec. 4 and Alg. 1; Abadi et al. 2016 (DP-SGD).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.dpsgd import DPSGDConfig, clipping_decay, train
from jdp.nn.gan import Critic, Generator, SequenceCritic, SequenceGenerator
from jdp.nn.heads import HeadLayout, decode_sample, heads_for_spans, layout_width
from jdp.synth.base import FittedModel
from jdp.synth.dp_gan.config import DPGANConfig
from jdp.synth.dp_gan.losses import (
    GeneratorState,
    draw_latent,
    generator_optimizer,
    make_critic_loss,
    make_generator_update,
)
from jdp.verbosity import progress_on_terminal

__all__ = [
    "critic_config",
    "fit_arrays",
    "fit_table",
    "head_layout",
    "networks",
    "sample_arrays",
    "sample_table",
    "table_encoder",
]


def table_encoder(schema: Schema) -> TableEncoder:
    """The public encoder: numeric columns min-max to [-1, 1] (tanh heads), one-hot
    categoricals (softmax heads); built from the schema alone."""
    return TableEncoder(schema, continuous_range=(-1.0, 1.0))


def head_layout(encoder: TableEncoder) -> HeadLayout:
    """Generator heads from the encoder's spans: tanh runs, one softmax per categorical."""
    return heads_for_spans(encoder.spans, merge=True)


def series_shape(config: DPGANConfig, layout: HeadLayout) -> tuple[int, int]:
    """``(T, F)`` of the encoded row read as a time-major series of ``F = series_features``
    values per step (numeric heads only, ``T * F`` of them)."""
    width, f = layout_width(layout), config.series_features
    if any(kind == "categorical" for kind, _ in layout) or width % f:
        raise ValueError(
            f"an LSTM generator or critic expects numeric columns only, T * series_features "
            f"of them (series_features={f}), got the head layout {layout}"
        )
    return width // f, f


def networks(
    config: DPGANConfig, layout: HeadLayout
) -> tuple[Generator | SequenceGenerator, Critic | SequenceCritic]:
    """(generator, critic) of a config: MLPs, or with ``generator="lstm"`` /
    ``critic="lstm"`` LSTM networks over the encoded row read as a series
    (:func:`series_shape`)."""
    if config.critic == "mlp":
        critic = Critic(config.critic_hidden)
    else:
        critic = SequenceCritic(config.critic_hidden[0], *series_shape(config, layout))
    if config.generator == "mlp":
        return Generator(config.generator_hidden, layout), critic
    return SequenceGenerator(
        config.generator_hidden[0], *series_shape(config, layout), layout
    ), critic


def critic_config(config: DPGANConfig, budget: PrivacyBudget | None) -> DPSGDConfig:
    """The critic's DP-SGD config: the target ``(epsilon, delta)`` of ``budget`` (``None``:
    the non-private limit, ``C = inf`` and ``z = 0``), the clip rule with dp-GAN's decay once
    per generator step."""
    if budget is None:
        clip, noise = {"l2_clip_norm": float("inf")}, {"noise_multiplier": 0.0}
    else:
        if not budget.delta > 0:
            raise ValueError(f"dp-GAN (DP-SGD) needs a budget delta > 0, got {budget.delta}")
        c = config.l2_clip_norm
        if config.clipping_decay is not None:
            c = clipping_decay(c, config.clipping_decay, every=config.n_critic)
        clip = {"l2_clip_norm": c}
        noise = {"target_epsilon": budget.epsilon, "target_delta": budget.delta}
    return DPSGDConfig(
        **clip,
        **noise,
        sampling_prob=config.sampling_prob,
        expected_batch_size=config.expected_batch_size,
        steps=config.num_steps,
    )


def init_state(key: jax.Array, config: DPGANConfig, layout: HeadLayout):
    """(critic params, :class:`GeneratorState`), drawn before any data is read."""
    generator, critic = networks(config, layout)
    g_key, c_key = jax.random.split(key)
    g_params = generator.init(g_key, jnp.zeros((1, config.latent_dim)))
    c_params = critic.init(c_key, jnp.zeros((1, layout_width(layout))))
    opt = generator_optimizer(config.generator_learning_rate)
    return c_params, GeneratorState(
        g_params, opt.init(g_params), jnp.zeros((), jnp.int32), g_params
    )


def fit_arrays(
    key: jax.Array,
    x: np.ndarray,
    layout: HeadLayout,
    budget: PrivacyBudget | None,
    config: DPGANConfig,
    *,
    progress: bool = False,
    on_step: Callable[[int, Any, GeneratorState], None] | None = None,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """Train dp-GAN on encoded rows ``x`` (``budget=None``: the non-private WGAN-GP limit).

    Returns ``({"generator": params, "critic": params}, ledger)`` (both DP releases: the
    critic by DP-SGD, the generator as its post-processing) and the ledger with one
    ``"dp-sgd"`` entry whose note names the clipping path that ran. ``on_step(t, critic
    params, generator state)`` runs after every critic step (curves over training; see
    :func:`jdp.dpsgd.train`).
    """
    generator, critic = networks(config, layout)
    init_key, train_key = jax.random.split(key)
    critic_params, gen_state = init_state(init_key, config, layout)
    result = train(
        train_key,
        make_critic_loss(
            generator, critic, latent_dim=config.latent_dim, gp_weight=config.gp_weight
        ),
        critic_params,
        optax.adam(config.critic_learning_rate, b1=0.5, b2=0.9),
        jnp.asarray(x, jnp.float32),
        critic_config(config, budget),
        model_state=gen_state,
        state_update_fn=make_generator_update(
            generator,
            critic,
            generator_optimizer(config.generator_learning_rate),
            latent_dim=config.latent_dim,
            batch_size=config.generator_batch_size,
            n_critic=config.n_critic,
            ema=config.generator_ema,
        ),
        method=config.dpsgd_method,
        microbatch_size=config.microbatch_size,
        label="dp-sgd",
        progress=progress,
        on_step=on_step,
    )
    params = {"generator": result.model_state.average, "critic": result.params}
    return jax.tree_util.tree_map(np.asarray, params), result.ledger


def sample_arrays(
    key: jax.Array, params: dict[str, Any], layout: HeadLayout, config: DPGANConfig, n: int
) -> np.ndarray:
    """``n`` encoded synthetic rows: latent draw, generator, heads' ``decode_sample``
    (tanh values, one one-hot draw per categorical). Post-processing of the generator."""
    z_key, x_key = jax.random.split(key)
    z = draw_latent(z_key, (n, config.latent_dim))
    gen = jax.tree_util.tree_map(jnp.asarray, params["generator"])
    out = _generate(x_key, gen, z, layout=layout, config=config)
    return np.asarray(out, dtype=np.float64)


@functools.partial(jax.jit, static_argnames=("layout", "config"))
def _generate(key: jax.Array, gen_params: Any, z: jax.Array, *, layout, config) -> jax.Array:
    raw = networks(config, layout)[0].apply(gen_params, z)
    return decode_sample(key, raw, layout, stochastic=False)


def fit_table(key: jax.Array, data: Table, budget: PrivacyBudget, config: DPGANConfig):
    """The registry ``fit``: Table -> public encoding -> :func:`fit_arrays`."""
    encoder = table_encoder(data.schema)
    params, ledger = fit_arrays(
        key,
        encoder.encode(data),
        head_layout(encoder),
        budget,
        config,
        progress=progress_on_terminal(),
    )
    return FittedModel(
        method="dp-gan",
        params=params,
        schema=data.schema,
        config=config,
        budget=budget,
        ledger=ledger,
    )


def sample_table(key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
    """The registry ``sample`` (post-processing of the fitted generator)."""
    encoder = table_encoder(model.schema)
    return encoder.decode(sample_arrays(key, model.params, head_layout(encoder), model.config, n))
