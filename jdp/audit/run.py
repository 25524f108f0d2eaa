"""Black-box audits of the library's mechanisms, and the one-run audit of DP-SGD.

**Black-box audit** (Jagielski et al. 2020; Nasr et al. 2021): run a mechanism many times
on a dataset ``D`` and on ``D' = D + canary`` under fresh randomness, score each output,
and turn the scores into an epsilon lower bound at the claimed delta
(:func:`jdp.audit.bounds.epsilon_lower_bound`: threshold chosen on held-out trials,
Clopper-Pearson rates). :func:`audit_mechanism` does this for any
``mechanism(key, dataset) -> output`` (JAX: trials batched with ``jax.vmap``) or
``mechanism(rng, dataset) -> output`` (numpy: a loop). :data:`MECHANISM_AUDITS` audits every
mechanism of the catalogue (:mod:`jdp.audit.catalogue`, which the contract test reads too),
each built from the library's own functions and compared with the epsilon of the event the
mechanism itself returned (:func:`claimed_epsilon`), never with a re-derived number.

**One-run audit of DP-SGD** (Steinke, Nasr & Jagielski 2023): :func:`one_run_dpsgd_audit`.

Every audit here is a measurement: a lower bound above the claim falsifies the claim; a
lower bound below it proves nothing.

References:
  Jagielski, Ullman & Oprea, NeurIPS 2020. Nasr, Song, Thakurta, Papernot & Carlini, IEEE
  S&P 2021. Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run",
  NeurIPS 2023 (Thm. 5.2, Sec. 6 gradient canaries).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax

from accounting import compute_epsilon
from accounting import events as ev
from accounting.validation import check_count, check_open_unit, check_positive
from jdp.audit.bounds import EpsilonLowerBound, epsilon_lower_bound, one_run_epsilon_lower_bound
from jdp.audit.canaries import gradient_canaries
from jdp.audit.catalogue import CATALOGUE, CLAIM_ACCOUNTANT, Mechanism

__all__ = [
    "CLAIM_ACCOUNTANT",
    "MECHANISM_AUDITS",
    "AuditResult",
    "OneRunResult",
    "audit_mechanism",
    "audit_scores",
    "claimed_epsilon",
    "one_run_dpsgd_audit",
    "run_mechanism_audit",
]


def claimed_epsilon(event: ev.DpEvent, delta: float, accountant: str = CLAIM_ACCOUNTANT) -> float:
    """The epsilon at ``delta`` of a mechanism's own event (default :data:`CLAIM_ACCOUNTANT`)."""
    return float(compute_epsilon(event, delta, accountant=accountant))


@dataclass(frozen=True)
class AuditResult:
    """A black-box audit of one mechanism.

    Attributes:
      name: the mechanism.
      epsilon: the claimed epsilon at ``delta`` (from the mechanism's event).
      delta: the claimed delta.
      lower_bound: the audited lower bound on epsilon.
      trials: trials run in all (with and without the canary).
      wall_s: wall-clock seconds of the trials and the bound.
      end_to_end: whether the whole released output was audited (else one release inside
        a larger algorithm).
      expect: ``"holds"``, or ``"breaks"`` for a retired sampler kept to show its failure
        (:class:`jdp.audit.catalogue.Mechanism`).
      bound: the details (:class:`jdp.audit.bounds.EpsilonLowerBound`).
      event: the mechanism's event.
    """

    name: str
    epsilon: float
    delta: float
    lower_bound: float
    trials: int
    wall_s: float
    end_to_end: bool
    bound: EpsilonLowerBound = field(repr=False)
    event: ev.DpEvent = field(repr=False)
    expect: str = "holds"

    @property
    def tightness(self) -> float:
        """``lower_bound / epsilon`` (1 = the claim is exactly attained)."""
        return self.lower_bound / self.epsilon if self.epsilon > 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        return {
            "name": self.name,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "lower_bound": self.lower_bound,
            "tightness": self.tightness,
            "trials": self.trials,
            "wall_s": self.wall_s,
            "end_to_end": self.end_to_end,
            "expect": self.expect,
            "bound": self.bound.as_dict(),
        }


