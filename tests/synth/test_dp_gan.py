"""dp-GAN: the per-example bound of the WGAN-GP critic loss, the generator as post-processing
of the critic in the training loop, the non-private limit, the codec, and tiny end-to-end fits
through the method (the save/load/CLI round trip is the synthesizer contract's)."""

from __future__ import annotations

import dataclasses
import inspect
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.data.quantile_scale import LOG
from jdp.data.schema import Column, Schema
from jdp.dpsgd import DPSGDConfig, Performance, clipped_grad_sum, dp_aggregate, make_dp_step, start
from jdp.synth.base import fit_model, sample_model
from jdp.synth.configs import apply_overrides, config_to_dict
from jdp.synth.dp_gan import DPGANConfig
from jdp.synth.dp_gan.losses import generator_optimizer, make_critic_loss, make_generator_step
from jdp.synth.dp_gan.model import (
    alternate,
    codec,
    critic_dpsgd,
    init_state,
    networks,
    sample_arrays,
)

SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=0.0, upper=10.0),
        Column(name="c", kind="categorical", categories=("a", "b", "c")),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    ),
    target="y",
)
CONFIG = DPGANConfig(
    latent_dim=3,
    generator_hidden=(8,),
    critic_hidden=(8,),
    n_critic=2,
    generator_batch_size=5,
    dpsgd=DPSGDConfig(sampling_prob=0.2, expected_batch_size=4.0, steps=4),
    performance=Performance(clipping="general"),
    scale=LOG,  # public knots: the ledger is DP-SGD's own (released knots: test_numeric_scale)
)
CODEC = codec(SCHEMA, CONFIG)
LAYOUT = CODEC.layout
D = 6  # 1 continuous + 3 + 2 one-hot

#: A declared public row count: the method alone, without the shape rule's count release.
DECLARED_ROWS = 10**6


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "c": rng.choice(["a", "b", "c"], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


def _setup(seed: int = 0):
    key = jax.random.key(seed)
    generator, critic = networks(CONFIG, LAYOUT)
    critic_params, gen_state = init_state(key, CONFIG, LAYOUT)
    loss = make_critic_loss(generator, critic, latent_dim=CONFIG.latent_dim, gp_weight=10.0)
    return generator, critic, critic_params, gen_state, loss


def _norm(tree) -> float:
    return float(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree_util.tree_leaves(tree))))


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(tree)]


def test_codec_is_tanh_then_one_softmax_per_categorical():
    assert LAYOUT == (("tanh", 1), ("categorical", 3), ("categorical", 2))
    assert CODEC.state_blocks == ()  # no point mass, no missing values
    assert CODEC.encode(_frame(4)).shape == (4, D)


def test_config_validation_messages():
    with pytest.raises(ValueError, match="n_critic >= 1"):
        DPGANConfig(n_critic=0)
    with pytest.raises(ValueError, match="gp_weight"):
        DPGANConfig(gp_weight=-1.0)
    with pytest.raises(ValueError, match="exactly one of steps or epochs"):
        apply_overrides(DPGANConfig(), {"dpsgd": {"steps": 3}})
    with pytest.raises(ValueError, match="clipping_decay"):
        DPGANConfig(clipping_decay=1.5)
    template = CONFIG.dpsgd
    with pytest.raises(ValueError, match="template"):
        DPGANConfig(dpsgd=template.with_noise(1.0))
    with pytest.raises(TypeError, match="dpsgd.l2_clip_norm to be a number"):
        DPGANConfig(dpsgd=dataclasses.replace(template, l2_clip_norm=lambda t: 1.0))
    with pytest.raises(ValueError, match="dpsgd.l2_clip_norm to be finite"):
        DPGANConfig(dpsgd=dataclasses.replace(template, l2_clip_norm=float("inf")))
    with pytest.raises(ValueError, match="sampling='poisson'"):
        DPGANConfig(dpsgd=dataclasses.replace(template, sampling="without_replacement"))
    with pytest.raises(TypeError, match="dpsgd to be a DPSGDConfig"):
        DPGANConfig(dpsgd={"steps": 3})
    with pytest.raises(TypeError, match="performance to be a Performance"):
        DPGANConfig(performance="general")
    assert DPGANConfig(generator_hidden=[4, 4]).generator_hidden == (4, 4)
    with pytest.raises(ValueError, match=r"generator_ema in \[0, 1\)"):
        DPGANConfig(generator_ema=1.0)


