"""The training loop helper, clip schedules and DPGM's adaptive clip bound."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dpsgd_problems import classification_problem
from scipy import stats

from accounting import events as ev
from accounting.builders import dpsgd_event
from jdp.dpsgd import (
    DPSGDConfig,
    FixedSizeSampling,
    GhostClipping,
    Performance,
    PoissonSampling,
    start,
    train,
)
from jdp.dpsgd import clip_schedules as cs
from jdp.dpsgd.noise import noise_cut
from jdp.nn.mlp import MLP
from jdp.verbosity import show_private_details

N = 128


def _problem():
    return classification_problem(N, aux=True)


def _config(**overrides) -> DPSGDConfig:
    """C = 1, q = 0.25, 2 steps, z = 1 (overridden); B̄ = q N unless given."""
    args = {"l2_clip_norm": 1.0, "sampling_prob": 0.25, "steps": 2, "noise_multiplier": 1.0}
    args |= overrides
    args.setdefault("expected_batch_size", args["sampling_prob"] * N)
    return DPSGDConfig(**args)


def _train(seed: int, config: DPSGDConfig, optimizer=None, loss_fn=None, **performance):
    """:func:`train` on :func:`_problem`'s loss (its value without the aux), SGD(0.1) unless
    given; ``performance`` are :class:`Performance` fields."""
    problem_loss, params, data, _ = _problem()
    return train(
        jax.random.key(seed),
        (lambda p, ex, k: problem_loss(p, ex, k)[0]) if loss_fn is None else loss_fn,
        params,
        optax.sgd(0.1) if optimizer is None else optimizer,
        data,
        config,
        performance=Performance(**performance),
    )


def test_train_learns_and_records_its_event():
    _, params, _, accuracy = _problem()
    config = _config(steps=40, noise_multiplier=0.8)
    out = _train(1, config, optax.adam(0.05))
    assert out.steps == 40 and out.noise_multiplier == 0.8
    assert out.ledger.labels == ["dp-sgd"]
    # the run's event, with the noise sampler's cut on every parameter per step
    cut = noise_cut(params)
    assert cut > 0
    assert out.ledger.entries[0].event == dpsgd_event(0.8, 0.25, 40, noise_cut=cut)
    assert accuracy(out.params) > max(accuracy(params), 0.8)
    again = _train(1, config, optax.adam(0.05))
    np.testing.assert_array_equal(
        again.params["params"]["Dense_0"]["kernel"], out.params["params"]["Dense_0"]["kernel"]
    )


def test_target_epsilon_is_met():
    config = _config(
        sampling_prob=0.1,
        steps=None,
        epochs=2,
        noise_multiplier=None,
        target_epsilon=2.0,
        target_delta=1e-5,
    )
    out = _train(2, config)
    assert out.steps == 20
    # calibrated with the config's accountant (RDP) to within 5%; the ledger's figure (the
    # best rigorous accountant) is at most that
    eps = out.ledger.epsilon(1e-5, accountant=config.accountant)
    assert eps <= 2.0 * (1 + 1e-6) and eps > 1.9
    assert out.ledger.epsilon(1e-5) <= eps


def test_a_loop_of_its_own_threads_a_public_model_state():
    """An RBM-like loss whose negative phase reads a persistent, data-independent state that
    the loop changes between steps (:mod:`jdp.dpsgd.run`); the run refuses a step beyond its
    plan (it would spend more than its ledger says)."""
    data = {"x": np.ones((16, 3), np.float32)}
    params = {"w": jnp.zeros(3)}
    loss_fn = lambda p, ex, key, state: -jnp.dot(p["w"], ex["x"]) + jnp.dot(p["w"], state)
    config = _config(
        l2_clip_norm=np.inf,
        sampling_prob=1.0,
        expected_batch_size=16.0,
        steps=3,
        noise_multiplier=0.0,
    )
    state0 = jnp.zeros(3)
    run = start(jax.random.key(0), loss_fn, params, optax.sgd(1.0), data, config,
                model_state=state0)  # fmt: skip
    state = run.init(params, state0)
    for chunks in run.batches():
        state = run.step(state, chunks)
        state = state._replace(model_state=state.model_state + 1.0)
    np.testing.assert_allclose(state.model_state, 3.0)
    # per-example gradient x - state = 1, 0, -1 at steps 0, 1, 2; mean over the 16 rows
    np.testing.assert_allclose(state.params["w"], 0.0, atol=1e-6)
    assert isinstance(run.ledger().entries[0].event, ev.NonPrivateDpEvent)
    with pytest.raises(RuntimeError, match="planned and accounted for 3 steps"):
        run.step(state, chunks)


def test_clipping_decay_keeps_the_noise_multiplier():
    schedule = cs.clipping_decay(2.0, 0.5, every=3)
    assert [schedule(t) for t in (0, 2, 3, 7)] == [2.0, 2.0, 1.0, 0.5]
    out = _train(
        3, _config(l2_clip_norm=schedule, sampling_prob=0.2, steps=6, noise_multiplier=1.1)
    )
    cut = noise_cut(_problem()[1])
    assert out.ledger.entries[0].event == dpsgd_event(1.1, 0.2, 6, noise_cut=cut)


def test_dpnorm_histogram_and_mode():
    norms = jnp.array([0.05, 0.3, 0.31, 0.32, 0.9, 5.0, 0.0, 0.33])
    mask = jnp.array([True] * 7 + [False])
    counts = cs.norm_histogram(norms, mask, 1.0, 4)  # bins (0,.25] (.25,.5] (.5,.75] (.75,1]
    np.testing.assert_array_equal(counts, [1, 3, 0, 1])
    config = cs.AdaptiveClip(max_norm=1.0, bins=4, noise_multiplier=1e-3)
    assert float(cs.dpnorm(jax.random.key(0), norms, mask, config)) == pytest.approx(0.5)


def test_adaptive_clip_training_is_accounted_as_two_gaussians_on_one_batch():
    adaptive = cs.AdaptiveClip(max_norm=4.0, bins=8, noise_multiplier=2.0)
    out = _train(4, _config(l2_clip_norm=adaptive, sampling_prob=0.2, steps=4))
    step = ev.PoissonSampledDpEvent(
        0.2, ev.ComposedDpEvent([ev.GaussianDpEvent(2.0), ev.GaussianDpEvent(1.0)])
    )
    # the sampler's cut: the gradient's draw on every parameter and the 8-bin histogram's
    cut = 4 * (noise_cut(_problem()[1]) + cs.histogram_noise_cut(adaptive))
    assert out.ledger.entries[0].event == ev.ComposedDpEvent(
        [ev.SelfComposedDpEvent(step, 4), ev.NoiseCutDpEvent(cut)]
    )
    with pytest.raises(ValueError, match="AdaptiveClip"):
        _config(l2_clip_norm=adaptive, noise_multiplier=None, target_epsilon=1.0, target_delta=1e-5)
    with pytest.raises(ValueError, match="AdaptiveClip"):
        _config(l2_clip_norm=adaptive, sampling="without_replacement")


def test_without_replacement_is_recorded_under_replace_one():
    out = _train(5, _config(sampling="without_replacement"))
    assert out.ledger.neighboring_relation == ev.NeighboringRelation.REPLACE_ONE
    # replace-one: the clipped sum moves by up to 2C; dpsgd_event takes z = std / C and
    # records the Gaussian z / 2 itself
    cut = noise_cut(_problem()[1])
    wor = dpsgd_event(1.0, 0.25, 2, sampling="without_replacement", dataset_size=N, noise_cut=cut)
    assert out.ledger.entries[0].event == wor
    assert wor.events[0].event.event == ev.GaussianDpEvent(0.5)


def test_config_stores_the_batch_selection_strategy():
    """A name and the strategy object give the same config; the strategy states the relation
    and the sensitivity factor of the accounting (one copy, in accounting.relations)."""
    by_name = _config(sampling="without_replacement")
    assert by_name == _config(sampling=FixedSizeSampling())
    assert by_name.sampling.sensitivity_factor == 2.0
    assert _config().sampling == PoissonSampling() and _config().sampling.sensitivity_factor == 1.0
    assert by_name.event(1.0, N) == dpsgd_event(
        1.0, 0.25, 2, sampling="without_replacement", dataset_size=N
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampling_prob": 1.5}, r"expected sampling_prob in \(0, 1\]"),
        ({"sampling_prob": 0.0}, r"expected sampling_prob in \(0, 1\]"),
        ({"l2_clip_norm": -1.0}, "expected l2_clip_norm > 0, got -1"),
        ({"noise_multiplier": -1.0}, "expected noise_multiplier >= 0, got -1"),
        ({"epochs": 1.0}, "exactly one of steps or epochs"),
        ({"target_epsilon": 1.0, "target_delta": 1e-5}, "at most one of noise_multiplier"),
        ({"sampling": "bernoulli"}, r"expected sampling in \('poisson', 'without_replacement'\)"),
    ],
)
def test_invalid_settings_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _config(expected_batch_size=12.8, **kwargs)


def test_a_template_without_noise_cannot_train():
    """A method's template leaves the noise to its calibration; a run needs it said."""
    template = _config(noise_multiplier=None)
    assert template.with_noise(1.5).noise_multiplier == 1.5
    assert template.with_noise(1.5).without_noise() == template
    with pytest.raises(ValueError, match="exactly one of noise_multiplier or target_epsilon"):
        _train(0, template)


