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
    _deep_neg_log_u,
    _deep_slots_by_branch,
    _deep_slots_by_count,
    box_muller,
    deep_overflow,
    gaussian_noise,
    noise_cut,
    standard_normal,
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


@pytest.mark.parametrize("zeros", [0, 1, 5, DEEP_SLOTS, DEEP_SLOTS + 9])
def test_the_cpu_branch_and_the_accelerator_count_give_the_same_draw(zeros):
    """:func:`box_muller` finds the pairs with a first word 0 by ``lax.cond`` on the CPU and
    by a running count elsewhere (``lax.platform_dependent``): both, run here, give the same
    bits, with none, some, exactly ``DEEP_SLOTS`` and more such pairs than deep slots (the
    extras keep their shallow value)."""
    k1, k2, k3 = jax.random.split(jax.random.key(zeros), 3)
    w0 = jax.random.bits(k1, (500,), jnp.uint32)
    w0 = w0.at[jax.random.choice(k2, 500, (zeros,), replace=False)].set(0)
    deep = _deep_neg_log_u(jax.random.bits(k3, (DEEP_SLOTS, DEEP_WORDS), jnp.uint32), jnp.float32)
    shallow = jnp.arange(500, dtype=jnp.float32)
    by_branch = jax.jit(_deep_slots_by_branch)(shallow, w0, deep)
    by_count = jax.jit(_deep_slots_by_count)(shallow, w0, deep)
    np.testing.assert_array_equal(np.asarray(by_count), np.asarray(by_branch))
    changed = int(np.sum(np.asarray(by_count) != np.asarray(shallow)))
    assert changed == min(zeros, DEEP_SLOTS)


def test_noise_cut_counts_the_pairs_and_the_overflow_of_each_leaf():
    tree = {"w": jnp.zeros((3, 5)), "b": jnp.zeros(7), "s": jax.ShapeDtypeStruct((1,), jnp.float32)}
    expected = sum(p * PAIR_TAIL_MASS + deep_overflow(p) for p in (8, 4, 1))
    assert noise_cut(tree) == pytest.approx(expected)
    # the overflow: P(Bin(n, 2^-32) > DEEP_SLOTS) <= (e mu / k)^k, 1e-57 at a billion pairs
    assert deep_overflow(10**9) < 1e-56 and deep_overflow(2**38) == 1.0
