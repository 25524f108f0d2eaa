"""jdp.random: seeds to keys and generators, and the latent normal draw."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jdp.random import DRAW_MULTIPLE, key_from_seed, normal, numpy_rng


def test_numpy_rng_reads_every_bit_of_a_typed_or_legacy_key():
    typed, legacy = jax.random.key(7), jax.random.PRNGKey(7)
    assert numpy_rng(typed).integers(2**62) == numpy_rng(legacy).integers(2**62)
    assert numpy_rng(typed).integers(2**62) != numpy_rng(jax.random.key(8)).integers(2**62)
    with pytest.raises(ValueError):
        key_from_seed(-1)


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