def test_forcing_ghost_on_a_loss_it_cannot_handle_raises():
    loss_fn, _, _, _ = _problem()
    penalised = lambda p, ex, k: (
        loss_fn(p, ex, k)[0] + sum(jnp.sum(w**2) for w in jax.tree_util.tree_leaves(p))
    )
    with pytest.raises(ValueError, match="method='ghost' is not exact"):
        _train(0, _config(steps=1), loss_fn=penalised, clipping=GhostClipping())


def test_gradient_accumulation_over_small_chunks_equals_one_chunk():
    config = _config(l2_clip_norm=0.5, sampling_prob=0.3, steps=3)
    whole = _train(6, config, optax.sgd(0.5), clipping="general")
    chunked = _train(6, config, optax.sgd(0.5), clipping="general", chunk_size=8)
    # ~38 records per step in chunks of 8: same Poisson batches, same single noise draw
    for a, b in zip(
        jax.tree_util.tree_leaves(whole.params),
        jax.tree_util.tree_leaves(chunked.params),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert whole.ledger.entries[0].event == chunked.ledger.entries[0].event


# -- the normaliser is a declared public constant (issue 10, item 3) --------------------------
def _zero_gradient_update(seed: int, rows: int, size: int, **config) -> np.ndarray:
    """One SGD(1) step of ``train`` on a loss with zero gradient over ``size`` parameters and
    ``rows`` records: the update is minus the noisy (zero) sum over ``B̄``."""
    params = {"w": jnp.zeros(size)}
    loss_fn = lambda p, ex, key: 0.0 * jnp.sum(p["w"]) * ex["x"][0]
    data = {"x": np.ones((rows, 1), np.float32)}
    config = _config(sampling_prob=0.1, steps=1, **config)
    out = train(
        jax.random.key(seed),
        loss_fn,
        params,
        optax.sgd(1.0),
        data,
        config,
        performance=Performance(clipping="general"),
    )
    return np.asarray(out.params["w"], np.float64)


def test_update_is_normalised_by_the_declared_constant_not_by_len_data():
    """With SGD and a zero-gradient loss the update is -noise / normaliser. n = 100 and
    n = 101 with the same declared expected_batch_size and key give the SAME update: the
    normaliser does not read len(data) (it used to be q n: std 0.0200 vs 0.0198)."""
    z, clip, declared, size = 1.3, 0.7, 10.0, 20_000
    updates = [
        _zero_gradient_update(
            8, n, size, l2_clip_norm=clip, noise_multiplier=z, expected_batch_size=declared
        )
        for n in (100, 101)
    ]
    np.testing.assert_array_equal(updates[0], updates[1])
    sigma = z * clip / declared
    stat = (size - 1) * updates[0].var(ddof=1) / sigma**2
    lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], size - 1)
    assert lo < stat < hi


