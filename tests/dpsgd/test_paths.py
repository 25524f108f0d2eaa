"""Per-example gradients and the two paths to the clipped sum (general vmap vs ghost)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dpsgd_problems import mlp_problem

from jdp.dpsgd import clipping
from jdp.dpsgd import ghost_clipping as gc
from jdp.dpsgd import noise as dpnoise
from jdp.dpsgd import step as dpstep
from jdp.nn.lstm import LSTM
from jdp.nn.mlp import MLP

B = 6
KEYS = jax.random.split(jax.random.key(7), B)


class ConvNet(nn.Module):
    use_bias: bool = True

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(4, (3, 3), strides=(2, 1), padding="SAME", use_bias=self.use_bias)(x)
        x = nn.relu(x)
        x = nn.Conv(2, (2, 2), padding="VALID", kernel_dilation=(1, 2), use_bias=self.use_bias)(x)
        return jnp.sum(x, axis=(-3, -2))


class EmbedNet(nn.Module):
    use_bias: bool = True

    @nn.compact
    def __call__(self, ids):
        h = nn.Embed(7, 5)(ids)  # ids repeat within a sequence: the equality Gram matters
        return nn.Dense(2, use_bias=self.use_bias)(jnp.tanh(h)).sum(-2)


def _conv_problem(use_bias):
    model = ConvNet(use_bias)
    x = jax.random.normal(jax.random.key(1), (B, 6, 5, 2))
    params = model.init(jax.random.key(0), x[0])
    return (lambda p, ex, k: jnp.sum(jnp.sin(model.apply(p, ex)))), params, x


def _embed_problem(use_bias):
    model = EmbedNet(use_bias)
    ids = jax.random.randint(jax.random.key(1), (B, 9), 0, 7)
    params = model.init(jax.random.key(0), ids[0])
    return (lambda p, ex, k: jnp.sum(model.apply(p, ex) ** 2)), params, ids


def _dense_problem(use_bias):
    return mlp_problem(B, use_bias)


def _lstm_problem():
    model = LSTM(4, 2)
    xs = jax.random.normal(jax.random.key(1), (B, 3, 3))
    params = model.init(jax.random.key(0), xs[0])
    return (lambda p, ex, k: jnp.sum(model.apply(p, ex) ** 2)), params, xs


def _wgan_gp_problem():
    """WGAN-GP critic loss for one real example: D(fake) - D(real) + 10 (||grad D(x_hat)|| - 1)^2."""
    critic = MLP((8, 1), activation=nn.tanh)
    real = jax.random.normal(jax.random.key(1), (B, 3))
    fake = jax.random.normal(jax.random.key(2), (B, 3))
    params = critic.init(jax.random.key(0), real[0])

    def loss_fn(p, ex, key):
        d = lambda x: critic.apply(p, x)[0]
        eps = jax.random.uniform(key)
        x_hat = eps * ex["real"] + (1 - eps) * ex["fake"]
        penalty = (jnp.linalg.norm(jax.grad(d)(x_hat)) - 1.0) ** 2
        return d(ex["fake"]) - d(ex["real"]) + 10.0 * penalty

    return loss_fn, params, {"real": real, "fake": fake}


def _loop_grads(loss_fn, params, batch):
    rows = []
    grad = jax.jit(jax.grad(loss_fn))
    for i in range(B):
        example = jax.tree_util.tree_map(lambda x, i=i: x[i], batch)
        rows.append(grad(params, example, KEYS[i]))
    return jax.tree_util.tree_map(lambda *g: jnp.stack(g), *rows)


@pytest.mark.parametrize("problem", [lambda: _dense_problem(True), _lstm_problem, _wgan_gp_problem])
def test_per_example_grads_equal_python_loop(problem):
    loss_fn, params, batch = problem()
    got, _ = jax.jit(lambda p, b: clipping.per_example_grads(loss_fn, p, b, KEYS))(params, batch)
    want = _loop_grads(loss_fn, params, batch)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


PROBLEMS = {
    "dense": lambda: _dense_problem(True),
    "dense_nobias": lambda: _dense_problem(False),
    "conv": lambda: _conv_problem(True),
    "conv_nobias": lambda: _conv_problem(False),
    "embed": lambda: _embed_problem(True),
    "embed_nobias": lambda: _embed_problem(False),
    "lstm": _lstm_problem,
}


CASES = [(name, 0.05) for name in sorted(PROBLEMS)] + [("dense", np.inf), ("embed", np.inf)]


@pytest.mark.parametrize(("name", "clip"), CASES, ids=[f"{n}-clip{c}" for n, c in CASES])
def test_ghost_clipped_sum_equals_general(name, clip):
    loss_fn, params, batch = PROBLEMS[name]()
    mask = jnp.arange(B) < B - 1  # one padded row
    fast, fast_info = jax.jit(
        lambda p, b: gc.clipped_sum_ghost(loss_fn, p, b, mask, KEYS, l2_clip_norm=clip)
    )(params, batch)
    slow, slow_info = jax.jit(
        lambda p, b: clipping.clipped_sum_general(
            loss_fn, p, b, mask, KEYS, l2_clip_norm=clip, microbatch_size=3
        )
    )(params, batch)
    np.testing.assert_allclose(fast_info.norms, slow_info.norms, rtol=1e-4, atol=1e-6)
    for a, b in zip(
        jax.tree_util.tree_leaves(fast.grads), jax.tree_util.tree_leaves(slow.grads), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * min(clip, 1.0))
    if np.isfinite(clip):
        example = jax.tree_util.tree_map(lambda x: x[:1], batch)
        assert dpstep.choose_method(loss_fn, params, example) == "ghost"


def test_gradient_penalty_is_routed_to_general_path():
    """Replacing the layers' outputs by parameter-free values also removes their Jacobian
    from the inner jax.grad, so the dependence test alone would pass this loss: the
    structural check refuses layers traced inside a transformation of the loss."""
    loss_fn, params, batch = _wgan_gp_problem()
    reason = gc.ghost_support(loss_fn, params, jax.tree_util.tree_map(lambda x: x[:1], batch))
    assert "inside a transformation" in reason
    assert (
        dpstep.choose_method(loss_fn, params, jax.tree_util.tree_map(lambda x: x[:1], batch))
        == "general"
    )


def test_parameters_outside_supported_layers_use_general_path():
    loss_fn, params, batch = _dense_problem(True)
    regularised = lambda p, ex, k: (
        loss_fn(p, ex, k) + sum(jnp.sum(x**2) for x in jax.tree_util.tree_leaves(p))
    )
    example = jax.tree_util.tree_map(lambda x: x[:1], batch)
    assert dpstep.choose_method(regularised, params, example) == "general"

    class Norm(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.LayerNorm()(nn.Dense(3)(x))

    model = Norm()
    p2 = model.init(jax.random.key(0), jnp.zeros(4))
    assert "not used" in gc.ghost_support(
        lambda p, ex, k: jnp.sum(model.apply(p, ex["x"])), p2, example
    )


@pytest.mark.parametrize("name", ["dense", "lstm", "conv"])
@pytest.mark.parametrize("method", ["general", "ghost"])
def test_every_clipped_norm_within_bound(name, method):
    loss_fn, params, batch = PROBLEMS[name]()
    grads, _ = clipping.per_example_grads(loss_fn, params, batch, KEYS)
    norms = np.sqrt(sum(np.asarray(s) for s in clipping.leaf_sq_norms(grads)))
    clip = float(np.median(norms))
    one = jax.jit(
        lambda m: dpstep.clipped_grad_sum(
            loss_fn, params, batch, m, KEYS, l2_clip_norm=clip, method=method
        )
    )
    # Each example alone: its clipped sum is its clipped gradient.
    for i in range(B):
        out, _ = one(jnp.arange(B) == i)
        norm = np.sqrt(sum(float(jnp.sum(g**2)) for g in jax.tree_util.tree_leaves(out.grads)))
        assert norm <= clip * (1 + 1e-5)
        np.testing.assert_allclose(norm, min(norms[i], clip), rtol=1e-4)


def test_per_layer_clipping_bounds_each_leaf():
    loss_fn, params, batch = _dense_problem(True)
    bounds = clipping.per_layer_clip_norms(params, 0.1)
    assert float(clipping.l2_sensitivity(bounds)) == pytest.approx(0.1)
    for method in ("general", "ghost"):
        one = jax.jit(
            lambda m, method=method: dpstep.clipped_grad_sum(
                loss_fn, params, batch, m, KEYS, l2_clip_norm=bounds, method=method
            )
        )
        for i in range(B):
            out, _ = one(jnp.arange(B) == i)
            for g, c in zip(
                jax.tree_util.tree_leaves(out.grads), jax.tree_util.tree_leaves(bounds), strict=True
            ):
                assert float(jnp.linalg.norm(g)) <= c * (1 + 1e-5)


@pytest.mark.parametrize("method", ["general", "ghost"])
@pytest.mark.parametrize("per_layer", [False, True], ids=["global", "per_layer"])
def test_add_remove_sensitivity_random_and_adversarial(method, per_layer):
    """||S(D + x) - S(D)|| <= sensitivity for random and extreme added records."""
    loss_fn, params, batch = _dense_problem(True)
    clip = clipping.per_layer_clip_norms(params, 0.3) if per_layer else 0.3
    bound = float(clipping.l2_sensitivity(clip))
    extreme = {"x": batch["x"].at[0].set(1e4).at[1].set(-1e4), "y": batch["y"]}
    f = jax.jit(
        lambda b, m: (
            dpstep.clipped_grad_sum(loss_fn, params, b, m, KEYS, l2_clip_norm=clip, method=method)[
                0
            ].grads
        )
    )
    rng = np.random.default_rng(0)
    worst = 0.0
    for data in (batch, extreme):
        for _ in range(6):
            mask = rng.random(B) < 0.5
            i = int(rng.integers(B))
            with_x, without_x = mask.copy(), mask.copy()
            with_x[i], without_x[i] = True, False
            a, b = f(data, jnp.asarray(with_x)), f(data, jnp.asarray(without_x))
            diff = np.sqrt(
                sum(
                    float(jnp.sum((u - v) ** 2))
                    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b))
                )
            )
            worst = max(worst, diff)
    assert worst <= bound * (1 + 1e-5)
    assert worst > 0.5 * bound  # the extreme records are clipped to (nearly) the bound


# -- ghost entry points: exact norms or a refusal (issue 10, item 4) ---------------------------
class _TwiceNet(nn.Module):
    """One Dense layer applied twice (same kernel, same bias)."""

    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(3)
        return dense(jnp.tanh(dense(x)))


def _shared_kernel_problem(separate_biases: bool):
    """A Dense kernel used by two calls, with two different biases or with the same one."""
    x = jax.random.normal(jax.random.key(1), (B, 3))
    if not separate_biases:
        model = _TwiceNet()
        params = model.init(jax.random.key(0), x[0])
        return (lambda p, ex, k: jnp.sum(jnp.sin(3.0 * model.apply(p, ex)))), params, x
    dense = nn.Dense(3)
    init = dense.init(jax.random.key(0), x[0])["params"]
    params = {"kernel": init["kernel"], "b1": init["bias"] + 0.3, "b2": init["bias"] - 0.7}

    def loss_fn(p, ex, k):
        h = dense.apply({"params": {"kernel": p["kernel"], "bias": p["b1"]}}, ex)
        y = dense.apply({"params": {"kernel": p["kernel"], "bias": p["b2"]}}, jnp.tanh(h))
        return jnp.sum(jnp.sin(3.0 * y))

    return loss_fn, params, x


def _ghost_entry_points(loss_fn, params, batch, mask, clip):
    """(name, ClippedSum, StepInfo) of every public ghost entry point, and the general path."""
    from jdp.dpsgd import parallel

    mesh = parallel.data_mesh(jax.devices()[:1])
    key = jax.random.key(5)
    keys = jax.random.split(key, mask.shape[0])
    sum_fn = dpstep.make_clipped_sum_fn(loss_fn, method="ghost")
    sharded = dpstep.make_clipped_sum_fn(loss_fn, method="ghost", mesh=mesh)
    general = dpstep.make_clipped_sum_fn(loss_fn, method="general")
    return {
        "clipped_sum_ghost": jax.jit(
            lambda p, b: gc.clipped_sum_ghost(loss_fn, p, b, mask, keys, l2_clip_norm=clip)
        )(params, batch),
        "clipped_grad_sum": jax.jit(
            lambda p, b: dpstep.clipped_grad_sum(
                loss_fn, p, b, mask, keys, l2_clip_norm=clip, method="ghost"
            )
        )(params, batch),
        "make_clipped_sum_fn": sum_fn(params, batch, mask, key, clip),
        "make_clipped_sum_fn(mesh=)": sharded(params, batch, mask, key, clip),
    }, general(params, batch, mask, key, clip)


def _assert_same_sum(got, want, clip, what):
    np.testing.assert_allclose(got[1].norms, want[1].norms, rtol=1e-4, atol=1e-6, err_msg=what)
    for a, b in zip(
        jax.tree_util.tree_leaves(got[0].grads),
        jax.tree_util.tree_leaves(want[0].grads),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * clip, err_msg=what)


@pytest.mark.parametrize("separate_biases", [True, False], ids=["two_biases", "same_layer"])
def test_shared_kernel_is_exact_on_every_ghost_entry_point(separate_biases):
    """A kernel shared by two calls: every ghost entry point gives the general path's norms,
    clipped sum and step (the per-leaf norm used to be overwritten per call group)."""
    loss_fn, params, batch = _shared_kernel_problem(separate_biases)
    mask = jnp.arange(B) < B - 1
    clip = 0.05
    results, general = _ghost_entry_points(loss_fn, params, batch, mask, clip)
    for name, got in results.items():
        _assert_same_sum(got, general, clip, name)
    # each example alone: its clipped contribution has norm min(||g_i||, C) <= C
    one = jax.jit(
        lambda m: (
            dpstep.clipped_grad_sum(
                loss_fn, params, batch, m, KEYS, l2_clip_norm=clip, method="ghost"
            )[0].grads
        )
    )
    for i in range(B):
        g = one(jnp.arange(B) == i)
        norm = np.sqrt(sum(float(jnp.sum(x**2)) for x in jax.tree_util.tree_leaves(g)))
        assert norm <= clip * (1 + 1e-5)
    # the jitted steps (single device and the parallel twin) equal the general step
    from jdp.dpsgd import parallel

    chain = optax.chain(
        dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=1.0, expected_batch_size=4.0),
        optax.sgd(1.0),
    )
    state = chain.init(params)
    mesh = parallel.data_mesh(jax.devices()[:1])
    steps = {
        "make_dp_step": dpstep.make_dp_step(loss_fn, chain, l2_clip_norm=clip, method="ghost"),
        "make_dp_step(mesh=)": dpstep.make_dp_step(
            loss_fn, chain, l2_clip_norm=clip, method="ghost", mesh=mesh
        ),
    }
    want = dpstep.make_dp_step(loss_fn, chain, l2_clip_norm=clip, method="general")(
        params, state, batch, mask, jax.random.key(9)
    )[0]
    for name, step in steps.items():
        got = step(params, state, batch, mask, jax.random.key(9))[0]
        for a, b in zip(
            jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg=name)


def test_parameters_outside_layers_are_refused_on_every_ghost_entry_point():
    """A regulariser reads the kernel outside its layer: the structural check refuses it at
    every ghost entry point (not only in train's support probe)."""
    loss_fn, params, batch = _dense_problem(True)
    regularised = lambda p, ex, k: (
        loss_fn(p, ex, k) + sum(jnp.sum(x**2) for x in jax.tree_util.tree_leaves(p))
    )
    mask = jnp.ones(B, bool)
    for name, call in {
        "clipped_sum_ghost": lambda: gc.clipped_sum_ghost(
            regularised, params, batch, mask, KEYS, l2_clip_norm=0.1
        ),
        "clipped_grad_sum": lambda: jax.jit(
            lambda b: dpstep.clipped_grad_sum(
                regularised, params, b, mask, KEYS, l2_clip_norm=0.1, method="ghost"
            )
        )(batch),
        "make_clipped_sum_fn": lambda: dpstep.make_clipped_sum_fn(regularised, method="ghost")(
            params, batch, mask, jax.random.key(0), 0.1
        ),
    }.items():
        with pytest.raises(gc.GhostUnsupported, match="outside"):
            call()
            pytest.fail(f"{name} accepted a loss the ghost path cannot handle")


@pytest.mark.parametrize("bad_id", [-1, 7])
def test_embedding_ids_outside_the_table_raise_on_the_ghost_path(bad_id):
    """id -1 reads row 6 (NumPy wrap) but the ghost Gram compared raw ids: under-norm."""
    loss_fn, params, ids = _embed_problem(True)
    ids = ids.at[2, 0].set(bad_id).at[2, 1].set(6)
    f = jax.jit(
        lambda b: dpstep.clipped_grad_sum(
            loss_fn, params, b, jnp.ones(B, bool), KEYS, l2_clip_norm=0.05, method="ghost"
        )
    )
    with pytest.raises(Exception, match=r"expected embedding ids in \[0, 7\)"):
        jax.block_until_ready(f(ids))


# -- the general path's micro-batch -----------------------------------------------------------


def test_auto_microbatch_size_is_a_power_of_two_within_the_memory_bound():
    rule = clipping.auto_microbatch_size
    assert rule(256, 24_449) == 32  # dp-GAN's critic: 32 x 24,449 x 4 B <= 4 MiB < 64 x ...
    assert rule(256, 4_385) == 128
    assert rule(256, 795_010) == 1  # one example's gradients already fill the bound
    assert rule(256, 10**9) == 1
    assert rule(20, 100) == 20  # capped at the batch
    assert rule(256, 24_449, itemsize=8) == 16
    for n in (1, 10, 1000, 10**5):
        m = rule(10**9, n)
        assert m & (m - 1) == 0 and m * n * 4 <= clipping.AUTO_MICROBATCH_BYTES
        assert 2 * m * n * 4 > clipping.AUTO_MICROBATCH_BYTES


@pytest.mark.parametrize("micro", ["auto", 4, 5, None])
def test_general_path_any_microbatch_equals_the_whole_batch(micro):
    """A micro-batch that does not divide the batch pads it with masked rows: same result."""
    loss_fn, params, batch = _dense_problem(True)
    mask = jnp.arange(B) < B - 1
    got = jax.jit(
        lambda p: clipping.clipped_sum_general(
            loss_fn, p, batch, mask, KEYS, l2_clip_norm=0.05, microbatch_size=micro
        )
    )(params)
    want = jax.jit(
        lambda p: clipping.clipped_sum_general(loss_fn, p, batch, mask, KEYS, l2_clip_norm=0.05)
    )(params)
    assert got[1].norms.shape == (B,)
    np.testing.assert_allclose(got[1].norms, want[1].norms, rtol=1e-6)
    for a, b in zip(
        jax.tree_util.tree_leaves(got[0].grads), jax.tree_util.tree_leaves(want[0].grads)
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_performance_defaults_to_the_automatic_microbatch():
    from jdp.dpsgd import AutoClipping, GeneralClipping, Performance

    assert Performance().clipping.microbatch_size == "auto"
    assert Performance(clipping="general").clipping.microbatch_size == "auto"
    assert Performance().chunk_multiple == 1  # the general path pads an "auto" chunk itself
    assert Performance(clipping=GeneralClipping(microbatch_size=8)).chunk_multiple == 8
    assert AutoClipping(microbatch_size=None).microbatch_size is None
    with pytest.raises(ValueError, match="microbatch_size to be a count, 'auto' or None"):
        GeneralClipping(microbatch_size="fast")


def test_a_layer_with_its_own_product_is_refused():
    """A Dense whose dot_general is not the default computes something else than ``a W``:
    the ghost identity would give a wrong norm, and only a numerical comparison would see it."""

    def scaled_dot(lhs, rhs, *args, **kwargs):
        return jax.lax.dot_general(lhs, 2.0 * rhs, *args, **kwargs)

    layer = nn.Dense(3, dot_general=scaled_dot)
    params = layer.init(jax.random.key(0), jnp.zeros(4))
    loss_fn = lambda p, ex, k: jnp.sum(layer.apply(p, ex["x"]) ** 2)
    example = {"x": jnp.ones((1, 4))}
    assert "dot_general" in gc.ghost_support(loss_fn, params, example)
    assert dpstep.choose_method(loss_fn, params, example) == "general"
    # the numerical comparison sees the difference the structure refuses on its own
    plain = nn.Dense(3)
    plain_loss = lambda p, ex, k: jnp.sum(plain.apply(p, ex["x"]) ** 2)
    assert gc.compare_paths(plain_loss, params, example) is None
    with pytest.raises(gc.GhostUnsupported, match="dot_general"):
        gc.compare_paths(loss_fn, params, example)


def test_compare_paths_reports_a_loss_it_cannot_check():
    loss_fn, params, batch = _dense_problem(True)
    example = jax.tree_util.tree_map(lambda x: x[:1], batch)
    broken = lambda p, ex, k: loss_fn(p, ex, k) * jnp.nan
    assert "not finite" in gc.compare_paths(broken, params, example)
