"""The gradient-penalty ghost path (jdp.dpsgd.ghost_penalty): exact per-example norms and
clipped sums of WGAN-GP's critic loss against vmap(grad), its structural check, and the path
choice."""

from __future__ import annotations

import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jdp.dpsgd import GradientPenaltyLoss, clipping, dp_aggregate, make_dp_step
from jdp.dpsgd import ghost_penalty as gp
from jdp.dpsgd import step as dpstep
from jdp.nn.gan import Critic, Generator, SequenceCritic
from jdp.nn.mlp import MLP
from jdp.synth.dp_gan.losses import GeneratorState, make_critic_loss

B = 10
D = 5


def _float():
    """float64 under ``jax.enable_x64`` (the exactness tests), float32 otherwise."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def _f64(tree):
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a, _float()), tree)


def _points(example, key):
    """The WGAN-GP points of one record: a fake drawn from the key (a stand-in generator)."""
    k_fake, k_u = jax.random.split(key)
    fake = jnp.tanh(jax.random.normal(k_fake, example.shape, example.dtype))
    u = jax.random.uniform(k_u, (), example.dtype)
    return example, fake, u * example + (1.0 - u) * fake


def _problem(widths, activation, *, gp_weight=10.0, d=D, scale=1.0, points=_points):
    critic = MLP((*widths, 1), activation=activation)
    params = _f64(critic.init(jax.random.key(0), jnp.zeros(d)))
    real = scale * jax.random.normal(jax.random.key(1), (B, d), _float())
    score = lambda p, x: critic.apply(p, x)[0]
    return GradientPenaltyLoss(score, points, gp_weight), params, real


def _both(loss, params, batch, mask, keys, clip):
    return _jitted(loss, mask, keys)(params, batch, clip)


def _jitted(loss, mask, keys):
    """Both paths, jitted once with the clip bound traced (several bounds, one compile)."""

    def both(p, b, clip):
        fast = gp.clipped_sum_penalty(loss, p, b, mask, keys, l2_clip_norm=clip)
        slow = clipping.clipped_sum_general(loss, p, b, mask, keys, l2_clip_norm=clip)
        return fast, slow

    return jax.jit(both)


def _assert_same(fast, slow, rtol=1e-10):
    (f_sum, f_info), (s_sum, s_info) = fast, slow
    np.testing.assert_allclose(f_info.norms, s_info.norms, rtol=rtol, atol=0)
    np.testing.assert_array_equal(f_info.nonfinite, s_info.nonfinite)
    want = jax.tree_util.tree_leaves(s_sum.grads)
    scale = max(float(jnp.max(jnp.abs(w))) for w in want)
    for a, b in zip(jax.tree_util.tree_leaves(f_sum.grads), want, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)
    assert float(f_sum.l2_sensitivity) == float(s_sum.l2_sensitivity)


ACTIVATIONS = {"leaky_relu": nn.leaky_relu, "relu": nn.relu, "identity": lambda x: x}
#: one hidden layer and three of odd widths, and each piecewise-linear activation once (CI time:
#: the identity checked is algebraic, the same for every width)
CRITICS = [((8,), "leaky_relu"), ((7, 5, 9), "leaky_relu"), ((16, 16), "relu"),
           ((16, 16), "identity")]  # fmt: skip


@pytest.mark.parametrize(("widths", "act"), CRITICS, ids=[f"{a}-{w}" for w, a in CRITICS])
def test_norms_and_clipped_sum_equal_vmap_grad(widths, act):
    """Clip bounds below every norm (all clipped), above every norm (none), between them
    (some clipped), and infinite; the last two rows are padding (masked)."""
    with jax.enable_x64(True):
        loss, params, real = _problem(widths, ACTIVATIONS[act])
        keys = jax.random.split(jax.random.key(3), B)
        mask = jnp.arange(B) < B - 2
        both = _jitted(loss, mask, keys)
        live = np.asarray(both(params, real, np.inf)[1][1].norms)[: B - 2]
        assert live.max() > np.median(live) > live.min()  # the median clips some, not all
        # Python floats throughout: one traced signature, so one compile for every bound
        for clip in (0.5 * live.min(), 2.0 * live.max(), np.median(live), np.inf):
            fast, slow = both(params, real, float(clip))
            _assert_same(fast, slow)
            assert np.all(fast[1].norms[B - 2 :] == 0)  # padded rows: norm 0, contribute 0


def test_per_layer_bounds():
    """Per-leaf bounds: each leaf clipped to its own norm."""
    with jax.enable_x64(True):
        loss, params, real = _problem((16, 16), nn.leaky_relu)
        keys = jax.random.split(jax.random.key(4), B)
        mask = jnp.ones(B, bool)
        bounds = clipping.per_layer_clip_norms(params, 1.0)
        _assert_same(*_both(loss, params, real, mask, keys, bounds))


def test_dp_gan_critic_loss_with_its_generator_state():
    """dp-GAN's own loss (make_critic_loss: generator as model state, the Critic module)."""
    with jax.enable_x64(True):
        generator = Generator((6,), (("tanh", 2), ("categorical", 3)))
        critic = Critic((12, 12))
        loss = make_critic_loss(generator, critic, latent_dim=3, gp_weight=10.0)
        assert isinstance(loss, GradientPenaltyLoss)
        g_params = _f64(generator.init(jax.random.key(5), jnp.zeros((1, 3))))
        state = GeneratorState(g_params, (), g_params)
        params = _f64(critic.init(jax.random.key(6), jnp.zeros((1, 5))))
        real = jax.random.uniform(jax.random.key(7), (B, 5), jnp.float64, -1, 1)
        keys = jax.random.split(jax.random.key(8), B)
        mask = jnp.arange(B) != 3
        bound = clipping.bind_model_state(loss, state)
        assert isinstance(bound, GradientPenaltyLoss)  # binding keeps the parts
        both = _jitted(bound, mask, keys)  # one compile for both bounds
        for clip in (0.3, np.inf):
            _assert_same(*both(params, real, clip))


