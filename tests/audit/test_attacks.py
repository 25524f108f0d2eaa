"""Membership-inference attack layer: AUC = Mann-Whitney = sklearn, DeLong interval coverage,
held-out accuracy, distance-to-closest-record scores, white-box chunking, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from jdp.audit import (
    AttackResult,
    attack_from_scores,
    dcr_attack,
    distance_to_closest_record_scores,
    membership_attack,
    white_box_scores,
)


def sklearn_auc(members: np.ndarray, nonmembers: np.ndarray) -> float:
    y = np.r_[np.ones(members.size), np.zeros(nonmembers.size)]
    return float(roc_auc_score(y, np.r_[members, nonmembers]))


# -- AUC --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_auc_equals_sklearn_on_random_data(seed):
    rng = np.random.default_rng(seed)
    m, n = rng.integers(2, 60, size=2)
    members, nonmembers = rng.normal(0.3, 1, m), rng.normal(0, 1, n)
    result = attack_from_scores(members, nonmembers)
    assert result.auc == pytest.approx(sklearn_auc(members, nonmembers), abs=1e-12)
    assert (result.n_members, result.n_nonmembers) == (m, n)
    assert result.auc_ci[0] <= result.auc <= result.auc_ci[1]


def test_auc_counts_ties_as_half():
    rng = np.random.default_rng(7)
    members, nonmembers = rng.integers(0, 4, 40), rng.integers(0, 3, 30)  # many ties
    assert attack_from_scores(members, nonmembers).auc == pytest.approx(
        sklearn_auc(members.astype(float), nonmembers.astype(float)), abs=1e-12
    )
    # all tied: exactly 1/2, by hand
    assert attack_from_scores([1.0, 1.0], [1.0, 1.0, 1.0]).auc == 0.5
    # brute-force Mann-Whitney with psi = 1[x > y] + 1[x == y] / 2
    psi = (members[:, None] > nonmembers[None]) + 0.5 * (members[:, None] == nonmembers[None])
    assert attack_from_scores(members, nonmembers).auc == pytest.approx(psi.mean(), abs=1e-12)


def test_perfect_separation():
    result = attack_from_scores([3.0, 4.0, 5.0], [0.0, 1.0, 2.0], name="perfect")
    assert result.auc == 1.0
    assert result.auc_ci == (1.0, 1.0)  # DeLong variance is 0: documented as degenerate
    assert result.accuracy == 1.0 and result.best_accuracy == 1.0
    assert result.name == "perfect"
    inverted = attack_from_scores([0.0, 1.0, 2.0], [3.0, 4.0, 5.0])
    assert inverted.auc == 0.0 and inverted.auc_ci == (0.0, 0.0)
    # the best "score >= t" rule on inverted scores is a trivial one (all or none)
    assert inverted.accuracy == 0.5 and inverted.best_accuracy == 0.5


def test_identical_distributions_ci_contains_half():
    rng = np.random.default_rng(1)
    result = attack_from_scores(rng.normal(size=500), rng.normal(size=500))
    lo, hi = result.auc_ci
    assert lo < 0.5 < hi
    assert hi - lo < 0.1  # and it is informative: half-width ~ 1.96 * sqrt(1/12 * 2/500)
    assert abs(result.accuracy - 0.5) < 0.05
    assert result.best_accuracy >= result.accuracy  # in-sample threshold is optimistic


def test_delong_variance_matches_hand_formula():
    """Structural components by brute force (DeLong et al. 1988, eqs. 3-5)."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.5, 1, 17).round(1), rng.normal(0, 1, 11).round(1)  # ties included
    psi = (x[:, None] > y[None]) + 0.5 * (x[:, None] == y[None])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    var = v10.var(ddof=1) / x.size + v01.var(ddof=1) / y.size
    z = stats.norm.ppf(0.95)
    result = attack_from_scores(x, y, confidence=0.9)
    assert result.auc_ci[0] == pytest.approx(max(0.0, psi.mean() - z * math.sqrt(var)))
    assert result.auc_ci[1] == pytest.approx(min(1.0, psi.mean() + z * math.sqrt(var)))
    assert result.confidence == 0.9


