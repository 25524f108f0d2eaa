"""KIPConfig.dtype: a performance flag; float32 KIP keeps float64 KIP's KRR accuracy.

The accuracy bound. On a fixed problem (three Gaussian blobs, a 6-point support, 300 target
and 1000 test records) float32 and float64 KIP start from the same support and key. The two
learned supports are scored by the same float64 KRR on the test set. Their accuracies may
differ only on test records where the two predictors disagree, and a record's predicted class
can only change if its float64 margin (top score minus runner-up) is at most twice the largest
score difference between the two predictors: the test checks both that exact statement and a
fixed bound, one binomial standard error of the test accuracy, ``0.5 / sqrt(1000) = 0.016``:
a change smaller than what the test set itself can resolve. The supports themselves must
agree to ``1e-3`` relative: a float32 KRR solve loses about ``kappa * 2^-24`` of relative
accuracy, where the trace-normalised ridge ``reg = 1e-3`` caps the condition number
``kappa <= n_s / reg = 6e3``, i.e. ``4e-4`` per step, which Adam's normalised steps do not
compound at this size (measured ``4e-5``; accuracy 0.705 at the start, 0.801 after
both runs, no test record within the flip margin).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kip import KIPConfig, centred_one_hot, fit_support, krr_fit_predict, make_kernel_fn
from kip.kip import DTYPES

REG = 1e-3
N_TEST = 1000


def blobs(n: int, seed: int, d: int = 5, c: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``c`` overlapping Gaussian blobs: inputs and integer labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, c, size=n)
    centres = np.random.default_rng(99).normal(scale=1.0, size=(c, d))
    return centres[labels] + rng.normal(size=(n, d)), labels


def krr_scores(sx: np.ndarray, sy: np.ndarray, x: np.ndarray) -> np.ndarray:
    """float64 KRR scores of ``x`` from the support ``(sx, sy)`` with the config's NTK."""
    with jax.enable_x64(True):
        kernel = make_kernel_fn(depth=1)
        sx64, x64 = np.asarray(sx, np.float64), np.asarray(x, np.float64)
        k_ss, k_ts = kernel(sx64, sx64), kernel(x64, sx64)
        return np.asarray(krr_fit_predict(k_ts, k_ss, jnp.asarray(sy, jnp.float64), reg=REG))


def test_dtype_is_validated_and_auto_follows_the_backend(monkeypatch):
    assert KIPConfig().dtype == "auto"
    assert KIPConfig(dtype="float32").compute_dtype() == "float32"
    with pytest.raises(ValueError, match="expected dtype in"):
        KIPConfig(dtype="bfloat16")
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert KIPConfig().compute_dtype() == "float64"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert KIPConfig().compute_dtype() == "float32"
    assert DTYPES == ("auto", "float32", "float64")


def test_float32_kip_keeps_float64_accuracy():
    x, labels = blobs(6 + 300 + N_TEST, seed=1)
    y = centred_one_hot(labels, 3)
    sx, sy, tx, ty = x[:6], y[:6], x[6:306], y[6:306]
    test_x, test_labels = x[306:], labels[306:]
    supports = {}
    with jax.enable_x64(True):  # as a process with jax_enable_x64 on: float32 must stay float32
        for dtype in ("float32", "float64"):
            config = KIPConfig(
                steps=60, target_batch_size=100, reg=REG, learning_rate=1e-2, dtype=dtype
            )
            result = fit_support(jax.random.key(0), sx, sy, tx, ty, config)
            assert result.support_x.dtype == np.dtype(dtype)
            supports[dtype] = result.support_x
    s32, s64 = supports["float32"], supports["float64"]
    assert np.max(np.abs(s64 - sx)) > 1e-2  # KIP moved the support
    assert np.max(np.abs(s32 - s64)) <= 1e-3 * np.max(np.abs(s64))

    p32, p64 = krr_scores(s32, sy, test_x), krr_scores(s64, sy, test_x)
    acc32 = np.mean(np.argmax(p32, 1) == test_labels)
    acc64 = np.mean(np.argmax(p64, 1) == test_labels)
    top2 = np.sort(p64, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    deviation = np.max(np.abs(p32 - p64))
    may_flip = np.mean(margin <= 2 * deviation)
    assert abs(acc32 - acc64) <= may_flip
    assert abs(acc32 - acc64) <= 0.5 / np.sqrt(N_TEST)
    assert acc64 > 0.5  # a problem KIP solves better than chance (1/3)


def test_dtype_changes_no_privacy_accounting():
    """DP-KIP's ledger is the same event in float32 and float64 (the dtype is a performance
    flag: noise multiplier, sampler cut and run length do not depend on it)."""
    from jdp.dpsgd import DPSGDConfig
    from jdp.synth.clustmix.dp_kip import dp_kip

    x, labels = blobs(36, seed=3, d=4)
    y = centred_one_hot(labels, 3)
    dpsgd = DPSGDConfig(
        l2_clip_norm=1.0, sampling_prob=0.2, expected_batch_size=6.0, steps=2,
        target_epsilon=1.0, target_delta=1e-5,
    )  # fmt: skip
    ledgers = {}
    for dtype in ("float32", "float64"):
        config = KIPConfig(steps=2, reg=REG, dtype=dtype)
        result, ledgers[dtype] = dp_kip(
            jax.random.key(0), x[:6], y[:6], x[6:], y[6:], config, dpsgd
        )
        assert result.support_x.dtype == np.dtype(dtype)
    assert ledgers["float32"].entries == ledgers["float64"].entries
    assert ledgers["float32"].epsilon(1e-5) == ledgers["float64"].epsilon(1e-5)
