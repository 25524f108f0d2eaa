"""Train on synthetic, test on real (TSTR): the classification utility of a synthetic table.

For each classifier, one copy is trained on the real training table and one on the synthetic
table; both are tested on the same held-out real table (P3GM, Takagi et al., ICDE 2021,
Section VI, "Classification"). A synthetic table is useful to the degree that its column
``synthetic`` approaches ``real``.

Evaluation is not a release. It runs on the user's own real data (real training and test
tables) and uses them freely: the category lists are the union over the real and synthetic
tables, the logistic regression standardises with the training table's mean and deviation.
None of it flows back into anything a synthesizer fits, and its outputs carry no privacy
guarantee: do not publish them alongside a DP release without accounting for them.

Classifiers (P3GM Section VI, "Implementations of Classifiers"): LogisticRegression,
AdaBoostClassifier, GradientBoostingClassifier with ``max_features="sqrt", max_depth=8,
min_samples_leaf=50, min_samples_split=200`` (other parameters default), and XGBoost with
its defaults (the CPU-only build ``xgboost-cpu``, from the optional ``eval`` extra:
``pip install 'jdp[eval]'``; plain ``xgboost`` pulls CUDA libraries). Two deliberate
departures from the paper:
the logistic regression standardises its inputs and runs up to 1000 iterations (with raw
Adult features the default 100 lbfgs iterations do not converge), and accuracy is that of
the most probable class, whereas the P3GM reference code picks the accuracy-maximising
threshold on the test set itself, which is optimistic.

The real baseline is a function of the real tables alone: the one-hot columns span the
categories of ``real_train`` and ``real_test``, and a synthetic category the real data never
shows encodes as all zeros. A boosted model whose training loss diverged (scikit-learn's
GradientBoosting on very imbalanced targets) gets no score (``None``, named in the row's
``diverged``) instead of a meaningless one, and :func:`mean_score` averages only the scored
classifiers and says which it left out.

Metrics: for a binary target, AUROC and AUPRC (average precision) of the positive class
(the larger label in sorted order: ``">50K"`` for Adult, ``1`` for 0/1) and accuracy. For a
multi-class target, AUROC and AUPRC are macro averages of one-vs-rest scores over the classes
present in the test table, and accuracy is as above.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.base import ClassifierMixin, clone
from sklearn.ensemble import AdaBoostClassifier, GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from accounting.validation import check_count
from jdp.eval._tables import categories, category_codes, check_tables
from jdp.progress import no_progress, phase

METRICS = ("AUROC", "AUPRC", "accuracy")


def paper_classifiers(seed: int = 0, *, xgboost: bool = True) -> dict[str, ClassifierMixin]:
    """The four TSTR classifiers with P3GM's settings (unfitted), keyed by display name.

    XGBoost is included only when ``xgboost`` is true and the package is installed;
    otherwise it is skipped with a warning that says how to install it.

    Args:
        seed: ``random_state`` of every randomized classifier (research reproducibility).
        xgboost: whether to try to include XGBoost.
    """
    check_count("seed", seed)
    classifiers: dict[str, ClassifierMixin] = {
        "LogisticRegression": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
        "AdaBoost": AdaBoostClassifier(random_state=seed),
        "GradientBoosting": GradientBoostingClassifier(
            max_features="sqrt",
            max_depth=8,
            min_samples_leaf=50,
            min_samples_split=200,
            random_state=seed,
        ),
    }
    if xgboost:
        try:
            from xgboost import XGBClassifier
        except ImportError:
            warnings.warn(
                "XGBoost is not installed, so the TSTR table omits it; "
                "install its CPU build with: pip install 'jdp[eval]'",
                stacklevel=2,
            )
        else:
            classifiers["XGBoost"] = XGBClassifier(
                random_state=seed, n_jobs=1, tree_method="hist", verbosity=0
            )
    return classifiers


def optional_classifiers(seed: int = 0) -> dict[str, ClassifierMixin]:
    """Classifiers beyond the paper's that ``jdp evaluate --classifiers`` offers by name when
    their package is installed (``pip install 'jdp[eval]'``): ``LightGBM``
    (``LGBMClassifier`` with its defaults, one thread, deterministic, silent). Not part of the
    default TSTR set (:func:`paper_classifiers`); an absent package is left out silently.
    """
    check_count("seed", seed)
    out: dict[str, ClassifierMixin] = {}
    try:
        from lightgbm import LGBMClassifier
    except ImportError:
        return out
    out["LightGBM"] = LGBMClassifier(
        random_state=seed, n_jobs=1, deterministic=True, force_col_wise=True, verbose=-1
    )
    return out


def tstr_table(
    real_train: pd.DataFrame,
    synthetic: pd.DataFrame,
    real_test: pd.DataFrame,
    target: str,
    *,
    classifiers: Mapping[str, ClassifierMixin] | None = None,
    seed: int = 0,
    positive: str | None = None,
    progress: bool = True,
) -> list[dict]:
    """Train-on-synthetic-test-on-real table beside the train-on-real baseline.

    Args:
        real_train: the real training table (the data the synthesizer was fitted on).
        synthetic: the synthetic table, with the same columns and column kinds.
        real_test: held-out real table, the same columns; its target must hold >= 2 classes.
        target: the label column.
        classifiers: unfitted scikit-learn classifiers by name (each fit uses a clone);
            default :func:`paper_classifiers` ``(seed)``.
        seed: random state of the default classifiers.
        positive: the positive class of a binary target, as written in the tables (default:
            the larger label in sorted order).
        progress: ``False``: no progress line; otherwise the fits are shown on a terminal
            only (:mod:`jdp.progress`).

    Returns:
        Rows ``{"classifier", "metric", "real", "synthetic"}``, one per classifier and
        metric (:data:`METRICS`): ``real`` is the score of the classifier trained on
        ``real_train``, ``synthetic`` of the one trained on ``synthetic``, both tested on
        ``real_test``. A synthetic target holding a single class yields the constant
        predictor's chance-level scores (AUROC 0.5), with a warning. A fit whose training
        loss diverged scores ``None``, with a warning, and its source (``"real_train"`` or
        ``"synthetic"``) is listed in the row's ``diverged``.

    Raises:
        ValueError: naming the table and column, for a missing target, mismatched columns,
            NaN or inf, a column numeric in one table and categorical in another, a test
            target with one class, a synthetic label the real data never shows, or a
            ``positive`` class that is not one of a binary target's two labels.
    """
    tables = {"real_train": real_train, "synthetic": synthetic, "real_test": real_test}
    kinds = check_tables(tables, target=target)
    classes = _classes(target, {"real_train": real_train, "real_test": real_test})
    if positive is not None:
        classes = _with_positive_last(
            classes, positive, target, numeric=_numeric(real_train[target])
        )
    labels = {name: _label_codes(frame[target], classes, name) for name, frame in tables.items()}
    if len(np.unique(labels["real_test"])) < 2:
        raise ValueError(f"target column {target!r} of real_test holds a single class")
    features = [c for c in real_train.columns if c != target]
    if not features:
        raise ValueError(f"expected at least one feature column besides target {target!r}")
    design = _design_matrices(tables, features, kinds, reference=("real_train", "real_test"))
    if classifiers is None:
        classifiers = paper_classifiers(seed)
    if not classifiers:
        raise ValueError("expected at least one classifier")

    scores: dict[str, dict[str, dict[str, float] | None]] = {}
    with no_progress(not progress), phase("TSTR fit", total=2 * len(classifiers)) as shown:
        for name, estimator in classifiers.items():
            for source in ("real_train", "synthetic"):
                shown.note(f"{name} on {source}")
                proba = _fit_predict_proba(
                    estimator,
                    design[source],
                    labels[source],
                    design["real_test"],
                    len(classes),
                    name,
                    source,
                )
                scores.setdefault(name, {})[source] = (
                    None if proba is None else classification_scores(labels["real_test"], proba)
                )
                shown.update()
        shown.note("")
    return [
        {
            "classifier": name,
            "metric": metric,
            "real": _score(scores[name]["real_train"], metric),
            "synthetic": _score(scores[name]["synthetic"], metric),
            "diverged": [s for s in ("real_train", "synthetic") if scores[name][s] is None],
        }
        for name in classifiers
        for metric in METRICS
    ]


def _score(scores: Mapping[str, float] | None, metric: str) -> float | None:
    return None if scores is None else scores[metric]


def mean_score(rows: list[dict], metric: str, side: str) -> tuple[float, list[str]]:
    """Mean of ``side`` (``"real"`` or ``"synthetic"``) over the classifiers that scored
    ``metric``, and the names of those left out because their fit diverged.

    Raises:
        ValueError: when no classifier scored ``metric`` on ``side``.
    """
    chosen = [r for r in rows if r["metric"] == metric]
    scored = [r[side] for r in chosen if r[side] is not None]
    if not scored:
        raise ValueError(f"no classifier scored {metric} on the {side} side (all diverged)")
    return float(np.mean(scored)), [r["classifier"] for r in chosen if r[side] is None]


def mean_over_keys(
    runs: list[dict[str, float]], spread: tuple[str, ...] = ("AUROC", "AUPRC")
) -> dict[str, float | list[float]]:
    """One entry for fits of the same setting on several keys: the mean of every score, the
    largest ``epsilon_spent``, and with several keys each ``spread`` metric's per-key values
    (``<metric>_keys``) and sample standard deviation (``<metric>_std``)."""
    entry: dict[str, float | list[float]] = {
        k: float(np.mean([r[k] for r in runs])) for k in runs[0]
    }
    entry["epsilon_spent"] = max(r["epsilon_spent"] for r in runs)
    if len(runs) > 1:
        for metric in spread:
            values = [r[metric] for r in runs]
            entry[f"{metric}_keys"] = values
            entry[f"{metric}_std"] = float(np.std(values, ddof=1))
    return entry


def classification_scores(y_true: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """AUROC, AUPRC and accuracy of class probabilities ``proba`` (n, k) for codes ``y_true``.

    With ``k == 2`` the scores are those of class 1; with ``k > 2`` AUROC and AUPRC are
    one-vs-rest macro averages over the classes present in ``y_true``.
    """
    y_true = np.asarray(y_true)
    proba = np.asarray(proba, dtype=float)
    n_classes = proba.shape[1]
    scored = [1] if n_classes == 2 else [k for k in range(n_classes) if (y_true == k).any()]
    return {
        "AUROC": float(np.mean([roc_auc_score(y_true == k, proba[:, k]) for k in scored])),
        "AUPRC": float(
            np.mean([average_precision_score(y_true == k, proba[:, k]) for k in scored])
        ),
        "accuracy": float(np.mean(np.argmax(proba, axis=1) == y_true)),
    }


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _classes(target: str, real: Mapping[str, pd.DataFrame]) -> list[str]:
    """The target's class labels in the real tables, as strings, sorted (numerically if numeric)."""
    values = pd.concat([frame[target] for frame in real.values()], ignore_index=True)
    if _numeric(values):
        return [_numeric_label(v) for v in np.unique(values.to_numpy(dtype=float))]
    return sorted(values.astype(str).unique().tolist())


