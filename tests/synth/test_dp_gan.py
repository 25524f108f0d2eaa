"""dp-GAN: the per-example bound of the WGAN-GP critic loss, the generator as post-processing,
the non-private limit, the heads' decoding, and a tiny end-to-end fit through the CLI."""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
import pytest

from jdp.data.schema import Column, Schema
from jdp.dpsgd import clipped_grad_sum, dp_aggregate, make_dp_step
from jdp.synth.dp_gan import DPGANConfig
from jdp.synth.dp_gan.losses import generator_optimizer, make_critic_loss, make_generator_update
from jdp.synth.dp_gan.model import (
    head_layout,
    init_state,
    networks,
    sample_arrays,
    table_encoder,
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
    sampling_prob=0.2,
    expected_batch_size=4.0,
    steps=4,
    epochs=None,
    dpsgd_method="general",
)
LAYOUT = head_layout(table_encoder(SCHEMA))
D = 6  # 1 continuous + 3 + 2 one-hot


def _setup(seed: int = 0):
    key = jax.random.key(seed)
    generator, critic = networks(CONFIG, LAYOUT)
    critic_params, gen_state = init_state(key, CONFIG, LAYOUT)
    loss = make_critic_loss(generator, critic, latent_dim=CONFIG.latent_dim, gp_weight=10.0)
    return generator, critic, critic_params, gen_state, loss


def _norm(tree) -> float:
    return float(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree_util.tree_leaves(tree))))


def test_layout_is_tanh_then_one_softmax_per_categorical():
    assert LAYOUT == (("tanh", 1), ("categorical", 3), ("categorical", 2))


def test_config_validation_messages():
    with pytest.raises(ValueError, match="n_critic >= 1"):
        DPGANConfig(n_critic=0)
    with pytest.raises(ValueError, match="gp_weight"):
        DPGANConfig(gp_weight=-1.0)
    with pytest.raises(ValueError, match="exactly one of steps or epochs"):
        DPGANConfig(steps=3)
    with pytest.raises(ValueError, match="clipping_decay"):
        DPGANConfig(clipping_decay=1.5)
    assert DPGANConfig(generator_hidden=[4, 4]).generator_hidden == (4, 4)


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


