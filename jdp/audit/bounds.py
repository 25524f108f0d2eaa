"""Empirical lower bounds on epsilon from the outcomes of membership tests.

**From error rates to epsilon.** Run a mechanism ``M`` many times on a dataset ``D`` (the
canary out) and on its neighbour ``D'`` (the canary in), score every output, and test "canary
in" by ``score >= t`` (or ``score <= t``). If ``M`` is ``(eps, delta)``-DP, every such test
has (Kairouz, Oh & Viswanath 2015, Thm. 2.1; Kifer et al.; Jagielski et al. 2020, Thm. 1)

    1 - FNR <= e^eps FPR + delta      and      1 - FPR <= e^eps FNR + delta,

(the second by exchanging the roles of ``D`` and ``D'``), hence

    eps >= max( log((1 - delta - FNR) / FPR),  log((1 - delta - FPR) / FNR) ).

Replacing FPR and FNR by one-sided upper confidence bounds (each at level ``1 - a/2``, so
both hold together with probability ``>= 1 - a`` by the union bound) turns the right-hand
side into a lower bound on epsilon that holds with confidence ``1 - a``
(:func:`epsilon_lower_bound`). The upper bounds are Clopper-Pearson's exact binomial ones
(``Beta(k + 1, n - k)`` quantile; Clopper & Pearson 1934) or, with
``method="bayesian"``, the posterior quantile under Jeffreys' prior (``Beta(k + 1/2, n - k +
1/2)``), a *credible* bound in the spirit of Zanella-Béguelin et al. 2023 rather than a
frequentist one (it is tighter and labelled as such).

**Threshold choice on held-out trials.** Picking the threshold and direction that maximise
the bound on the same trials it is evaluated on would make the confidence statement false
(a maximum over many tests). The trials are therefore split: the first ``select_fraction``
of each set chooses the threshold and direction (maximising the same bound), and the bound
reported is computed on the remaining trials only, at that single threshold.

**One-run audit** (Steinke, Nasr & Jagielski 2023, Thm. 5.2): ``m`` canaries, each included
independently with probability 1/2; the auditor guesses in/out for ``r`` of them and abstains
on the rest; ``v`` guesses are right. If the algorithm is ``(eps, delta)``-DP then

    P[V >= v] <= f(v) + 2 m delta max_{i = 1..v} (f(v - i) - f(v)) / i,
    f(u) = P[Binomial(r, e^eps / (1 + e^eps)) >= u],

(:func:`one_run_p_value`); the lower bound is the largest ``eps`` this rejects at level
``1 - confidence`` (:func:`one_run_epsilon_lower_bound`).

An audit's lower bound is a measurement: it can show that a claim is false (lower bound
above the claimed epsilon), never that it is true.

References:
  Jagielski, Ullman & Oprea, "Auditing Differentially Private Machine Learning: How
  Private is Private SGD?", NeurIPS 2020 (Sec. 3, the Clopper-Pearson bound). Nasr, Song,
  Thakurta, Papernot & Carlini, "Adversary Instantiation: Lower Bounds for Differentially
  Private Machine Learning", IEEE S&P 2021 (Sec. 4). Steinke, Nasr & Jagielski, "Privacy
  Auditing with One (1) Training Run", NeurIPS 2023 (Thm. 5.2, Alg. 1). Zanella-Béguelin
  et al., "Bayesian Estimation of Differential Privacy", ICML 2023. Kairouz, Oh &
  Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015. Clopper &
  Pearson, Biometrika 26(4), 1934.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from accounting.validation import check_count, check_nonnegative, check_open_unit

__all__ = [
    "BOUND_METHODS",
    "EpsilonLowerBound",
    "binomial_upper",
    "epsilon_from_rates",
    "epsilon_lower_bound",
    "one_run_epsilon_lower_bound",
    "one_run_p_value",
]

BoundMethod = Literal["clopper-pearson", "bayesian"]
#: Ways to bound an error rate from above: exact binomial, or Jeffreys' posterior quantile.
BOUND_METHODS: tuple[str, ...] = ("clopper-pearson", "bayesian")


@dataclass(frozen=True)
class EpsilonLowerBound:
    """An audited lower bound on epsilon (see the module docstring).

    Attributes:
      epsilon: the lower bound (0 when no test on the evaluation trials beats chance).
      threshold: the test's threshold, chosen on the selection trials.
      direction: ``">="`` (guess "canary in" iff ``score >= threshold``) or ``"<="``.
      fpr, fnr: the empirical error rates of that test on the evaluation trials.
      fpr_upper, fnr_upper: their upper confidence (or credible) bounds.
      trials: the number of trials used in all (both datasets, both parts).
      delta: the claimed delta the bound is computed at.
      confidence: the joint confidence of the two upper bounds.
      method: ``"clopper-pearson"`` or ``"bayesian"``.
    """

    epsilon: float
    threshold: float
    direction: str
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    trials: int
    delta: float
    confidence: float
    method: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return dict(self.__dict__)


def binomial_upper(
    k: object, n: int, alpha: float, method: BoundMethod = "clopper-pearson"
) -> np.ndarray:
    """One-sided upper ``1 - alpha`` bound on a binomial proportion from ``k`` of ``n``.

    Clopper-Pearson: the ``1 - alpha`` quantile of ``Beta(k + 1, n - k)`` (1 when
    ``k = n``), the exact bound (``P[Bin(n, p) <= k] = alpha`` at ``p`` = the bound).
    ``"bayesian"``: the ``1 - alpha`` quantile of the posterior ``Beta(k + 1/2, n - k + 1/2)``
    under Jeffreys' prior.
    """
    if method not in BOUND_METHODS:
        raise ValueError(f"expected method in {BOUND_METHODS}, got {method!r}")
    k = np.asarray(k, dtype=np.float64)
    if method == "bayesian":
        return stats.beta.ppf(1.0 - alpha, k + 0.5, n - k + 0.5)
    full = k >= n
    out = stats.beta.ppf(1.0 - alpha, k + 1.0, np.maximum(n - k, 1.0))
    return np.where(full, 1.0, out)


def epsilon_from_rates(fpr: object, fnr: object, delta: float) -> np.ndarray:
    """``max(log((1 - delta - FNR) / FPR), log((1 - delta - FPR) / FNR), 0)``, elementwise.

    The smallest epsilon that an ``(eps, delta)``-DP mechanism must have for a test with
    these error rates to exist (module docstring); a logarithm of a non-positive numerator
    counts as 0, a zero denominator as ``inf``.
    """
    fpr, fnr = np.asarray(fpr, dtype=np.float64), np.asarray(fnr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr, 0.0) / fpr)
        b = np.log(np.maximum(1.0 - delta - fpr, 0.0) / fnr)
    out = np.fmax(np.nan_to_num(a, nan=0.0, posinf=np.inf, neginf=0.0), 0.0)
    return np.fmax(out, np.nan_to_num(b, nan=0.0, posinf=np.inf, neginf=0.0))


def _scores(name: str, value: object) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"expected {name} to be 1-D (one score per trial), got shape {arr.shape}")
    check_count(f"the number of {name}", arr.shape[0], minimum=4)
    bad = int(np.count_nonzero(np.isnan(arr)))
    if bad:
        raise ValueError(f"expected {name} without NaN, got {bad} NaN values")
    return arr


def _candidates(pooled: np.ndarray, max_thresholds: int) -> np.ndarray:
    """Thresholds among the pooled scores, dense in both tails (where the best tests are):
    the values at geometrically spaced ranks from each end."""
    values = np.unique(pooled)
    if values.size <= max_thresholds:
        return values
    ranks = np.unique(np.geomspace(1, values.size, max_thresholds // 2).astype(np.int64) - 1)
    return np.unique(np.concatenate([values[ranks], values[values.size - 1 - ranks]]))


def _rates(out: np.ndarray, inn: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts of false positives (out >= t) and false negatives (in < t) per threshold."""
    so, si = np.sort(out), np.sort(inn)
    fp = out.size - np.searchsorted(so, t, side="left")
    fn = np.searchsorted(si, t, side="left")
    return fp, fn


