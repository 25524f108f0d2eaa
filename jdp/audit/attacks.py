"""Membership-inference attacks: score records, then measure how well the score separates
the training records (members) from held-out ones (non-members).

An attack is two steps. A *score* says how much a record looks like a training record
(higher = "member"): a white-box score applies a released model's own score function (a
GAN critic's ``D(x)``, a likelihood; :func:`white_box_scores`), a black-box score uses only
the released synthetic samples (minus the distance to the closest synthetic record;
:func:`distance_to_closest_record_scores`). :func:`attack_from_scores` then reports the ROC
AUC of the scores (with a confidence interval) and the attack accuracy.
A second black-box score compares densities: the synthetic data's density at a record over
the population's, estimated on a held-out reference sample (:func:`density_ratio_scores`,
DOMIAS; :mod:`jdp.audit.density_attack`).

**An attack is not a guarantee.** A low AUC says that *this* attack fails on *these*
records; it bounds nothing. Differential privacy bounds every attack at once: under
(eps, delta)-DP any membership test has ``TPR <= e^eps FPR + delta`` (the hypothesis-testing
view of DP; Kairouz, Oh & Viswanath 2015), so its balanced accuracy is at most
``(e^eps + delta) / (e^eps + 1)`` (Yeom et al. 2018, Thm. 1, give the looser ``e^eps - 1``
for the advantage under pure DP). An attack can only show that a release is *not*
private, or, inside an audit, give an empirical lower bound on epsilon.
In particular distance to the closest record (DCR) is an attack score here, never a privacy
metric: a large distance does not make a release private.

Auditing code reads real data, as evaluation does: its outputs carry no privacy guarantee
and nothing computed here is ever passed to a synthesizer.

References:
  Shokri, Stronati, Song & Shmatikov, "Membership Inference Attacks against Machine
  Learning Models", IEEE S&P 2017. Hayes, Melis, Danezis & De Cristofaro, "LOGAN:
  Membership Inference Attacks Against Generative Models", PoPETs 2019 (the white-box
  critic attack). Chen, Yu, Zhang & Fritz, "GAN-Leaks", CCS 2020 (the black-box
  distance-to-synthetic attack). Yeom, Giacomelli, Fredrikson & Jha, "Privacy
  Risk in Machine Learning", CSF 2018 (Thm. 1). Kairouz, Oh & Viswanath, "The Composition
  Theorem for Differential Privacy", ICML 2015. DeLong, DeLong & Clarke-Pearson, Biometrics
  44(3), 1988 (AUC variance). Sun & Xu, IEEE Signal Proc. Letters 21(11), 2014 (the
  midrank algorithm for it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from scipy.spatial.distance import cdist

from accounting.validation import check_count, check_open_unit

#: Metrics of :func:`distance_to_closest_record_scores` (scipy ``cdist`` names).
METRICS = ("euclidean", "cityblock", "chebyshev")


@dataclass(frozen=True)
class AttackResult:
    """The outcome of a membership-inference attack (higher score = "member").

    Attributes:
      auc: ROC AUC of the scores, members as positives: the probability that a random
        member scores above a random non-member, ties counted 1/2 (Mann-Whitney U /
        (n_members n_nonmembers)). 0.5 = no better than chance.
      auc_ci: ``(lower, upper)`` two-sided confidence interval for the AUC at the requested
        confidence: normal approximation with DeLong's (1988) variance, clipped to [0, 1].
        It is degenerate, ``(1, 1)`` or ``(0, 0)``, when the sets are perfectly separated.
      accuracy: balanced accuracy (the mean of the true-positive and true-negative rates,
        i.e. accuracy under a 50/50 member prior) of a threshold attack whose threshold is
        chosen WITHOUT looking at the records it is scored on: the records are split into
        two halves (even and odd positions of each set), the balanced-accuracy-maximising
        threshold of one half is applied to the other and vice versa, and the two held-out
        accuracies are averaged. Rows should therefore be in an order unrelated to their
        scores (e.g. shuffled).
      best_accuracy: the optimistic in-sample best-threshold balanced accuracy over all
        records (threshold chosen on the very records it is scored on; biased upwards,
        at least 0.5 by construction). Reported for comparison with papers that use it.
      n_members: number of member scores.
      n_nonmembers: number of non-member scores.
      confidence: the confidence level of ``auc_ci``.
      name: a label for the attack (e.g. ``"white-box critic"``, ``"dcr"``).
    """

    auc: float
    auc_ci: tuple[float, float]
    accuracy: float
    best_accuracy: float
    n_members: int
    n_nonmembers: int
    confidence: float
    name: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the CI as a two-element list)."""
        return {
            "name": self.name,
            "auc": self.auc,
            "auc_ci": list(self.auc_ci),
            "accuracy": self.accuracy,
            "best_accuracy": self.best_accuracy,
            "n_members": self.n_members,
            "n_nonmembers": self.n_nonmembers,
            "confidence": self.confidence,
        }