def _with_positive_last(
    classes: list[str], positive: str, target: str, *, numeric: bool
) -> list[str]:
    """The two classes with ``positive`` second (the scored one, class code 1)."""
    label = positive
    if numeric:
        try:
            label = _numeric_label(float(positive))
        except ValueError:
            label = None
    if len(classes) != 2 or label not in classes:
        raise ValueError(
            f"positive class {positive!r} must be one of the two labels of binary target "
            f"{target!r}; the real data shows {len(classes)} label(s)"
            + (f": {classes}" if len(classes) <= 10 else "")
        )
    return [c for c in classes if c != label] + [label]


def _numeric_label(value: float) -> str:
    return repr(float(value))


def _label_codes(series: pd.Series, classes: list[str], table: str) -> np.ndarray:
    if _numeric(series):
        as_str = series.astype(float).map(_numeric_label)
    else:
        as_str = series.astype(str)
    unseen = sorted(set(as_str.unique()) - set(classes))
    if unseen:
        raise ValueError(
            f"target column {series.name!r} of {table} has labels the real data never shows: {unseen[:5]}"
        )
    return category_codes(as_str, classes)


def _design_matrices(
    tables: Mapping[str, pd.DataFrame],
    features: list[str],
    kinds: Mapping[str, bool],
    *,
    reference: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """Numeric features as floats, categorical ones one-hot over the categories of the
    ``reference`` tables; a category outside them encodes as all zeros (so a table's matrix
    depends only on itself and the reference tables)."""
    blocks: dict[str, list[np.ndarray]] = {name: [] for name in tables}
    for column in features:
        if kinds[column]:
            cats = categories(column, {name: tables[name] for name in reference})
            eye = np.vstack([np.eye(len(cats)), np.zeros(len(cats))])  # code -1 -> zeros
            for name, frame in tables.items():
                codes = pd.Index(cats).get_indexer(frame[column].astype(str))  # -1: outside
                blocks[name].append(eye[codes])
        else:
            for name, frame in tables.items():
                blocks[name].append(frame[column].to_numpy(dtype=float)[:, None])
    return {name: np.hstack(parts) for name, parts in blocks.items()}


def _fit_predict_proba(
    estimator: ClassifierMixin,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    n_classes: int,
    name: str,
    source: str,
) -> np.ndarray | None:
    """Test-set class probabilities (n_test, n_classes) of ``estimator`` fitted on the data,
    or ``None`` when its training loss diverged (:func:`_diverged`, with a warning).

    Classes absent from the training labels get probability 0. A training set holding one
    class gives the constant predictor of that class (chance-level ranking scores).
    """
    proba = np.zeros((len(x_test), n_classes))
    present = np.unique(y_train)
    if len(present) == 1:
        warnings.warn(
            f"the target of {source} holds a single class; {name} reports the constant "
            "predictor's chance-level scores",
            stacklevel=3,
        )
        proba[:, present[0]] = 1.0
        return proba
    model = clone(estimator).fit(x_train, y_train)
    if _diverged(model, name, source):
        return None
    proba[:, np.asarray(model.classes_, dtype=int)] = model.predict_proba(x_test)
    return proba


def _diverged(model: ClassifierMixin, name: str, source: str) -> bool:
    """Whether a boosted model's training loss ended above where it started (with a warning).

    scikit-learn's GradientBoosting with P3GM's settings (``min_samples_leaf=50``) can diverge
    on very imbalanced targets (credit-card fraud: training loss 0.04 -> 2e35): its Newton
    leaf values divide by ``sum p (1 - p)``, which vanishes in leaves of one class. Its scores
    are then meaningless: the table reports none, and the user is told why.
    """
    losses = getattr(model, "train_score_", None)
    if losses is not None and len(losses) and not losses[-1] <= losses[0]:
        warnings.warn(
            f"{name} trained on {source} diverged (training loss {losses[0]:.3g} -> "
            f"{losses[-1]:.3g}); it is left out of the scores",
            stacklevel=4,
        )
        return True
    return False