def test_generator_update_never_reads_real_data():
    generator, critic, critic_params, gen_state, _ = _setup()
    update = make_generator_update(
        generator,
        critic,
        generator_optimizer(1e-2),
        latent_dim=CONFIG.latent_dim,
        batch_size=CONFIG.generator_batch_size,
        n_critic=1,
    )
    import inspect

    assert list(inspect.signature(update).parameters) == ["key", "critic_params", "state"]
    # its traced inputs are the key, the critic and the generator state: nothing of data shape
    jaxpr = jax.make_jaxpr(update)(jax.random.key(3), critic_params, gen_state)
    shapes = {tuple(v.aval.shape) for v in jaxpr.jaxpr.invars}
    assert (17, D) not in shapes and len(jaxpr.jaxpr.invars) == len(
        jax.tree_util.tree_leaves((jax.random.key(3), critic_params, gen_state))
    )
    # the whole training loop: two datasets, the same critic parameters and key -> the same
    # generator step (it would differ if real data leaked into the update)
    from jdp.dpsgd import StepKeys, dp_sgd

    loss = make_critic_loss(generator, critic, latent_dim=CONFIG.latent_dim, gp_weight=10.0)
    outs = []
    for seed in (0, 1):
        data = jnp.asarray(np.random.default_rng(seed).uniform(-1, 1, (4, D)), jnp.float32)
        sgd = dp_sgd(
            StepKeys(jax.random.key(4), jax.random.key(5), jax.random.key(6)),
            loss,
            optax.chain(
                dp_aggregate(jax.random.key(7), noise_multiplier=0.0, expected_batch_size=4.0),
                optax.sgd(0.0),  # the critic does not move: only the data differs
            ),
            l2_clip_norm=1.0,
            state_update_fn=update,
        )
        state = sgd.step(sgd.init(critic_params, gen_state), [(data, jnp.ones(4, bool))])
        outs.append(state.model_state)
    for a, b in zip(jax.tree_util.tree_leaves(outs[0]), jax.tree_util.tree_leaves(outs[1])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    moved = jax.tree_util.tree_leaves(outs[0].params)
    assert any(
        not np.allclose(a, b) for a, b in zip(moved, jax.tree_util.tree_leaves(gen_state.params))
    )


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
    x = sample_arrays(jax.random.key(11), params, LAYOUT, CONFIG, 50)
    assert x.shape == (50, D) and np.all(np.abs(x[:, 0]) <= 1)
    np.testing.assert_array_equal(x[:, 1:4].sum(1), 1.0)
    np.testing.assert_array_equal(x[:, 4:6].sum(1), 1.0)
    frame = table_encoder(SCHEMA).decode(x)
    assert set(frame["c"]) <= {"a", "b", "c"} and set(frame["y"]) <= {"no", "yes"}
    assert frame["x"].between(0.0, 10.0).all()


def test_cli_fit_save_load_sample(tmp_path, capsys):
    from jdp.cli import main
    from jdp.synth import io

    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "c": rng.choice(["a", "b", "c"], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )
    frame.to_csv(tmp_path / "d.csv", index=False)
    SCHEMA.save(tmp_path / "s.json")
    sets = [
        "latent_dim=2", "generator_hidden=[4]", "critic_hidden=[4]", "n_critic=2",
        "generator_batch_size=4", "sampling_prob=0.1", "expected_batch_size=4.0", "steps=4",
        "epochs=null", "clipping_decay=0.9",
    ]  # fmt: skip
    argv = ["fit", "--method", "dp-gan", "--data", str(tmp_path / "d.csv"), "--schema",
            str(tmp_path / "s.json"), "--epsilon", "2", "--delta", "1e-5",
            "--out", str(tmp_path / "m"), "--seed", "0"]  # fmt: skip
    for s in sets:
        argv += ["--set", s]
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 0, err
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    assert saved["method"] == "dp-gan" and saved["config"]["clipping_decay"] == 0.9
    model = io.load(tmp_path / "m")
    assert model.ledger.epsilon(1e-5) <= 2.0 * (1 + 1e-9)
    (entry,) = model.ledger.entries
    assert "method=general" in str(entry.note)
    from jdp.synth.base import sample_model

    rows = sample_model(jax.random.key(0), model, 20)
    assert list(rows.columns) == ["x", "c", "y"] and set(rows["c"]) <= {"a", "b", "c"}


# -- time series: the LSTM generator -----------------------------------------------------------
SERIES = Schema(
    columns=tuple(
        Column(name=f"t{t}_{v}", kind="continuous", lower=-2.0, upper=2.0)
        for t in range(6)
        for v in ("a", "b")
    )
)


def test_lstm_generator_emits_a_time_major_series():
    config = DPGANConfig(
        latent_dim=3, generator="lstm", series_features=2, generator_hidden=(5,), epochs=1.0
    )
    layout = head_layout(table_encoder(SERIES))
    generator, _ = networks(config, layout)
    assert (generator.length, generator.features) == (6, 2)
    _, state = init_state(jax.random.key(0), config, layout)
    out = generator.apply(state.params, jnp.ones((4, 3)), method="output")
    assert out.shape == (4, 12) and bool(jnp.all(jnp.abs(out) <= 1))
    with pytest.raises(ValueError, match="numeric columns only"):
        networks(dataclasses.replace(config, series_features=5), layout)
    with pytest.raises(ValueError, match="numeric columns only"):
        networks(config, LAYOUT)  # categorical heads
    with pytest.raises(ValueError, match="generator in"):
        DPGANConfig(generator="gru")


@pytest.mark.parametrize("critic", ["mlp", pytest.param("lstm", marks=pytest.mark.slow)])
def test_lstm_dp_gan_fits_a_series_table_within_budget(critic):
    from accounting import PrivacyBudget
    from jdp.synth.base import fit_model, sample_model

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
        sampling_prob=0.2,
        expected_batch_size=6.0,
        steps=4,
        epochs=None,
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

    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, 20),
            "c": rng.choice(["a", "b", "c"], 20),
            "y": rng.choice(["no", "yes"], 20),
        }
    )
    synth = jdp.DPGAN(
        epsilon=1.0,
        delta=1e-5,
        schema=SCHEMA,
        latent_dim=2,
        generator_hidden=(4,),
        critic_hidden=(4,),
        steps=2,
        epochs=None,
        sampling_prob=0.2,
        expected_batch_size=4.0,
        dpsgd_method="general",
        seed=0,
    )
    rows = synth.fit(frame).sample(5)
    assert list(rows.columns) == ["x", "c", "y"] and len(rows) == 5


