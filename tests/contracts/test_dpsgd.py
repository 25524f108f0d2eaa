"""One contract for DP-SGD over both clipping paths and both batch selections (DESIGN section 3).

Each case is a clipping path (``"general"``: ``vmap(grad)``; ``"ghost"``: per-example norms
without per-example gradients) and a batch selection (:class:`PoissonSampling`, add/remove-one;
:class:`FixedSizeSampling`, replace-one). The contract, checked for each:

* no-privacy limit: ``C = inf``, ``z = 0`` and ``q = 1`` give exactly the non-private
  mean-gradient step;
* per-example clipping bound: one example contributes at most ``C`` to the clipped sum, and
  neighbouring batches (one example removed, or replaced by an adversarial one) move the sum
  by at most the selection's ``sensitivity_factor * C``;
* same key -> same parameters, a different key -> different noise;
* the update's noise has std ``z C / B̄`` (a chi-square test at level ``1e-6``);
* bad input raises with the documented message;
* no recompilation: the jitted step traces the loss on its first call only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from accounting import events as ev
from jdp.dpsgd import (
    DPSGDConfig,
    FixedSizeSampling,
    GeneralClipping,
    Performance,
    PoissonSampling,
    StepKeys,
    choose_method,
    clipped_grad_sum,
    dp_aggregate,
    dp_sgd,
    make_dp_step,
    train,
)
from jdp.nn.mlp import MLP
from jdp.random import numpy_rng

N = 16
CASES = [
    pytest.param(method, selection, id=f"{method}-{selection.name}")
    for method in ("general", "ghost")
    for selection in (PoissonSampling(), FixedSizeSampling())
]


def _problem(width: int = 8, out: int = 3):
    """A small MLP with a cross-entropy loss for ONE example, and ``N`` records."""
    rng = np.random.default_rng(0)
    data = {
        "x": rng.standard_normal((N, 4)).astype(np.float32),
        "y": (np.arange(N) % out).astype(np.int32),
    }
    model = MLP((width, out))
    params = model.init(jax.random.key(0), jnp.zeros(4))

    def loss_fn(p, ex, key):
        del key
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, ex["x"]), ex["y"])

    return model, loss_fn, params, data


def _config(selection, **overrides) -> DPSGDConfig:
    args = {
        "l2_clip_norm": 0.5,
        "sampling_prob": 0.5,
        "expected_batch_size": 0.5 * N,
        "steps": 2,
        "noise_multiplier": 1.0,
        "sampling": selection,
    }
    return DPSGDConfig(**(args | overrides))


def _take(data, indices):
    return jax.tree_util.tree_map(lambda x: x[indices], data)


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(x, np.float64) for x in jax.tree_util.tree_leaves(tree)]


def _norm(tree) -> float:
    return float(np.sqrt(sum(np.sum(x**2) for x in _leaves(tree))))


@pytest.mark.parametrize(("method", "selection"), CASES)
class TestDPSGDContract:
    def test_no_privacy_limit_is_the_non_private_step(self, method, selection):
        _, loss_fn, params, data = _problem()
        lr = 0.3
        config = _config(
            selection,
            l2_clip_norm=np.inf,
            noise_multiplier=0.0,
            sampling_prob=1.0,
            expected_batch_size=float(N),
            steps=1,
        )
        performance = Performance(clipping=method)
        got = train(
            jax.random.key(1), loss_fn, params, optax.sgd(lr), data, config, performance=performance
        )
        assert got.ledger.entries[0].event == ev.NonPrivateDpEvent()  # z = 0: not private
        mean_loss = lambda p: jnp.mean(jax.vmap(lambda e: loss_fn(p, e, None))(data))
        want = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, jax.grad(mean_loss)(params))
        for a, b in zip(_leaves(got.params), _leaves(want), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def test_per_example_clipping_bound_and_neighbouring_sums(self, method, selection):
        _, loss_fn, params, data = _problem()
        clip = 0.05  # every example is clipped
        keys = jax.random.split(jax.random.key(2), N)
        total = jax.jit(
            lambda b, m: (
                clipped_grad_sum(loss_fn, params, b, m, keys, method=method, l2_clip_norm=clip)[
                    0
                ].grads
            )
        )
        batch = jax.tree_util.tree_map(jnp.asarray, data)
        full = total(batch, jnp.ones(N, bool))
        bound = selection.sensitivity_factor * clip * (1 + 1e-5)
        for i in range(0, N, 5):
            one = np.arange(N) == i
            assert _norm(total(batch, jnp.asarray(one))) <= clip * (1 + 1e-5)
            if selection.sensitivity_factor == 1.0:  # add/remove-one: drop example i
                neighbour = total(batch, jnp.asarray(~one))
            else:  # replace-one: example i replaced by an adversarial record
                x = batch["x"].at[i].set(-50.0 * batch["x"][i])
                y = batch["y"].at[i].set((batch["y"][i] + 1) % 3)
                neighbour = total({"x": x, "y": y}, jnp.ones(N, bool))
            diff = jax.tree_util.tree_map(jnp.subtract, full, neighbour)
            assert _norm(diff) <= bound

    def test_same_key_same_output_different_key_different_noise(self, method, selection):
        """One jitted step, driven by a key: the batch (selection), per-example keys and the
        noise (``dp_aggregate``'s state) all come from it."""
        _, loss_fn, params, data = _problem()
        chain = lambda key: optax.chain(
            dp_aggregate(key, noise_multiplier=1.0, expected_batch_size=8.0), optax.sgd(0.1)
        )
        step = make_dp_step(loss_fn, chain(jax.random.key(0)), l2_clip_norm=0.5, method=method)
        padded = selection.padded_size(N, 0.5)

        def run(seed: int):
            sample_key, noise_key, example_key = jax.random.split(jax.random.key(seed), 3)
            batches = selection.batches(
                numpy_rng(sample_key), N, sampling_prob=0.5, steps=1, padded_size=padded
            )
            (chunk,) = next(batches)  # one chunk: P(overflow) <= 1e-6 by construction
            opt_state = chain(noise_key).init(params)
            return step(params, opt_state, _take(data, chunk.indices), chunk.mask, example_key)[0]

        first, again, other = run(3), run(3), run(4)
        for a, b, c in zip(_leaves(first), _leaves(again), _leaves(other), strict=True):
            np.testing.assert_array_equal(a, b)
            assert not np.allclose(a, c)

    def test_noise_std_is_z_times_clip_over_the_normaliser(self, method, selection):
        """A loss with zero gradient: the SGD(1) update is minus the noise over ``B̄``."""
        model, _, params, data = _problem(width=2_000, out=4)
        loss_fn = lambda p, ex, key: 0.0 * jnp.sum(model.apply(p, ex["x"]))
        z, clip, declared = 1.3, 0.7, 4.0
        config = _config(
            selection,
            l2_clip_norm=clip,
            noise_multiplier=z,
            expected_batch_size=declared,
            steps=1,
        )
        performance = Performance(clipping=method)
        out = train(
            jax.random.key(5), loss_fn, params, optax.sgd(1.0), data, config, performance=performance
        )
        update = np.concatenate(
            [(b - a).ravel() for a, b in zip(_leaves(out.params), _leaves(params), strict=True)]
        )
        size, sigma = update.size, z * clip / declared
        assert size > 10_000
        stat = (size - 1) * update.var(ddof=1) / sigma**2
        lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], size - 1)
        assert lo < stat < hi
        assert abs(update.mean()) < stats.norm.ppf(1 - 0.5e-6) * sigma / np.sqrt(size)

    def test_bad_input_raises_with_its_message(self, method, selection):
        _, loss_fn, params, data = _problem()
        with pytest.raises(ValueError, match="expected l2_clip_norm > 0, got -1"):
            _config(selection, l2_clip_norm=-1.0)
        with pytest.raises(ValueError, match="expected expected_batch_size > 0, got 0"):
            _config(selection, expected_batch_size=0.0)
        with pytest.raises(ValueError, match=r"expected sampling in \('poisson', "):
            _config("bernoulli")
        with pytest.raises(TypeError, match="expected config to be a DPSGDConfig, got dict"):
            train(jax.random.key(0), loss_fn, params, optax.sgd(0.1), data, {"steps": 1})
        with pytest.raises(ValueError, match="leading batch axis"):
            train(
                jax.random.key(0),
                loss_fn,
                params,
                optax.sgd(0.1),
                {"x": np.float32(1.0)},
                _config(selection),
                performance=Performance(clipping=method),
            )
        message = (
            "expected chunk_size to be a multiple of 4, got 6"
            if selection == PoissonSampling()
            else "expected chunk_size only with sampling='poisson'"
        )
        with pytest.raises(ValueError, match=message):
            train(
                jax.random.key(0),
                loss_fn,
                params,
                optax.sgd(0.1),
                data,
                _config(selection),
                # chunks must hold whole micro-batches (only the general path has them)
                performance=Performance(clipping=GeneralClipping(microbatch_size=4), chunk_size=6),
            )

    def test_no_recompilation_after_the_first_step(self, method, selection):
        _, loss_fn, params, data = _problem()
        traces = []

        def counted(p, ex, key):
            traces.append(1)  # runs only while JAX traces the loss
            return loss_fn(p, ex, key)

        assert choose_method(counted, params, data, method=method) == method
        chain = optax.chain(
            dp_aggregate(jax.random.key(6), noise_multiplier=1.0, expected_batch_size=8.0),
            optax.sgd(0.1),
        )
        keys = StepKeys(*jax.random.split(jax.random.key(7), 2))
        sgd = dp_sgd(keys, counted, chain, l2_clip_norm=0.5, method=method)
        state = sgd.init(params)
        batches = selection.batches(
            numpy_rng(jax.random.key(8)),
            N,
            sampling_prob=0.5,
            steps=3,
            padded_size=selection.padded_size(N, 0.5),
        )
        counts = []
        for chunks in batches:
            state = sgd.step(
                state,
                [(_take(data, c.indices), c.mask) for c in chunks],
            )
            counts.append(len(traces))
        assert counts[0] > 0 and counts[1] == counts[0] and counts[2] == counts[0]
        assert state.count == 3
