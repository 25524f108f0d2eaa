"""The one output-head vocabulary (jdp.nn.heads): activations, likelihoods, samples, spans."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jdp.data.schema import Column, Schema
from jdp.data.transforms import TableEncoder
from jdp.nn.heads import (
    activate,
    check_layout,
    decode_sample,
    heads_for_spans,
    layout_width,
    log_likelihood,
)

LAYOUT = (("bernoulli", 2), ("tanh", 1), ("gaussian", 2), ("categorical", 3))
RAW = jnp.array([0.0, 2.0, -1.0, 0.5, -0.5, 1.0, 2.0, 3.0])


def test_activate_maps_each_head_to_its_range():
    out = np.asarray(activate(RAW, LAYOUT))
    np.testing.assert_allclose(out[:2], 1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-6)
    np.testing.assert_allclose(out[2], np.tanh(-1.0), rtol=1e-6)
    np.testing.assert_allclose(out[3:5], [0.5, -0.5])
    soft = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(out[5:], soft, rtol=1e-6)
    batch = activate(jnp.stack([RAW, -RAW]), LAYOUT)  # any leading batch shape
    assert batch.shape == (2, layout_width(LAYOUT)) == (2, 8)


def test_log_likelihood_per_kind_and_tanh_has_none():
    x = jnp.array([1.0, 0.0, 0.3, 0.1, 0.0, 0.0, 1.0, 0.0, 0.0])
    raw = jnp.array([0.0, 0.0, 0.5, 0.1, 0.0, 1.0, 2.0, 3.0, 0.0])
    layout = (("bernoulli", 2), ("gaussian", 3), ("categorical", 3), ("bernoulli", 1))
    expected = (
        3 * math.log(0.5)
        + (-0.5 * 0.2**2 - 1.5 * math.log(2 * math.pi))
        + (2.0 - math.log(math.exp(1) + math.exp(2) + math.exp(3)))
    )
    assert float(log_likelihood(raw, x, layout)) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="with a likelihood, got 'tanh'"):
        log_likelihood(RAW, RAW, LAYOUT)


def test_decode_sample_means_and_one_hot_categories():
    key = jax.random.key(0)
    out = np.asarray(decode_sample(key, jnp.tile(RAW, (500, 1)), LAYOUT, stochastic=False))
    np.testing.assert_allclose(
        out[:, :5], np.tile(np.asarray(activate(RAW, LAYOUT))[:5], (500, 1)), rtol=1e-6
    )
    cat = out[:, 5:]
    assert set(np.unique(cat)) == {0.0, 1.0} and np.all(cat.sum(axis=1) == 1.0)
    drawn = decode_sample(key, jnp.tile(RAW, (500, 1)), LAYOUT, stochastic=True)
    assert set(np.unique(np.asarray(drawn[:, :2]))) <= {0.0, 1.0}
    np.testing.assert_array_equal(drawn[:, 2], out[:, 2])  # tanh heads are deterministic


def test_heads_for_spans_and_layout_checks():
    schema = Schema(
        columns=(
            Column(name="a", kind="continuous", lower=0, upper=1),
            Column(name="b", kind="integer", lower=0, upper=9),
            Column(name="c", kind="categorical", categories=("x", "y", "z")),
            Column(name="d", kind="categorical", categories=("p", "q")),
        )
    )
    unit = TableEncoder(schema, continuous_range=(0.0, 1.0)).spans
    assert heads_for_spans(unit) == (
        ("bernoulli", 1),
        ("bernoulli", 1),
        ("categorical", 3),
        ("categorical", 2),
    )
    assert heads_for_spans(unit, merge=True) == (
        ("bernoulli", 2),
        ("categorical", 3),
        ("categorical", 2),
    )
    signed = TableEncoder(schema, continuous_range=(-1.0, 1.0)).spans
    assert heads_for_spans(signed, merge=True)[0] == ("tanh", 2)
    wide = TableEncoder(schema, continuous_range=(0.0, 2.0)).spans
    assert heads_for_spans(wide)[0] == ("gaussian", 1)
    assert check_layout([("bernoulli", 2)]) == (("bernoulli", 2),)
    with pytest.raises(ValueError, match="expected head kind"):
        check_layout([("beta", 2)])
    with pytest.raises(ValueError, match="expected head width >= 1, got 0"):
        check_layout([("bernoulli", 0)])