def test_every_clipped_contribution_within_bound():
    with jax.enable_x64(True):
        loss, params, real = _problem((16, 16), nn.leaky_relu, scale=3.0)
        keys = jax.random.split(jax.random.key(9), B)
        clip = 0.7
        one = jax.jit(
            lambda m: dpstep.clipped_grad_sum(
                loss, params, real, m, keys, l2_clip_norm=clip, method="ghost_penalty"
            )
        )
        _, info = one(jnp.ones(B, bool))
        for i in range(B):
            out, _ = one(jnp.arange(B) == i)
            norm = np.sqrt(sum(float(jnp.sum(g**2)) for g in jax.tree_util.tree_leaves(out.grads)))
            assert norm <= clip * (1 + 1e-12)
            np.testing.assert_allclose(norm, min(float(info.norms[i]), clip), rtol=1e-10)


def test_non_finite_example_is_dropped_like_the_general_path():
    def points(example, key):
        real, fake, interp = _points(example, key)
        return real, jnp.where(example[0] > 50, jnp.nan, fake), interp

    with jax.enable_x64(True):
        loss, params, real = _problem((8,), nn.leaky_relu, points=points)
        real = real.at[2, 0].set(100.0)
        keys = jax.random.split(jax.random.key(2), B)
        fast, slow = _both(loss, params, real, jnp.ones(B, bool), keys, 1.0)
        assert bool(fast[1].nonfinite[2]) and int(fast[1].num_nonfinite) == 1
        for a, b in zip(
            jax.tree_util.tree_leaves(fast[0].grads), jax.tree_util.tree_leaves(slow[0].grads)
        ):
            assert np.all(np.isfinite(a))
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# -- the structural check ---------------------------------------------------------------------


class Product(nn.Module):
    """Piecewise linear per layer, but the score multiplies two layer outputs."""

    @nn.compact
    def __call__(self, x):
        h = nn.leaky_relu(nn.Dense(4)(x))
        return nn.Dense(1)(h)[0] * nn.Dense(1)(x)[0]


