"""DPNorm's norms and the clipped sum from ONE per-example gradient pass where it is exact.

:func:`jdp.dpsgd.step.dp_sgd` with an :class:`~jdp.dpsgd.AdaptiveClip` on the general path
with one chunk in one micro-batch computes the per-example gradients once, takes their
norms, draws the noisy histogram and clips and sums the same gradients; on a ghost path,
with micro-batches or with several chunks it keeps a norm pass before the clipped sum. Both
must release what the two-pass step (:func:`_two_pass_step`, the step as it was) releases
for the same keys.

Tolerance: the two computations differ only in where XLA fuses the same float32 per-example
gradients and their sums (one compiled program or two), a reordering of float32 sums of at
most ``B = 16`` terms, each rounding at most ``2^-24`` relative: below ``B 2^-24 ~ 1e-6`` of
the summed magnitudes per step. The histogram's choice is a step function of the norms; a
norm within a few ulps of a bin edge could flip it, which the fixed keys here do not meet
(:func:`test_one_pass_chooses_the_clip_the_norm_pass_chose` checks the choice to the bit).
So the parameters agree to ``1e-6`` relative plus ``1e-6`` of the largest parameter
(entries near 0) after the few steps (measured: a few ``1e-8``).
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.extend.core as jcore
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jdp.dpsgd import clip_schedules as cs
from jdp.dpsgd.clipping import add_clipped_sums, clipped_sum_general
from jdp.dpsgd.noise import dp_aggregate
from jdp.dpsgd.step import (
    DPSGDState,
    StepKeys,
    apply_update,
    clipped_grad_sum,
    dp_sgd,
    make_clipped_sum_fn,
)
from jdp.nn.mlp import MLP

ADAPTIVE = cs.AdaptiveClip(max_norm=2.0, bins=8, noise_multiplier=1.0)
B = 16
STEPS = 4


def _problem():
    """A tanh MLP (4 -> 8 -> 3) whose per-example loss reads its key; 16 padded rows."""
    model = MLP((8, 3), activation=nn.tanh)
    params = model.init(jax.random.key(0), jnp.zeros(4))
    data = {"x": jax.random.normal(jax.random.key(1), (B, 4)), "y": jnp.arange(B) % 3}
    mask = jnp.arange(B) < 13

    def loss_fn(p, ex, key):
        loss = optax.softmax_cross_entropy_with_integer_labels(model.apply(p, ex["x"]), ex["y"])
        return loss * (1.0 + 0.1 * jax.random.uniform(key))

    return loss_fn, params, data, mask


def _fixed_key(loss_fn, p, ex, key):
    del key
    return loss_fn(p, ex, jax.random.key(0))


def _chain() -> optax.GradientTransformation:
    noisy = dp_aggregate(jax.random.key(7), noise_multiplier=1.0, expected_batch_size=13.0)
    return optax.chain(noisy, optax.sgd(0.5))


KEYS = StepKeys(jax.random.key(3), jax.random.key(4))


def _chunks(data, mask, n_chunks: int) -> list[tuple]:
    size = B // n_chunks
    return [
        (jax.tree_util.tree_map(lambda a, j=j: a[j * size : (j + 1) * size], data),
         mask[j * size : (j + 1) * size])
        for j in range(n_chunks)
    ]  # fmt: skip


def _two_pass_step(loss_fn, method: str, microbatch_size):
    """The step as it was: a norm pass (clip = inf) on every chunk, DPNorm on all the norms,
    then a second pass for the clipped sums; the same key streams as :func:`dp_sgd`. Its
    body runs as one compiled program (op-by-op dispatch compiled every primitive alone and
    cost seconds); the tolerance above covers where XLA fuses the same sums."""
    sum_fn = make_clipped_sum_fn(loss_fn, method=method, microbatch_size=microbatch_size)
    apply_fn = apply_update(_chain())
    clips = []

    @jax.jit
    def compiled(state: DPSGDState, chunks) -> tuple[DPSGDState, jax.Array]:
        t_key = jax.random.fold_in(KEYS.example, state.count)
        keyed = [(x, m, jax.random.fold_in(t_key, j)) for j, (x, m) in enumerate(chunks)]
        norms = jnp.concatenate(
            [sum_fn(state.params, x, m, k, np.inf)[1].norms for x, m, k in keyed]
        )
        masks = jnp.concatenate([m for _, m, _ in keyed])
        clip = cs.dpnorm(jax.random.fold_in(KEYS.clip, state.count), norms, masks, ADAPTIVE)
        parts = [sum_fn(state.params, x, m, k, clip)[0] for x, m, k in keyed]
        total = functools.reduce(add_clipped_sums, parts)
        params, opt_state = apply_fn(state.params, state.opt_state, total)
        return state._replace(params=params, opt_state=opt_state), clip

    def step(state: DPSGDState, chunks) -> DPSGDState:
        new, clip = compiled(state, chunks)
        clips.append(clip)
        return new._replace(count=state.count + 1)

    return step, clips


def _run(step, params, chunks):
    state = DPSGDState(params, _chain().init(params), None, 0, jnp.zeros((), jnp.int32))
    for _ in range(STEPS):
        state = step(state, chunks)
    return state.params


def _count(jaxpr: jcore.Jaxpr, name: str) -> int:
    """Occurrences of primitive ``name`` in ``jaxpr`` and every jaxpr nested in it."""
    total = 0
    for eqn in jaxpr.eqns:
        total += eqn.primitive.name == name
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                if isinstance(sub, jcore.ClosedJaxpr):
                    total += _count(sub.jaxpr, name)
                elif isinstance(sub, jcore.Jaxpr):
                    total += _count(sub, name)
    return total


def _passes(loss_fn, params, chunks, l2_clip_norm, **path) -> int:
    """Forward passes of the MLP (its ``tanh``) in the traced program of one step."""
    sgd = dp_sgd(KEYS, loss_fn, _chain(), l2_clip_norm=l2_clip_norm, **path)
    jaxpr = jax.make_jaxpr(sgd.step)(sgd.init(params)._replace(count=jnp.int32(0)), chunks)
    return _count(jaxpr.jaxpr, "tanh")


@pytest.mark.parametrize(
    ("method", "microbatch_size", "n_chunks", "passes"),
    [
        ("general", None, 1, 1),  # the whole batch held at once: one pass
        ("general", "auto", 1, 1),  # "auto" holds these 16 small gradients at once
        ("general", 4, 1, 2),  # micro-batches: every norm is needed before any clip
        ("general", None, 2, 2),  # several chunks (gradient accumulation)
        ("ghost", None, 1, 2),  # the ghost clipped sum needs its own backward pass
    ],
)
def test_adaptive_step_equals_the_two_pass_step(method, microbatch_size, n_chunks, passes):
    """The adaptive clip costs ``passes`` times the per-example passes of a constant clip,
    and where it takes one pass the step releases the two-pass step's parameters (host loop
    and jitted step; where it keeps two passes its code is the norm pass as before, whose
    releases ``test_dpsgd.py`` and ``test_scan_loop.py`` check)."""
    loss_fn, params, data, mask = _problem()
    if method == "ghost":  # the ghost path's loss reads no key
        loss_fn = functools.partial(_fixed_key, loss_fn)
    chunks = _chunks(data, mask, n_chunks)
    path = {"method": method, "microbatch_size": microbatch_size}
    constant = _passes(loss_fn, params, chunks, 1.0, **path)
    assert constant >= 1
    assert _passes(loss_fn, params, chunks, ADAPTIVE, **path) == passes * constant
    if passes > 1:
        return
    reference, clips = _two_pass_step(loss_fn, **path)
    expected = _run(reference, params, chunks)
    sgd = dp_sgd(KEYS, loss_fn, _chain(), l2_clip_norm=ADAPTIVE, **path)
    assert len(set(np.asarray(clips).tolist())) > 1  # the histogram's choice moves
    for step in (sgd.step, jax.jit(sgd.step)):
        got = _run(step, params, chunks)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
            scale = float(np.max(np.abs(b)))
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * scale)


def test_auto_holds_a_chunk_within_one_pass_bytes_whole(monkeypatch):
    """Under ``"auto"`` a chunk longer than the 4 MiB micro-batch is held whole, one pass,
    when its per-example gradients fit ``ONE_PASS_BYTES``, and releases the two-pass step's
    parameters; above that it keeps the micro-batches and the norm pass. (The caps are
    scaled down to this MLP's 67 parameters: micro-batches of 4 rows.)"""
    from jdp.dpsgd import clipping

    loss_fn, params, data, mask = _problem()
    per_example = 4 * sum(int(np.size(p)) for p in jax.tree_util.tree_leaves(params))
    monkeypatch.setattr(clipping, "AUTO_MICROBATCH_BYTES", 4 * per_example)
    chunks = _chunks(data, mask, 1)
    path = {"method": "general", "microbatch_size": "auto"}
    constant = _passes(loss_fn, params, chunks, 1.0, **path)
    monkeypatch.setattr(clipping, "ONE_PASS_BYTES", B * per_example)
    assert _passes(loss_fn, params, chunks, ADAPTIVE, **path) == constant
    reference, _ = _two_pass_step(loss_fn, **path)
    expected = _run(reference, params, chunks)
    got = _run(jax.jit(dp_sgd(KEYS, loss_fn, _chain(), l2_clip_norm=ADAPTIVE, **path).step),
               params, chunks)  # fmt: skip
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * float(np.max(np.abs(b))))
    monkeypatch.setattr(clipping, "ONE_PASS_BYTES", B * per_example - 1)
    assert _passes(loss_fn, params, chunks, ADAPTIVE, **path) == 2 * constant


