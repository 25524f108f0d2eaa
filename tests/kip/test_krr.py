"""kip.krr: kernel ridge regression against a closed-form numpy solve."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kip.krr import krr_fit_predict
from kip.ntk import make_kernel_fn


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _problem(n_s=7, n_t=5, d=4, c=3, seed=0):
    rng = np.random.default_rng(seed)
    xs, xt = rng.normal(size=(n_s, d)), rng.normal(size=(n_t, d))
    ys = rng.normal(size=(n_s, c))
    f = make_kernel_fn(depth=2)
    return np.asarray(f(xt, xs)), np.asarray(f(xs, xs)), ys


@pytest.mark.parametrize("reg", [0.0, 1e-6, 0.3])
def test_matches_numpy_closed_form(reg):
    k_ts, k_ss, ys = _problem()
    n = k_ss.shape[0]
    expected = k_ts @ np.linalg.solve(k_ss + reg * np.trace(k_ss) / n * np.eye(n), ys)
    got = krr_fit_predict(jnp.asarray(k_ts), jnp.asarray(k_ss), jnp.asarray(ys), reg=reg)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)


def test_vector_labels_and_interpolation():
    """With reg = 0 and K_ts = K_ss, KRR interpolates the support labels."""
    _, k_ss, ys = _problem()
    got = krr_fit_predict(jnp.asarray(k_ss), jnp.asarray(k_ss), jnp.asarray(ys[:, 0]), reg=0.0)
    assert got.shape == (k_ss.shape[0],)
    np.testing.assert_allclose(got, ys[:, 0], rtol=1e-6, atol=1e-8)


def test_ridge_is_scale_free():
    """The ridge is relative to tr(K)/n: scaling the kernel leaves predictions unchanged."""
    k_ts, k_ss, ys = _problem()
    a = krr_fit_predict(jnp.asarray(k_ts), jnp.asarray(k_ss), jnp.asarray(ys), reg=0.1)
    b = krr_fit_predict(jnp.asarray(7 * k_ts), jnp.asarray(7 * k_ss), jnp.asarray(ys), reg=0.1)
    np.testing.assert_allclose(a, b, rtol=1e-10)


def test_bad_shapes_raise():
    k_ts, k_ss, ys = _problem()
    with pytest.raises(ValueError, match="expected k_ss of shape"):
        krr_fit_predict(k_ts, k_ts, ys)
    with pytest.raises(ValueError, match="expected k_ts of shape"):
        krr_fit_predict(k_ts[:, :3], k_ss, ys)
    with pytest.raises(ValueError, match="expected y_s with 7 rows"):
        krr_fit_predict(k_ts, k_ss, ys[:3])
    with pytest.raises(ValueError, match="expected reg >= 0, got -1"):
        krr_fit_predict(k_ts, k_ss, ys, reg=-1)
