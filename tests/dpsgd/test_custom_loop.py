"""DP-SGD in a researcher's own JAX loop: poisson_batches, clipped_grad, Accountant, and the
example ``docs/examples/custom_loop.py``; each must follow train()'s one copy of its rule."""

from __future__ import annotations

import runpy
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dpsgd_problems import classification_problem

from jdp import dpsgd
from jdp.dpsgd import (
    Accountant,
    DPSGDConfig,
    Performance,
    accumulate,
    clipped_grad,
    dp_aggregate,
    poisson_batches,
    start,
    train,
)
from jdp.dpsgd.noise import noise_cut
from jdp.dpsgd.step import clipped_grad_sum
from jdp.random import numpy_rng

N = 128
DELTA = 1e-5
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "custom_loop.py"


def _problem():
    return classification_problem(N)[:3]


def _config(**overrides) -> DPSGDConfig:
    args = {"l2_clip_norm": 1.0, "sampling_prob": 0.25, "steps": 3, "noise_multiplier": 1.0}
    args |= {"expected_batch_size": 32.0, "target_delta": DELTA} | overrides
    return DPSGDConfig(**args)


# -- (a) the example runs ------------------------------------------------------------------
def test_the_example_runs(monkeypatch, capsys):
    monkeypatch.setenv("JDP_EXAMPLE_QUICK", "1")
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "epsilon = " in out and "2 steps" in out


# -- (b) the accountant is train()'s accounting --------------------------------------------
@pytest.mark.parametrize(
    "overrides",
    [{}, {"noise_multiplier": None, "target_epsilon": 3.0}],
    ids=["given-z", "calibrated-z"],
)
def test_accountant_ledger_is_trains(overrides):
    loss_fn, params, data = _problem()
    config = _config(**overrides)
    result = train(jax.random.key(1), loss_fn, params, optax.sgd(0.1), data, config)
    grad_fn = clipped_grad(loss_fn, config.l2_clip_norm)
    chunk = next(iter(poisson_batches(jax.random.key(2), N, config)))[0]
    grad_fn(params, jax.tree_util.tree_map(lambda v: v[chunk.indices], data), chunk.mask)

    acct = Accountant(config, params=params, dataset_size=N, method=grad_fn.method)
    assert acct.noise_multiplier == result.noise_multiplier
    for _ in range(config.num_steps):
        acct.step()
    assert acct.ledger("dp-sgd").to_dict() == result.ledger.to_dict()
    expected = config.epsilon_after(
        3, result.noise_multiplier, N, noise_cut=noise_cut(params), delta=DELTA
    )
    assert acct.epsilon() == expected
    assert acct.epsilon(DELTA) == pytest.approx(result.ledger.epsilon(DELTA), abs=1e-12)


def test_accountant_before_the_plan_is_complete_records_the_steps_taken():
    _, params, _ = _problem()
    config = _config()
    acct = Accountant(config, params=params)
    assert acct.epsilon() == 0.0 and acct.ledger().entries == ()
    acct.step()
    ledger = acct.ledger("dp-sgd")
    (entry,) = ledger.entries
    assert "steps=1," in entry.note and "1 of 3 planned steps taken" in entry.note
    one = config.epsilon_after(1, 1.0, N, noise_cut=noise_cut(params), delta=DELTA)
    assert acct.epsilon() == one
    assert ledger.epsilon(DELTA) == pytest.approx(one, abs=1e-12)
    acct.step(2)
    assert acct.epsilon() > one


def test_accountant_of_a_rate_and_steps_pair():
    _, params, _ = _problem()
    acct = Accountant((0.25, 3), noise_multiplier=1.0, params=params)
    acct.step(3)
    config = _config()
    expected = config.epsilon_after(3, 1.0, N, noise_cut=noise_cut(params), delta=DELTA)
    assert acct.epsilon(DELTA) == expected
    with pytest.raises(ValueError, match="declares no expected_batch_size"):
        acct.privatizer(jax.random.key(0))
    with pytest.raises(ValueError, match="noise in one place"):
        Accountant(config, noise_multiplier=2.0, params=params)
    with pytest.raises(ValueError, match="exactly one of params"):
        Accountant(config)
    with pytest.raises(ValueError, match="expected exactly one of noise_multiplier"):
        Accountant((0.25, 3), params=params)
    with pytest.raises(ValueError, match="expected dataset_size"):
        Accountant(_config(sampling="without_replacement"), params=params)
    fixed = Accountant(_config(sampling="without_replacement"), params=params, dataset_size=N)
    fixed.step(3)
    assert (
        fixed.ledger().neighboring_relation
        == _config(sampling="without_replacement").neighboring_relation
    )


# -- (c) over-stepping ---------------------------------------------------------------------
def test_stepping_past_the_plan_raises():
    acct = Accountant(_config(steps=2), noise_cut=0.0)
    acct.step()
    acct.step()
    with pytest.raises(RuntimeError, match="ran more steps than it accounted"):
        acct.step()
    assert acct.steps_taken == 2