def audit_scores(
    name: str,
    scores_out: np.ndarray,
    scores_in: np.ndarray,
    event: ev.DpEvent,
    *,
    delta: float,
    confidence: float = 0.95,
    method: Literal["clopper-pearson", "bayesian"] = "clopper-pearson",
    select_fraction: float = 0.2,
    end_to_end: bool = True,
    expect: str = "holds",
    started: float | None = None,
) -> AuditResult:
    """The :class:`AuditResult` of scores already computed (``started``: a
    ``time.perf_counter()`` stamp for the wall time)."""
    bound = epsilon_lower_bound(
        scores_out,
        scores_in,
        delta=delta,
        confidence=confidence,
        method=method,
        select_fraction=select_fraction,
    )
    wall = time.perf_counter() - started if started is not None else float("nan")
    return AuditResult(
        name=name,
        epsilon=claimed_epsilon(event, delta),
        delta=float(delta),
        lower_bound=bound.epsilon,
        trials=bound.trials,
        wall_s=wall,
        end_to_end=end_to_end,
        bound=bound,
        event=event,
        expect=expect,
    )


def _split_event(output: Any) -> tuple[Any, ev.DpEvent | None]:
    if isinstance(output, tuple) and len(output) == 2 and isinstance(output[1], ev.DpEvent):
        return output
    return output, None


def audit_mechanism(
    mechanism: Callable[[Any, Any], Any],
    dataset: Any,
    neighbour: Any,
    score_fn: Callable[[Any], Any],
    *,
    trials: int,
    delta: float,
    seed: int,
    event: ev.DpEvent | None = None,
    backend: Literal["jax", "numpy"] = "jax",
    chunk: int = 4096,
    name: str = "mechanism",
    confidence: float = 0.95,
    method: Literal["clopper-pearson", "bayesian"] = "clopper-pearson",
    select_fraction: float = 0.2,
) -> AuditResult:
    """Black-box audit: ``trials`` runs on each of ``dataset`` and ``neighbour``.

    Args:
      mechanism: ``mechanism(key, dataset) -> output`` (``backend="jax"``: jit/vmap-able;
        trials batched by ``jax.vmap`` over split keys in chunks of ``chunk``) or
        ``mechanism(rng, dataset) -> output`` (``backend="numpy"``: called in a loop with one
        ``np.random.Generator``). An output ``(value, DpEvent)`` is split and its event used
        as the claim (numpy backend).
      dataset, neighbour: ``D`` and ``D'`` (differing in one canary record).
      score_fn: ``output -> float`` (higher = "canary in" or lower, both directions are
        tried on held-out trials).
      trials: runs per dataset.
      delta: the claimed delta.
      seed: the randomness of the trials (an audit is research: a fixed seed is fine).
      event: the mechanism's event (required unless the numpy mechanism returns it).
      backend, chunk: see ``mechanism``.
      name, confidence, method, select_fraction: see :func:`audit_scores`.

    Returns:
      An :class:`AuditResult`.
    """
    trials = check_count("trials", trials, minimum=4)
    started = time.perf_counter()
    if backend == "jax":
        run = jax.jit(jax.vmap(lambda k, d: score_fn(mechanism(k, d)), in_axes=(0, None)))
        keys = jax.random.split(jax.random.key(seed), 2)
        scores = []
        for k, data in zip(keys, (dataset, neighbour), strict=True):
            ks = jax.random.split(k, trials)
            parts = [np.asarray(run(ks[i : i + chunk], data)) for i in range(0, trials, chunk)]
            scores.append(np.concatenate(parts).astype(np.float64).ravel())
    elif backend == "numpy":
        rng = np.random.default_rng(seed)
        scores = []
        for data in (dataset, neighbour):
            out = np.empty(trials)
            for i in range(trials):
                value, returned = _split_event(mechanism(rng, data))
                event = returned if event is None else event
                out[i] = float(score_fn(value))
            scores.append(out)
    else:
        raise ValueError(f"expected backend in ('jax', 'numpy'), got {backend!r}")
    if event is None:
        raise ValueError("expected the mechanism's event (pass event=, or return it)")
    return audit_scores(
        name,
        scores[0],
        scores[1],
        event,
        delta=delta,
        confidence=confidence,
        method=method,
        select_fraction=select_fraction,
        started=started,
    )


