"""dp-GAN's losses: the per-example WGAN-GP critic loss (clipped by DP-SGD) and the
generator's step (post-processing of the critic: no data).

Every term that touches a real record -- ``-D(x)`` and the gradient penalty at
``u x + (1 - u) G(z)`` -- is inside the ONE-example critic loss, so DP-SGD's per-example
clipping bounds the whole contribution of the record to a critic step. The generator's
step reads only the critic's parameters, the generator state and a key.

References:
    Frigerio et al. 2019, Alg. 1; Gulrajani et al. 2017, Alg. 1 (WGAN-GP).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jdp.dpsgd import GradientPenaltyLoss
from jdp.nn.gan import Critic, Generator, SequenceCritic, SequenceGenerator
from jdp.random import normal


class GeneratorState(NamedTuple):
    """The generator: the public ``model_state`` the critic's loss reads, changed by dp-GAN's
    loop between critic steps (:func:`jdp.synth.dp_gan.model.alternate`).

    Attributes:
        params: generator parameters.
        opt_state: its Adam state.
        average: the exponential moving average of ``params`` over generator steps (the
            released generator when ``generator_ema`` is set; Yazici et al. 2019).
    """

    params: Any
    opt_state: Any
    average: Any


def generator_optimizer(learning_rate: float) -> optax.GradientTransformation:
    """Adam with WGAN-GP's betas (0.5, 0.9)."""
    return optax.adam(learning_rate, b1=0.5, b2=0.9)


def draw_latent(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """The generator's input noise ``z ~ N(0, I)`` (not privacy noise: a latent draw)."""
    return normal(key, shape)


def make_critic_loss(
    generator: Generator | SequenceGenerator,
    critic: Critic | SequenceCritic,
    *,
    latent_dim: int,
    gp_weight: float,
) -> GradientPenaltyLoss:
    """``loss_fn(critic_params, real_x, key, gen_state)`` for ONE real record:
    ``D(G(z)) - D(x) + lambda (||grad_x D(u x + (1 - u) G(z))||_2 - 1)^2``,
    with ``z`` and ``u ~ U(0, 1)`` drawn from ``key`` (the generator is held fixed).

    Returned as a :class:`jdp.dpsgd.GradientPenaltyLoss` (the critic ``D``, the points
    ``(x, G(z), u x + (1 - u) G(z))`` and ``lambda``), which computes exactly that loss and lets
    DP-SGD's automatic clipping path take the exact gradient-penalty ghost path for a
    piecewise-linear critic (:mod:`jdp.dpsgd.ghost_penalty`)."""

    def points(real_x: jax.Array, key: jax.Array, gen_state: Any):
        z_key, u_key = jax.random.split(key)
        fake = generator.apply(gen_state.params, draw_latent(z_key, (latent_dim,)), method="output")
        fake = jax.lax.stop_gradient(fake).astype(real_x.dtype)
        u = jax.random.uniform(u_key, (), real_x.dtype)
        return real_x, fake, u * real_x + (1.0 - u) * fake

    def score(critic_params: Any, x: jax.Array) -> jax.Array:
        return critic.apply(critic_params, x)

    return GradientPenaltyLoss(score, points, gp_weight, 1e-12)


def make_generator_step(
    generator: Generator | SequenceGenerator,
    critic: Critic | SequenceCritic,
    optimizer: optax.GradientTransformation,
    *,
    latent_dim: int,
    batch_size: int,
    ema: float = 0.0,
):
    """``generator_step(key, critic_params, gen_state) -> gen_state``: one optimizer step on
    ``mean_i -D(G(z_i))`` over ``batch_size`` fresh latent draws (Alg. 1's generator step),
    then the average moves, ``a <- ema a + (1 - ema) params`` (``ema = 0``: the average is the
    current generator).

    Privacy:
        Post-processing: a function of the key, the (DP) critic parameters and the generator
        state only; it has no data argument.
    """

    def gen_loss(gen_params: Any, critic_params: Any, z: jax.Array) -> jax.Array:
        fake = generator.apply(gen_params, z, method="output")
        return -jnp.mean(critic.apply(critic_params, fake))

    def step(key: jax.Array, critic_params: Any, state: GeneratorState) -> GeneratorState:
        z = draw_latent(key, (batch_size, latent_dim))
        grads = jax.grad(gen_loss)(state.params, critic_params, z)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        average = optax.incremental_update(params, state.average, step_size=1.0 - ema)
        return GeneratorState(params, opt_state, average)

    return step
