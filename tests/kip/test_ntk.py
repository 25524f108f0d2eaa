"""kip.ntk: the closed-form FC ReLU NNGP/NTK against neural-tangents, and its properties.

The oracle is ``tests/kip/fixtures/ntk_oracle.npz``, written by ``scripts/ntk_oracle_fixture.py``
with neural-tangents 0.6.5 (``stax``) on jax 0.4.23 in its own environment (see the script).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import pytest

from kip.ntk import fc_relu_kernels, make_kernel_fn

FIXTURE = Path(__file__).parent / "fixtures" / "ntk_oracle.npz"


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def oracle():
    with np.load(FIXTURE) as f:
        return {k: f[k] for k in f.files}


def _close(actual, expected, diag1, diag2, rtol=1e-6):
    """Relative per entry to the Cauchy-Schwarz scale of a PSD kernel:
    |a_ij - e_ij| <= rtol * sqrt(K(x_i, x_i) K(x'_j, x'_j)) (>= |e_ij|), plus 1e-14 absolute
    for the zero row at b_std = 0 (where the kernel is exactly 0)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    bound = rtol * np.sqrt(np.outer(diag1, diag2)) + 1e-14
    worst = np.max(np.abs(actual - expected) / bound)
    assert worst <= 1.0, f"max error {worst:.3g} x the {rtol:g}-relative bound"


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_matches_neural_tangents(oracle, depth):
    x1, x2 = oracle["x1"], oracle["x2"]
    assert str(oracle["versions"][0]) == "neural-tangents==0.6.5"
    for s, (w_std, b_std) in enumerate(oracle["settings"]):
        hyper = {"depth": depth, "w_std": float(w_std), "b_std": float(b_std)}
        for kind in ("nngp", "ntk"):
            diag1 = np.diag(oracle[f"{kind}_d{depth}_s{s}_11"])
            diag2 = np.diag(getattr(fc_relu_kernels(x2, x2, **hyper), kind))  # a scale only
            for name, other, d2 in (("11", x1, diag1), ("12", x2, diag2)):
                k = getattr(fc_relu_kernels(x1, other, **hyper), kind)
                _close(k, oracle[f"{kind}_d{depth}_s{s}_{name}"], diag1, d2)


def test_oracle_comparison_can_fail(oracle):
    """The check above is sensitive: a 1e-4 change of b_std (1e-3 relative) is already caught."""
    x1 = oracle["x1"]
    k = fc_relu_kernels(x1, x1, depth=2, w_std=2**0.5, b_std=0.1 + 1e-4)
    diag = np.diag(oracle["ntk_d2_s0_11"])
    with pytest.raises(AssertionError):
        _close(k.ntk, oracle["ntk_d2_s0_11"], diag, diag)


def _data(n=9, d=6, seed=0):
    x = np.random.default_rng(seed).normal(size=(n, d))
    if n > 4:
        x[4] = x[1]  # a duplicated row
    return jnp.asarray(x)


@pytest.mark.parametrize("depth", [1, 3])
def test_symmetric_and_psd(depth):
    x = _data()
    for k in fc_relu_kernels(x, x, depth=depth):
        k = np.asarray(k)
        np.testing.assert_allclose(k, k.T, rtol=1e-13, atol=0)
        eig = np.linalg.eigvalsh((k + k.T) / 2)
        assert eig.min() >= -1e-12 * eig.max()


def test_blocking_gives_the_same_kernels():
    x1, x2 = _data(n=11, seed=1), _data(n=5, seed=2)
    whole = fc_relu_kernels(x1, x2, depth=3)
    for block in (1, 3, 4, 11, 50):
        blocked = fc_relu_kernels(x1, x2, depth=3, block_size=block)
        for a, b in zip(blocked, whole, strict=True):
            assert a.shape == (11, 5)
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


def test_dtype_follows_inputs():
    x = _data()
    assert fc_relu_kernels(x, x).ntk.dtype == jnp.float64
    assert fc_relu_kernels(x.astype(jnp.float32), x.astype(jnp.float32)).ntk.dtype == jnp.float32


@pytest.mark.parametrize("get", ["ntk", "nngp"])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_gradient_finite_on_the_diagonal(get, depth):
    """x1 == x2 rows (and duplicated rows): the gradient w.r.t. x1 is finite. With a plain
    ``arccos``/``sqrt`` it is NaN (checked by hand by replacing the safe sqrt with jnp.sqrt)."""
    x = _data()
    kernel_fn = make_kernel_fn(depth=depth, get=get)
    g = jax.grad(lambda a: jnp.sum(kernel_fn(a, x)))(x)
    assert np.all(np.isfinite(np.asarray(g)))
    g32 = jax.grad(lambda a: jnp.sum(kernel_fn(a, x.astype(jnp.float32))))(x.astype(jnp.float32))
    assert np.all(np.isfinite(np.asarray(g32)))


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_nngp_gradient_on_the_diagonal_matches_finite_differences(depth):
    """The NNGP is differentiable at x == x' (its ReLU expectation is flat there to second
    order), so the safe derivative must equal the true one, not just be finite."""
    x = _data(n=3)
    v = jnp.asarray(np.random.default_rng(5).normal(size=x.shape[1]))
    f = make_kernel_fn(depth=depth, get="nngp")

    def entry(t):
        return f((x[0] + t * v)[None, :], x[:1])[0, 0]

    h = 1e-5
    fd = (entry(h) - entry(-h)) / (2 * h)
    ad = jax.jvp(entry, (0.0,), (1.0,))[1]
    np.testing.assert_allclose(ad, fd, rtol=1e-6)


@pytest.mark.parametrize("get", ["ntk", "nngp"])
def test_gradient_off_the_diagonal_matches_finite_differences(get):
    x1, x2 = _data(n=3, seed=3), _data(n=4, seed=4)
    f = make_kernel_fn(depth=2, get=get)
    jax.test_util.check_grads(lambda a: f(a, x2), (x1,), order=1, modes=["rev"], eps=1e-6)


def test_bad_input_raises():
    x = _data()
    with pytest.raises(ValueError, match="expected depth >= 1, got 0"):
        fc_relu_kernels(x, x, depth=0)
    with pytest.raises(ValueError, match="expected w_std > 0, got -1"):
        fc_relu_kernels(x, x, w_std=-1.0)
    with pytest.raises(ValueError, match="expected b_std >= 0"):
        fc_relu_kernels(x, x, b_std=-0.1)
    with pytest.raises(ValueError, match="same number of features"):
        fc_relu_kernels(x, x[:, :3])
    with pytest.raises(ValueError, match="shape \\(n, d\\)"):
        fc_relu_kernels(x[0], x)
    with pytest.raises(ValueError, match="block_size"):
        fc_relu_kernels(x, x, block_size=0)
    with pytest.raises(ValueError, match="expected get"):
        make_kernel_fn(get="cov")