def test_clipping_bound_holds_for_adversarial_records():
    """Huge records and a scaled-up critic (large GP gradients): every clipped per-example
    gradient has norm <= C, and adding one record moves the clipped sum by <= C."""
    _, _, critic_params, gen_state, loss = _setup()
    big = jax.tree_util.tree_map(lambda p: 50.0 * p, critic_params)
    c = 0.7
    rng = np.random.default_rng(0)
    base = jnp.asarray(rng.uniform(-1, 1, (8, D)), jnp.float32)
    adversarial = jnp.asarray(
        [[1e6] * D, [-1e6] * D, [1e3, -1e3, 1e3, -1e3, 1e3, -1e3], [0.0] * D], jnp.float32
    )
    bound = lambda p, e, k: loss(p, e, k, gen_state)

    @jax.jit
    def clipped(params, batch, mask, keys):
        return clipped_grad_sum(bound, params, batch, mask, keys, l2_clip_norm=c)

    for params in (critic_params, big):
        for record in adversarial:
            keys = jax.random.split(jax.random.key(1), 1)
            part, info = clipped(params, record[None], jnp.ones(1, bool), keys)
            assert _norm(part.grads) <= c * (1 + 1e-5)
            assert float(info.norms[0]) > c  # the record really is clipped
            batch = jnp.concatenate([base, record[None]])
            keys = jax.random.split(jax.random.key(2), batch.shape[0])
            mask_without = jnp.arange(batch.shape[0]) < base.shape[0]
            s_with, _ = clipped(params, batch, jnp.ones(batch.shape[0], bool), keys)
            s_without, _ = clipped(params, batch, mask_without, keys)
            diff = jax.tree_util.tree_map(lambda a, b: a - b, s_with.grads, s_without.grads)
            assert _norm(diff) <= c * (1 + 1e-4)


