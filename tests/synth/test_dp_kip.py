"""DP-KIP (jdp.synth.clustmix.dp_kip): per-target clipping bound with adversarial targets, the
no-privacy limit equals non-private KIP, the ledger entry and its epsilon."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from accounting.builders import dpsgd_event
from jdp.dpsgd import DPSGDConfig, clipped_grad_sum
from jdp.synth.clustmix.config import Records
from jdp.synth.clustmix.dp_kip import dp_kip, dp_kip_displacement, dp_kip_loss_fn, support_noise_cut
from kip import KIPConfig, centred_one_hot, fit_support

REG = 1e-3


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=30)
    centres = np.random.default_rng(9).normal(scale=2.0, size=(3, 4))
    xt = centres[labels] + rng.normal(size=(30, 4))
    xs = centres[[0, 1, 2, 0, 1, 2]] + 0.3 * rng.normal(size=(6, 4))
    return xs, centred_one_hot(np.array([0, 1, 2, 0, 1, 2]), 3), xt, centred_one_hot(labels, 3)


def adversarial_targets(xs, d=4, c=3):
    """Records built to have large or degenerate per-target gradients."""
    rows = [
        (1e4 * np.ones(d), np.full(c, 1e3)),  # huge input and label
        (xs[0], np.array([1e3, -1e3, 0.0])),  # on a support point (the kernel diagonal)
        (np.zeros(d), np.full(c, -50.0)),  # the origin
        (xs[1] + 1e-9, np.array([0.0, 1e4, 0.0])),  # near-duplicate of a support point
        (-1e3 * xs[2], np.full(c, 1e2)),
    ]
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])


@pytest.mark.parametrize("learn_labels", [False, True])
def test_clipping_bound_holds_for_adversarial_targets(problem, learn_labels):
    """The clipped sum changes by at most C when any one target record is removed, and the
    adversarial records' raw gradients exceed C (so without clipping this would fail)."""
    xs, ys, xt, yt = problem
    ax, ay = adversarial_targets(xs)
    bx, by = np.concatenate([xt[:6], ax]), np.concatenate([yt[:6], ay])
    config = KIPConfig(steps=1, reg=REG, learn_labels=learn_labels)
    loss_fn = dp_kip_loss_fn(config, jnp.asarray(ys))
    params = (jnp.asarray(xs), jnp.asarray(ys)) if learn_labels else jnp.asarray(xs)
    batch = {"x": jnp.asarray(bx), "y": jnp.asarray(by)}
    n, clip = len(bx), 0.5
    keys = jax.random.split(jax.random.key(0), n)

    @jax.jit
    def clipped(mask):
        return clipped_grad_sum(loss_fn, params, batch, mask, keys, l2_clip_norm=clip)

    full, info = clipped(np.ones(n, dtype=bool))
    assert float(full.l2_sensitivity) == clip
    raw = np.asarray(info.norms)
    assert np.all(np.isfinite(raw))
    # all but the origin record (whose kernel row barely depends on the support) are clipped
    assert np.all(raw[[6, 7, 9, 10]] > clip), raw
    for j in range(n):
        mask = np.ones(n, dtype=bool)
        mask[j] = False
        neighbour, _ = clipped(mask)
        diff = jax.tree_util.tree_map(lambda a, b: a - b, full.grads, neighbour.grads)
        norm = math.sqrt(sum(float(jnp.sum(d**2)) for d in jax.tree_util.tree_leaves(diff)))
        assert norm <= clip * (1 + 1e-9), (j, norm)


@pytest.mark.parametrize("alpha", [None, 0.4])
def test_no_privacy_limit_is_non_private_kip(problem, alpha):
    """z = 0, C = inf, q = 1, B̄ = n: every step is the full-batch KIP gradient, so DP-KIP
    equals fit_support with the whole target set as its batch."""
    xs, ys, xt, yt = problem
    n = len(xt)
    config = KIPConfig(steps=4, reg=REG, target_batch_size=n, alpha=alpha, learning_rate=0.05)
    dpsgd = DPSGDConfig(
        l2_clip_norm=math.inf, sampling_prob=1.0, expected_batch_size=n, steps=4,
        noise_multiplier=0.0,
    )  # fmt: skip
    private, ledger = dp_kip(jax.random.key(1), xs, ys, xt, yt, config, dpsgd)
    plain = fit_support(jax.random.key(2), xs, ys, xt, yt, config)
    np.testing.assert_allclose(private.support_x, plain.support_x, rtol=1e-7, atol=1e-10)
    assert not np.allclose(private.support_x, xs)
    assert ledger.labels == ["dp-kip"]