def test_expected_batch_size_is_required_and_validated():
    args = {"l2_clip_norm": 1.0, "sampling_prob": 0.1, "steps": 1, "noise_multiplier": 1.0}
    with pytest.raises(TypeError, match="expected_batch_size"):
        DPSGDConfig(**args)
    with pytest.raises(ValueError, match="expected expected_batch_size > 0, got 0"):
        DPSGDConfig(expected_batch_size=0.0, **args)


# -- non-finite per-example gradients (issue 10, item 2) --------------------------------------
@pytest.mark.parametrize("method", ["general", "ghost"])
def test_non_finite_record_is_dropped_by_train_with_a_warning_that_counts_nothing(method):
    """Record 0 (which padded slots repeat) has log(0) in its loss. Training is finite and
    equals training without it; train warns without printing a data-derived count, and only
    under show_private_details (whether it warns is private: issue 24, item 3)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    w = np.ones(16, np.float32)
    w[0] = 0.0
    model = MLP((8, 2))
    params = model.init(jax.random.key(0), jnp.zeros(4))

    def loss_fn(p, ex, key):
        del key
        out = model.apply(p, ex["x"])
        return jnp.sum(out**2) - jnp.log(jnp.abs(ex["w"]) * jnp.sum(jnp.square(out)))

    config = DPSGDConfig(
        l2_clip_norm=0.5, sampling_prob=1.0, steps=2, noise_multiplier=1.0, expected_batch_size=16.0
    )
    kwargs = {"performance": Performance(clipping=method)}
    with show_private_details(), pytest.warns(RuntimeWarning, match="non-finite") as record:
        bad = train(
            jax.random.key(2), loss_fn, params, optax.sgd(0.1), {"x": x, "w": w}, config, **kwargs
        )
    (message,) = [str(r.message) for r in record if "non-finite" in str(r.message)]
    assert not any(ch.isdigit() for ch in message)
    clean = train(
        jax.random.key(2),
        loss_fn,
        params,
        optax.sgd(0.1),
        {"x": x[1:], "w": w[1:]},
        config,
        **kwargs,
    )
    for a, b in zip(
        jax.tree_util.tree_leaves(bad.params), jax.tree_util.tree_leaves(clean.params), strict=True
    ):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_train_with_secure_noise_releases_values_on_the_grid():
    """Zero gradients, SGD with rate 1 and normaliser 1: the update is minus the rounded
    noisy sum, which lies on the grid secure_noise_grid(z C)."""
    from jdp.dpsgd.noise import secure_noise_grid

    z, clip = 1.1, 0.6
    update = _zero_gradient_update(
        4,
        50,
        5_000,
        l2_clip_norm=clip,
        noise_multiplier=z,
        expected_batch_size=1.0,
        secure_noise=True,
    )
    lam = float(secure_noise_grid(jnp.float32(z * clip)))
    steps = update / lam
    np.testing.assert_array_equal(steps, np.round(steps))
    # 5000 draws: the sample std has a relative standard error of 1%; 5 of them allowed
    assert np.std(steps) * lam == pytest.approx(z * clip, rel=0.05)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_progress_epsilon_after_the_last_step_is_the_ledgers(sampling):
    """The progress bar's running epsilon and the ledger's are two paths to one number."""
    config = DPSGDConfig(
        l2_clip_norm=1.0,
        sampling_prob=0.1,
        expected_batch_size=10.0,
        steps=12,
        target_epsilon=2.0,
        target_delta=1e-5,
        sampling=sampling,
    )
    data = np.ones((50, 3), np.float32)

    def loss(p, x, key):
        return jnp.sum((p - x) ** 2)

    result = train(jax.random.key(0), loss, jnp.zeros(3), optax.sgd(0.1), data, config)
    z, cut = result.noise_multiplier, noise_cut(jnp.zeros(3))
    last = config.epsilon_after(12, z, 50, noise_cut=cut)
    assert last == pytest.approx(result.ledger.epsilon(1e-5), rel=1e-12)
    assert config.epsilon_after(6, z, 50, noise_cut=cut) < last


def test_on_step_sees_every_iterate_and_the_last_is_the_result():
    config = DPSGDConfig(
        l2_clip_norm=1.0, sampling_prob=0.2, expected_batch_size=4.0, steps=5, noise_multiplier=1.0
    )
    seen: list[tuple[int, np.ndarray]] = []

    def loss(p, x, key):
        return jnp.sum((p - x) ** 2)

    result = train(
        jax.random.key(0),
        loss,
        jnp.zeros(2),
        optax.sgd(0.1),
        np.ones((20, 2), np.float32),
        config,
        on_step=lambda t, p: seen.append((t, np.asarray(p))),
    )
    assert [t for t, _ in seen] == [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(seen[-1][1], np.asarray(result.params))
    assert not np.array_equal(seen[0][1], seen[-1][1])