# -- the registry: the catalogue's audited entries ---------------------------------------------

#: Every audited mechanism of the catalogue (:data:`jdp.audit.catalogue.CATALOGUE`) by name.
#: P3GM is not audited end to end (one fit is a DP-SGD training run; an audit needs
#: thousands): its releases are, here (analyze-gauss, dp-em-step, dpsgd-step) and by
#: :func:`one_run_dpsgd_audit`.
MECHANISM_AUDITS: dict[str, Mechanism] = {m.name: m for m in CATALOGUE if m.audited}


def run_mechanism_audit(
    name: str,
    *,
    seed: int = 0,
    trials: int | None = None,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    confidence: float = 0.95,
    method: Literal["clopper-pearson", "bayesian"] = "clopper-pearson",
) -> AuditResult:
    """Run the registered audit ``name`` with its noise calibrated to ``(epsilon, delta)``.

    Args:
      name: a key of :data:`MECHANISM_AUDITS`.
      seed: the randomness of the trials (fixed: an audit is a reproducible measurement).
      trials: runs per dataset (default: the entry's CI-sized number).
      epsilon, delta: the target the mechanism is calibrated to; the claim is then read off
        the event the mechanism returned (:func:`claimed_epsilon`).
      confidence, method: of the bound (:func:`jdp.audit.bounds.epsilon_lower_bound`).
    """
    if name not in MECHANISM_AUDITS:
        raise KeyError(
            f"unknown mechanism audit {name!r}; expected one of {sorted(MECHANISM_AUDITS)}"
        )
    entry = MECHANISM_AUDITS[name]
    check_positive("epsilon", epsilon)
    check_open_unit("delta", delta)
    trials = check_count("trials", entry.audit_trials if trials is None else trials, minimum=4)
    started = time.perf_counter()
    param = entry.calibrated(epsilon, delta)
    scores_out, scores_in, event = entry.run_audit(
        np.random.default_rng(seed), trials, param, delta
    )
    return audit_scores(
        name,
        scores_out,
        scores_in,
        event,
        delta=delta,
        confidence=confidence,
        method=method,
        end_to_end=entry.end_to_end,
        expect=entry.expect,
        started=started,
    )


# -- one run (Steinke, Nasr & Jagielski 2023) -------------------------------------------------


@dataclass(frozen=True)
class OneRunResult:
    """A one-run audit of DP-SGD.

    Attributes:
      epsilon: the claimed epsilon of the run's ledger at ``delta``.
      delta: the claimed delta.
      lower_bound: the audited lower bound (:func:`jdp.audit.bounds.one_run_epsilon_lower_bound`).
      canaries: ``m``, the canaries (each included with probability 1/2).
      guesses: ``r``, the canaries guessed (the rest abstained on).
      correct: ``v``, the right guesses.
      steps, noise_multiplier, sampling_prob: the run.
      wall_s: seconds.
    """

    epsilon: float
    delta: float
    lower_bound: float
    canaries: int
    guesses: int
    correct: int
    steps: int
    noise_multiplier: float
    sampling_prob: float
    wall_s: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return dict(self.__dict__)


