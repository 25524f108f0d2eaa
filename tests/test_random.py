"""jdp.random: seeds to keys and generators, and the latent normal draw."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jdp.random import DRAW_MULTIPLE, key_from_seed, normal, numpy_rng, split


def test_numpy_rng_reads_every_bit_of_a_typed_or_legacy_key():
    typed, legacy = jax.random.key(7), jax.random.PRNGKey(7)
    assert numpy_rng(typed).integers(2**62) == numpy_rng(legacy).integers(2**62)
    assert numpy_rng(typed).integers(2**62) != numpy_rng(jax.random.key(8)).integers(2**62)
    with pytest.raises(ValueError):
        key_from_seed(-1)


def test_seeds_below_2_32_give_jaxs_keys_and_larger_ones_stay_distinct():
    """Reproducible where JAX's own key was (seed < 2**32); distinct up to 2**64 where
    ``jax.random.key`` without 64-bit mode keeps the low 32 bits (2**40 + 7 and 7 collided)."""
    for seed in (0, 1, 12345, 2**32 - 1):
        np.testing.assert_array_equal(
            jax.random.key_data(key_from_seed(seed)), jax.random.key_data(jax.random.key(seed))
        )
    assert key_from_seed(7).dtype == jax.random.key(7).dtype
    big, small = (jax.random.key_data(key_from_seed(s)) for s in (2**40 + 7, 7))
    assert not np.array_equal(big, small)
    np.testing.assert_array_equal(jax.random.key_data(key_from_seed(2**64 - 1)), [2**32 - 1] * 2)
    with pytest.raises(ValueError, match="below 2\\*\\*64"):
        key_from_seed(2**64)


def test_fresh_keys_fill_every_word_from_os_entropy():
    """Without a seed both 32-bit words of the key are random: the high word of 16 fresh keys
    is all zero with probability 2**-512 (it always was when JAX truncated a 63-bit seed)."""
    keys = np.stack([jax.random.key_data(key_from_seed(None)) for _ in range(16)])
    assert keys.shape == (16, 2) and keys[:, 0].any() and len({tuple(k) for k in keys}) == 16


@pytest.mark.parametrize("shape", [(DRAW_MULTIPLE,), (10,), (999, 7), (4, 3, 5)])
def test_normal_is_jaxs_own_draw_in_any_shape_and_under_vmap(shape):
    """The same values as ``jax.random.normal`` (partitionable threefry, JAX's default: a
    longer flat draw starts with the shorter one), per key under ``vmap`` too."""
    assert jax.config.jax_threefry_partitionable
    key = jax.random.key(3)
    x = normal(key, shape, jnp.float32)
    assert x.shape == shape and x.dtype == jnp.float32
    np.testing.assert_array_equal(x, jax.random.normal(key, shape, jnp.float32))
    keys = jax.random.split(key, 5)
    np.testing.assert_array_equal(
        jax.vmap(lambda k: normal(k, shape))(keys),
        jax.vmap(lambda k: jax.random.normal(k, shape))(keys),
    )


def test_split_is_jaxs_split_eagerly_and_inside_a_traced_function():
    """The same keys as ``jax.random.split`` at any count, eagerly (one program, compiled
    with the run-once options) and under ``jit`` / ``vmap`` (traced into the caller, where
    XLA takes no options)."""
    key = jax.random.key(11)
    for n in (2, 3, 4):
        ours = split(key, n)
        assert isinstance(ours, tuple) and len(ours) == n
        np.testing.assert_array_equal(
            np.stack([jax.random.key_data(k) for k in ours]),
            jax.random.key_data(jax.random.split(key, n)),
        )
    inside = jax.jit(lambda k: split(k, 3)[2])(key)
    np.testing.assert_array_equal(
        jax.random.key_data(inside), jax.random.key_data(jax.random.split(key, 3)[2])
    )
    keys = jax.random.split(key, 5)
    mapped = jax.vmap(lambda k: split(k)[0])(keys)
    np.testing.assert_array_equal(
        jax.random.key_data(mapped),
        jax.random.key_data(jax.vmap(lambda k: jax.random.split(k)[0])(keys)),
    )