def _bound_at(
    out: np.ndarray,
    inn: np.ndarray,
    t: np.ndarray,
    delta: float,
    alpha: float,
    method: BoundMethod,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    fp, fn = _rates(out, inn, t)
    fpr_u = binomial_upper(fp, out.size, alpha / 2, method)
    fnr_u = binomial_upper(fn, inn.size, alpha / 2, method)
    return epsilon_from_rates(fpr_u, fnr_u, delta), fp, fn, fpr_u, fnr_u


def epsilon_lower_bound(
    scores_out: object,
    scores_in: object,
    *,
    delta: float,
    confidence: float = 0.95,
    method: BoundMethod = "clopper-pearson",
    select_fraction: float = 0.2,
    max_thresholds: int = 2048,
) -> EpsilonLowerBound:
    """Lower bound on epsilon at ``delta`` from scores of trials without / with the canary.

    The first ``select_fraction`` of each score array chooses the threshold and direction
    that maximise the bound; the bound is then computed at that one threshold on the rest
    (module docstring). Trials must be i.i.d. (fresh randomness each), in any order.

    Args:
      scores_out: one score per trial on ``D`` (canary out), shape ``(n0,)``, n0 >= 4.
      scores_in: one score per trial on ``D'`` (canary in), shape ``(n1,)``, n1 >= 4.
      delta: the claimed delta, in [0, 1).
      confidence: joint confidence of the two rate bounds, in (0, 1).
      method: ``"clopper-pearson"`` (exact, frequentist) or ``"bayesian"`` (Jeffreys).
      select_fraction: share of each set used to select the threshold, in (0, 1).
      max_thresholds: candidate thresholds examined on the selection trials.

    Returns:
      An :class:`EpsilonLowerBound`.

    Raises:
      ValueError: scores not 1-D, fewer than 4, NaN; delta outside [0, 1); confidence or
        select_fraction outside (0, 1); an unknown method.
    """
    out, inn = _scores("scores_out", scores_out), _scores("scores_in", scores_in)
    delta = check_nonnegative("delta", delta)
    if delta >= 1:
        raise ValueError(f"expected delta < 1, got {delta}")
    confidence = check_open_unit("confidence", confidence)
    select_fraction = check_open_unit("select_fraction", select_fraction)
    max_thresholds = check_count("max_thresholds", max_thresholds, minimum=2)
    if method not in BOUND_METHODS:
        raise ValueError(f"expected method in {BOUND_METHODS}, got {method!r}")
    alpha = 1.0 - confidence
    n0, n1 = (max(1, min(a.size - 1, int(a.size * select_fraction))) for a in (out, inn))
    best: tuple[float, float, float] = (-1.0, 0.0, 1.0)  # (bound, threshold, sign)
    for sign in (1.0, -1.0):
        sel_out, sel_in = sign * out[:n0], sign * inn[:n1]
        t = _candidates(np.concatenate([sel_out, sel_in]), max_thresholds)
        eps = _bound_at(sel_out, sel_in, t, delta, alpha, method)[0]
        k = int(np.argmax(eps))
        if eps[k] > best[0]:
            best = (float(eps[k]), float(t[k]), sign)
    _, t, sign = best
    ev_out, ev_in = sign * out[n0:], sign * inn[n1:]
    eps, fp, fn, fpr_u, fnr_u = _bound_at(ev_out, ev_in, np.array([t]), delta, alpha, method)
    return EpsilonLowerBound(
        epsilon=float(eps[0]),
        threshold=float(sign * t),
        direction=">=" if sign > 0 else "<=",
        fpr=float(fp[0] / ev_out.size),
        fnr=float(fn[0] / ev_in.size),
        fpr_upper=float(fpr_u[0]),
        fnr_upper=float(fnr_u[0]),
        trials=int(out.size + inn.size),
        delta=float(delta),
        confidence=float(confidence),
        method=str(method),
    )


# -- one run (Steinke, Nasr & Jagielski 2023) ---------------------------------------------------


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """``P[>= v correct of r guesses]`` allowed by ``(epsilon, delta)``-DP with ``m`` canaries.

    Steinke, Nasr & Jagielski 2023, Thm. 5.2: with ``q = e^eps / (1 + e^eps)`` and
    ``f(u) = P[Binomial(r, q) >= u]``, the bound is
    ``f(v) + 2 m delta max_{i=1..v} (f(v - i) - f(v)) / i`` (capped at 1).
    """
    m = check_count("m", m, minimum=1)
    r = check_count("r", r, minimum=0)
    v = check_count("v", v, minimum=0)
    if not v <= r <= m:
        raise ValueError(f"expected 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    check_nonnegative("epsilon", epsilon)
    check_nonnegative("delta", delta)
    q = 1.0 / (1.0 + math.exp(-epsilon))
    tail = float(stats.binom.sf(v - 1, r, q))  # f(v)
    if delta == 0 or v == 0:
        return min(1.0, tail)
    i = np.arange(1, v + 1)
    between = np.cumsum(stats.binom.pmf(v - i, r, q))  # f(v - i) - f(v)
    return float(min(1.0, tail + 2 * m * delta * float(np.max(between / i))))


def one_run_epsilon_lower_bound(
    m: int, r: int, v: int, *, delta: float, confidence: float = 0.95, tol: float = 1e-4
) -> float:
    """The largest epsilon that ``v`` correct of ``r`` guesses over ``m`` canaries rejects
    at level ``1 - confidence`` (:func:`one_run_p_value` is increasing in epsilon; bisection
    to ``tol``). 0 when even epsilon = 0 is not rejected."""
    confidence = check_open_unit("confidence", confidence)
    level = 1.0 - confidence
    if one_run_p_value(m, r, v, 0.0, delta) > level:
        return 0.0
    lo, hi = 0.0, 1.0
    while one_run_p_value(m, r, v, hi, delta) <= level:
        lo, hi = hi, 2 * hi
        if hi > 1e3:
            return lo
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if one_run_p_value(m, r, v, mid, delta) <= level else (lo, mid)
    return lo