class Regularised(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(1)
        return dense(x)[0] + jnp.sum(dense.variables["params"]["kernel"] ** 2)


class Convolutional(nn.Module):
    @nn.compact
    def __call__(self, x):
        return jnp.sum(nn.Conv(2, (3,))(x[:, None]))


def _module_loss(module, d=D):
    params = module.init(jax.random.key(0), jnp.zeros(d))
    return GradientPenaltyLoss(lambda p, x: module.apply(p, x), _points, 10.0), params


@pytest.mark.parametrize(
    ("activation", "name"),
    [(nn.tanh, "tanh"), (nn.softplus, ""), (nn.gelu, ""), (nn.elu, ""), (nn.sigmoid, "logistic")],
)
def test_smooth_activation_is_refused(activation, name):
    loss, params, real = _problem((8, 8), activation)
    reason = gp.penalty_support(loss, params, real[0])
    assert reason is not None and "not piecewise linear" in reason and name in reason
    example = real[:1]
    assert dpstep.choose_method(loss, params, example) == "general"
    with pytest.raises(ValueError, match="ghost_penalty' is not exact.*not piecewise linear"):
        dpstep.choose_method(loss, params, example, method="ghost_penalty")
    with pytest.raises(gp.GhostUnsupported, match="not piecewise linear"):
        gp.clipped_sum_penalty(
            loss, params, real, jnp.ones(B, bool), jax.random.split(jax.random.key(0), B),
            l2_clip_norm=1.0,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("module", "match"),
    [
        (Product(), "not piecewise linear"),
        (Regularised(), "parameters are used outside"),
        (Convolutional(), "Dense layers only"),
        (SequenceCritic(4, 5, 1), "only through Dense layers"),
    ],
    ids=["product", "regulariser", "conv", "lstm"],
)
def test_structural_check_refuses(module, match):
    loss, params = _module_loss(module)
    reason = gp.penalty_support(loss, params, jnp.zeros(D))
    assert reason is not None
    assert re.search(match, reason), reason
    assert dpstep.choose_method(loss, params, jnp.zeros((1, D))) == "general"


def test_a_plain_loss_is_not_a_penalty_loss():
    def plain(p, x, k):
        return jnp.sum(x)

    assert "expected a GradientPenaltyLoss" in gp.penalty_support(plain, {}, jnp.zeros(D))
    with pytest.raises(ValueError, match="ghost_penalty' is not exact"):
        dpstep.choose_method(plain, {}, jnp.zeros((1, D)), method="ghost_penalty")


def test_auto_takes_the_penalty_path_and_ghost_still_refuses():
    loss, params, real = _problem((8, 8), nn.leaky_relu)
    assert gp.penalty_support(loss, params, real[0]) is None
    assert dpstep.choose_method(loss, params, real[:1]) == "ghost_penalty"
    assert dpstep.choose_method(loss, params, real[:1], method="ghost_penalty") == "ghost_penalty"
    assert dpstep.choose_method(loss, params, real[:1], method="general") == "general"
    with pytest.raises(ValueError, match="method='ghost' is not exact"):
        dpstep.choose_method(loss, params, real[:1], method="ghost")


def test_dp_step_on_the_penalty_path_matches_the_general_step():
    """make_dp_step with a model state: same parameters after one noisy step (same noise key)."""
    generator = Generator((6,), (("tanh", 5),))
    critic = Critic((8,))
    loss = make_critic_loss(generator, critic, latent_dim=3, gp_weight=10.0)
    g_params = generator.init(jax.random.key(1), jnp.zeros((1, 3)))
    state = GeneratorState(g_params, (), g_params)
    params = critic.init(jax.random.key(2), jnp.zeros((1, 5)))
    real = jax.random.uniform(jax.random.key(3), (B, 5), minval=-1, maxval=1)
    mask, key = jnp.arange(B) < 8, jax.random.key(4)
    chain = optax.chain(dp_aggregate(key, noise_multiplier=1.0, expected_batch_size=8.0),
                        optax.adam(1e-2))  # fmt: skip
    out = {}
    for method in ("general", "ghost_penalty"):
        step = make_dp_step(loss, chain, l2_clip_norm=0.5, method=method, with_model_state=True)
        out[method] = step(params, chain.init(params), real, mask, key, state)
    for a, b in zip(
        jax.tree_util.tree_leaves(out["general"][0]),
        jax.tree_util.tree_leaves(out["ghost_penalty"][0]),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out["general"][2].norms, out["ghost_penalty"][2].norms, rtol=1e-4)


class Shared(nn.Module):
    """One Dense layer applied twice (its per-example gradient sums both calls)."""

    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(D)
        h = nn.leaky_relu(dense(nn.leaky_relu(dense(x))))
        return nn.Dense(1)(h)[0]


def test_a_layer_applied_twice_is_normed_jointly():
    with jax.enable_x64(True):
        module = Shared()
        params = _f64(module.init(jax.random.key(0), jnp.zeros(D)))
        loss = GradientPenaltyLoss(lambda p, x: module.apply(p, x), _points, 10.0)
        assert gp.penalty_support(loss, params, jnp.zeros(D)) is None
        real = jax.random.normal(jax.random.key(1), (B, D), jnp.float64)
        keys = jax.random.split(jax.random.key(5), B)
        both = _jitted(loss, jnp.ones(B, bool), keys)  # one compile for both bounds
        for clip in (0.5, np.inf):
            _assert_same(*both(params, real, clip))