# -- (d) clear errors ----------------------------------------------------------------------
def test_plain_gradients_into_dp_aggregate_say_what_to_use():
    _, params, _ = _problem()
    agg = dp_aggregate(jax.random.key(0), noise_multiplier=1.0, expected_batch_size=4)
    grads = jax.grad(lambda p: jnp.sum(jnp.asarray(p["params"]["Dense_0"]["kernel"])))(params)
    chain = optax.chain(agg, optax.adam(1e-3))
    with pytest.raises(TypeError, match=r"expected a ClippedSum, got dict.*clipped_grad"):
        chain.update(grads, chain.init(params), params)
    with pytest.raises(TypeError, match="make_dp_step"):
        agg.update(grads, agg.init(params))


def test_a_batch_without_its_mask_is_refused():
    loss_fn, params, data = _problem()
    grad_fn = clipped_grad(loss_fn, 1.0)
    batch = jax.tree_util.tree_map(lambda v: v[:4], data)
    with pytest.raises(TypeError, match="expected the batch's mask"):
        grad_fn(params, batch)
    with pytest.raises(TypeError, match="expected a boolean mask"):
        grad_fn(params, batch, jnp.ones(4))
    with pytest.raises(ValueError, match=r"expected mask of shape \(4,\)"):
        grad_fn(params, batch, jnp.ones(5, bool))


# -- (e) the batches are train()'s ---------------------------------------------------------
@pytest.mark.parametrize("performance", [None, Performance(chunk_size=8)], ids=["one", "chunks"])
def test_poisson_batches_are_trains(performance):
    loss_fn, params, data = _problem()
    config = _config(sampling_prob=0.25, steps=4)
    key = jax.random.key(7)
    run = start(key, loss_fn, params, optax.sgd(0.1), data, config, performance)
    # start() draws its batches from the first of its four key streams
    mine = list(poisson_batches(jax.random.split(key, 4)[0], N, config, performance=performance))
    theirs = list(run.batches())
    assert len(mine) == len(theirs) == 4
    for chunks, train_chunks in zip(mine, theirs, strict=True):
        assert len(chunks) == len(train_chunks)
        for c, (rows, mask) in zip(chunks, train_chunks, strict=True):
            np.testing.assert_array_equal(c.indices, rows["i"])
            np.testing.assert_array_equal(c.mask, mask)
            assert c.indices.shape == c.mask.shape == mask.shape
    padded = mine[0][0].mask.shape[0]
    assert all(c.mask.shape == (padded,) for chunks in mine for c in chunks)
    if performance is not None:
        assert padded == 8 and any(len(chunks) > 1 for chunks in mine)
    # the same draw as batch_selection's own, from a generator
    own = config.sampling.batches(
        numpy_rng(key), N, sampling_prob=0.25, steps=4, padded_size=mine[0][0].mask.shape[0]
    )
    again = poisson_batches(numpy_rng(key), N, config, performance=performance)
    for chunks, ref in zip(again, own, strict=True):
        for c, r in zip(chunks, ref, strict=True):
            np.testing.assert_array_equal(c.indices, r.indices)
            np.testing.assert_array_equal(c.mask, r.mask)


def test_poisson_batches_of_a_rate_and_steps_pair():
    batches = list(poisson_batches(np.random.default_rng(0), N, (0.25, 5)))
    assert len(batches) == 5
    assert dpsgd.PaddedBatch is type(batches[0][0])


# -- clipped_grad is the clipping path's sum ----------------------------------------------
def test_clipped_grad_is_the_general_paths_sum():
    loss_fn, params, data = _problem()
    batch = jax.tree_util.tree_map(lambda v: v[:6], data)
    mask = jnp.array([True, True, False, True, False, True])
    key = jax.random.key(3)
    got = clipped_grad(loss_fn, 0.5, method="general", microbatch_size=None)(
        params, batch, mask, key
    )
    ref, _ = clipped_grad_sum(
        loss_fn,
        params,
        batch,
        mask,
        jax.random.split(key, 6),
        method="general",
        l2_clip_norm=0.5,
    )
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    auto = clipped_grad(loss_fn, 0.5)
    summed = accumulate(auto(params, batch, mask, key), auto(params, batch, ~mask, key))
    assert auto.method in ("general", "ghost")
    full = auto(params, batch, jnp.ones(6, bool), key)
    for a, b in zip(
        jax.tree_util.tree_leaves(summed.grads), jax.tree_util.tree_leaves(full.grads), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_clipped_grad_inside_jit_and_the_chain():
    loss_fn, params, data = _problem()
    grad_fn = clipped_grad(loss_fn, 1.0)
    optimizer = optax.chain(
        dp_aggregate(jax.random.key(0), noise_multiplier=0.0, expected_batch_size=4.0),
        optax.sgd(1.0),
    )
    batch = jax.tree_util.tree_map(lambda v: v[:4], data)
    mask = jnp.array([True, True, True, False])

    @jax.jit
    def step(params, opt_state):
        updates, opt_state = optimizer.update(grad_fn(params, batch, mask), opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    new, _ = step(params, optimizer.init(params))
    eager = grad_fn(params, batch, mask).grads
    for p, n, g in zip(
        jax.tree_util.tree_leaves(params),
        jax.tree_util.tree_leaves(new),
        jax.tree_util.tree_leaves(eager),
        strict=True,
    ):
        np.testing.assert_allclose(n, p - g / 4.0, rtol=1e-5, atol=1e-6)
