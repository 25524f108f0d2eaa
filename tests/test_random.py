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


@pytest.mark.parametrize("shape", [(DRAW_MULTIPLE,), (4, 2 * DRAW_MULTIPLE), (8, 6)])
def test_a_whole_multiple_is_jaxs_own_draw(shape):
    key = jax.random.key(3)
    np.testing.assert_array_equal(normal(key, shape), jax.random.normal(key, shape))


def test_any_other_shape_is_a_standard_normal_of_that_shape():
    """The first values of a longer draw: shaped, of the dtype, and N(0, 1) -- mean within
    4.5 standard errors of 0, variance within 4.5 of its standard error ``sqrt(2 / n)`` of 1
    (one fixed key; a failure by chance has probability below 1e-5)."""
    shape = (999, 7)  # 6993 values, not a multiple
    x = normal(jax.random.key(11), shape, jnp.float32)
    assert x.shape == shape and x.dtype == jnp.float32
    n = x.size
    assert abs(float(x.mean())) < 4.5 / np.sqrt(n)
    assert abs(float(x.var()) - 1.0) < 4.5 * np.sqrt(2.0 / n)
    # per-example draws under vmap: each example's draw is its own key's
    keys = jax.random.split(jax.random.key(2), 5)
    batched = jax.vmap(lambda k: normal(k, (10,)))(keys)
    np.testing.assert_array_equal(batched[3], normal(keys[3], (10,)))