# -- validation -------------------------------------------------------------------------------


def _numeric_array(name: str, value: object) -> np.ndarray:
    """``value`` as a numpy array of a numeric (float, int or bool) dtype, else TypeError."""
    arr = np.asarray(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"expected {name} to be a numeric array, got dtype {arr.dtype}")
    return arr


def _check_scores(name: str, scores: object, *, minimum: int = 2) -> np.ndarray:
    """``scores`` as a 1-D float64 array of at least ``minimum`` finite values."""
    arr = _numeric_array(name, scores)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"expected {name} to be 1-D (one score per record), got shape {arr.shape}")
    check_count(f"the number of {name}", arr.shape[0], minimum=minimum)
    arr = arr.astype(np.float64)
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"expected {name} to be finite, got {bad} NaN/inf values")
    return arr


def check_matrix(name: str, x: object, *, n_cols: int | None = None) -> np.ndarray:
    """``x`` as a 2-D float array (records x features) with finite entries."""
    arr = _numeric_array(name, x)
    if arr.ndim != 2:
        raise ValueError(f"expected {name} to be 2-D (records x features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"expected {name} to have at least one row and column, got {arr.shape}")
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"expected {name} to have {n_cols} columns, got {arr.shape[1]}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"expected {name} to be finite, got {bad} NaN/inf entries")
    return arr


# -- AUC, its confidence interval, accuracy ---------------------------------------------------


def _delong(members: np.ndarray, nonmembers: np.ndarray) -> tuple[float, float]:
    """AUC and DeLong's variance, by midranks (Sun & Xu 2014, Sec. III).

    With ``psi(x, y) = 1[x > y] + 1[x == y] / 2``, the structural components are
    ``V10_i = mean_j psi(X_i, Y_j)`` and ``V01_j = mean_i psi(X_i, Y_j)``; AUC is the mean
    of either, and ``Var(AUC) = S10 / m + S01 / n`` with ``S10``, ``S01`` their sample
    variances (DeLong et al. 1988, eqs. 3-5). Midranks give them in O((m + n) log(m + n)):
    ``V10_i = (rank of X_i among all - rank of X_i among X) / n``.
    """
    m, n = members.size, nonmembers.size
    both = stats.rankdata(np.concatenate([members, nonmembers]))  # midranks: ties averaged
    v10 = (both[:m] - stats.rankdata(members)) / n
    v01 = 1.0 - (both[m:] - stats.rankdata(nonmembers)) / m
    auc = float(v10.mean())
    var = float(np.var(v10, ddof=1) / m + np.var(v01, ddof=1) / n)
    return auc, max(var, 0.0)


def _balanced_accuracy_curve(
    members: np.ndarray, nonmembers: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds ``t`` (predict "member" iff score >= t) and the balanced accuracy of each.

    Candidates are midpoints between consecutive distinct scores, plus one below all scores
    (everything "member") and ``+inf`` (nothing "member"); each achievable split of the
    sorted scores appears once.
    """
    values = np.unique(np.concatenate([members, nonmembers]))
    mids = (values[:-1] + values[1:]) / 2
    thresholds = np.concatenate([[values[0] - 1.0], mids, [np.inf]])
    sm, sn = np.sort(members), np.sort(nonmembers)
    tpr = 1.0 - np.searchsorted(sm, thresholds, side="left") / sm.size
    tnr = np.searchsorted(sn, thresholds, side="left") / sn.size
    return thresholds, (tpr + tnr) / 2


def _balanced_accuracy(members: np.ndarray, nonmembers: np.ndarray, threshold: float) -> float:
    return float((np.mean(members >= threshold) + np.mean(nonmembers < threshold)) / 2)


def _best_threshold(members: np.ndarray, nonmembers: np.ndarray) -> tuple[float, float]:
    thresholds, acc = _balanced_accuracy_curve(members, nonmembers)
    k = int(np.argmax(acc))  # the first (lowest) threshold among ties
    return float(thresholds[k]), float(acc[k])


def _held_out_accuracy(members: np.ndarray, nonmembers: np.ndarray) -> float:
    """Two-fold cross-fitted balanced accuracy (even / odd positions of each set)."""
    halves = [(members[0::2], nonmembers[0::2]), (members[1::2], nonmembers[1::2])]
    accs = []
    for (fit_m, fit_n), (ev_m, ev_n) in (halves, halves[::-1]):
        threshold, _ = _best_threshold(fit_m, fit_n)
        accs.append(_balanced_accuracy(ev_m, ev_n, threshold))
    return float(np.mean(accs))


def attack_from_scores(
    member_scores: object,
    nonmember_scores: object,
    *,
    confidence: float = 0.95,
    name: str = "attack",
) -> AttackResult:
    """Measure a membership-inference score: AUC with a confidence interval, and accuracy.

    Higher score = "member". The AUC is the Mann-Whitney U statistic divided by
    ``n_members * n_nonmembers`` (ties count 1/2), equal to scikit-learn's
    ``roc_auc_score`` with members labelled 1. The interval is ``auc +- z sqrt(V)``, ``z``
    the normal quantile of ``(1 + confidence) / 2`` and ``V`` DeLong's nonparametric
    variance (DeLong, DeLong & Clarke-Pearson 1988; computed with midranks as in Sun & Xu
    2014), clipped to [0, 1]. It treats the records as independent draws; it is degenerate
    at perfect separation (variance 0). See :class:`AttackResult` for how the accuracy's
    threshold is chosen (held out, two-fold) and for the optimistic in-sample variant.

    Args:
      member_scores: one score per training record, shape ``(m,)`` (or ``(m, 1)``), m >= 2.
      nonmember_scores: one score per held-out record, shape ``(n,)``, n >= 2.
      confidence: the confidence level of the interval, in (0, 1).
      name: a label carried into the result.

    Returns:
      An :class:`AttackResult`.

    Raises:
      TypeError: non-numeric scores.
      ValueError: fewer than two scores in a set, NaN/inf scores, a shape other than 1-D,
        or ``confidence`` outside (0, 1).
    """
    confidence = check_open_unit("confidence", confidence)
    members = _check_scores("member scores", member_scores)
    nonmembers = _check_scores("non-member scores", nonmember_scores)
    auc, var = _delong(members, nonmembers)
    z = float(stats.norm.ppf((1 + confidence) / 2))
    half = z * np.sqrt(var)
    ci = (float(max(0.0, auc - half)), float(min(1.0, auc + half)))
    _, best = _best_threshold(members, nonmembers)
    return AttackResult(
        auc=auc,
        auc_ci=ci,
        accuracy=_held_out_accuracy(members, nonmembers),
        best_accuracy=best,
        n_members=int(members.size),
        n_nonmembers=int(nonmembers.size),
        confidence=confidence,
        name=str(name),
    )


# -- scores -----------------------------------------------------------------------------------


def distance_to_closest_record_scores(
    records: object,
    synthetic: object,
    *,
    metric: str = "euclidean",
    chunk: int = 2048,
) -> np.ndarray:
    """Black-box attack score: minus the distance from each record to its closest synthetic
    record.

    **This is an attack score, not a privacy guarantee.** A record that the generator
    reproduces (or nearly) scores close to the maximum, 0, and looks like a member; feeding
    these scores for members and non-members to :func:`attack_from_scores` measures how well
    this particular attack works (Chen et al. 2020, "GAN-Leaks"). Large distances,
    or an AUC near 0.5, do NOT show that a release is private: only the accounted epsilon
    does. Distances are computed on the numeric encoded arrays as given; scale or encode
    the columns first (e.g. standardise, one-hot) so that no column dominates.

    Memory is bounded: distances are computed in blocks of at most ``chunk`` records times
    ``chunk`` synthetic rows, keeping a running minimum. For ``"euclidean"`` the search uses
    ``|a|^2 + |b|^2 - 2 a.b`` (BLAS) and the chosen neighbour's distance is then recomputed
    directly, so a record that appears verbatim in ``synthetic`` scores exactly 0.

    Args:
      records: the records to score, shape ``(n, d)`` (members or non-members, encoded).
      synthetic: the released synthetic records, shape ``(s, d)``, same encoding.
      metric: one of :data:`METRICS` (``"cityblock"`` is L1, ``"chebyshev"`` L-infinity).
      chunk: the block size (rows) on each side.

    Returns:
      Scores of shape ``(n,)``, all ``<= 0``; higher = closer to the synthetic data.

    Raises:
      TypeError: non-numeric arrays.
      ValueError: arrays not 2-D, empty, with NaN/inf entries, with different numbers of
        columns, or an unknown ``metric``.
    """
    if metric not in METRICS:
        raise ValueError(f"expected metric in {METRICS}, got {metric!r}")
    chunk = check_count("chunk", chunk, minimum=1)
    x = check_matrix("records", records)
    y = check_matrix("synthetic", synthetic, n_cols=x.shape[1])
    dtype = np.result_type(x.dtype, y.dtype, np.float32)
    x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
    best = np.full(x.shape[0], np.inf)
    arg = np.zeros(x.shape[0], dtype=np.int64)
    y_sq = np.einsum("ij,ij->i", y, y) if metric == "euclidean" else None
    for i in range(0, x.shape[0], chunk):
        xi = x[i : i + chunk]
        xi_sq = np.einsum("ij,ij->i", xi, xi)[:, None] if metric == "euclidean" else None
        for j in range(0, y.shape[0], chunk):
            yj = y[j : j + chunk]
            if metric == "euclidean":
                d = xi_sq + y_sq[None, j : j + chunk] - 2.0 * (xi @ yj.T)
            else:
                d = cdist(xi, yj, metric=metric)
            k = np.argmin(d, axis=1)
            dk = d[np.arange(d.shape[0]), k]
            better = dk < best[i : i + chunk]
            best[i : i + chunk][better] = dk[better]
            arg[i : i + chunk][better] = k[better] + j
    if metric == "euclidean":
        # exact distance to the chosen neighbour (the expansion above loses the zeros)
        best = np.sqrt(np.sum((x.astype(np.float64) - y[arg].astype(np.float64)) ** 2, axis=1))
    return -best.astype(np.float64)


def white_box_scores(
    score_fn: Callable[[Any], Any],
    records: object,
    *,
    chunk: int = 1024,
    pad: bool = True,
) -> np.ndarray:
    """White-box attack score: a released model's own score function applied to records.

    ``score_fn`` maps a batch of records (shape ``(b, ...)``) to one score per record (shape
    ``(b,)`` or ``(b, 1)``), higher = more "member"-like: a GAN critic's ``D(x)`` (Hayes et
    al. 2019, LOGAN), a model's log-likelihood, minus a reconstruction error. It
    is called on consecutive blocks of ``chunk`` records; with ``pad`` the last block is
    padded (repeating its last row, whose extra scores are dropped) so that every call sees
    the same shape ``(chunk, ...)``, whatever the number of records, and a jitted
    ``score_fn`` compiles once for members and non-members alike.

    Like every attack score, the result measures one attack; it is not a privacy guarantee.

    Args:
      score_fn: the model's score function over a batch (numpy or JAX arrays out).
      records: the records to score, an array of shape ``(n, ...)``, n >= 1.
      chunk: records per call.
      pad: pad the last block to ``chunk`` rows (fixed shapes for ``jit``).

    Returns:
      Scores of shape ``(n,)``, float64.

    Raises:
      TypeError: ``score_fn`` not callable.
      ValueError: no records, or ``score_fn`` returning the wrong number of scores or
        NaN/inf scores.
    """
    if not callable(score_fn):
        raise TypeError(f"expected score_fn to be callable, got {type(score_fn).__name__}")
    chunk = check_count("chunk", chunk, minimum=1)
    x = np.asarray(records)
    if x.ndim == 0 or x.shape[0] == 0:
        raise ValueError(f"expected records to have at least one row, got shape {x.shape}")
    n = x.shape[0]
    out = []
    for i in range(0, n, chunk):
        block = x[i : i + chunk]
        b = block.shape[0]
        if pad and b < chunk:
            block = np.concatenate([block, np.repeat(block[-1:], chunk - b, axis=0)])
        s = np.asarray(score_fn(block), dtype=np.float64)
        if s.ndim == 2 and s.shape[1] == 1:
            s = s[:, 0]
        if s.shape != (block.shape[0],):
            raise ValueError(
                f"expected score_fn to return one score per record, shape ({block.shape[0]},), "
                f"got shape {s.shape}"
            )
        out.append(s[:b])
    scores = np.concatenate(out)
    bad = int(np.count_nonzero(~np.isfinite(scores)))
    if bad:
        raise ValueError(f"expected score_fn to return finite scores, got {bad} NaN/inf values")
    return scores


def check_same_record_shape(members: object, nonmembers: object) -> None:
    a, b = np.shape(members), np.shape(nonmembers)
    if len(a) == 0 or len(b) == 0 or a[1:] != b[1:]:
        raise ValueError(
            f"expected members and non-members with the same record shape, got {a} and {b}"
        )


def membership_attack(
    score_fn: Callable[[Any], Any],
    members: object,
    nonmembers: object,
    *,
    confidence: float = 0.95,
    chunk: int = 1024,
    name: str = "white-box",
) -> AttackResult:
    """White-box attack end to end: :func:`white_box_scores` on both sets, then
    :func:`attack_from_scores`.

    Args:
      score_fn: the released model's score function (higher = "member").
      members: training records, shape ``(m, ...)``.
      nonmembers: held-out records from the same distribution, shape ``(n, ...)``.
      confidence: confidence level of the AUC interval.
      chunk: records per ``score_fn`` call.
      name: label of the result.

    Raises:
      ValueError: members and non-members of different record shapes, and everything
        :func:`white_box_scores` and :func:`attack_from_scores` raise.
    """
    check_same_record_shape(members, nonmembers)
    return attack_from_scores(
        white_box_scores(score_fn, members, chunk=chunk),
        white_box_scores(score_fn, nonmembers, chunk=chunk),
        confidence=confidence,
        name=name,
    )


def dcr_attack(
    members: object,
    nonmembers: object,
    synthetic: object,
    *,
    metric: str = "euclidean",
    confidence: float = 0.95,
    chunk: int = 2048,
    name: str = "black-box dcr",
) -> AttackResult:
    """Black-box attack end to end: :func:`distance_to_closest_record_scores` on both sets,
    then :func:`attack_from_scores`. An attack measurement, not a privacy guarantee."""
    check_same_record_shape(members, nonmembers)
    return attack_from_scores(
        distance_to_closest_record_scores(members, synthetic, metric=metric, chunk=chunk),
        distance_to_closest_record_scores(nonmembers, synthetic, metric=metric, chunk=chunk),
        confidence=confidence,
        name=name,
    )
