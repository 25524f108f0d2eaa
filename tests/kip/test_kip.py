"""kip.kip: the KIP loss, its per-target decomposition, the 3A loss (Eq. 6), fit_support."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kip import (
    KIPConfig,
    centred_one_hot,
    fit_support,
    kip_loss,
    make_kernel_fn,
    per_target_loss,
    relative_anchor_distance,
    threea_loss,
)

REG = 1e-3


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def blobs(n, seed, d=5, c=3):
    """``c`` Gaussian blobs with centred one-hot labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, c, size=n)
    centres = np.random.default_rng(99).normal(scale=2.0, size=(c, d))
    return centres[labels] + rng.normal(size=(n, d)), centred_one_hot(labels, c), labels


@pytest.fixture(scope="module")
def problem():
    xs, ys, _ = blobs(6, seed=1)
    xt, yt, _ = blobs(40, seed=2)
    return xs, ys, xt, yt


def test_kip_loss_matches_numpy(problem):
    xs, ys, xt, yt = problem
    f = make_kernel_fn(depth=1)
    k_ss, k_ts = np.asarray(f(xs, xs)), np.asarray(f(xt, xs))
    n = len(xs)
    preds = k_ts @ np.linalg.solve(k_ss + REG * np.trace(k_ss) / n * np.eye(n), ys)
    expected = 0.5 * np.mean((yt - preds) ** 2)
    got = kip_loss(xs, ys, xt, yt, kernel_fn=f, reg=REG)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    summed = kip_loss(xs, ys, xt, yt, kernel_fn=f, reg=REG, reduction="sum")
    np.testing.assert_allclose(summed, expected * yt.size, rtol=1e-10)


def test_per_target_losses_sum_to_n_times_kip_loss(problem):
    xs, ys, xt, yt = problem
    f = make_kernel_fn(depth=2)
    one = jax.vmap(lambda r: per_target_loss((xs, ys), r, kernel_fn=f, reg=REG))
    per = one((jnp.asarray(xt), jnp.asarray(yt)))
    assert per.shape == (len(xt),)
    total = kip_loss(xs, ys, xt, yt, kernel_fn=f, reg=REG) * len(xt)
    # an identity of the math, checked eagerly: to float64 rounding (measured 1e-16). Under
    # jit(vmap) XLA's batched solve is less exact (3.7e-10 relative here), a property of the
    # compiled linear algebra, not of the decomposition.
    np.testing.assert_allclose(jnp.sum(per), total, rtol=1e-12)

    # and so do the gradients w.r.t. the support (what DP-KIP clips one record at a time)
    def one_s(s):
        return jax.vmap(lambda r: per_target_loss(s, r, kernel_fn=f, reg=REG))(
            (jnp.asarray(xt), jnp.asarray(yt))
        )

    g_per = jax.jit(jax.grad(lambda s: jnp.sum(one_s(s))))((jnp.asarray(xs), jnp.asarray(ys)))

    g_all = jax.jit(jax.grad(lambda s: kip_loss(*s, xt, yt, kernel_fn=f, reg=REG) * len(xt)))(
        (jnp.asarray(xs), jnp.asarray(ys))
    )
    for a, b in zip(g_per, g_all, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)


def test_support_gradient_finite_when_a_target_equals_a_support_point(problem):
    xs, ys, xt, yt = problem
    xt = np.asarray(xt).copy()
    xt[:3] = xs[:3]
    f = make_kernel_fn(depth=3)
    g = jax.jit(jax.grad(lambda x: kip_loss(x, ys, xt, yt, kernel_fn=f, reg=REG)))(jnp.asarray(xs))
    assert np.all(np.isfinite(np.asarray(g)))


def test_threea_loss_is_eq6(problem):
    xs, ys, xt, yt = problem
    f = make_kernel_fn(depth=1)
    anchor = np.asarray(xs) + 0.5
    fit = kip_loss(xs, ys, xt, yt, kernel_fn=f, reg=REG)
    dist = np.sum((xs - anchor) ** 2) / np.sum(anchor**2)
    np.testing.assert_allclose(relative_anchor_distance(xs, anchor), dist, rtol=1e-12)
    for alpha in (0.0, 0.3, 1.0):
        got = threea_loss(xs, ys, xt, yt, anchor=anchor, alpha=alpha, kernel_fn=f, reg=REG)
        np.testing.assert_allclose(got, alpha * dist + (1 - alpha) * fit, rtol=1e-12)
    with pytest.raises(ValueError, match="expected alpha in \\[0, 1\\], got 1.5"):
        threea_loss(xs, ys, xt, yt, anchor=anchor, alpha=1.5, kernel_fn=f, reg=REG)
    with pytest.raises(ValueError, match="anchor of the support's shape"):
        threea_loss(xs, ys, xt, yt, anchor=anchor[:2], alpha=0.5, kernel_fn=f, reg=REG)