def test_generator_step_never_reads_real_data():
    generator, critic, critic_params, gen_state, loss = _setup()
    step = make_generator_step(
        generator,
        critic,
        generator_optimizer(1e-2),
        latent_dim=CONFIG.latent_dim,
        batch_size=CONFIG.generator_batch_size,
    )
    assert list(inspect.signature(step).parameters) == ["key", "critic_params", "state"]
    # its traced inputs are the key, the critic and the generator state: nothing of data shape
    jaxpr = jax.make_jaxpr(step)(jax.random.key(3), critic_params, gen_state)
    shapes = {tuple(v.aval.shape) for v in jaxpr.jaxpr.invars}
    assert (17, D) not in shapes and len(jaxpr.jaxpr.invars) == len(
        jax.tree_util.tree_leaves((jax.random.key(3), critic_params, gen_state))
    )
    # the whole training loop: two datasets, the same critic parameters and keys -> the same
    # generators after every step (they would differ if real data leaked into the loop's
    # generator steps), which move after every n_critic = 2 critic steps only
    dp = DPSGDConfig(
        l2_clip_norm=1.0, sampling_prob=1.0, expected_batch_size=4.0, steps=4, noise_multiplier=0.0
    )
    runs = []
    for seed in (0, 1):
        data = jnp.asarray(np.random.default_rng(seed).uniform(-1, 1, (4, D)), jnp.float32)
        # the critic does not move (learning rate 0): only the data differs
        run = start(jax.random.key(4), loss, critic_params, optax.sgd(0.0), data, dp,
                    Performance(clipping="general"), model_state=gen_state)  # fmt: skip
        seen: list = []
        alternate(
            jax.random.key(5),
            run,
            run.init(critic_params, gen_state),
            jax.jit(step),
            2,
            on_step=lambda t, c, g, seen=seen: seen.append(_leaves(g.params)),
        )
        runs.append(seen)
    for a, b in zip(runs[0], runs[1], strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    g0 = _leaves(gen_state.params)
    moved = [any(not np.allclose(x, y) for x, y in zip(g, g0)) for g in runs[0]]
    assert moved == [False, True, True, True]
    assert any(not np.allclose(x, y) for x, y in zip(runs[0][3], runs[0][1]))  # step 2 at t=4


def test_no_privacy_limit_is_a_plain_wgan_gp_critic_step():
    """C = inf, z = 0: the DP-SGD critic step equals the plain batch-mean WGAN-GP step."""
    _, _, critic_params, gen_state, loss = _setup()
    n, lr = 6, 0.05
    x = jnp.asarray(np.random.default_rng(3).uniform(-1, 1, (n, D)), jnp.float32)
    key = jax.random.key(9)
    chain = optax.chain(
        dp_aggregate(jax.random.key(10), noise_multiplier=0.0, expected_batch_size=float(n)),
        optax.sgd(lr),
    )
    step = make_dp_step(loss, chain, l2_clip_norm=math.inf, with_model_state=True)
    new, _, _ = step(critic_params, chain.init(critic_params), x, jnp.ones(n, bool), key, gen_state)
    keys = jax.random.split(key, n)

    def batch_loss(p):  # the plain WGAN-GP critic loss: mean over the batch
        return jnp.mean(jax.vmap(lambda e, k: loss(p, e, k, gen_state))(x, keys))

    grads = jax.grad(batch_loss)(critic_params)
    expected = jax.tree_util.tree_map(lambda p, g: p - lr * g, critic_params, grads)
    for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_samples_decode_to_schema_categories_and_bounds():
    _, _, critic_params, gen_state, _ = _setup()
    params = {"generator": gen_state.params, "critic": critic_params}
    x = sample_arrays(jax.random.key(11), params, CODEC, CONFIG, 50)
    assert x.shape == (50, D) and np.all(np.abs(x[:, 0]) <= 1)
    # softmax blocks: the codec draws one category from each
    np.testing.assert_allclose(x[:, 1:4].sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(x[:, 4:6].sum(1), 1.0, rtol=1e-5)
    drawn = CODEC.draw(jax.random.key(12), x)
    np.testing.assert_array_equal(drawn[:, 0], x[:, 0])
    for block in (drawn[:, 1:4], drawn[:, 4:6]):
        assert set(np.unique(block)) <= {0.0, 1.0}
        np.testing.assert_array_equal(block.sum(1), 1.0)
    frame = CODEC.decode(jax.random.key(12), x)
    assert set(frame["c"]) <= {"a", "b", "c"} and set(frame["y"]) <= {"no", "yes"}
    assert frame["x"].between(0.0, 10.0).all()


@pytest.fixture(scope="module")
def fitted():
    """One tiny fit through the method (with clipping decay), shared."""
    config = dataclasses.replace(CONFIG, clipping_decay=0.9)
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    return fit_model(
        jax.random.key(0), "dp-gan", SCHEMA.conform(_frame(40)), budget, config, rows=DECLARED_ROWS
    )


def test_fit_meets_the_budget_and_names_the_path(fitted):
    assert fitted.ledger.epsilon(1e-5) <= 2.0 * (1 + 1e-9)
    (entry,) = fitted.ledger.entries  # no state blocks: DP-SGD alone
    assert entry.label == "dp-sgd" and "method=general" in str(entry.note)
    assert fitted.params["state_counts"].shape == (1, 0)
    assert config_to_dict(fitted.config)["clipping_decay"] == 0.9
    rows = sample_model(jax.random.key(0), fitted, 20)
    assert list(rows.columns) == ["x", "c", "y"] and set(rows["c"]) <= {"a", "b", "c"}


def test_auto_clipping_takes_the_gradient_penalty_path_and_the_ledger_is_unchanged(fitted):
    """The default (automatic) clipping path takes the exact gradient-penalty ghost path for
    the leaky-ReLU MLP critic; the ledger's event is the general path's (the path changes
    compute only), and the critics agree to float32 rounding."""
    config = dataclasses.replace(CONFIG, clipping_decay=0.9, performance=Performance())
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    auto = fit_model(
        jax.random.key(0), "dp-gan", SCHEMA.conform(_frame(40)), budget, config, rows=DECLARED_ROWS
    )
    (entry,) = auto.ledger.entries
    (general,) = fitted.ledger.entries
    assert "method=ghost_penalty" in entry.note and "method=general" in general.note
    assert entry.note.replace("ghost_penalty", "general") == general.note
    assert (entry.label, entry.event, entry.neighboring_relation, entry.mode) == (
        general.label, general.event, general.neighboring_relation, general.mode
    )  # fmt: skip
    assert auto.ledger.epsilon(1e-5) == fitted.ledger.epsilon(1e-5)
    for a, b in zip(_leaves(auto.params["critic"]), _leaves(fitted.params["critic"]), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


# -- time series: the LSTM generator -----------------------------------------------------------
SERIES = Schema(
    columns=tuple(
        Column(name=f"t{t}_{v}", kind="continuous", lower=-2.0, upper=2.0)
        for t in range(6)
        for v in ("a", "b")
    )
)


def test_lstm_generator_emits_a_time_major_series():
    config = DPGANConfig(latent_dim=3, generator="lstm", series_features=2, generator_hidden=(5,))
    layout = codec(SERIES, config).layout
    generator, _ = networks(config, layout)
    assert (generator.length, generator.features) == (6, 2)
    _, state = init_state(jax.random.key(0), config, layout)
    out = generator.apply(state.params, jnp.ones((4, 3)), method="output")
    assert out.shape == (4, 12) and bool(jnp.all(jnp.abs(out) <= 1))
    with pytest.raises(ValueError, match="numeric columns only"):
        codec(SERIES, dataclasses.replace(config, series_features=5))
    with pytest.raises(ValueError, match="numeric columns only"):
        networks(config, LAYOUT)  # categorical heads
    with pytest.raises(ValueError, match="numeric columns only"):
        codec(SCHEMA, config)
    with pytest.raises(ValueError, match="generator in"):
        DPGANConfig(generator="gru")


@pytest.mark.parametrize("critic", ["mlp", pytest.param("lstm", marks=pytest.mark.slow)])
def test_lstm_dp_gan_fits_a_series_table_within_budget(critic):
    rng = np.random.default_rng(0)
    n = 30
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    t = np.arange(6)[None, :]
    values = np.stack([np.sin(t + phase), np.cos(t + phase)], axis=-1).reshape(n, 12)
    frame = pd.DataFrame(values, columns=SERIES.names)
    config = DPGANConfig(
        latent_dim=2,
        generator="lstm",
        series_features=2,
        generator_hidden=(4,),
        critic_hidden=(4,),
        n_critic=2,
        generator_batch_size=4,
        dpsgd=DPSGDConfig(sampling_prob=0.2, expected_batch_size=6.0, steps=4),
        clipping_decay=0.9,
        critic=critic,
    )
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    model = fit_model(jax.random.key(0), "dp-gan", frame, budget, config, schema=SERIES)
    assert model.ledger.epsilon(1e-5) <= 1.0 * (1 + 1e-9)
    rows = sample_model(jax.random.key(1), model, 7)
    assert list(rows.columns) == list(SERIES.names) and rows.shape == (7, 12)
    assert ((rows >= -2.0) & (rows <= 2.0)).all().all()


def test_estimator_class_is_exported():
    import jdp
    from jdp.synth.estimator import Synthesizer

    assert issubclass(jdp.DPGAN, Synthesizer) and jdp.DPGAN.method == "dp-gan"


def test_critic_dpsgd_is_a_template_that_decays_per_generator_step():
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    config = dataclasses.replace(
        CONFIG, clipping_decay=0.5, dpsgd=dataclasses.replace(CONFIG.dpsgd, l2_clip_norm=2.0)
    )
    private = critic_dpsgd(config, budget)
    assert private == dataclasses.replace(config.dpsgd, l2_clip_norm=private.l2_clip_norm)
    assert private.noise_multiplier is None and private.target_epsilon is None
    assert private.num_steps == 4
    clip = private.l2_clip_norm  # a public schedule from C_0: decays once per n_critic = 2
    assert [clip(t) for t in range(5)] == [2.0, 2.0, 1.0, 1.0, 0.5]
    assert critic_dpsgd(CONFIG, budget).l2_clip_norm == 1.0
    free = critic_dpsgd(config, None)
    assert free.l2_clip_norm == math.inf and free.noise_multiplier == 0.0
    with pytest.raises(ValueError, match="delta > 0"):
        critic_dpsgd(config, PrivacyBudget(epsilon=1.0, delta=0.0))


def test_lstm_critic_scores_one_series_and_refuses_categorical_heads():
    from jdp.nn.gan import SequenceCritic

    config = DPGANConfig(critic="lstm", series_features=2, critic_hidden=(5,))
    layout = codec(SERIES, config).layout
    _, critic = networks(config, layout)
    assert isinstance(critic, SequenceCritic) and (critic.length, critic.features) == (6, 2)
    params = critic.init(jax.random.key(0), jnp.zeros((1, 12)))
    assert critic.apply(params, jnp.ones(12)).shape == ()
    assert critic.apply(params, jnp.ones((3, 12))).shape == (3,)
    with pytest.raises(ValueError, match="numeric columns only"):
        networks(config, LAYOUT)
    with pytest.raises(ValueError, match="critic in"):
        DPGANConfig(critic="gru")


def test_budget_too_small_for_the_planned_critic_steps_is_one_clear_error(tmp_path, capsys):
    from jdp.cli import main

    frame = pd.DataFrame({"x": [1.0, 2.0] * 10, "c": ["a", "b"] * 10, "y": ["no", "yes"] * 10})
    data, schema_path, out = tmp_path / "d.csv", tmp_path / "s.json", tmp_path / "out"
    frame.to_csv(data, index=False)
    SCHEMA.save(schema_path)
    code = main(
        ["fit", "--method", "dp-gan", "--data", str(data), "--schema", str(schema_path),
         "--epsilon", "1e-9", "--delta", "1e-12", "--seed", "0", "--out", str(out),
         "--set", "dpsgd.steps=4", "--set", "dpsgd.epochs=null",
         "--set", "dpsgd.sampling_prob=0.2"]
    )  # fmt: skip
    lines = capsys.readouterr().err.strip().splitlines()
    # the shape rule's warning first (the public cap on rows at epsilon 1e-9 is hopeless),
    # then the released knots' (no signal), then the one error line
    assert code == 2 and len(lines) == 3 and not out.exists()
    assert "dp-gan cannot work here" in lines[0]
    assert "too small for any signal" in lines[1] and "knots of x" in lines[1]
    assert (
        lines[2].startswith("jdp fit: error") and "needs a noise multiplier above 1e+06" in lines[2]
    )


@pytest.mark.parametrize("ema", [0.0, 0.9])
def test_released_generator_is_the_moving_average_of_its_steps(ema):
    generator, critic, critic_params, gen_state, _ = _setup()
    step = jax.jit(
        make_generator_step(
            generator,
            critic,
            generator_optimizer(1e-2),
            latent_dim=CONFIG.latent_dim,
            batch_size=CONFIG.generator_batch_size,
            ema=ema,
        )
    )
    expected = _leaves(gen_state.params)  # the average starts at G_0
    state = gen_state
    for t in range(3):
        state = step(jax.random.key(t), critic_params, state)  # a <- ema a + (1 - ema) G_t
        expected = [ema * e + (1 - ema) * p for e, p in
                    zip(expected, _leaves(state.params), strict=True)]  # fmt: skip
        for e, a in zip(expected, _leaves(state.average), strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-7)
