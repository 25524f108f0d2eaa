"""Train-on-synthetic-test-on-real: exact baseline reproduction, chance level, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from jdp.eval.utility import METRICS, classification_scores, paper_classifiers, tstr_table


def fast_classifiers(seed: int = 0) -> dict:
    """P3GM's classifiers, with fewer boosting rounds to keep the tests fast."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # XGBoost may be absent here
        classifiers = paper_classifiers(seed)
    classifiers["GradientBoosting"].set_params(n_estimators=20)
    if "XGBoost" in classifiers:
        classifiers["XGBoost"].set_params(n_estimators=20)
    return classifiers


def test_real_train_as_synthetic_reproduces_the_baseline_exactly(tables):
    train, test = tables
    rows = tstr_table(train, train.copy(), test, "income", classifiers=fast_classifiers())
    assert {r["metric"] for r in rows} == set(METRICS)
    assert len(rows) == len(METRICS) * len(fast_classifiers())
    for row in rows:
        assert row["synthetic"] == row["real"], row
    # and the baseline is far from chance on this correlated table
    aurocs = [r["real"] for r in rows if r["metric"] == "AUROC"]
    assert min(aurocs) > 0.85


def test_column_order_of_synthetic_does_not_matter(tables):
    train, test = tables
    shuffled = train[list(reversed(train.columns))]
    a = tstr_table(train, train, test, "income", classifiers=fast_classifiers())
    b = tstr_table(train, shuffled, test, "income", classifiers=fast_classifiers())
    assert [r["synthetic"] for r in a] == [r["synthetic"] for r in b]


def test_noise_synthetic_scores_at_chance_within_a_z_bound(tables):
    """A synthetic table of noise (random features, coin-flip labels) gives chance AUROC.

    For the Mann-Whitney null (scores independent of the test labels) AUROC has mean 1/2
    and variance (n0 + n1 + 1) / (12 n0 n1) (ties only shrink it). The scores of a model
    trained on noise are independent of the test labels only through features that carry
    no label information in the test table, so the informative features (``x``, ``c``,
    ``flag``) are constant in the noise table: every classifier then ranks the test rows
    by ``z`` alone, which is independent of the label. The real baseline uses them all.
    """
    train, test = tables
    rng = np.random.default_rng(7)
    n = 2000
    noise = pd.DataFrame(
        {
            "x": np.zeros(n),
            "z": rng.uniform(0, 5, size=n),
            "c": "a",
            "flag": "no",
            "income": rng.choice([">50K", "<=50K"], size=n),
        }
    )
    rows = tstr_table(train, noise, test, "income", classifiers=fast_classifiers())
    n1 = int((test["income"] == ">50K").sum())
    n0 = len(test) - n1
    sd = math.sqrt((n0 + n1 + 1) / (12 * n0 * n1))
    for row in rows:
        if row["metric"] == "AUROC":
            assert abs(row["synthetic"] - 0.5) < 4 * sd, row
            assert row["real"] > 0.5 + 10 * sd, row


def test_single_class_synthetic_reports_chance_level(tables):
    train, test = tables
    synthetic = train.copy()
    synthetic["income"] = "<=50K"
    with pytest.warns(UserWarning, match="single class"):
        rows = tstr_table(train, synthetic, test, "income", classifiers=fast_classifiers())
    prevalence = float((test["income"] == ">50K").mean())
    for row in rows:
        expected = {"AUROC": 0.5, "AUPRC": prevalence, "accuracy": 1 - prevalence}[row["metric"]]
        assert row["synthetic"] == pytest.approx(expected), row


def test_real_baseline_does_not_depend_on_the_synthetic_table(tables):
    """The one-hot columns span real_train + real_test only: a synthetic table with a
    category the real data never shows (all zeros) or different rows leaves every
    classifier's real baseline exactly as it was (before the fix the category list was the
    union with the synthetic table, which widened GradientBoosting's sqrt feature draw)."""
    train, test = tables
    classifiers = fast_classifiers()
    base = tstr_table(train, train, test, "income", classifiers=classifiers)
    synthetic = train.sample(frac=0.5, random_state=1).copy()
    synthetic.loc[synthetic.index[:10], "c"] = "never-seen-in-real"
    rows = tstr_table(train, synthetic, test, "income", classifiers=classifiers)
    assert [r["real"] for r in rows] == [r["real"] for r in base]
    assert [r["synthetic"] for r in rows] != [r["synthetic"] for r in base]
    test_only = test.copy()
    test_only.loc[:10, "c"] = "only-in-test"
    rows = tstr_table(train, train, test_only, "income", classifiers=classifiers)
    assert all(r["real"] == r["synthetic"] for r in rows)


def test_numeric_target_and_multiclass():
    rng = np.random.default_rng(3)
    n = 900
    x = rng.normal(size=(n, 2))
    y = np.digitize(x[:, 0] + 0.2 * rng.normal(size=n), [-0.5, 0.5])  # classes 0, 1, 2
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "label": y})
    train, test = frame.iloc[:600], frame.iloc[600:]
    synthetic = train.astype({"label": float})  # decoded labels may come back as floats
    classifiers = {"LogisticRegression": fast_classifiers()["LogisticRegression"]}
    rows = tstr_table(train, synthetic, test, "label", classifiers=classifiers)
    for row in rows:
        assert row["synthetic"] == row["real"]
    accuracy = next(r["real"] for r in rows if r["metric"] == "accuracy")
    assert accuracy > 0.75  # chance is about 0.38 for these three classes


