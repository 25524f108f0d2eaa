"""The scanned LSTM against the unrolled one; the generator's raw width."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jdp.nn.gan import Generator
from jdp.nn.heads import decode_sample, layout_width, raw_width
from jdp.nn.lstm import LSTM


def test_scanned_lstm_computes_the_unrolled_lstm():
    xs = jax.random.normal(jax.random.key(0), (3, 7, 2))
    unrolled = LSTM(4, out_features=1)
    params = unrolled.init(jax.random.key(1), xs)["params"]
    scanned = LSTM(4, out_features=1, scan=True)
    sparams = scanned.init(jax.random.key(2), xs)["params"]
    # one parameter layout: a model trained one way runs the other way
    assert jax.tree_util.tree_structure(sparams) == jax.tree_util.tree_structure(params)
    sparams = params
    a = unrolled.apply({"params": params}, xs)
    b = scanned.apply({"params": sparams}, xs)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    # one example without a batch axis is the batched row
    np.testing.assert_allclose(
        np.asarray(scanned.apply({"params": sparams}, xs[1])), np.asarray(b[1]), rtol=1e-6
    )
    assert jnp.all(jnp.isfinite(b))


def test_generator_emits_the_layouts_raw_width():
    """The raw vector has one logit per cell of a binned head (``raw_width``), so
    ``decode_sample`` reads every head and returns ``layout_width`` data coordinates; with
    the data width (``layout_width``) the binned head would read past the output."""
    layout = (("tanh", 2), ("binned", 5), ("categorical", 3))
    gen = Generator((4,), layout)
    z = jnp.zeros((6, 3))
    raw = gen.apply(gen.init(jax.random.key(0), z), z)
    assert raw.shape == (6, raw_width(layout)) and raw_width(layout) == 10
    out = decode_sample(jax.random.key(1), raw, layout, stochastic=False)
    assert out.shape == (6, layout_width(layout))
