"""dp-GAN on arrays: its public codec, the networks, the training loop and sampling.

Training (Alg. 1): the critic takes DP-SGD steps (:func:`jdp.dpsgd.run.start`) on the
per-example WGAN-GP loss (:func:`~jdp.synth.dp_gan.losses.make_critic_loss`), Poisson
batches, the noise multiplier calibrated to the fit's budget for the planned number of critic
steps, the clip bound optionally decayed once per generator step
(:func:`jdp.dpsgd.clipping_decay`, a public schedule). Between critic steps, every
``n_critic`` of them, the generator takes one Adam step that reads the critic's released
parameters and fresh latent noise only (:func:`alternate`); it is the public ``model_state``
the next critic losses read.

A table with state indicators (numeric columns with public point masses, e.g. Adult's
capital-gain) also releases the counts of each state (``"dp-gan-state-counts"``,
:func:`jdp.synth.states.release_state_counts`), calibrated together with DP-SGD
(:func:`calibrate_noise`); sampling matches the generator's state probabilities to them
(:func:`jdp.synth.states.match_state_counts`), since DP-SGD's noise pulls a softmax head
towards uniform. Its effect on Adult is measured by ``scripts/reproduce_dpgan.py`` (part
``adult``, the point masses' shares; docs/results/reproduce_dpgan.md).

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

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate_shares
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.dpsgd import DPSGDConfig, DPSGDState, Run, clipping_decay, start
from jdp.dpsgd.noise import noise_cut
from jdp.mechanisms.noise import gaussian_event
from jdp.mechanisms.release import record_release
from jdp.nn.gan import Critic, Generator, SequenceCritic, SequenceGenerator
from jdp.nn.heads import HeadLayout, heads_for_spans, layout_width
from jdp.nn.once import run_once
from jdp.random import numpy_rng, split
from jdp.synth import states
from jdp.synth.base import Params
from jdp.synth.dp_gan.config import DPGANConfig
from jdp.synth.dp_gan.losses import (
    GeneratorState,
    draw_latent,
    generator_optimizer,
    make_critic_loss,
    make_generator_step,
)

__all__ = [
    "GANCodec",
    "NoiseMultipliers",
    "alternate",
    "calibrate_noise",
    "codec",
    "critic_dpsgd",
    "fit_arrays",
    "init_state",
    "networks",
    "sample_arrays",
    "series_shape",
]

LABEL = "dp-sgd"
STATES_LABEL = "dp-gan-state-counts"


# -- the public encoding -------------------------------------------------------------------


@dataclass(frozen=True)
class GANCodec:
    """dp-GAN's public encoding, from the schema alone.

    Attributes:
        encoder: numeric columns min-max to ``[-1, 1]`` by their declared bounds (tanh
            heads), one-hot categoricals and state indicators (softmax heads).
        layout: the generator's heads (tanh runs, one softmax per one-hot block).
        state_blocks: ``(start, stop)`` of the state indicators
            (:func:`jdp.synth.states.state_blocks`), whose counts the fit releases.
    """

    encoder: TableEncoder
    layout: HeadLayout
    state_blocks: states.Blocks

    def encode(self, data: Table | pd.DataFrame) -> np.ndarray:
        """The ``(n, d)`` encoded records (private)."""
        return self.encoder.encode(data)

    def draw(self, key: jax.Array, rows: np.ndarray) -> np.ndarray:
        """Rows with one category drawn per one-hot block from its probabilities
        (:meth:`~jdp.data.transforms.TableEncoder.sample_blocks`; post-processing)."""
        return self.encoder.sample_blocks(numpy_rng(key), rows, "all")

    def decode(self, key: jax.Array, rows: np.ndarray) -> pd.DataFrame:
        """:meth:`draw`, then the table of the encoded rows."""
        return self.encoder.decode(self.draw(key, rows))


def codec(schema: Schema, config: DPGANConfig) -> GANCodec:
    """The codec of ``schema``; an LSTM network's series shape is checked here, before any
    data is read (:func:`series_shape`)."""
    encoder = TableEncoder(schema, continuous_range=(-1.0, 1.0))
    layout = heads_for_spans(encoder.spans, merge=True)
    if "lstm" in (config.generator, config.critic):
        series_shape(config, layout)
    return GANCodec(encoder, layout, states.state_blocks(encoder))


# -- the networks --------------------------------------------------------------------------


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


def init_state(
    key: jax.Array, config: DPGANConfig, layout: HeadLayout
) -> tuple[Any, GeneratorState]:
    """(critic params, :class:`GeneratorState`), drawn before any data is read, as one
    program (:func:`jdp.nn.once.run_once`)."""
    generator, critic = networks(config, layout)
    opt = generator_optimizer(config.generator_learning_rate)

    def draw(key: jax.Array) -> tuple[Any, GeneratorState]:
        g_key, c_key = jax.random.split(key)
        g_params = generator.init(g_key, jnp.zeros((1, config.latent_dim)))
        c_params = critic.init(c_key, jnp.zeros((1, layout_width(layout))))
        return c_params, GeneratorState(g_params, opt.init(g_params), g_params)

    return run_once(draw, key)


# -- the critic's DP-SGD run and its noise ---------------------------------------------------


def critic_dpsgd(config: DPGANConfig, budget: PrivacyBudget | None) -> DPSGDConfig:
    """The critic's DP-SGD config: ``config.dpsgd`` with its clip rule, the constant
    ``C_0 = dpsgd.l2_clip_norm`` or, with ``clipping_decay = d``, the schedule
    ``t -> C_0 d^floor(t / n_critic)``; still a template (noise unset). ``budget=None``: the
    non-private limit, ``C = inf`` and ``z = 0``."""
    if budget is None:
        return dataclasses.replace(config.dpsgd, l2_clip_norm=float("inf")).with_noise(0.0)
    if not budget.delta > 0:
        raise ValueError(f"dp-GAN (DP-SGD) needs a budget delta > 0, got {budget.delta}")
    clip = config.dpsgd.l2_clip_norm
    if config.clipping_decay is not None:
        clip = clipping_decay(clip, config.clipping_decay, every=config.n_critic)
    return dataclasses.replace(config.dpsgd, l2_clip_norm=clip)


class NoiseMultipliers(NamedTuple):
    """What :func:`calibrate_noise` returns: the critic's ``z`` and the state counts' ``z_S``
    (``None`` without state blocks)."""

    sgd: float
    states: float | None


@functools.lru_cache(maxsize=64)
def calibrate_noise(
    dpsgd: DPSGDConfig, budget: PrivacyBudget, *, noise_cut: float, state_share: float | None
) -> NoiseMultipliers:
    """The noise multipliers of the critic's DP-SGD run (the template ``dpsgd``) and of the
    state counts, meeting ``budget`` together.

    Without state counts (``state_share=None``) ``z`` is DP-SGD's own calibration to the
    whole budget (:meth:`jdp.dpsgd.DPSGDConfig.calibrated_noise_multiplier`). With them each
    is first calibrated alone to its share (``state_share`` of epsilon for the counts, the
    rest for DP-SGD), then one common factor makes their composition meet the budget
    (:func:`accounting.calibrate.calibrate_shares`, the ledger's rule). ``noise_cut``: the
    sampler's cut per critic step (:func:`jdp.dpsgd.noise.noise_cut` of the critic's
    parameters).

    A function of public values only (Poisson sampling's event reads no row count, and the
    clip rule does not enter it), so it is cached: refits of one plan calibrate once. Both
    meet the budget after what it records as spent (:attr:`PrivacyBudget.prior`).
    """
    eps, delta, prior = budget.epsilon, budget.delta, budget.prior
    if state_share is None:
        target = dataclasses.replace(dpsgd, target_epsilon=eps, target_delta=delta)
        return NoiseMultipliers(target.calibrated_noise_multiplier(None, noise_cut, prior), None)

    def plan(z: Mapping[str, float]) -> ev.DpEvent:
        events = [dpsgd.event(z["sgd"], None, noise_cut=noise_cut)] if "sgd" in z else []
        return ev.ComposedDpEvent(events + ([gaussian_event(z["states"])] if "states" in z else []))

    z = calibrate_shares(
        plan, {"sgd": 1 - state_share, "states": state_share}, target_epsilon=eps,
        target_delta=delta, prior=prior,
    )  # fmt: skip
    return NoiseMultipliers(z["sgd"], z["states"])


# -- training ------------------------------------------------------------------------------

GeneratorStep = Callable[[jax.Array, Any, GeneratorState], GeneratorState]
OnStep = Callable[[int, Any, GeneratorState], None]


def alternate(
    key: jax.Array,
    run: Run,
    state: DPSGDState,
    generator_step: GeneratorStep,
    n_critic: int,
    *,
    on_step: OnStep | None = None,
) -> DPSGDState:
    """Alg. 1's loop over a planned critic run: every logical batch one noisy critic step
    (:meth:`jdp.dpsgd.run.Run.step`); after critic step ``t`` with ``t % n_critic == 0`` the
    generator step ``generator_step(fold_in(key, t), critic params, generator)`` replaces the
    state's ``model_state``. ``on_step(t, critic params, generator)`` after every step (curves
    over training; it must not stop or steer the run). A terminal shows the phase
    ``DP-SGD critic step i/T`` with the epsilon spent so far (:mod:`jdp.progress`).

    Privacy:
        The run's steps are its ledger entry (:meth:`~jdp.dpsgd.run.Run.ledger`); the
        generator step reads released critic iterates, public noise and its own past only.
    """
    for t, chunks in enumerate(run.shown_batches("DP-SGD critic step"), start=1):
        state = run.step(state, chunks)
        if t % n_critic == 0:
            generator = generator_step(jax.random.fold_in(key, t), state.params, state.model_state)
            state = state._replace(model_state=generator)
        if on_step is not None:
            on_step(t, state.params, state.model_state)
    run.finish(state)
    return state


def fit_arrays(
    key: jax.Array,
    x: np.ndarray,
    codec: GANCodec,
    budget: PrivacyBudget | None,
    config: DPGANConfig,
    *,
    on_step: OnStep | None = None,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """Train dp-GAN on encoded rows ``x`` (``budget=None``: the non-private WGAN-GP limit).

    Returns ``({"generator": params, "critic": params, "state_counts": (1, S)}, ledger)``
    (all DP releases: the critic by DP-SGD, the generator as its post-processing, the
    counts of the codec's state blocks by :func:`jdp.synth.states.release_state_counts`;
    ``S = 0`` without blocks) and the ledger with one ``"dp-sgd"`` entry whose note names
    the clipping path that ran, then ``"dp-gan-state-counts"`` if there are blocks (exact
    counts when ``budget=None``). ``on_step``: see :func:`alternate`.
    """
    layout, blocks = codec.layout, codec.state_blocks
    generator, critic = networks(config, layout)
    init_key, run_key, generator_key, counts_key = split(key, 4)
    critic_params, gen_state = init_state(init_key, config, layout)
    dp, z_states = critic_dpsgd(config, budget), 0.0
    if budget is not None:
        share = config.state_share if blocks else None
        z = calibrate_noise(
            config.dpsgd, budget, noise_cut=noise_cut(critic_params), state_share=share
        )
        dp, z_states = dp.with_noise(z.sgd), z.states
    critic_loss = make_critic_loss(
        generator, critic, latent_dim=config.latent_dim, gp_weight=config.gp_weight
    )
    critic_opt = optax.adam(config.critic_learning_rate, b1=0.5, b2=0.9)
    data = np.asarray(x, np.float32)
    run = start(
        run_key,
        critic_loss,
        critic_params,
        critic_opt,
        data,
        dp,
        config.performance,
        model_state=gen_state,
    )
    state = run.init(critic_params, gen_state)
    step = _generator_step(
        generator,
        critic,
        config.generator_learning_rate,
        config.latent_dim,
        config.generator_batch_size,
        config.generator_ema,
    )
    state = alternate(generator_key, run, state, step, config.n_critic, on_step=on_step)
    ledger = run.ledger(LABEL)
    counts = np.zeros((1, 0))
    if blocks:
        counts, ledger = record_release(
            ledger,
            STATES_LABEL,
            states.release_state_counts(
                numpy_rng(counts_key), np.zeros(len(x), np.int64), 1, x, blocks, z_states
            ),
            note=f"state counts of {len(blocks)} blocks (L2 sensitivity sqrt({len(blocks)}))",
        )
    params = {"generator": state.model_state.average, "critic": state.params}
    params = jax.tree_util.tree_map(np.asarray, params)
    return {**params, "state_counts": counts}, ledger


@functools.lru_cache(maxsize=16)
def _generator_step(
    generator: Generator | SequenceGenerator,
    critic: Critic | SequenceCritic,
    learning_rate: float,
    latent_dim: int,
    batch_size: int,
    ema: float,
) -> GeneratorStep:
    """The jitted generator step, compiled once per networks and settings (refits share it)."""
    optimizer = generator_optimizer(learning_rate)
    step = make_generator_step(
        generator, critic, optimizer, latent_dim=latent_dim, batch_size=batch_size, ema=ema
    )
    return jax.jit(step)


# -- sampling (post-processing) ------------------------------------------------------------


def sample_arrays(
    key: jax.Array, params: Params, codec: GANCodec, config: DPGANConfig, n: int
) -> np.ndarray:
    """``n`` encoded synthetic rows: a latent draw through the generator (tanh values, one
    softmax per one-hot block), the state blocks matched to the released counts
    (:func:`jdp.synth.states.match_state_counts`); :meth:`GANCodec.decode` draws the
    categories. Post-processing of the generator and the counts (``params`` without
    ``"state_counts"``, e.g. a generator during training, is fine without state blocks)."""
    generator, _ = networks(config, codec.layout)
    gen = jax.tree_util.tree_map(jnp.asarray, params["generator"])
    x = np.asarray(_generate(generator, (n, config.latent_dim), gen, key), dtype=np.float64)
    if not codec.state_blocks:
        return x
    counts = np.asarray(params["state_counts"])
    return states.match_state_counts(x, np.zeros(n, np.int64), counts, codec.state_blocks)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _generate(
    generator: Generator | SequenceGenerator,
    shape: tuple[int, int],
    params: Any,
    key: jax.Array,
) -> jax.Array:
    """The generator's output on a latent draw of ``shape``: one program, the draw in it."""
    return generator.apply(params, draw_latent(key, shape), method="output")
