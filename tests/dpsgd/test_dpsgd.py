"""The DP step: no-privacy limit, noise scale, padding, accumulation, compilation, errors."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dpsgd_problems import mlp_problem
from scipy import stats

from jdp.dpsgd import clipping
from jdp.dpsgd import noise as dpnoise
from jdp.dpsgd import step as dpstep
from jdp.nn.mlp import MLP

B = 8


@pytest.mark.parametrize("method", ["general", "ghost"])
def test_no_privacy_limit_is_the_mean_gradient_step(method):
    loss_fn, params, data = mlp_problem(B)
    lr = 0.1
    chain = optax.chain(
        dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=0.0, expected_batch_size=B),
        optax.sgd(lr),
    )
    step = dpstep.make_dp_step(
        loss_fn, chain, l2_clip_norm=np.inf, method=method, microbatch_size=4
    )
    got, _, _ = step(params, chain.init(params), data, jnp.ones(B, bool), jax.random.key(1))
    mean_grad = jax.grad(lambda p: jnp.mean(jax.vmap(lambda e: loss_fn(p, e, None))(data)))(params)
    want = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, mean_grad)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_noise_std_is_noise_multiplier_times_clip():
    z, clip, n = 1.7, 0.3, 40_000
    tree = {"a": jnp.zeros((100, 200)), "b": jnp.zeros(20_000)}
    agg = dpnoise.dp_aggregate(jax.random.key(3), noise_multiplier=z, expected_batch_size=1.0)
    out, state = agg.update(clipping.ClippedSum(tree, jnp.float32(clip)), agg.init(tree))
    noise = np.concatenate([np.ravel(x) for x in jax.tree_util.tree_leaves(out)]).astype(np.float64)
    assert noise.size == n
    sigma = z * clip
    # (n-1) s^2 / sigma^2 ~ chi2(n-1): two-sided test at level 1e-6.
    stat = (n - 1) * noise.var(ddof=1) / sigma**2
    lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], n - 1)
    assert lo < stat < hi
    # the mean is N(0, sigma^2 / n)
    assert abs(noise.mean()) < stats.norm.ppf(1 - 0.5e-6) * sigma / np.sqrt(n)
    # the key is split at each update: the next draw is new, and the same key repeats
    out2, _ = agg.update(clipping.ClippedSum(tree, jnp.float32(clip)), state)
    assert not np.allclose(out2["b"], out["b"])
    again, _ = agg.update(clipping.ClippedSum(tree, jnp.float32(clip)), agg.init(tree))
    np.testing.assert_array_equal(again["b"], out["b"])


def test_normalises_by_expected_batch_size():
    tree = {"w": jnp.full(3, 6.0)}
    agg = dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=0.0, expected_batch_size=4.0)
    out, _ = agg.update(clipping.ClippedSum(tree, jnp.float32(1.0)), agg.init(tree))
    np.testing.assert_allclose(out["w"], 1.5)


@pytest.mark.parametrize("method", ["general", "ghost"])
def test_padded_rows_change_nothing(method):
    loss_fn, params, data = mlp_problem(B)
    keys = jax.random.split(jax.random.key(2), B)
    mask = jnp.arange(B) < 5
    f = jax.jit(
        lambda d: dpstep.clipped_grad_sum(
            loss_fn, params, d, mask, keys, l2_clip_norm=0.5, method=method
        )[0]
    )
    other = 50.0 * jax.random.normal(jax.random.key(4), data["x"][5:].shape)
    garbage = {"x": data["x"].at[5:].set(other), "y": data["y"].at[5:].set(2)}
    a, b = f(data), f(garbage)
    for u, v in zip(
        jax.tree_util.tree_leaves(a.grads), jax.tree_util.tree_leaves(b.grads), strict=True
    ):
        np.testing.assert_array_equal(u, v)
    real = jax.tree_util.tree_map(lambda x: x[:5], data)
    c, _ = dpstep.clipped_grad_sum(
        loss_fn, params, real, jnp.ones(5, bool), keys[:5], l2_clip_norm=0.5, method=method
    )
    for u, v in zip(
        jax.tree_util.tree_leaves(a.grads), jax.tree_util.tree_leaves(c.grads), strict=True
    ):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-7)


def test_accumulated_chunks_equal_one_batch():
    loss_fn, params, data = mlp_problem(B)
    keys = jax.random.split(jax.random.key(2), B)
    whole, _ = clipping.clipped_sum_general(
        loss_fn, params, data, jnp.ones(B, bool), keys, l2_clip_norm=0.5
    )
    half = lambda s: jax.tree_util.tree_map(lambda x: x[s], data)
    parts = [
        clipping.clipped_sum_general(
            loss_fn, params, half(s), jnp.ones(B // 2, bool), keys[s], l2_clip_norm=0.5
        )[0]
        for s in (slice(0, B // 2), slice(B // 2, B))
    ]
    acc = clipping.add_clipped_sums(*parts)
    assert float(acc.l2_sensitivity) == 0.5
    for u, v in zip(
        jax.tree_util.tree_leaves(acc.grads), jax.tree_util.tree_leaves(whole.grads), strict=True
    ):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-7)


def test_no_recompilation_on_second_call():
    loss_fn, params, data = mlp_problem(B)
    chain = optax.chain(
        dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=1.0, expected_batch_size=B),
        optax.adam(1e-3),
    )
    step = dpstep.make_dp_step(loss_fn, chain, l2_clip_norm=1.0, method="ghost")
    opt_state = chain.init(params)
    p1, o1, _ = step(params, opt_state, data, jnp.ones(B, bool), jax.random.key(1))
    other = {"x": data["x"] + 1.0, "y": data["y"][::-1]}
    step(p1, o1, other, jnp.arange(B) < 3, jax.random.key(2))
    assert step._cache_size() == 1


def test_invalid_settings_raise_clear_errors():
    loss_fn, params, _ = mlp_problem(B)
    with pytest.raises(ValueError, match="expected l2_clip_norm > 0, got 0"):
        dpstep.make_dp_step(loss_fn, optax.sgd(1.0), l2_clip_norm=0.0)
    with pytest.raises(ValueError, match="expected l2_clip_norm > 0, got -1"):
        clipping.check_clip_norm({"a": 1.0, "b": -1.0})
    with pytest.raises(ValueError, match="expected noise_multiplier >= 0, got -0.5"):
        dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=-0.5, expected_batch_size=4)
    with pytest.raises(ValueError, match="expected expected_batch_size > 0"):
        dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=1.0, expected_batch_size=0)
    with pytest.raises(ValueError, match="leading batch axis"):
        clipping.check_batch({"x": jnp.float32(1.0)})
    with pytest.raises(ValueError, match="share one batch size"):
        clipping.check_batch({"x": jnp.zeros((3, 2)), "y": jnp.zeros(4)})
    with pytest.raises(ValueError, match=r"expected mask of shape \(3,\)"):
        clipping.check_batch(jnp.zeros((3, 2)), jnp.ones(4, bool))
    agg = dpnoise.dp_aggregate(jax.random.key(0), noise_multiplier=1.0, expected_batch_size=4)
    with pytest.raises(TypeError, match="expected a ClippedSum"):
        agg.update(params, agg.init(params))


# -- non-finite per-example gradients (issue 10, item 2) --------------------------------------
def test_clip_factor_is_zero_for_non_finite_norms():
    norms = jnp.array([0.0, 0.5, 2.0, jnp.inf, jnp.nan])
    np.testing.assert_array_equal(clipping.clip_factor(norms, 1.0), [1.0, 1.0, 0.5, 0.0, 0.0])
    np.testing.assert_array_equal(clipping.clip_factor(norms, jnp.inf), [1.0, 1.0, 1.0, 0.0, 0.0])


def _log_zero_problem():
    """The MLP loss plus ``-log(w ||f(x)||^2)``: a record with ``w = 0`` has a NaN gradient."""
    _, params, data = mlp_problem(B)
    model = MLP((6, 3))

    def loss_fn(p, ex, key):
        del key
        out = model.apply(p, ex["x"])
        ce = optax.softmax_cross_entropy_with_integer_labels(out, ex["y"])
        return ce - jnp.log(ex["w"] * jnp.sum(jnp.square(out)))

    return loss_fn, params, dict(data, w=jnp.ones(B).at[3].set(0.0))


@pytest.mark.parametrize("method", ["general", "ghost"])
@pytest.mark.parametrize("per_layer", [False, True], ids=["global", "per_layer"])
def test_non_finite_example_is_dropped_from_the_clipped_sum(method, per_layer):
    """Record 3's loss has log(0): its gradient is NaN. The clipped sum must be finite and
    equal to the sum without record 3, and the step diagnostics count it once."""
    loss_fn, params, data = _log_zero_problem()
    clip = clipping.per_layer_clip_norms(params, 0.5) if per_layer else 0.5
    keys = jax.random.split(jax.random.key(2), B)
    f = jax.jit(
        lambda m: dpstep.clipped_grad_sum(
            loss_fn, params, data, m, keys, l2_clip_norm=clip, method=method
        )
    )
    mask = jnp.arange(B) < B - 1  # one padded row too
    got, info = f(mask)
    want, want_info = f(mask.at[3].set(False))
    for u, v in zip(
        jax.tree_util.tree_leaves(got.grads), jax.tree_util.tree_leaves(want.grads), strict=True
    ):
        assert np.all(np.isfinite(u))
        np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7)
    assert int(info.num_nonfinite) == 1 and int(want_info.num_nonfinite) == 0
    assert np.asarray(info.nonfinite).tolist() == [i == 3 for i in range(B)]


# -- secure noise (issue 10, item 10b) --------------------------------------------------------
def test_secure_noise_lies_on_the_grid_has_the_claimed_std_and_repeats_with_the_key():
    z, clip, n = 1.7, 0.3, 40_000
    sigma = z * clip
    tree = {"a": jnp.full((100, 200), 0.123456), "b": jnp.linspace(-5.0, 5.0, 20_000)}
    agg = dpnoise.dp_aggregate(
        jax.random.key(3), noise_multiplier=z, expected_batch_size=1.0, secure_noise=True
    )
    out, state = agg.update(clipping.ClippedSum(tree, jnp.float32(clip)), agg.init(tree))
    lam = float(dpnoise.secure_noise_grid(jnp.float32(sigma)))
    assert lam == 2.0 ** np.ceil(np.log2(sigma / 256))  # the smallest power of two >= sigma/256
    for leaf in jax.tree_util.tree_leaves(out):
        steps = np.asarray(leaf, np.float64) / lam
        np.testing.assert_array_equal(steps, np.round(steps))  # on the grid lam * Z
    noise = np.concatenate(
        [
            np.ravel(np.asarray(o, np.float64) - np.asarray(t, np.float64))
            for o, t in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(tree))
        ]
    )
    assert noise.size == n
    # Gaussian std sigma plus a rounding error |r| <= lam / 2: the sample std lies in
    # [sigma, sigma + lam / 2] up to the chi-square(n-1) quantiles at level 1e-6.
    stat = (n - 1) * noise.var(ddof=1)
    assert stats.chi2.ppf(0.5e-6, n - 1) * sigma**2 < stat
    assert stat < stats.chi2.ppf(1 - 0.5e-6, n - 1) * (sigma + lam / 2) ** 2
    assert abs(noise.mean()) < stats.norm.ppf(1 - 0.5e-6) * (sigma + lam / 2) / np.sqrt(n)
    # same key, same output; the next update draws new noise
    again, _ = agg.update(clipping.ClippedSum(tree, jnp.float32(clip)), agg.init(tree))
    for a, b in zip(jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(out), strict=True):
        np.testing.assert_array_equal(a, b)
    out2, _ = agg.update(clipping.ClippedSum(tree, jnp.float32(clip)), state)
    assert not np.allclose(out2["b"], out["b"])


def test_secure_noise_without_noise_is_the_plain_mean():
    tree = {"w": jnp.full(3, 6.1)}
    agg = dpnoise.dp_aggregate(
        jax.random.key(0), noise_multiplier=0.0, expected_batch_size=4.0, secure_noise=True
    )
    out, _ = agg.update(clipping.ClippedSum(tree, jnp.float32(1.0)), agg.init(tree))
    np.testing.assert_allclose(out["w"], 6.1 / 4.0, rtol=1e-7)


def test_a_method_template_is_checked_by_one_rule():
    """``check_template`` is what every method config with DP-SGD calls: a template has no
    noise of its own, Poisson sampling, and the performance flags are an object."""
    from jdp.dpsgd import DPSGDConfig, Performance, check_template

    ok = DPSGDConfig(l2_clip_norm=1.0, sampling_prob=0.1, expected_batch_size=5.0, steps=3)
    why = {"calibrated_by": "M", "poisson_because": "add/remove"}
    check_template(ok, Performance(), **why)
    check_template(ok, **why)  # a config without performance flags
    with pytest.raises(TypeError, match="expected dpsgd to be a DPSGDConfig"):
        check_template({"l2_clip_norm": 1.0}, **why)
    with pytest.raises(ValueError, match="expected kip without noise_multiplier.*M calibrates"):
        check_template(ok.with_noise(1.0), field="kip", **why)
    with pytest.raises(ValueError, match=r"expected dpsgd.sampling='poisson' \(add/remove\)"):
        check_template(dataclasses.replace(ok,
                                   sampling="without_replacement"), **why)  # fmt: skip
    with pytest.raises(TypeError, match="expected performance to be a Performance"):
        check_template(ok, "ghost", **why)