def test_ledger_epsilon_within_budget_and_event_matches(problem):
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=3, reg=REG)
    dpsgd = DPSGDConfig(
        l2_clip_norm=1.0, sampling_prob=0.2, expected_batch_size=6.0, steps=3,
        target_epsilon=1.0, target_delta=1e-5,
    )  # fmt: skip
    result, ledger = dp_kip(jax.random.key(3), xs, ys, xt, yt, config, dpsgd)
    assert ledger.labels == ["dp-kip"]
    eps = ledger.epsilon(1e-5)
    assert eps <= 1.0 + 1e-6
    assert eps > 0.5  # calibrated to the target, not wildly over-noised
    assert result.losses.size == 0  # no data-derived loss is released
    # the run's sampler cut is on its parameters: the support (and its labels if learned)
    cut = support_noise_cut(*xs.shape, ys.shape[1] if config.learn_labels else None)
    z = dpsgd.calibrated_noise_multiplier(len(xt), cut)
    assert ledger.entries[0].event == dpsgd_event(z, 0.2, 3, noise_cut=cut)


def test_noise_moves_the_support(problem):
    """Same key -> same release; different key -> different noise."""
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=2, reg=REG)
    dpsgd = DPSGDConfig(
        l2_clip_norm=1.0, sampling_prob=0.5, expected_batch_size=15.0, steps=2,
        noise_multiplier=2.0,
    )  # fmt: skip
    a, _ = dp_kip(jax.random.key(4), xs, ys, xt, yt, config, dpsgd)
    b, _ = dp_kip(jax.random.key(4), xs, ys, xt, yt, config, dpsgd)
    c, _ = dp_kip(jax.random.key(5), xs, ys, xt, yt, config, dpsgd)
    np.testing.assert_array_equal(a.support_x, b.support_x)
    assert not np.allclose(a.support_x, c.support_x)


def test_bad_input(problem):
    xs, ys, xt, yt = problem
    config = KIPConfig(steps=3, reg=REG)
    dpsgd = DPSGDConfig(
        l2_clip_norm=1.0, sampling_prob=0.5, expected_batch_size=15.0, steps=4,
        noise_multiplier=1.0,
    )  # fmt: skip
    with pytest.raises(ValueError, match="run length to equal config.steps = 3, got 4"):
        dp_kip(jax.random.key(0), xs, ys, xt, yt, config, dpsgd)
    with pytest.raises(TypeError, match="expected dpsgd_config to be a DPSGDConfig"):
        dp_kip(jax.random.key(0), xs, ys, xt, yt, config, object())


def test_displacement_for_clustmix(problem):
    """The strict ClustMix glue: features in [0, 1], a public size, one labelled entry; the
    config's DP-SGD template with the given noise."""
    from jdp.dpsgd import DPSGDConfig
    from jdp.synth.clustmix.config import ClustMixConfig

    rng = np.random.default_rng(6)
    x = rng.uniform(size=(40, 4))
    y = rng.integers(0, 2, size=40)
    centres = rng.uniform(size=(4, 4))
    template = DPSGDConfig(l2_clip_norm=1.0, sampling_prob=0.5, expected_batch_size=1.0, steps=2)
    config = ClustMixConfig(kip_dpsgd=template)
    shift, ledger = dp_kip_displacement(
        jax.random.key(0), centres, np.array([0, 0, 1, 1]), Records(x, y, 2), config,
        noise_multiplier=1.0, public_size=40.0,
    )  # fmt: skip
    assert shift.shape == centres.shape and np.all(np.isfinite(shift))
    assert ledger.labels == ["clustmix/dp-kip"]
    labels = 2 if config.kip_config().learn_labels else None
    cut = support_noise_cut(*centres.shape, labels)
    assert ledger.entries[0].event == dpsgd_event(1.0, 0.5, 2, noise_cut=cut)