def test_ci_coverage():
    """Members ~ N(d, 1), non-members ~ N(0, 1): true AUC = Phi(d / sqrt(2)). The 95% interval
    must cover it in Binomial(400, 0.95) many repetitions: within mean +- 4 sd."""
    rng = np.random.default_rng(12)
    d, reps, n, level = 1.0, 400, 100, 0.95
    true_auc = stats.norm.cdf(d / math.sqrt(2))
    covered = 0
    for _ in range(reps):
        lo, hi = attack_from_scores(rng.normal(d, 1, n), rng.normal(0, 1, n)).auc_ci
        covered += lo <= true_auc <= hi
    mean, sd = reps * level, math.sqrt(reps * level * (1 - level))
    assert mean - 4 * sd <= covered <= mean + 4 * sd, covered


# -- accuracy ---------------------------------------------------------------------------------


def test_held_out_accuracy_is_honest_on_separated_data():
    rng = np.random.default_rng(5)
    d = 2.0
    result = attack_from_scores(rng.normal(d, 1, 2000), rng.normal(0, 1, 2000))
    bayes = stats.norm.cdf(d / 2)  # best threshold d/2 on equal-variance normals
    assert result.accuracy == pytest.approx(bayes, abs=0.02)
    assert result.accuracy <= result.best_accuracy


def test_as_dict_is_plain():
    result = attack_from_scores([1, 2, 3], [0, 1, 2])
    assert isinstance(result, AttackResult)
    assert result.as_dict()["auc_ci"] == list(result.auc_ci)
    with pytest.raises(AttributeError):
        result.auc = 0.0  # frozen


# -- distance to the closest record -----------------------------------------------------------


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
def test_dcr_matches_brute_force_and_member_in_synthetic_scores_zero(metric):
    rng = np.random.default_rng(2)
    synthetic = rng.normal(size=(37, 5)) * 100 + 1e3  # large offset: expansion would not be 0
    records = np.vstack([rng.normal(size=(20, 5)), synthetic[[4, 30]]])
    scores = distance_to_closest_record_scores(records, synthetic, metric=metric, chunk=6)
    brute = -np.array([min(stats_dist(r, s, metric) for s in synthetic) for r in records])
    np.testing.assert_allclose(scores, brute, rtol=1e-10)
    assert scores[-2] == 0.0 and scores[-1] == 0.0  # exactly the maximal score
    assert np.all(scores <= 0)


def stats_dist(a, b, metric):
    diff = np.abs(a - b)
    return {
        "euclidean": np.sqrt((diff**2).sum()),
        "cityblock": diff.sum(),
        "chebyshev": diff.max(),
    }[metric]


def test_dcr_chunk_does_not_change_scores():
    rng = np.random.default_rng(4)
    records, synthetic = rng.normal(size=(50, 3)), rng.normal(size=(41, 3))
    a = distance_to_closest_record_scores(records, synthetic, chunk=1)
    b = distance_to_closest_record_scores(records, synthetic, chunk=7)
    c = distance_to_closest_record_scores(records, synthetic, chunk=10_000)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(a, c, rtol=1e-12)


def test_dcr_attack_detects_a_copying_generator():
    rng = np.random.default_rng(6)
    members, nonmembers = rng.normal(size=(100, 4)), rng.normal(size=(100, 4))
    copied = members + 0.01 * rng.normal(size=members.shape)  # a generator that memorises
    result = dcr_attack(members, nonmembers, copied)
    assert result.auc > 0.99 and result.accuracy > 0.95
    fresh = dcr_attack(members, nonmembers, rng.normal(size=(200, 4)))
    assert fresh.auc_ci[0] < 0.5 < fresh.auc_ci[1]