def test_classification_scores_against_hand_computed_values():
    y = np.array([0, 0, 1, 1])
    proba = np.array([[0.9, 0.1], [0.4, 0.6], [0.65, 0.35], [0.2, 0.8]])
    scores = classification_scores(y, proba)
    # positive scores 0.35, 0.8 vs negative 0.1, 0.6: 3 of 4 pairs ordered correctly
    assert scores["AUROC"] == pytest.approx(0.75)
    # ranking 0.8(+), 0.6(-), 0.35(+), 0.1(-): AP = (1/1 + 2/3) / 2
    assert scores["AUPRC"] == pytest.approx((1 + 2 / 3) / 2)
    assert scores["accuracy"] == pytest.approx(0.5)


def test_xgboost_absent_is_skipped_with_a_note(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "xgboost", None)  # import now raises ImportError
    with pytest.warns(UserWarning, match=r"pip install 'jdp\[eval\]'"):
        classifiers = paper_classifiers(0)
    assert list(classifiers) == ["LogisticRegression", "AdaBoost", "GradientBoosting"]


def test_paper_settings_of_gradient_boosting():
    params = paper_classifiers(5, xgboost=False)["GradientBoosting"].get_params()
    assert (params["max_features"], params["max_depth"]) == ("sqrt", 8)
    assert (params["min_samples_leaf"], params["min_samples_split"]) == (50, 200)
    assert params["random_state"] == 5


@pytest.mark.parametrize(
    "mutate, match",
    [
        (
            lambda tr, sy, te: (tr, sy.drop(columns="income"), te),
            "target column 'income' is missing from synthetic",
        ),
        (
            lambda tr, sy, te: (tr, sy.drop(columns="z"), te),
            "column 'z' of real_train is missing from synthetic",
        ),
        (
            lambda tr, sy, te: (tr, sy.assign(extra=1.0), te),
            "column 'extra' of synthetic is not in real_train",
        ),
        (
            lambda tr, sy, te: (tr, sy.assign(x=np.where(sy.index == 3, np.nan, sy.x)), te),
            "column 'x' of synthetic contains NaN",
        ),
        (
            lambda tr, sy, te: (tr, sy.assign(x=np.where(sy.index == 3, np.inf, sy.x)), te),
            "column 'x' of synthetic contains inf",
        ),
        (
            lambda tr, sy, te: (tr, sy.assign(x=sy.x.astype(str)), te),
            "column 'x' is numeric in real_train but categorical in synthetic",
        ),
        (lambda tr, sy, te: (tr, sy.iloc[:0], te), "expected synthetic to have at least one row"),
        (
            lambda tr, sy, te: (tr, sy.assign(income="maybe"), te),
            "target column 'income' of synthetic has labels",
        ),
        (
            lambda tr, sy, te: (tr, sy, te.assign(income=">50K")),
            "target column 'income' of real_test holds a single class",
        ),
    ],
)
def test_bad_input_raises_naming_the_column(tables, mutate, match):
    train, test = tables
    tr, sy, te = mutate(train, train.copy(), test)
    with pytest.raises(ValueError, match=match):
        tstr_table(
            tr, sy, te, "income", classifiers={"LR": fast_classifiers()["LogisticRegression"]}
        )


def test_non_dataframe_raises_type_error(tables):
    train, test = tables
    with pytest.raises(TypeError, match="expected synthetic to be a pandas DataFrame"):
        tstr_table(train, train.to_numpy(), test, "income")


class _DivergingClassifier(LogisticRegression):
    """A classifier whose training-loss trace ends above its start, as a diverged
    GradientBoosting's does (credit-card fraud: 0.0386 -> 2.03e35)."""

    def fit(self, x, y):
        super().fit(x, y)
        self.train_score_ = np.array([0.0386, 0.0297, 2.03e35])
        return self


def test_diverged_classifier_is_reported_and_never_averaged(tables):
    """A diverged fit scores None (named in ``diverged``) with a warning, and
    ``mean_score`` averages the other classifiers only, naming the one it left out."""
    from jdp.eval.utility import mean_score

    train, test = tables
    classifiers = {
        "LogisticRegression": fast_classifiers()["LogisticRegression"],
        "Diverging": _DivergingClassifier(max_iter=1000),
    }
    with pytest.warns(UserWarning, match="Diverging trained on real_train diverged"):
        rows = tstr_table(train, train, test, "income", classifiers=classifiers)
    for row in rows:
        if row["classifier"] == "Diverging":
            assert (row["real"], row["synthetic"]) == (None, None)
            assert row["diverged"] == ["real_train", "synthetic"]
        else:
            assert row["real"] is not None and row["diverged"] == []
    mean, dropped = mean_score(rows, "AUROC", "real")
    lr = next(r for r in rows if r["classifier"] == "LogisticRegression" and r["metric"] == "AUROC")
    assert (mean, dropped) == (lr["real"], ["Diverging"])
    with pytest.raises(ValueError, match="all diverged"):
        mean_score([r for r in rows if r["classifier"] == "Diverging"], "AUROC", "real")


def test_a_healthy_boosting_fit_is_not_flagged():
    from sklearn.ensemble import GradientBoostingClassifier

    from jdp.eval.utility import _diverged

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    healthy = GradientBoostingClassifier(n_estimators=20, random_state=0).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _diverged(healthy, "GradientBoosting", "real_train")
