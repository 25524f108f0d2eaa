"""Black-box audits of the library's mechanisms, and the one-run audit of DP-SGD.

**Black-box audit** (Jagielski et al. 2020; Nasr et al. 2021): run a mechanism many times
on a dataset ``D`` and on ``D' = D + canary`` under fresh randomness, score each output,
and turn the scores into an epsilon lower bound at the claimed delta
(:func:`jdp.audit.bounds.epsilon_lower_bound`: threshold chosen on held-out trials,
Clopper-Pearson rates). :func:`audit_mechanism` does this for any
``mechanism(key, dataset) -> output`` (JAX: trials batched with ``jax.vmap``) or
``mechanism(rng, dataset) -> output`` (numpy: a loop). :data:`MECHANISM_AUDITS` registers
an audit for every mechanism of the library, each built from the library's own functions
and compared with the epsilon of the event the mechanism itself returned
(:func:`claimed_epsilon`), never with a re-derived number.

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
from accounting.calibrate import calibrate
from accounting.validation import check_count, check_open_unit, check_positive
from jdp.audit.bounds import EpsilonLowerBound, epsilon_lower_bound, one_run_epsilon_lower_bound
from jdp.audit.canaries import (
    boundary_canary,
    corner_canary,
    gaussian_shift_score,
    gradient_canaries,
    laplace_shift_score,
)

__all__ = [
    "CLAIM_ACCOUNTANT",
    "MECHANISM_AUDITS",
    "AuditResult",
    "MechanismAudit",
    "OneRunResult",
    "audit_mechanism",
    "audit_scores",
    "claimed_epsilon",
    "one_run_dpsgd_audit",
    "run_mechanism_audit",
]

#: The accountant the claims are read with: PLD, the tightest upper bound for the Gaussian,
#: Laplace and subsampled Gaussian events audited here (a looser claim only helps a
#: mechanism pass, and costs the audit its power).
CLAIM_ACCOUNTANT = "pld"

Scores = tuple[np.ndarray, np.ndarray, ev.DpEvent]


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


# -- the registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MechanismAudit:
    """A registered audit: ``run(rng, trials=, epsilon=, delta=) -> (scores_out, scores_in,
    event)`` with the noise calibrated to ``(epsilon, delta)`` by the library, the event the
    one the mechanism returned.

    Attributes:
      name: the registry key.
      description: what is released, the canary, the score.
      run: the trials.
      trials: the default (CI-sized) number of trials per dataset.
      end_to_end: whether the whole released output is audited.
    """

    name: str
    description: str
    run: Callable[..., Scores]
    trials: int
    end_to_end: bool


def _calibrated_z(event_fn: Callable[[float], ev.DpEvent], epsilon: float, delta: float) -> float:
    return calibrate(
        event_fn, target_epsilon=epsilon, target_delta=delta, accountant=CLAIM_ACCOUNTANT
    )


def _upper(m: np.ndarray) -> np.ndarray:
    """Upper triangles (diagonal included) of a stack of square matrices, flattened."""
    iu = np.triu_indices(m.shape[-1])
    return m[..., iu[0], iu[1]]


def _gaussian(rng: np.random.Generator, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.mechanisms import gaussian_mechanism

    z = _calibrated_z(ev.GaussianDpEvent, epsilon, delta)
    base = float(rng.uniform(0.0, 1.0, 10).sum())  # ten records in the public range [0, 1]
    out = []
    for value in (base, base + 1.0):  # the canary: a record at the public bound 1
        y, event = gaussian_mechanism(
            rng, np.full(trials, value), l2_sensitivity=1.0, noise_multiplier=z
        )
        out.append(y)
    return out[0], out[1], event


def _laplace(rng: np.random.Generator, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.mechanisms import laplace_mechanism

    base = float(rng.uniform(0.0, 1.0, 10).sum())
    out = []
    for value in (base, base + 1.0):
        y, event = laplace_mechanism(
            rng, np.full(trials, value), l1_sensitivity=1.0, epsilon=epsilon
        )
        out.append(y)
    return out[0], out[1], event


def _loop(rng: np.random.Generator, trials: int, release: Callable, datasets: tuple) -> tuple:
    """``release(rng, data) -> (outputs tuple, event)`` run ``trials`` times per dataset;
    returns the outputs stacked per part and the event."""
    stacked, event = [], None
    for data in datasets:
        runs = []
        for _ in range(trials):
            parts, event = release(rng, data)
            runs.append(parts)
        stacked.append([np.stack(p) for p in zip(*runs, strict=True)])
    return stacked[0], stacked[1], event


def _analyze_gauss(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.encoding.pca import noisy_scatter_gaussian, scatter_sum

    d, c = 3, 1.0
    z = _calibrated_z(ev.GaussianDpEvent, epsilon, delta)
    x = rng.uniform(-1.0, 1.0, size=(8, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)  # records on the unit sphere
    xc = np.vstack([x, boundary_canary(d, c)])  # norm C: the scatter moves by C^2
    centre = np.zeros(d)

    def release(r, data):
        y, e = noisy_scatter_gaussian(r, data, centre, noise_multiplier=z, l2_clip_norm=c)
        return (_upper(y),), e

    a = _upper(scatter_sum(x, centre, l2_clip_norm=c))
    b = _upper(scatter_sum(xc, centre, l2_clip_norm=c))
    y0, y1, event = _loop(rng, trials, release, (x, xc))
    std = (z * c**2,)
    return (
        gaussian_shift_score(y0, (a,), (b,), std),
        gaussian_shift_score(y1, (a,), (b,), std),
        event,
    )


def _lap_pca(
    rng,
    *,
    trials: int,
    epsilon: float,
    delta: float,
    secure_noise: bool = False,
    decimals: int | None = 9,
) -> Scores:
    """Lap-PCA's release; ``secure_noise`` and ``decimals`` (of the score) select the
    floating-point audit (:func:`jdp.audit.canaries.laplace_shift_score`)."""
    from jdp.encoding.pca import lap_pca_l1_sensitivity, noisy_scatter_laplace, scatter_sum

    d = 2
    lower, upper = -np.ones(d), np.ones(d)
    centre = np.zeros(d)
    x = rng.uniform(-1.0, 1.0, size=(8, d))
    xc = np.vstack([x, corner_canary(lower, upper)])  # attains the L1 sensitivity

    def release(r, data):
        y, e = noisy_scatter_laplace(
            r, data, centre, epsilon=epsilon, lower=lower, upper=upper, secure_noise=secure_noise
        )
        return (_upper(y),), e

    a = _upper(scatter_sum(x, centre, l2_clip_norm=np.inf))
    b = _upper(scatter_sum(xc, centre, l2_clip_norm=np.inf))
    y0, y1, event = _loop(rng, trials, release, (x, xc))
    lam = (lap_pca_l1_sensitivity(np.maximum(upper - centre, centre - lower)) / epsilon,)
    return (
        laplace_shift_score(y0, (a,), (b,), lam, decimals=decimals),
        laplace_shift_score(y1, (a,), (b,), lam, decimals=decimals),
        event,
    )


def _dp_em_step(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.encoding.em import em_statistics, initial_mixture, noisy_em_statistics

    d, c = 2, 1.0
    z = _calibrated_z(lambda s: ev.ComposedDpEvent([ev.GaussianDpEvent(s)] * 3), epsilon, delta)
    mixture = initial_mixture(rng, 1, d, l2_clip_norm=c)
    x = rng.uniform(-0.5, 0.5, size=(8, d))
    xc = np.vstack([x, boundary_canary(d, c)])

    def release(r, data):
        return noisy_em_statistics(r, data, mixture, noise_multiplier=z, l2_clip_norm=c)

    a = em_statistics(x, mixture, l2_clip_norm=c)
    b = em_statistics(xc, mixture, l2_clip_norm=c)
    y0, y1, event = _loop(rng, trials, release, (x, xc))
    stds = (z, z * c, z * c**2)
    return gaussian_shift_score(y0, a, b, stds), gaussian_shift_score(y1, a, b, stds), event


def _dp_lloyd_step(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.encoding.kmeans import lloyd_statistics, noisy_lloyd_step

    d, c = 2, 1.0
    z = _calibrated_z(lambda s: ev.ComposedDpEvent([ev.GaussianDpEvent(s)] * 2), epsilon, delta)
    centres = np.array([[0.5, 0.0], [-0.5, 0.0]])
    x = rng.uniform(-0.5, 0.5, size=(8, d))
    xc = np.vstack([x, boundary_canary(d, c)])

    def release(r, data):
        _, e, stats = noisy_lloyd_step(r, data, centres, noise_multiplier=z, l2_clip_norm=c)
        return stats, e

    a = lloyd_statistics(x, centres, l2_clip_norm=c)
    b = lloyd_statistics(xc, centres, l2_clip_norm=c)
    y0, y1, event = _loop(rng, trials, release, (x, xc))
    stds = (z, z * c)
    return gaussian_shift_score(y0, a, b, stds), gaussian_shift_score(y1, a, b, stds), event


def _dpnorm(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.encoding.kmeans import dp_norm_bound

    z = _calibrated_z(ev.GaussianDpEvent, epsilon, delta)
    max_norm, bins = 1.0, 2
    x = np.zeros((4, 2))  # norm 0: in no bin, so every count of D is 0
    xc = np.vstack([x, boundary_canary(2, max_norm)])  # norm max_norm: the last bin
    out, event = [], None
    for data in (x, xc):
        s = np.empty(trials)
        for i in range(trials):
            bound, event = dp_norm_bound(
                rng, data, noise_multiplier=z, max_norm=max_norm, n_bins=bins
            )
            s[i] = float(bound == max_norm)
        out.append(s)
    return out[0], out[1], event


def _dpsgd_step(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.dpsgd.batch_selection import padded_batch_size, poisson_batch
    from jdp.dpsgd.noise import dp_aggregate
    from jdp.dpsgd.step import make_dp_step
    from jdp.dpsgd.train import DPSGDConfig

    n, d, c, q = 8, 2, 1.0, 0.5
    config = DPSGDConfig(
        l2_clip_norm=c,
        sampling_prob=q,
        expected_batch_size=q * n,
        steps=1,
        target_epsilon=epsilon,
        target_delta=delta,
        accountant="rdp",  # calibrating with PLD takes ~15 PLD evaluations (seconds each)
    )
    z = config.calibrated_noise_multiplier(n)
    event = config.event(z, n)
    # records along e2 (invisible to the score), the canary 10 C e1 (clipped to C e1)
    x = np.zeros((n + 1, d))
    x[:n, 1] = rng.uniform(-1.0, 1.0, n)
    x[n] = 10.0 * boundary_canary(d, c)

    def loss_fn(params, example, key):
        del key
        return -jnp.dot(params, example)

    def chain(key):
        return optax.chain(
            dp_aggregate(key, noise_multiplier=z, expected_batch_size=q * n), optax.sgd(1.0)
        )

    params = jnp.zeros(d)
    step = make_dp_step(loss_fn, chain(jax.random.key(0)), l2_clip_norm=c)

    def one(key, batch, mask):
        noise_key, example_key = jax.random.split(key)
        new, _, _ = step(params, chain(noise_key).init(params), batch, mask, example_key)
        return new[0]  # the coordinate the canary's gradient moves

    run = jax.jit(jax.vmap(one))
    padded = padded_batch_size(n + 1, q)
    key = jax.random.key(int(rng.integers(2**31)))
    out = []
    for size, k in zip((n, n + 1), jax.random.split(key), strict=True):
        batches = [poisson_batch(rng, size, q, padded, overflow="raise")[0] for _ in range(trials)]
        idx = np.stack([b.indices for b in batches])
        mask = np.stack([b.mask for b in batches])
        out.append(np.asarray(run(jax.random.split(k, trials), x[idx], mask), dtype=np.float64))
    return out[0], out[1], event


def _marginals(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    import pandas as pd

    from accounting import PrivacyBudget
    from jdp.data.schema import Column, Schema
    from jdp.synth import marginals

    schema = Schema(columns=(Column(name="c", kind="categorical", categories=("a", "b", "c")),))
    config = marginals.MarginalsConfig()
    budget = PrivacyBudget(epsilon=epsilon, delta=delta)
    base = pd.DataFrame({"c": list(rng.choice(["a", "b", "c"], 6))})
    tables = [schema.conform(base), schema.conform(pd.concat([base, pd.DataFrame({"c": ["a"]})]))]
    a, b = (np.concatenate([h.ravel() for h in marginals.cell_counts(t, config)]) for t in tables)
    key = jax.random.key(int(rng.integers(2**31)))
    out, event = [], None
    for t, k in zip(tables, jax.random.split(key), strict=True):
        ys = []
        for kk in jax.random.split(k, trials):
            model = marginals.fit(kk, t, budget, config)
            ys.append(np.asarray(model.params["noisy_counts"], dtype=np.float64))
            event = model.ledger.event
        out.append(np.stack(ys))
    z = marginals.noise_multiplier("gaussian", epsilon, delta)
    std = (z * np.sqrt(len(schema)),)
    return (
        gaussian_shift_score((out[0],), (a,), (b,), std),
        gaussian_shift_score((out[1],), (a,), (b,), std),
        event,
    )


def _pca_gauss(rng, *, trials: int, epsilon: float, delta: float) -> Scores:
    from jdp.synth.pca_gauss.config import PCAGaussConfig
    from jdp.synth.pca_gauss.model import fit

    config = PCAGaussConfig(n_components=1, mode="unsupervised", pca_source="lap")
    x = np.zeros((6, 1))  # records at the centre: zero features
    xc = np.vstack([x, np.ones((1, 1))])  # the canary at the corner of the box [-1, 1]
    out, event = [], None
    for data in (x, xc):
        s = np.empty(trials)
        for i in range(trials):
            model = fit(rng, data, epsilon=epsilon, delta=delta, config=config)
            g = model.gaussians[0]
            # the released second-moment sum n_hat (Sigma + mu mu^T) (most of the budget;
            # the canary adds 1, the other records 0), as far as the projections keep it
            s[i] = max(g.count, 1.0) * float(g.cov[0, 0] + g.mean[0] ** 2)
            event = model.ledger.event
        out.append(s)
    return out[0], out[1], event


def _registry() -> dict[str, MechanismAudit]:
    entries = [
        MechanismAudit(
            "gaussian",
            "Gaussian mechanism on a sum of values in [0, 1]; canary 1; score: the output",
            _gaussian,
            5_000_000,
            True,
        ),
        MechanismAudit(
            "laplace",
            "Laplace mechanism on a sum of values in [0, 1]; canary 1; score: the output",
            _laplace,
            1_000_000,
            True,
        ),
        MechanismAudit(
            "dpsgd-step",
            "one Poisson-sampled DP-SGD step (jdp.dpsgd make_dp_step, dp_aggregate) on a "
            "linear model; canary gradient 10 C e1 (clipped to C); score: w_1 after the step",
            _dpsgd_step,
            100_000,
            True,
        ),
        MechanismAudit(
            "analyze-gauss",
            "Analyze-Gauss noisy scatter (jdp.encoding.pca.noisy_scatter_gaussian); canary "
            "C e1; score: Gaussian likelihood ratio",
            _analyze_gauss,
            40_000,
            False,
        ),
        MechanismAudit(
            "lap-pca",
            "Lap-PCA noisy scatter (noisy_scatter_laplace); canary: the box corner; score: "
            "Laplace likelihood ratio, rounded to 9 decimals (see laplace_shift_score)",
            _lap_pca,
            40_000,
            False,
        ),
        MechanismAudit(
            "dp-em-step",
            "DP-EM statistics (noisy_em_statistics, N, S, Q); canary C e1; score: Gaussian "
            "likelihood ratio",
            _dp_em_step,
            30_000,
            False,
        ),
        MechanismAudit(
            "dp-lloyd-step",
            "DP Lloyd statistics (noisy_lloyd_step counts and sums); canary C e1; score: "
            "Gaussian likelihood ratio",
            _dp_lloyd_step,
            30_000,
            False,
        ),
        MechanismAudit(
            "dpnorm",
            "DPNorm (dp_norm_bound, 2 bins); D has no counted record, the canary's norm is "
            "max_norm; score: released bound == max_norm",
            _dpnorm,
            40_000,
            True,
        ),
        MechanismAudit(
            "dp-marginals",
            "the marginals synthesizer's fit end to end (one categorical column, Gaussian); "
            "canary: one more record; score: Gaussian likelihood ratio of the noisy counts",
            _marginals,
            3_000,
            True,
        ),
        MechanismAudit(
            "pca-gauss",
            "PCA-Gauss fit end to end (Lap-PCA + Gaussian model, d = k = 1); canary at the "
            "box corner; score: the released second-moment sum n (Sigma + mu^2)",
            _pca_gauss,
            5_000,
            True,
        ),
    ]
    return {e.name: e for e in entries}


#: Every registered mechanism audit by name. P3GM is not audited end to end (one fit is a
#: DP-SGD training run; an audit needs thousands): its releases are, here (analyze-gauss,
#: dp-em-step, dpsgd-step) and by :func:`one_run_dpsgd_audit`.
MECHANISM_AUDITS: dict[str, MechanismAudit] = _registry()


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
    trials = check_count("trials", entry.trials if trials is None else trials, minimum=4)
    started = time.perf_counter()
    scores_out, scores_in, event = entry.run(
        np.random.default_rng(seed), trials=trials, epsilon=epsilon, delta=delta
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
        progress=False,
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