# -- white box --------------------------------------------------------------------------------


def test_white_box_scores_chunked_and_padded():
    shapes = []

    def score_fn(batch):
        shapes.append(batch.shape)
        return batch.sum(axis=1, keepdims=True)  # (b, 1) is accepted

    x = np.arange(23 * 2, dtype=float).reshape(23, 2)
    scores = white_box_scores(score_fn, x, chunk=5)
    np.testing.assert_array_equal(scores, x.sum(axis=1))
    assert set(shapes) == {(5, 2)}  # one shape: a jitted critic compiles once
    shapes.clear()
    white_box_scores(score_fn, x, chunk=5, pad=False)
    assert shapes[-1] == (3, 2)
    shapes.clear()
    white_box_scores(score_fn, x[:2], chunk=5)  # fewer records than one chunk: still (5, 2)
    assert shapes == [(5, 2)]


def test_membership_attack_with_a_memorising_score():
    rng = np.random.default_rng(8)
    members, nonmembers = rng.normal(size=(60, 3)), rng.normal(size=(60, 3))

    def critic(batch):  # high on the training records, as an overfitted critic would be
        d = np.linalg.norm(batch[:, None] - members[None], axis=2).min(axis=1)
        return -d

    result = membership_attack(critic, members, nonmembers, chunk=16, name="critic")
    assert result.auc == 1.0 and result.name == "critic"


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("members", "nonmembers", "message"),
    [
        ([1.0, np.nan, 2.0], [0.0, 1.0], "expected member scores to be finite, got 1 NaN/inf"),
        ([1.0, 2.0], [0.0, np.inf], "expected non-member scores to be finite, got 1 NaN/inf"),
        ([], [0.0, 1.0], "expected the number of member scores >= 2, got 0"),
        ([1.0, 2.0], [0.0], "expected the number of non-member scores >= 2, got 1"),
        (np.ones((3, 2)), [0.0, 1.0], "expected member scores to be 1-D"),
    ],
)
def test_bad_scores_raise(members, nonmembers, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        attack_from_scores(members, nonmembers)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"expected confidence in \(0, 1\), got 1.5"):
        attack_from_scores([1, 2], [0, 1], confidence=1.5)
    with pytest.raises(TypeError, match="expected member scores to be a numeric array"):
        attack_from_scores(["a", "b"], [0, 1])
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="expected synthetic to have 3 columns, got 2"):
        distance_to_closest_record_scores(x, np.zeros((5, 2)))
    with pytest.raises(ValueError, match="expected records to be 2-D"):
        distance_to_closest_record_scores(np.zeros(4), x)
    with pytest.raises(ValueError, match="expected synthetic to have at least one row"):
        distance_to_closest_record_scores(x, np.zeros((0, 3)))
    with pytest.raises(ValueError, match="expected records to be finite, got 1 NaN/inf"):
        distance_to_closest_record_scores(np.array([[np.nan, 0, 0]]), x)
    with pytest.raises(ValueError, match="expected metric in"):
        distance_to_closest_record_scores(x, x, metric="cosine")
    with pytest.raises(ValueError, match="expected chunk >= 1, got 0"):
        distance_to_closest_record_scores(x, x, chunk=0)
    with pytest.raises(ValueError, match="same record shape"):
        dcr_attack(x, np.zeros((4, 2)), x)
    with pytest.raises(ValueError, match="same record shape"):
        membership_attack(lambda b: b.sum(1), x, np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"expected score_fn to return one score per record"):
        white_box_scores(lambda b: b, x)
    with pytest.raises(ValueError, match="expected score_fn to return finite scores"):
        white_box_scores(lambda b: np.full(b.shape[0], np.nan), x)
    with pytest.raises(ValueError, match="expected records to have at least one row"):
        white_box_scores(lambda b: b.sum(1), np.zeros((0, 3)))
    with pytest.raises(TypeError, match="expected score_fn to be callable"):
        white_box_scores(3, x)