def _accuracy(xs, ys, x, labels, f):
    from kip import krr_fit_predict

    preds = krr_fit_predict(f(x, xs), f(xs, xs), ys, reg=REG)
    return float(np.mean(np.argmax(np.asarray(preds), axis=1) == labels))


def test_fit_support_decreases_the_loss_and_helps_on_held_out(problem):
    xs, ys, xt, yt = problem
    rng = np.random.default_rng(3)
    start = rng.normal(size=xs.shape)  # an uninformative start: noise with the right labels
    config = KIPConfig(steps=60, learning_rate=0.05, target_batch_size=20, reg=REG)
    result = fit_support(jax.random.key(0), start, ys, xt, yt, config)
    f = config.kernel_fn()
    before = float(kip_loss(start, ys, xt, yt, kernel_fn=f, reg=REG))
    after = float(kip_loss(result.support_x, ys, xt, yt, kernel_fn=f, reg=REG))
    assert result.losses.shape == (60,)
    assert after < 0.5 * before
    np.testing.assert_array_equal(result.support_y, ys)  # labels not learned
    x_test, _, labels = blobs(200, seed=4)
    assert _accuracy(result.support_x, ys, x_test, labels, f) > _accuracy(
        start, ys, x_test, labels, f
    )


def test_fit_support_learns_labels_when_asked(problem):
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=5, target_batch_size=10, reg=REG, learn_labels=True)
    result = fit_support(jax.random.key(0), xs, ys, xt, yt, config)
    assert not np.allclose(result.support_y, ys)


def test_alpha_one_keeps_the_anchor_and_alpha_zero_is_kip(problem):
    xs, ys, xt, yt = problem
    base = KIPConfig(steps=5, target_batch_size=10, reg=REG)
    kept = fit_support(
        jax.random.key(0), xs, ys, xt, yt, dataclasses.replace(base, alpha=1.0), anchor=xs
    )
    np.testing.assert_array_equal(kept.support_x, xs)  # zero gradient at the anchor
    plain = fit_support(jax.random.key(0), xs, ys, xt, yt, base)
    zero = fit_support(jax.random.key(0), xs, ys, xt, yt, dataclasses.replace(base, alpha=0.0))
    np.testing.assert_allclose(zero.support_x, plain.support_x, rtol=1e-12)
    assert not np.allclose(plain.support_x, xs)


def test_same_key_same_result_different_key_different(problem):
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=3, target_batch_size=10, reg=REG)
    a = fit_support(jax.random.key(1), xs, ys, xt, yt, config)
    b = fit_support(jax.random.key(1), xs, ys, xt, yt, config)
    c = fit_support(jax.random.key(2), xs, ys, xt, yt, config)
    np.testing.assert_array_equal(a.support_x, b.support_x)
    assert not np.allclose(a.support_x, c.support_x)


def test_float32_mode(problem):
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=3, target_batch_size=10, reg=1e-2, dtype="float32")
    result = fit_support(jax.random.key(0), xs, ys, xt, yt, config)
    assert result.support_x.dtype == np.float32
    assert np.all(np.isfinite(result.support_x)) and np.all(np.isfinite(result.losses))


def test_centred_one_hot():
    y = centred_one_hot(np.array([0, 2, 1]), 3)
    np.testing.assert_allclose(y.sum(axis=1), 0.0, atol=1e-15)
    np.testing.assert_array_equal(np.argmax(y, axis=1), [0, 2, 1])
    with pytest.raises(ValueError, match="expected labels in \\[0, 3\\)"):
        centred_one_hot(np.array([0, 3]), 3)
    with pytest.raises(ValueError, match="integer label array"):
        centred_one_hot(np.array([0.5]), 3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("steps", 0, "expected steps >= 1, got 0"),
        ("learning_rate", -1.0, "expected learning_rate > 0, got -1"),
        ("reg", -1.0, "expected reg >= 0, got -1"),
        ("alpha", 1.5, "expected alpha in \\[0, 1\\], got 1.5"),
        ("depth", 0, "expected depth >= 1, got 0"),
    ],
)
def test_config_validation(field, value, message):
    with pytest.raises(ValueError, match=message):
        KIPConfig(**{field: value})


def test_fit_support_bad_input(problem):
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=1)
    bad = np.asarray(xt).copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="expected finite target_x"):
        fit_support(jax.random.key(0), xs, ys, bad, yt, config)
    with pytest.raises(ValueError, match="same columns"):
        fit_support(jax.random.key(0), xs, ys, np.asarray(xt)[:, :2], yt, config)
    with pytest.raises(ValueError, match="all-zero anchor"):
        fit_support(jax.random.key(0), xs, ys, xt, yt, KIPConfig(steps=1, alpha=0.5), anchor=0 * xs)
