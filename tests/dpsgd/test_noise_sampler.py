"""The Gaussian sampler behind every DP-SGD draw: its law, its cut, and the cut's charge.

Issue 24 item 1: ``jax.random.normal`` in float32 inverts a uniform whose grid ends near the
tails, so it never draws beyond about 5.4 standard deviations, and an output beyond
``f(D) + 5.4 z C`` is then impossible without a record and possible with it. The sampler
now reaches 21 standard deviations per pair and every DP-SGD event charges the ideal mass
beyond that and the deep path's overflow (docs/privacy.md, "The sampler's cut").
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jdp.dpsgd.noise import (
    DEEP_SLOTS,
    DEEP_WORDS,
    NORMAL_CUT,
    PAIR_TAIL_MASS,
    _box_muller_pairs,
    _count_slots,
    _deep_neg_log_u,
    _deep_slots,
    box_muller,
    deep_overflow,
    gaussian_noise,
    gaussian_noise_like,
    noise_cut,
    standard_normal,
    standard_normals,
)


def test_sampler_is_standard_normal():
    """Kolmogorov-Smirnov at a fixed key (bound p > 1e-6) and the first four moments within 6
    standard errors of N(0, 1)'s, in float32."""
    x = np.asarray(standard_normal(jax.random.key(3), (400_001,)), dtype=np.float64)
    assert stats.kstest(x, "norm").pvalue > 1e-6
    for k, (moment, var) in enumerate([(0.0, 1.0), (1.0, 2.0), (0.0, 15.0), (3.0, 96.0)], 1):
        assert abs(np.mean(x**k) - moment) < 6 * math.sqrt(var / x.size), k
    assert gaussian_noise(jax.random.key(3), 2.0, (5, 7)).shape == (5, 7)


def test_the_cut_lies_beyond_eight_sigma_and_today_s_draw_cut_near_five():
    """The largest radius the sampler can return (all-zero words: u = 2^-320) is
    sqrt(640 ln 2) = 21.06 >= NORMAL_CUT, so the charged mass exp(-NORMAL_CUT^2 / 2) per pair
    is at least the true one. The float32 inverse-CDF draw it replaces cannot leave
    [-5.5, 5.5]: its uniform's extreme values map to about 5.4."""
    zeros = jnp.zeros((DEEP_SLOTS, DEEP_WORDS), jnp.uint32)
    r = float(jnp.hypot(*box_muller(jnp.zeros((2, 1), jnp.uint32), zeros)))
    assert r == pytest.approx(math.sqrt(640 * math.log(2)), rel=1e-6)
    assert 8.0 <= NORMAL_CUT <= r
    assert PAIR_TAIL_MASS == pytest.approx(math.exp(-0.5 * NORMAL_CUT**2))
    top = float(jnp.hypot(*box_muller(jnp.full((2, 1), 2**32 - 1, jnp.uint32), zeros)))
    assert top < 1e-3  # u = 1: the radius 0 end
    # a first word 0 without the deep path would stop at u = 2^-41 (radius 7.54); a deep
    # slot whose first word is 0 too gives u ~ 2^-96 (radius sqrt(192 ln 2) = 11.54)
    shallow = jnp.zeros((2, 1), jnp.uint32).at[1].set(2**32 - 1)
    deep = jnp.ones((DEEP_SLOTS, DEEP_WORDS), jnp.uint32).at[:, 0].set(0)
    r = float(jnp.hypot(*box_muller(shallow, deep)))
    assert r == pytest.approx(math.sqrt(192 * math.log(2)), rel=1e-6)
    # jax.random.normal's float32 uniform lies in [-1 + 2^-24, 1 - 2^-24] (open at +-1)
    edge = jnp.nextafter(jnp.float32(1.0), jnp.float32(0.0))
    assert float(jnp.sqrt(2.0) * jax.scipy.special.erfinv(edge)) < 5.5