def test_critic_config_calibrates_to_the_budget_and_decays_per_generator_step():
    from accounting import PrivacyBudget
    from jdp.synth.dp_gan.model import critic_config

    config = dataclasses.replace(CONFIG, clipping_decay=0.5, l2_clip_norm=2.0)
    private = critic_config(config, PrivacyBudget(epsilon=1.0, delta=1e-5))
    assert (private.target_epsilon, private.target_delta) == (1.0, 1e-5)
    assert private.num_steps == config.num_steps == 4 and private.noise_multiplier is None
    clip = private.l2_clip_norm  # a public schedule: decays once per n_critic = 2 steps
    assert [clip(t) for t in range(5)] == [2.0, 2.0, 1.0, 1.0, 0.5]
    assert critic_config(CONFIG, PrivacyBudget(epsilon=1.0, delta=1e-5)).l2_clip_norm == 1.0
    free = critic_config(config, None)
    assert free.l2_clip_norm == math.inf and free.noise_multiplier == 0.0
    with pytest.raises(ValueError, match="delta > 0"):
        critic_config(config, PrivacyBudget(epsilon=1.0, delta=0.0))


def test_lstm_critic_scores_one_series_and_refuses_categorical_heads():
    from jdp.nn.gan import SequenceCritic

    config = DPGANConfig(critic="lstm", series_features=2, critic_hidden=(5,), epochs=1.0)
    layout = head_layout(table_encoder(SERIES))
    _, critic = networks(config, layout)
    assert isinstance(critic, SequenceCritic) and (critic.length, critic.features) == (6, 2)
    params = critic.init(jax.random.key(0), jnp.zeros((1, 12)))
    assert critic.apply(params, jnp.ones(12)).shape == ()
    assert critic.apply(params, jnp.ones((3, 12))).shape == (3,)
    with pytest.raises(ValueError, match="numeric columns only"):
        networks(dataclasses.replace(config, critic="lstm"), LAYOUT)
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
         "--set", "steps=4", "--set", "epochs=null", "--set", "sampling_prob=0.2"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "needs a noise multiplier above 1e+06" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("ema", [0.0, 0.9])
def test_released_generator_is_the_moving_average_of_its_steps(ema):
    generator, critic, critic_params, gen_state, _ = _setup()
    update = jax.jit(
        make_generator_update(
            generator,
            critic,
            generator_optimizer(1e-2),
            latent_dim=CONFIG.latent_dim,
            batch_size=CONFIG.generator_batch_size,
            n_critic=2,
            ema=ema,
        )
    )
    leaves = jax.tree_util.tree_leaves
    expected = [np.asarray(a) for a in leaves(gen_state.params)]  # the average starts at G_0
    state = gen_state
    for t in range(4):
        state = update(jax.random.key(t), critic_params, state)
        if (t + 1) % 2 == 0:  # a generator step: a <- ema a + (1 - ema) G_t
            expected = [ema * e + (1 - ema) * np.asarray(p) for e, p in
                        zip(expected, leaves(state.params), strict=True)]  # fmt: skip
        for e, a in zip(expected, leaves(state.average), strict=True):
            np.testing.assert_allclose(np.asarray(a), e, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"generator_ema in \[0, 1\)"):
        DPGANConfig(generator_ema=1.0)
