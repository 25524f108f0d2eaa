"""The logic behind scripts/reproduce_p3gm.py, in the library (:mod:`jdp.synth.p3gm.paper`):
the sampling rate comes from public constants, and the Fig. 7 learning-curve loop runs exactly
the DP-SGD steps its ledger accounts (issue 10, item 14)."""

from __future__ import annotations

import jax
import pytest

from jdp.eval.utility import mean_over_keys
from jdp.synth.p3gm import paper, phases
from jdp.synth.p3gm.privacy import calibrate_noise, single_phase_events


def test_sampling_rate_is_the_public_batch_over_the_documented_size():
    # Adult's training file (UCI adult.data) is documented at 32,561 rows; Table IV's batch 200
    assert paper.PUBLIC_TRAIN_ROWS["adult"] == 32_561
    assert paper.PAPER_ADULT_ROWS == 45_222  # the paper's N: Adult without missing values
    for name, quick in [("adult", False), ("adult", True), ("credit", False), ("mnist", True)]:
        config = paper.config_for(name, quick)  # no data-derived argument
        batch = (paper.QUICK if quick else paper.SETTINGS)[name]["batch"]
        assert config.dpsgd.sampling_prob == batch / paper.public_train_rows(name, quick)


@pytest.mark.parametrize("quick", [False, True])
def test_learning_curve_loop_runs_exactly_the_accounted_steps(monkeypatch, quick):
    config = paper.config_for("adult", quick)
    # the steps the ledger charges (the sampler's cut, left out here, changes no count)
    ((label, event),) = single_phase_events(config, "sgd", 1.0, noise_cut=0.0)
    assert label == "dp-sgd" and event.count == config.dpsgd.num_steps
    calls = []

    def fake_decoding_phase(key, x, fixed, layout, cfg, variant, z, *, trainable, steps):
        calls.append(steps)
        return {"step": len(calls)}, None

    monkeypatch.setattr(phases, "decoding_phase", fake_decoding_phase)
    seen = []
    paper.train_by_epoch(
        jax.random.key(0), None, {}, None, config, "p3gm", 1.0, lambda e, t: seen.append(e)
    )
    assert sum(calls) == event.count and len(calls) == round(config.dpsgd.epochs) == len(seen)
    assert max(calls) - min(calls) <= 1
    assert sum(paper.epoch_steps(config)) == config.dpsgd.num_steps


def test_credit_is_the_papers_subsample_with_a_public_size():
    """All 492 frauds plus 10,000 seeded legitimate rows, Time dropped, 90/10 split; the
    declared public training size is the loader's, so q = B / N uses the subsample's N."""
    from jdp.data import datasets

    try:
        first = datasets.load_dataset("creditcard-paper")
    except datasets.DatasetNotInstalledError:
        pytest.skip("credit-card data not installed")
    train, test = first.train, first.test
    assert len(train) == paper.PUBLIC_TRAIN_ROWS["credit"] == 9_443 and len(test) == 1_049
    assert int(train["Class"].sum() + test["Class"].sum()) == 492
    assert "Time" not in train.columns and first.schema.names == list(train.columns)
    again = datasets.load_dataset("creditcard-paper")  # the draw is seeded: one dataset
    assert again.train.equals(train) and again.test.equals(test)
    assert paper.config_for("credit", False).dpsgd.sampling_prob == 100 / 9_443


@pytest.mark.slow
def test_mnist_split_is_the_smallest_pca_share_the_public_rule_allows():
    """MNIST's budget split follows a rule on public quantities (n, d, d', the 3:7
    encoder:decoder ratio), not a diagnostic: its DP-PCA noise is within
    :func:`pca_noise_limit` and one grid step (0.05) less for DP-PCA would exceed it."""
    import dataclasses

    from accounting import PrivacyBudget

    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    config = paper.config_for("mnist", False)
    pca_share, em_share, sgd_share = config.budget_split
    assert sgd_share == pytest.approx(0.7) and pca_share + em_share == pytest.approx(0.3)
    d = 784 if config.latent_excludes_target else 785 + 9  # the coordinates DP-PCA reads
    limit = paper.pca_noise_limit(paper.PUBLIC_TRAIN_ROWS["mnist"], d, config.latent_dim)
    assert calibrate_noise(config, "p3gm", budget, noise_cut=0.0)["pca"] <= limit
    less = dataclasses.replace(config, budget_split=(pca_share - 0.05, em_share + 0.05, sgd_share))
    assert calibrate_noise(less, "p3gm", budget, noise_cut=0.0)["pca"] > limit


def test_mean_over_keys_reports_mean_spread_and_the_largest_epsilon():
    """A tabular variant fitted on several keys reports each metric's mean, its per-key values
    and sample std (the spread a single key hides), and the largest epsilon any fit spent."""
    runs = [
        {"AUROC": 0.8, "AUPRC": 0.3, "epsilon_spent": 0.99},
        {"AUROC": 0.9, "AUPRC": 0.5, "epsilon_spent": 1.0},
        {"AUROC": 1.0, "AUPRC": 0.4, "epsilon_spent": 0.98},
    ]
    entry = mean_over_keys(runs)
    assert entry["AUROC"] == pytest.approx(0.9) and entry["AUPRC"] == pytest.approx(0.4)
    assert entry["AUROC_keys"] == [0.8, 0.9, 1.0]
    assert entry["AUROC_std"] == pytest.approx(0.1) and entry["AUPRC_std"] == pytest.approx(0.1)
    assert entry["epsilon_spent"] == 1.0
    single = mean_over_keys(runs[:1])  # one key: the run itself, no spread keys
    assert single == runs[0]