def test_one_pass_chooses_the_clip_the_norm_pass_chose():
    """The clipped sum with ``choose(norms)`` = DPNorm equals, sum and sensitivity, the sum
    clipped to DPNorm's choice on a separate norm pass's norms."""
    loss_fn, params, data, mask = _problem()
    keys = jax.random.split(jax.random.key(2), B)
    key = jax.random.key(9)
    norms = clipped_sum_general(loss_fn, params, data, mask, keys, l2_clip_norm=np.inf)[1].norms
    clip = cs.dpnorm(key, norms, mask, ADAPTIVE)
    two, _ = clipped_sum_general(loss_fn, params, data, mask, keys, l2_clip_norm=clip)
    choose = jax.tree_util.Partial(lambda k, m, n: cs.dpnorm(k, n, m, ADAPTIVE), key, mask)
    one, info = clipped_sum_general(loss_fn, params, data, mask, keys, l2_clip_norm=choose)
    assert float(one.l2_sensitivity) == float(clip) < ADAPTIVE.max_norm
    np.testing.assert_array_equal(info.norms, norms)
    for a, b in zip(jax.tree_util.tree_leaves(one.grads), jax.tree_util.tree_leaves(two.grads)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_clip_chosen_from_the_norms_needs_one_general_micro_batch():
    loss_fn, params, data, mask = _problem()
    keys = jax.random.split(jax.random.key(2), B)
    choose = jax.tree_util.Partial(lambda n: jnp.max(n))
    with pytest.raises(ValueError, match="expected one micro-batch .* got 4 of 16 rows"):
        clipped_sum_general(
            loss_fn, params, data, mask, keys, l2_clip_norm=choose, microbatch_size=4
        )
    with pytest.raises(ValueError, match="expected a bound as l2_clip_norm on the ghost path"):
        clipped_grad_sum(loss_fn, params, data, mask, keys, method="ghost", l2_clip_norm=choose)
