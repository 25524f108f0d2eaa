"""DPGM's per-cluster state counts (jdp.synth.dpgm): the release's sensitivity under random and
adversarial neighbours, its place in the ledger within the budget, and sampling that draws
each cluster's states with the released frequencies (chi-square / binomial bounds)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import compute_epsilon
from accounting import events as ev
from jdp.data.schema import Column, Schema
from jdp.encoding.kmeans import dp_kernel_kmeans
from jdp.mechanisms.noise import gaussian_event
from jdp.synth.base import fit_model, sample_model
from jdp.synth.dpgm import DPGMConfig, codec, fit_arrays, model
from jdp.synth.dpgm.model import (
    calibrate_noise,
    generator_noise_cut,
    partition_by_released_centres,
    plan_events,
)
from jdp.synth.states import match_state_counts, release_state_counts, state_blocks, state_counts

from .test_dpgm import BUDGET, FIXED_Z, TINY

SCHEMA = Schema(
    columns=(
        Column(name="gain", kind="integer", lower=0, upper=100, point_masses=(0,)),
        Column(name="loss", kind="continuous", lower=0.0, upper=5.0, point_masses=(0.0,)),
        Column(name="age", kind="continuous", lower=0.0, upper=1.0),
        Column(name="job", kind="categorical", categories=("a", "b", "c")),
    )
)
ALPHA = 1e-3  # false-alarm rate of every statistical bound below

#: A declared public row count: the method alone, without the shape rule's count release.
DECLARED_ROWS = 10**6


def _frame(n: int, seed: int = 0, zero_share: float = 0.9) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "gain": np.where(rng.random(n) < zero_share, 0, rng.integers(1, 101, n)),
            "loss": np.where(rng.random(n) < 0.95, 0.0, rng.uniform(0.1, 5.0, n)),
            "age": rng.random(n),
            "job": rng.choice(["a", "b", "c"], n),
        }
    )


def table_encoder(schema: Schema):
    """DPGM's public encoder of ``schema`` (its codec's)."""
    return codec(schema, DPGMConfig()).encoder


@pytest.fixture(scope="module")
def vae_fit():
    """The VAE fitted through the registry on a table with two state blocks, with the
    multipliers its calibration gave (recorded by a spy around :func:`calibrate_noise`)."""
    calls = []

    def spy(*args, **kwargs):
        calls.append(calibrate_noise(*args, **kwargs))
        return calls[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(model, "calibrate_noise", spy)
        fitted = fit_model(
            jax.random.key(0),
            "dpgm",
            SCHEMA.conform(_frame(80)),
            BUDGET,
            DPGMConfig(**TINY),
            rows=DECLARED_ROWS,
        )
    (z,) = calls
    return fitted, z


def _partition(x: np.ndarray):
    result, ledger = dp_kernel_kmeans(
        np.random.default_rng(0), x, 2, noise_multiplier=1.0, steps=2, gamma=0.5, n_components=16
    )
    return result, ledger, partition_by_released_centres(result, ledger, x)


# -- the release: sensitivity ----------------------------------------------------------------------


@pytest.mark.parametrize("extra", ["random", "adversarial"])
def test_state_counts_change_by_sqrt_m_under_a_neighbour(extra):
    """Adding one record moves the (k, S) counts by L2 norm exactly sqrt(m) (m state blocks),
    for records drawn from the table's domain and for adversarial encoded rows (blocks that
    are not one-hot: all ones, huge, negative, NaN-free extremes). Counting the block's raw
    values instead of its argmax fails the adversarial case (a block [1e3, 1e3] moves two
    counts by 1e3): checked by swapping ``argmax`` for the raw block sum."""
    encoder = table_encoder(SCHEMA)
    blocks = state_blocks(encoder)
    assert len(blocks) == 2
    x = encoder.encode(_frame(80))
    result, ledger, partition = _partition(x)
    base = state_counts(partition.labels, 2, x, blocks)
    assert base.sum() == pytest.approx(len(x) * len(blocks))
    if extra == "random":
        added = encoder.encode(_frame(20, seed=3, zero_share=0.5))
    else:
        added = np.stack(
            [
                np.ones(encoder.width),
                np.full(encoder.width, 1e3),
                -np.full(encoder.width, 1e3),
                np.zeros(encoder.width),
                np.where(np.arange(encoder.width) % 2 == 0, 1e6, -1e6),
            ]
        )
    for row in added:
        bigger = np.vstack([x, row])
        labels = partition_by_released_centres(result, ledger, bigger).labels
        neighbour = state_counts(labels, 2, bigger, blocks)
        assert np.linalg.norm(neighbour - base) <= np.sqrt(len(blocks)) * (1 + 1e-12)


def test_fit_releases_state_counts_within_the_budget(vae_fit, monkeypatch):
    """The counts are one Gaussian entry at the k-means multiplier between the sizes and the
    DP-SGD runs; the whole ledger still meets the budget (and is not far below it)."""
    fitted, z = vae_fit
    config, ledger = fitted.config, fitted.ledger
    blocks = state_blocks(table_encoder(SCHEMA))
    assert ledger.labels == ["dp-kmeans"] * 2 + [
        "dpgm-cluster-sizes",
        "dpgm-state-counts",
        "dp-sgd",
    ]
    cut = generator_noise_cut(config, table_encoder(SCHEMA).width)
    assert ledger.entries[3].event == gaussian_event(z["kmeans"])
    planned = ev.ComposedDpEvent(
        [e for _, e in plan_events(config, z["kmeans"], z["sgd"], noise_cut=cut, state_counts=True)]
    )
    eps = ledger.epsilon(BUDGET.delta)
    assert eps == pytest.approx(compute_epsilon(planned, BUDGET.delta, accountant="best"), rel=1e-9)
    assert BUDGET.epsilon * 0.99 <= eps <= BUDGET.epsilon * (1 + 1e-9)
    # the extra release is paid for with more noise elsewhere, not with more epsilon
    assert z["kmeans"] > calibrate_noise(config, BUDGET, noise_cut=cut)["kmeans"]
    assert fitted.params["state_counts"].shape == (2, sum(b - a for a, b in blocks))
    # no state blocks: no entry, an empty (k, 0) array (fixed multipliers and one cluster:
    # the labels and shapes do not depend on them)
    monkeypatch.setattr(model, "calibrate_noise", lambda *a, **k: FIXED_Z)
    plain = Schema(columns=SCHEMA.columns[2:])
    plain_codec = codec(plain, config)
    params, ledger = fit_arrays(
        jax.random.key(0), plain_codec.encode(plain.conform(_frame(60)[["age", "job"]])),
        plain_codec, BUDGET, dataclasses.replace(config, n_clusters=1),
    )  # fmt: skip
    assert "dpgm-state-counts" not in ledger.labels and params["state_counts"].shape == (1, 0)


def test_released_counts_carry_the_calibrated_noise():
    """Released minus exact counts are N(0, (z sqrt(m))^2): their scaled sum of squares over
    200 releases lies inside the two-sided chi-square interval at ALPHA; noise without the
    sensitivity factor (std z, too small by sqrt(2)) falls outside it (checked by dropping
    the ``l2_sensitivity`` argument)."""
    encoder = table_encoder(SCHEMA)
    blocks = state_blocks(encoder)
    x = encoder.encode(_frame(80))
    _, _, partition = _partition(x)
    exact = state_counts(partition.labels, 2, x, blocks)
    z, rng, scaled = 3.0, np.random.default_rng(7), []
    for _ in range(200):
        noisy, event = release_state_counts(rng, partition.labels, 2, x, blocks, z)
        assert event == gaussian_event(z)
        scaled.append((noisy - exact) / (z * np.sqrt(len(blocks))))
    ss, dof = float(np.sum(np.square(scaled))), int(np.size(scaled))
    assert stats.chi2.ppf(ALPHA / 2, dof) <= ss <= stats.chi2.ppf(1 - ALPHA / 2, dof)


# -- sampling: the released frequencies ------------------------------------------------------------


def test_matched_blocks_draw_each_clusters_released_frequencies():
    """Per cluster, the drawn states of ``match_state_counts`` + ``sample_blocks`` pass a
    chi-square goodness-of-fit test at ALPHA against the released counts (normalised, negative
    counts at 0), although the generator's probabilities are far from them; the generator's
    own probabilities fail the same test (the property is not vacuous). Rows keep their
    order: the row the generator found likelier for a state stays likelier."""
    encoder = table_encoder(SCHEMA)
    blocks = state_blocks(encoder)
    rng = np.random.default_rng(0)
    n = 6000
    x = encoder.sample_blocks(rng, rng.random((n, encoder.width)), "all")  # any rows
    clusters = rng.integers(0, 3, n)
    for start, stop in blocks:  # generator probabilities: around 0.5 / 0.5
        x[:, start:stop] = rng.dirichlet([5.0] * (stop - start), n)
    counts = np.array(
        [[900.0, 100.0, 50.0, 950.0], [120.0, 880.0, -30.0, 400.0], [30.0, 90.0, 0.0, 0.0]]
    )
    matched = match_state_counts(x, clusters, counts, blocks)
    for raw_x, must_pass in ((matched, True), (x, False)):
        drawn = encoder.sample_blocks(np.random.default_rng(1), raw_x, "states")
        results = []
        offset = 0
        for start, stop in blocks:
            for j in range(3):
                target = np.maximum(counts[j, offset : offset + stop - start], 0.0)
                if target.sum() <= 0:
                    continue
                observed = drawn[clusters == j, start:stop].sum(axis=0)
                expected = target / target.sum() * observed.sum()
                keep = expected > 0
                if must_pass:  # a state with no released count is never drawn
                    assert np.all(observed[~keep] == 0)
                chi2 = np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep])
                results.append(chi2 <= stats.chi2.ppf(1 - ALPHA, max(keep.sum() - 1, 1)))
            offset += stop - start
        assert all(results) if must_pass else not any(results)
    # within a cluster the generator's ordering of rows survives the rescaling
    start, stop = blocks[0]
    rows = clusters == 0
    assert stats.spearmanr(x[rows, start], matched[rows, start]).statistic > 0.999
    # a cluster whose block counts are all <= 0 keeps the generator's probabilities
    start, stop = blocks[1]
    np.testing.assert_array_equal(matched[clusters == 2, start:stop], x[clusters == 2, start:stop])


def test_sampled_table_has_the_released_zero_share(vae_fit):
    """End to end through ``sample_model`` and decoding: with released state counts set to
    chosen values, the share of exact zeros of each point-mass column is binomial around the
    weighted mix of the clusters' released shares (a z-bound at ALPHA; the within-cluster
    draws are Poisson-binomial, so the binomial variance bounds it)."""
    fitted, _ = vae_fit
    counts = np.array([[300.0, 700.0, 800.0, 200.0], [900.0, 100.0, 990.0, 10.0]])
    fitted = dataclasses.replace(fitted, params={**fitted.params, "state_counts": counts})
    w = np.asarray(fitted.params["cluster_weights"])
    n = 4000
    rows = sample_model(jax.random.key(5), fitted, n)
    z_crit = stats.norm.ppf(1 - ALPHA / 2)
    for col, offset in (("gain", 0), ("loss", 2)):
        share = counts[:, offset + 1] / counts[:, offset : offset + 2].sum(axis=1)
        p = float(w @ share)
        zeros = int((rows[col] == 0).sum())
        assert abs(zeros - n * p) <= z_crit * np.sqrt(n * p * (1 - p)), (col, zeros / n, p)
