"""The compiled DP-SGD loop (:mod:`jdp.dpsgd.scan`) releases what the step-by-step loop does.

For the same key, config and data, ``train`` with ``Performance(steps_per_dispatch=K)``
returns the parameters, ledger and step count of ``steps_per_dispatch=1`` (the loop over
:meth:`Run.step`): the same host draws of the batches, the same per-step keys, the same step
function scanned. Exactness: bit for bit on the general path (float32 and float64); on the
ghost path to 1e-12 relative in float64, because XLA may fuse the ghost norms' sums
differently inside the scan (a different float summation order, a few ulps).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dpsgd_problems import classification_problem

from jdp.dpsgd import DPSGDConfig, Performance, start, train
from jdp.dpsgd import clip_schedules as cs
from jdp.mechanisms.tape import Tape, TapeMismatch, recording, replaying

N = 64


def _loss_reading_its_key(loss_fn):
    """The problem's loss scaled by a per-example random factor: the two loops must hand
    every example the same key."""
    return lambda p, ex, key: loss_fn(p, ex, key) * (1.0 + 0.1 * jax.random.uniform(key))


def _fit(k: int, config: DPSGDConfig, *, dtype=np.float32, data=None, on_step=None, **flags):
    """``train`` on :func:`classification_problem` (its loss reading its key), Adam, the
    general clipping path unless ``flags`` say otherwise."""
    flags.setdefault("clipping", "general")
    loss_fn, params, problem_data, _ = classification_problem(N)
    params = jax.tree_util.tree_map(lambda p: p.astype(dtype), params)
    data = problem_data if data is None else data
    data = {**data, "x": data["x"].astype(dtype)}
    return train(
        jax.random.key(5),
        _loss_reading_its_key(loss_fn),
        params,
        optax.adam(0.05),
        data,
        config,
        performance=Performance(steps_per_dispatch=k, **flags),
        on_step=on_step,
    )


def _config(**overrides) -> DPSGDConfig:
    args = {"l2_clip_norm": 1.0, "sampling_prob": 0.2, "expected_batch_size": 0.2 * N}
    return DPSGDConfig(**(args | {"steps": 7, "noise_multiplier": 1.0} | overrides))


def _assert_same_params(a, b, *, exact: bool) -> None:
    """Bit for bit, or to 1e-12 relative (float64: a few ulps of summation order)."""
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b):
        assert x.dtype == y.dtype
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def _assert_same_release(a, b, *, exact: bool) -> None:
    assert a.steps == b.steps and a.noise_multiplier == b.noise_multiplier
    assert a.ledger.to_dict() == b.ledger.to_dict()
    _assert_same_params(a.params, b.params, exact=exact)


@pytest.mark.parametrize("clipping", ["general", "ghost"])
def test_blocks_release_the_step_loops_parameters_and_every_iterate(clipping):
    """7 steps in blocks of 3 (3 + 3 + 1: the last block shorter): the same parameters,
    ledger and steps as step by step, and ``on_step`` sees every step's iterate."""
    with jax.enable_x64(True):
        seen: dict[int, list] = {1: [], 3: []}
        out = {
            k: _fit(
                k,
                _config(),
                dtype=np.float64,
                clipping=clipping,
                on_step=lambda t, p, k=k: seen[k].append((t, p)),
            )
            for k in (1, 3)
        }
    exact = clipping == "general"
    _assert_same_release(out[1], out[3], exact=exact)
    assert [t for t, _ in seen[3]] == [t for t, _ in seen[1]] == list(range(1, 8))
    for (_, p1), (_, p3) in zip(seen[1], seen[3]):
        _assert_same_params(p1, p3, exact=exact)
    _assert_same_params(seen[3][-1][1], out[3].params, exact=True)


def test_overflowing_batches_and_an_adaptive_clip_match_in_float32():
    """Chunks of 8 (a Poisson batch of about 13 takes one to three, varying by step:
    the block pads a step's missing chunks with all-masked ones) and DPGM's noisy-histogram
    clip bound, computed inside the scan: bit for bit in float32, one block of all steps."""
    config = _config(l2_clip_norm=cs.AdaptiveClip(max_norm=2.0, bins=4, noise_multiplier=1.0))
    step_by_step = _fit(1, config, chunk_size=8)
    one_block = _fit(7, config, chunk_size=8)
    _assert_same_release(step_by_step, one_block, exact=True)


def test_each_block_passes_the_release_tape():
    """One tape entry per block; a fit on D recorded, replayed on a neighbour (one record
    added) gives the same model; a different block length does not replay."""
    base = classification_problem(N)[2]
    neighbour = {k: np.concatenate([v, v[:1] * 0 + 3]) for k, v in base.items()}
    with recording(Tape()) as tape:
        recorded = _fit(3, _config(), data=base)
    assert len(tape) == 3 and all(name == "Run.block" for name, *_ in tape.entries)
    with replaying(tape):
        replayed = _fit(3, _config(), data=neighbour)
    _assert_same_release(recorded, replayed, exact=True)
    with pytest.raises(TapeMismatch), replaying(tape):
        _fit(2, _config(), data=base)


def test_steps_per_dispatch_is_resolved_and_checked():
    loss_fn, params, data, _ = classification_problem(N)

    def run_for(config, **flags):
        performance = Performance(clipping="general", **flags)
        return start(jax.random.key(0), loss_fn, params, optax.sgd(0.1), data, config, performance)

    assert run_for(_config()).steps_per_dispatch == 1  # the default: step by step
    # "auto": at most the run's steps, in equal blocks of at most 32 where they divide it
    assert run_for(_config(), steps_per_dispatch="auto").steps_per_dispatch == 7
    assert run_for(_config(steps=100), steps_per_dispatch="auto").steps_per_dispatch == 25
    assert run_for(_config(), steps_per_dispatch=3).steps_per_dispatch == 3
    # a clip schedule is a host function of the step count: step by step
    decay = _config(l2_clip_norm=cs.clipping_decay(1.0, 0.5))
    assert run_for(decay, steps_per_dispatch=4).steps_per_dispatch == 1
    assert Performance(steps_per_dispatch=2.0).steps_per_dispatch == 2
    with pytest.raises(ValueError, match="expected steps_per_dispatch >= 1, got 0"):
        Performance(steps_per_dispatch=0)
    with pytest.raises(ValueError, match="a count or 'auto'"):
        Performance(steps_per_dispatch="fast")
    run = run_for(_config(steps=2), steps_per_dispatch=2)
    state = run.init(params)
    state, _ = run.block(state, next(run.blocks()))
    with pytest.raises(RuntimeError, match="planned and accounted for 2 steps"):
        run.block(state, next(run.blocks()))
    assert jnp.all(jnp.isfinite(jax.tree_util.tree_leaves(state.params)[0]))
