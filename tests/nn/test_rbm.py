"""The Bernoulli RBM (jdp.nn.rbm): free energy against brute force, Gibbs sampling against the
exact distribution (chi-square), and the PCD objective's negative phase reading the
persistent chains only (never data)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jdp.nn import rbm as rbm_lib

M, H = 3, 2
RBM = rbm_lib.RBM(n_visible=M, n_hidden=H)


def _params(seed: int = 0, scale: float = 1.0):
    """Parameters with non-trivial weights and biases (init gives ~0 weights, zero biases)."""
    rng = np.random.default_rng(seed)
    return {
        "params": {
            "weights": jnp.asarray(scale * rng.normal(size=(M, H)), jnp.float32),
            "visible_bias": jnp.asarray(scale * rng.normal(size=M), jnp.float32),
            "hidden_bias": jnp.asarray(scale * rng.normal(size=H), jnp.float32),
        }
    }


def _states(width: int) -> np.ndarray:
    return np.array(list(itertools.product([0.0, 1.0], repeat=width)), dtype=np.float32)


def _exact_probabilities(params) -> np.ndarray:
    """p(v) over all 2^M visible states by summing exp(-E(v, h)) over all 2^H hidden states."""
    p = params["params"]
    w, b, c = (np.asarray(p[k], np.float64) for k in ("weights", "visible_bias", "hidden_bias"))
    vs, hs = _states(M).astype(np.float64), _states(H).astype(np.float64)
    neg_energy = vs @ w @ hs.T + (vs @ b)[:, None] + (hs @ c)[None, :]
    unnorm = np.exp(neg_energy).sum(axis=1)
    return unnorm / unnorm.sum()


def test_init_follows_the_paper():
    params = RBM.init(jax.random.key(0), jnp.zeros(M))["params"]
    assert params["weights"].shape == (M, H)
    np.testing.assert_array_equal(params["visible_bias"], 0.0)
    np.testing.assert_array_equal(params["hidden_bias"], 0.0)
    big = rbm_lib.RBM(n_visible=200, n_hidden=200).init(jax.random.key(1), jnp.zeros(200))
    assert float(jnp.std(big["params"]["weights"])) == pytest.approx(0.01, rel=0.02)


def test_free_energy_is_minus_log_of_the_hidden_sum():
    params = _params()
    p = params["params"]
    w, b, c = (np.asarray(p[k], np.float64) for k in ("weights", "visible_bias", "hidden_bias"))
    hs = _states(H).astype(np.float64)
    for v in _states(M):
        neg_e = v @ w @ hs.T + v @ b + hs @ c
        brute = -np.log(np.exp(neg_e).sum())
        assert float(RBM.apply(params, jnp.asarray(v))) == pytest.approx(brute, rel=1e-5)


def test_gibbs_sampling_reaches_the_exact_distribution():
    """4000 independent chains after 100 sweeps: chi-square goodness of fit to p(v) at
    level 1e-3 (7 degrees of freedom)."""
    params = _params(seed=1)
    v, _ = rbm_lib.sample(jax.random.key(3), RBM, params, 4000, burn_in=100)
    index = np.asarray(v) @ (2.0 ** np.arange(M - 1, -1, -1))
    observed = np.bincount(index.astype(int), minlength=2**M)
    expected = 4000 * _exact_probabilities(params)
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    assert chi2 < stats.chi2.ppf(1 - 1e-3, df=2**M - 1), (observed, expected.round(1))


def test_negative_phase_reads_the_chains_only():
    """grad cd_loss(x) = grad F(x) - mean_k grad F(chain_k): the negative part is the same
    for every example and equals the chains' mean gradient. A negative phase started at the
    example (CD-k from data) would make it depend on x and fail here."""
    params = _params(seed=2)
    chains = rbm_lib.init_chains(jax.random.key(4), 16, M)

    def grad_f(v):
        return jax.grad(lambda p: RBM.apply(p, v))(params)

    def grad_loss(x):
        return jax.grad(lambda p: rbm_lib.cd_loss(RBM, p, x, chains))(params)

    mean_chain = jax.tree_util.tree_map(lambda *g: sum(g) / len(g), *[grad_f(c) for c in chains])
    for x in _states(M):
        negative = jax.tree_util.tree_map(
            lambda gl, gf: gl - gf, grad_loss(jnp.asarray(x)), grad_f(jnp.asarray(x))
        )
        for neg, ref in zip(
            jax.tree_util.tree_leaves(negative), jax.tree_util.tree_leaves(mean_chain)
        ):
            np.testing.assert_allclose(neg, -ref, rtol=1e-5, atol=1e-6)


def test_chain_update_takes_no_data():
    """The persistent chains' update is a function of (key, params, chains): its traced
    program has exactly those inputs and captures no array constant (no closed-over data)."""
    update = rbm_lib.make_chain_update(RBM, gibbs_steps=2)
    params = _params()
    chains = rbm_lib.init_chains(jax.random.key(0), 8, M)
    closed = jax.make_jaxpr(update)(jax.random.key(1), params, chains)
    n_inputs = 1 + len(jax.tree_util.tree_leaves(params)) + 1
    assert len(closed.jaxpr.invars) == n_inputs
    assert not [c for c in closed.consts if np.ndim(c) > 0]
    out = update(jax.random.key(1), params, chains)
    assert out.shape == chains.shape and set(np.unique(np.asarray(out))) <= {0.0, 1.0}


def test_chains_never_start_at_data():
    """init_chains depends on the key alone: two keys, different chains; same key, same."""
    a = rbm_lib.init_chains(jax.random.key(0), 64, M)
    np.testing.assert_array_equal(a, rbm_lib.init_chains(jax.random.key(0), 64, M))
    assert not np.array_equal(a, rbm_lib.init_chains(jax.random.key(1), 64, M))
    assert 0.3 < float(a.mean()) < 0.7
