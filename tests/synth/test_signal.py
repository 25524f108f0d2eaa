"""The shared "too little budget for any signal" rule (jdp.synth.signal) and its one call in
fit_model: a 700-row Adult at epsilon = 1 says so, the full table does not, and the message
shows no private count unless the data holder asked for private details."""

from __future__ import annotations

import math
import warnings

import pytest

from accounting import PrivacyBudget
from jdp.data.datasets import load_dataset
from jdp.random import key_from_seed
from jdp.synth import pca_gauss as pg
from jdp.synth import signal
from jdp.synth.base import fit_model
from jdp.verbosity import show_private_details


def test_release_ratio_and_weak_releases() -> None:
    releases = [
        signal.Release("a", noise=0.5, signal=1.0),
        signal.Release("b", noise=1.0, signal=1.0),
        signal.Release("c", noise=1e-9, signal=0.0),
    ]
    assert [r.name for r in signal.weak_releases(releases)] == ["b", "c"]
    assert releases[2].ratio == math.inf
    assert signal.laplace_std(2.0, 0.5) == pytest.approx(4.0 * math.sqrt(2.0))
    assert signal.spectral_noise(0.5, 16) == pytest.approx(4.0)


def _fit(rows: int, epsilon: float, config=None):
    ds = load_dataset("adult")
    budget = PrivacyBudget(epsilon=epsilon, delta=1e-5)
    return fit_model(
        key_from_seed(0), "pca-gauss", ds.train.iloc[:rows], budget, config, schema=ds.schema
    )


def _no_signal_messages(rows: int, epsilon: float, config=None) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(rows, epsilon, config)
    return [str(w.message) for w in caught if issubclass(w.category, signal.NoSignalWarning)]


def test_small_table_warns_without_printing_its_size() -> None:
    """700 rows at epsilon = 1: Analyze Gauss's noise matrix (spectral norm ~ 2 sqrt(d) z,
    about 160 on Adult's 112 feature columns) buries a scatter whose signal share is
    0.05 * n_hat = 35, so the subspace is flagged (ratio ~ 4.5; the rule would need
    n_hat >= 20 * 160 = 3200 rows). The message names the statistic and never the private
    row count (700, nor its class sizes 540 / 160)."""
    messages = _no_signal_messages(700, 1.0)
    assert len(messages) == 1
    assert "subspace" in messages[0]
    ds = load_dataset("adult")
    class_sizes = ds.train.iloc[:700][ds.schema.target].value_counts().tolist()
    for private in [700, *class_sizes]:
        assert str(private) not in messages[0]
    assert "signal" in messages[0] and "noise" in messages[0]


def test_private_details_show_the_sizes_only_on_request() -> None:
    with show_private_details():
        messages = _no_signal_messages(700, 1.0)
    assert len(messages) == 1 and "subspace: noise" in messages[0]
    (short,) = _no_signal_messages(700, 1.0)
    assert "subspace: noise" not in short


def test_enough_rows_and_budget_do_not_warn_but_lap_pca_on_a_wide_table_does() -> None:
    """The full Adult split at epsilon = 1: every ratio is below 0.25 with the default
    (Analyze Gauss); Lap-PCA's d^2 sensitivity on the same table gives a subspace ratio ~2
    (its subspace is noise: issue 15 section 2's AUROC below 0.5)."""
    assert _no_signal_messages(40_000, 1.0) == []
    messages = _no_signal_messages(40_000, 1.0, pg.PCAGaussConfig(pca_source="lap"))
    assert len(messages) == 1 and "subspace" in messages[0]


def test_methods_without_registered_releases_are_not_judged() -> None:
    from jdp.synth.base import FittedModel

    model = _fit(700, 1.0)
    other = FittedModel(
        "no-such-reporter", model.params, model.schema, model.config, model.budget, model.ledger
    )
    assert signal.check_signal(other) == []


def test_a_long_list_of_weak_statistics_names_the_worst_and_keeps_them_all(monkeypatch) -> None:
    """Spambase-like: 57 weak columns would be a wall of text; the message names the SHOWN
    worst and counts the rest, and the warning carries every one, worst first."""
    releases = [signal.Release(f"mean of c{j}", noise=1.0 + j, signal=1.0) for j in range(57)]
    monkeypatch.setitem(signal._REPORTERS, "test-many", lambda model: releases)
    model = type("M", (), {"method": "test-many"})()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        weak = signal.check_signal(model)
    (w,) = caught
    message = str(w.message)
    assert len(weak) == 57 and f"and {57 - signal.SHOWN} more" in message
    assert "mean of c56 57" in message and "mean of c0 " not in message
    assert [r.name for r in w.message.releases] == [f"mean of c{j}" for j in range(56, -1, -1)]


def test_pca_gauss_column_means_are_the_released_models_means() -> None:
    """Each numeric column's released mean (``c_i + R V_i mu`` on the unit scale, classes
    weighted by their noisy counts) is the mean of the model's own unclipped draws in that
    coordinate: 20,000 draws, within 5 standard errors of the draws' own spread."""
    import numpy as np

    from jdp.random import numpy_rng
    from jdp.synth.pca_gauss.codec import PCAGaussCodec
    from jdp.synth.pca_gauss.model import released_model, sample_features
    from jdp.synth.pca_gauss.releases import released_statistics

    model = _fit(2000, 1.0)
    means = {r.name: r for r in released_statistics(model) if r.name.startswith("mean of")}
    codec = PCAGaussCodec.of(model.schema, model.config)
    released = released_model(model.params, codec.mode)
    u, _ = sample_features(numpy_rng(key_from_seed(1)), released, 20_000)
    sub = released.subspace
    box = sub.centre + sub.radius * u @ sub.components.T  # unclipped c + R V u
    position = {int(j): i for i, j in enumerate(codec.feature_index)}
    numeric = [
        s for s in codec.encoder.spans
        if s.name in model.schema.names and model.schema[s.name].is_numeric
    ]  # fmt: skip
    assert {f"mean of {s.name} (to within half)" for s in numeric} == set(means)
    for span in numeric:
        draws = (box[:, position[span.start]] + 1.0) / 2.0
        release = means[f"mean of {span.name} (to within half)"]
        mean = release.signal / signal.MEAN_PRECISION
        assert abs(draws.mean() - mean) <= 5 * draws.std() / np.sqrt(len(draws)) + 1e-12
        assert release.noise > 0
