"""Membership inference on synthetic data: the DOMIAS density-ratio score detects a generator
that memorises, and finds nothing against fresh samples; the table-level wrapper on a fitted
synthesizer and its report section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.audit.density_attack import density_ratio_attack, density_ratio_scores
from jdp.audit.mia import MIA_NOTE, mia_section, mia_split, synthetic_data_mia
from jdp.data.schema import Column, Schema
from jdp.random import key_from_seed
from jdp.synth import base


def _population(rng, n, d=3):
    return rng.normal(size=(n, d))


def test_density_ratio_detects_memorisation():
    """Synthetic data = the members plus small jitter (an overfitted generator): members
    have synthetic density far above the population's: the AUC's interval lies well above
    0.5 (with 300 + 300 records its half-width is about 0.04)."""
    rng = np.random.default_rng(0)
    members, nonmembers, reference = (_population(rng, 300) for _ in range(3))
    synthetic = members + 0.05 * rng.standard_normal(members.shape)
    result = density_ratio_attack(
        members, nonmembers, synthetic, reference, density="kde", bandwidth=0.1
    )
    assert result.auc_ci[0] > 0.6


@pytest.mark.parametrize("density", ["kde", "gmm"])
def test_density_ratio_finds_nothing_against_fresh_samples(density):
    """Synthetic data drawn from the population independently of the members: members and
    non-members are exchangeable, so each 95% interval contains 0.5 with probability 0.95;
    of 3 seeded runs at least 2 must (P[two or more misses] = 0.7%)."""
    contains = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        members, nonmembers, reference, synthetic = (_population(rng, 400) for _ in range(4))
        result = density_ratio_attack(members, nonmembers, synthetic, reference, density=density)
        contains += result.auc_ci[0] < 0.5 < result.auc_ci[1]
    assert contains >= 2


def test_density_ratio_scores_by_hand_for_a_kde():
    """One synthetic and one reference point, bandwidth h: the log ratio of two Gaussian
    kernels is (|x - r|^2 - |x - s|^2) / (2 h^2)."""
    x = np.array([[0.0, 0.0], [1.0, 2.0]])
    s, r = np.array([[1.0, 0.0]]), np.array([[0.0, 3.0]])
    h = 0.7
    expected = (((x - r) ** 2).sum(1) - ((x - s) ** 2).sum(1)) / (2 * h**2)
    np.testing.assert_allclose(density_ratio_scores(x, s, r, bandwidth=h), expected, rtol=1e-10)


def test_density_ratio_bad_input():
    x = np.zeros((3, 2))
    with pytest.raises(ValueError, match="density"):
        density_ratio_scores(x, x, x, density="flow")
    with pytest.raises(ValueError, match="columns"):
        density_ratio_scores(x, x, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        density_ratio_scores(x, np.full((3, 2), np.nan), x)


def test_synthetic_data_mia_on_a_fitted_model_and_its_section():
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0, upper=1),
            Column(name="c", kind="categorical", categories=("a", "b")),
        )
    )
    rng = np.random.default_rng(2)

    def frame(n):
        return pd.DataFrame({"x": rng.uniform(0, 1, n), "c": rng.choice(["a", "b"], n)})

    train, test = frame(300), frame(300)
    model = base.fit_model(
        key_from_seed(0), "marginals", train, PrivacyBudget(epsilon=1.0, delta=1e-5), schema=schema
    )
    members, nonmembers, reference = mia_split(train, test, members=100, seed=0)
    assert len(members) == len(nonmembers) == len(reference) == 100
    results = synthetic_data_mia(key_from_seed(1), model, members, nonmembers, reference)
    assert [r.name for r in results] == ["black-box dcr", "black-box domias"]
    # at eps = 1 (delta ~ 0) every membership test has TPR <= e FPR and 1 - FPR <= e (1 -
    # TPR): the best ROC curve bends at FPR = 1 / (1 + e), area e / (1 + e) = 0.731; an
    # attack may sit anywhere below it (marginals leak a little through the bin counts)
    for r in results:
        assert r.auc_ci[0] <= np.e / (1 + np.e)
    section, lines = mia_section(results, method="marginals", epsilon=model.epsilon())
    assert section["attacks"][0]["name"] == "black-box dcr"
    assert MIA_NOTE in lines and "not a privacy metric" in MIA_NOTE
    assert any(line.startswith("| black-box domias |") for line in lines)
    with pytest.raises(ValueError, match="held-out rows"):
        mia_split(train, test, members=200)