def one_run_dpsgd_audit(
    key: jax.Array,
    *,
    canaries: int = 1000,
    dim: int = 5000,
    guesses: int | None = None,
    steps: int = 50,
    sampling_prob: float = 0.5,
    l2_clip_norm: float = 1.0,
    target_epsilon: float = 1.0,
    delta: float = 1e-5,
    noise_multiplier: float | None = None,
    confidence: float = 0.95,
    accountant: str = CLAIM_ACCOUNTANT,
) -> OneRunResult:
    """Audit one :func:`jdp.dpsgd.train` run with gradient-space canaries (white box).

    ``m = canaries`` directions ``c_i`` of norm ``C`` in ``R^dim``
    (:func:`jdp.audit.canaries.gradient_canaries`) are each included in the training set
    independently with probability 1/2; the model is linear with per-example loss
    ``-<w, x>``, so a record's gradient is ``-x`` (exactly the canary, norm ``C``: at the
    clip bound). After one run of plain SGD (rate 1, from ``w_0 = 0``) the final weights are
    the sum of every noisy update, and each canary is scored by ``<w_T, c_i> / C`` (the
    white-box score of Steinke et al., Sec. 6, which sums the canary's projections over all
    steps). The ``r / 2`` highest scores are guessed "in", the ``r / 2`` lowest "out", the
    rest abstained on; with ``v`` right guesses the lower bound is the largest ``eps``
    rejected by Thm. 5.2 (``P[V >= v] <= f(v) + 2 m delta max_i (f(v - i) - f(v)) / i``,
    ``f(u) = P[Binomial(r, e^eps / (1 + e^eps)) >= u]``) at level ``1 - confidence``.

    Args:
      key: the run's randomness (canaries, inclusion, training).
      canaries: ``m``.
      dim: the parameter dimension (``dim >> m`` keeps canaries nearly orthogonal).
      guesses: ``r`` (default ``m // 5``), even.
      steps, sampling_prob, l2_clip_norm: the DP-SGD run (Poisson sampling).
      target_epsilon, delta: the target the noise is calibrated to (RDP, the library
        default), unless ``noise_multiplier`` is given.
      confidence: of the bound.
      accountant: reads the claim off the run's ledger (PLD is slow for small noise
        multipliers; RDP is looser, which only helps the run pass).

    Returns:
      A :class:`OneRunResult`; its claim is the run's own ledger read at ``delta``
      (:func:`claimed_epsilon`).

    References:
      Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run", NeurIPS
      2023, Thm. 5.2 and Sec. 6 (gradient canaries, white box).
    """
    from jdp.dpsgd import DPSGDConfig, train

    m = check_count("canaries", canaries, minimum=2)
    r = check_count("guesses", m // 5 if guesses is None else guesses, minimum=2)
    if r > m or r % 2:
        raise ValueError(f"expected an even number of guesses <= {m}, got {r}")
    started = time.perf_counter()
    k_canary, k_in, k_train = jax.random.split(key, 3)
    c = np.asarray(gradient_canaries(k_canary, m, dim, l2_clip_norm), dtype=np.float32)
    included = np.asarray(jax.random.bernoulli(k_in, 0.5, (m,)))
    privacy = (
        {"noise_multiplier": noise_multiplier}
        if noise_multiplier is not None
        else {"target_epsilon": target_epsilon, "target_delta": delta}
    )
    config = DPSGDConfig(
        l2_clip_norm=l2_clip_norm,
        sampling_prob=sampling_prob,
        expected_batch_size=sampling_prob * m / 2,  # public: from m, not the included count
        steps=steps,
        **privacy,
    )

    def loss_fn(params, example, key):
        del key
        return -jnp.dot(params, example)

    result = train(
        k_train,
        loss_fn,
        jnp.zeros(dim, jnp.float32),
        optax.sgd(1.0),
        c[included],
        config,
        label="dp-sgd (one-run audit)",
    )
    scores = c @ np.asarray(result.params) / l2_clip_norm
    order = np.argsort(scores)
    guess_in, guess_out = order[m - r // 2 :], order[: r // 2]
    v = int(included[guess_in].sum() + (~included[guess_out]).sum())
    return OneRunResult(
        epsilon=claimed_epsilon(result.ledger.event, delta, accountant),
        delta=float(delta),
        lower_bound=one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence),
        canaries=m,
        guesses=r,
        correct=v,
        steps=int(result.steps),
        noise_multiplier=float(result.noise_multiplier),
        sampling_prob=float(sampling_prob),
        wall_s=time.perf_counter() - started,
    )