def test_the_deep_path_draws_the_ideal_tail():
    """Given a first word 0 (u <= 2^-32) the radius is the ideal one conditioned on
    r^2 / 2 >= 32 ln 2: r^2 / 2 - 32 ln 2 is Exp(1) (Kolmogorov-Smirnov, p > 1e-6), and the
    angle of every pair is uniform on the quadrants (chi-square, 3 degrees of freedom)."""
    m = 32
    k1, k2 = jax.random.split(jax.random.key(1))
    words = jax.random.bits(k1, (2, m), jnp.uint32).at[0].set(0)
    draw = jax.jit(box_muller)
    tails = []
    for i in range(1000):
        deep = jax.random.bits(jax.random.fold_in(k2, i), (DEEP_SLOTS, DEEP_WORDS), jnp.uint32)
        out = np.asarray(draw(words, deep), np.float64)
        tails.append((out[:m] ** 2 + out[m:] ** 2) / 2 - 32 * math.log(2))
    assert stats.kstest(np.concatenate(tails), "expon").pvalue > 1e-6
    x = np.asarray(standard_normal(jax.random.key(4), (200_000,)), np.float64)
    quadrant = (x[: x.size // 2] > 0) * 2 + (x[x.size // 2 :] > 0)
    counts = np.bincount(quadrant, minlength=4)
    assert stats.chisquare(counts).pvalue > 1e-6


@pytest.mark.parametrize("zeros", [(0, 0, 0), (1, 0, 5), (DEEP_SLOTS, 3, DEEP_SLOTS + 9)])
def test_the_cpu_branch_and_the_accelerator_count_fill_each_draws_deep_slots(zeros):
    """Three draws side by side (pairs 500, 7 and 300), each with its own deep slots: on the
    CPU :func:`_deep_slots` branches on ``any(w0 == 0)``, elsewhere it runs the count
    (:func:`_count_slots`); both give the same bits, and each draw's first ``DEEP_SLOTS``
    pairs with a first word 0 take its own deep values (none, some, all slots, more pairs
    than slots: the extras keep their shallow value)."""
    pairs = (500, 7, 300)
    key = jax.random.key(sum(zeros))
    w0, deep, expected = [], [], []
    for d, (m, z) in enumerate(zip(pairs, zeros, strict=True)):
        k1, k2, k3 = jax.random.split(jax.random.fold_in(key, d), 3)
        w = jax.random.bits(k1, (m,), jnp.uint32)
        w0.append(w.at[jax.random.choice(k2, m, (z,), replace=False)].set(0))
        words = jax.random.bits(k3, (DEEP_SLOTS, DEEP_WORDS), jnp.uint32)
        deep.append(_deep_neg_log_u(words, jnp.float32))
        expected.append(min(z, DEEP_SLOTS))
    w0, deep = jnp.concatenate(w0), jnp.stack(deep)
    shallow = jnp.arange(w0.shape[0], dtype=jnp.float32)
    on_cpu = np.asarray(jax.jit(_deep_slots, static_argnums=3)(shallow, w0, deep, pairs))
    counted = np.asarray(jax.jit(_count_slots, static_argnums=3)(shallow, w0, deep, pairs))
    np.testing.assert_array_equal(on_cpu, counted)
    starts = np.cumsum((0,) + pairs)
    for d, want in enumerate(expected):
        part = slice(starts[d], starts[d + 1])
        changed = counted[part] != np.asarray(shallow)[part]
        assert changed.sum() == want
        assert set(counted[part][changed]) <= set(np.asarray(deep[d]).tolist())


def test_draws_side_by_side_are_the_draws_one_by_one():
    """:func:`standard_normals` (one transform over several draws) gives each key's
    :func:`standard_normal`, and :func:`_box_muller_pairs` over several draws' words with
    forced first words 0 gives each draw's :func:`box_muller`: equal up to 2 units in the
    last place (XLA may fuse the same arithmetic differently at another length; a wrong deep
    slot or a shifted draw moves values by far more)."""
    keys = jax.random.split(jax.random.key(6), 4)
    shapes = [(1000, 3), (1,), (0,), (7, 5)]
    together = standard_normals(keys, shapes, jnp.float32)
    for key, shape, draw in zip(keys, shapes, together, strict=True):
        assert draw.shape == shape
        np.testing.assert_array_max_ulp(draw, standard_normal(key, shape, jnp.float32), 2)
    pairs = (40, 3, 40)
    words = jax.random.bits(jax.random.key(7), (2, sum(pairs)), jnp.uint32)
    words = words.at[0, jnp.array([0, 5, 39, 40, 42, 43, 44, 80])].set(0)
    deep = jax.random.bits(jax.random.key(8), (3, DEEP_SLOTS, DEEP_WORDS), jnp.uint32)
    cos_part, sin_part = _box_muller_pairs(words, deep, pairs, jnp.float32)
    start = 0
    for d, m in enumerate(pairs):
        alone = box_muller(words[:, start : start + m], deep[d])
        both = jnp.concatenate([cos_part[start : start + m], sin_part[start : start + m]])
        np.testing.assert_array_max_ulp(np.asarray(both), np.asarray(alone), 2)
        start += m


def test_noise_cut_counts_the_pairs_and_the_overflow_of_each_draw():
    """One draw per dtype: 15 + 7 + 1 float32 coordinates are 12 pairs, 3 float64 ones 2."""
    tree = {
        "w": jnp.zeros((3, 5)),
        "b": jnp.zeros(7),
        "s": jax.ShapeDtypeStruct((1,), jnp.float32),
        "d": jax.ShapeDtypeStruct((3,), jnp.float64),
    }
    expected = sum(p * PAIR_TAIL_MASS + deep_overflow(p) for p in (12, 2))
    assert noise_cut(tree) == pytest.approx(expected)
    # the overflow: P(Bin(n, 2^-32) > DEEP_SLOTS) <= (e mu / k)^k, 1e-57 at a billion pairs
    assert deep_overflow(10**9) < 1e-56 and deep_overflow(2**38) == 1.0


def test_noise_over_a_tree_is_one_draw_per_dtype_sliced_into_its_leaves():
    """What :func:`noise_cut` charges is what :func:`gaussian_noise_like` draws: the float32
    leaves are consecutive slices of one :func:`gaussian_noise` from the first of the key's
    splits (leaves in the tree's flattening order)."""
    tree = {"a": jnp.zeros((4, 3), jnp.float32), "b": jnp.zeros(5, jnp.float32)}
    key = jax.random.key(3)
    noise = gaussian_noise_like(key, tree, 2.0)
    (first,) = jax.random.split(key, 1)
    flat = gaussian_noise(first, 2.0, (17,), jnp.float32)
    np.testing.assert_array_equal(noise["a"], flat[:12].reshape(4, 3))
    np.testing.assert_array_equal(noise["b"], flat[12:])
