"""The catalogue: every release mechanism of the library once, with what its docs claim.

One entry per mechanism holds the release at a public input (``release(rng, param, data)``
returning the released arrays and the event it spent), the exact pre-noise statistic, the
sensitivity of each released array, the noise family and scale, the documented event
(``plan(param)``), the neighbouring datasets an auditor uses (a dataset and the same with a
worst-case canary, :mod:`jdp.audit.canaries`) and the bad inputs that must raise. Two
readers share it:

* the contract test (``tests/contracts/test_mechanisms.py``): the no-privacy limit, the
  noise scale, same seed / same output, the event, the bad inputs -- for every entry with a
  statistic;
* the auditor (:mod:`jdp.audit.run`): every entry, calibrated to ``(epsilon, delta)``, run
  on both neighbours and scored (the likelihood ratio of its noise family, or the entry's
  own score for end-to-end fits and discrete outputs).

The catalogue lives in :mod:`jdp.audit` because it names mechanisms of every layer
(``jdp.mechanisms``, ``jdp.encoding``, ``jdp.dpsgd``, ``jdp.synth``): a catalogue inside
``jdp.mechanisms`` would import the layers built on it.

An entry with ``expect="breaks"`` documents a sampler the library no longer uses by default
(the textbook Laplace), kept so that the floating-point attack that retired it stays
reproducible (``jdp audit mechanism lap-pca-textbook``; docs/privacy.md, "Floating-point
noise").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax

from accounting import events as ev
from accounting.builders import with_noise_cut
from accounting.calibrate import calibrate
from jdp.audit.canaries import (
    boundary_canary,
    corner_canary,
    gaussian_shift_score,
    laplace_shift_score,
)
from jdp.mechanisms.noise import (
    gaussian_event,
    gaussian_mechanism,
    laplace_event,
    laplace_mechanism,
    snapping_laplace_parameters,
)

__all__ = ["CATALOGUE", "CLAIM_ACCOUNTANT", "Mechanism", "Scores", "by_name"]

#: The accountant claims are read with and noise is calibrated by: PLD, the tightest upper
#: bound for the Gaussian, Laplace and subsampled Gaussian events audited here (a looser
#: claim only helps a mechanism pass, and costs the audit its power).
CLAIM_ACCOUNTANT = "pld"

Arrays = tuple[np.ndarray, ...]
Release = Callable[[np.random.Generator, float, Any], tuple[Arrays, ev.DpEvent]]
#: ``(scores without the canary, scores with it, the mechanism's event)``.
Scores = tuple[np.ndarray, np.ndarray, ev.DpEvent]


@dataclass(frozen=True)
class Mechanism:
    """One catalogued mechanism and what its documentation claims.

    Attributes:
      name: the catalogue key (``jdp audit mechanism NAME``).
      description: what is released, the canary, the score.
      param: what ``release`` and ``plan`` take: a noise multiplier (Gaussian family) or an
        epsilon (Laplace family).
      plan: ``param -> event``: the event the docs state (calibration reads it; ``None`` for
        an end-to-end fit calibrated by its own rule from ``(epsilon, delta)``).
      neighbours: ``rng -> (D, D')``, ``D'`` is ``D`` with one worst-case canary.
      release: ``(rng, param, data) -> (released arrays, event)`` (``None``: an end-to-end
        entry, audited by ``audit`` alone).
      statistic: ``data -> arrays``: the exact pre-noise value of each released array
        (``None``: the output is not a noisy statistic, e.g. DPNorm's argmax).
      sensitivities: of each released array (L2 for the Gaussian family, L1 for Laplace).
      family: ``"gaussian"`` (noise / sensitivity ~ N(0, param^2)) or ``"laplace"``
        (noise / sensitivity ~ Laplace(scale(param))).
      contract_param: the privacy parameter of the contract's scale and seed tests.
      scale: Laplace: ``(param, data) -> scale`` in units of the sensitivity (default
        ``1 / param``; snapping calibrates a slightly larger one).
      rounding: ``(param, data) -> the largest rounding error`` the output grid adds (units
        of the sensitivity; snapping's half grid step).
      symmetric: the released arrays are symmetric matrices noised on their upper triangle.
      bad: calls that must raise ``ValueError``, with the message pattern.
      audit: a whole audit ``(rng, trials, param, delta) -> Scores`` for entries the generic
        loop does not serve (vectorised trials, end-to-end fits, discrete outputs).
      audited: whether the auditor runs it (a primitive audited through another entry is
        not).
      audit_trials: default trials per dataset (CI-sized).
      end_to_end: whether the audit sees the whole released output.
      expect: ``"holds"`` (the audit must stay below the claim) or ``"breaks"`` (kept to
        show a retired sampler failing).
    """

    name: str
    description: str
    param: Literal["noise_multiplier", "epsilon"]
    plan: Callable[[float], ev.DpEvent] | None
    neighbours: Callable[[np.random.Generator], tuple[Any, Any]]
    release: Release | None = None
    statistic: Callable[[Any], Arrays] | None = None
    sensitivities: tuple[float, ...] = ()
    family: Literal["gaussian", "laplace"] | None = None
    contract_param: float = 1.0
    scale: Callable[[float, Any], float] | None = None
    rounding: Callable[[float, Any], float] | None = None
    symmetric: bool = False
    bad: tuple[tuple[Callable[[], object], str], ...] = ()
    audit: Callable[[np.random.Generator, int, float, float], Scores] | None = None
    audited: bool = True
    audit_trials: int = 10_000
    end_to_end: bool = False
    expect: Literal["holds", "breaks"] = "holds"

    def calibrated(self, epsilon: float, delta: float) -> float:
        """The parameter at which the plan spends ``(epsilon, delta)`` by
        :data:`CLAIM_ACCOUNTANT` (an epsilon is its own parameter)."""
        if self.param == "epsilon":
            return float(epsilon)
        return calibrate(
            self.plan, target_epsilon=epsilon, target_delta=delta, accountant=CLAIM_ACCOUNTANT
        )

    def laplace_scale(self, param: float, data: Any) -> float:
        """The Laplace scale at ``param`` in units of the sensitivity."""
        return 1.0 / param if self.scale is None else self.scale(param, data)

    def max_rounding(self, param: float, data: Any) -> float:
        return 0.0 if self.rounding is None else self.rounding(param, data)

    def run_audit(
        self, rng: np.random.Generator, trials: int, param: float, delta: float
    ) -> Scores:
        """``trials`` releases on each neighbour, scored by the likelihood ratio of the
        noise family (the entry's own ``audit`` where it has one)."""
        if self.audit is not None:
            return self.audit(rng, trials, param, delta)
        d0, d1 = self.neighbours(rng)
        outputs, event = [], None
        for data in (d0, d1):
            runs = []
            for _ in range(trials):
                released, event = self.release(rng, param, data)
                runs.append(tuple(_free(a, self.symmetric) for a in released))
            outputs.append([np.stack(p) for p in zip(*runs, strict=True)])
        a = [_free(s, self.symmetric) for s in self.statistic(d0)]
        b = [_free(s, self.symmetric) for s in self.statistic(d1)]
        if self.family == "gaussian":
            stds = [param * s for s in self.sensitivities]
            scores = [gaussian_shift_score(y, a, b, stds) for y in outputs]
        else:
            scales = [self.laplace_scale(param, d0) * s for s in self.sensitivities]
            scores = [laplace_shift_score(y, a, b, scales, decimals=None) for y in outputs]
        return scores[0], scores[1], event


def _free(array: np.ndarray, symmetric: bool) -> np.ndarray:
    """The entries that carry independent noise (a symmetric matrix's upper triangle)."""
    array = np.asarray(array, dtype=np.float64)
    if symmetric:
        iu = np.triu_indices(array.shape[-1])
        return array[..., iu[0], iu[1]]
    return array


def _gaussians(count: int) -> Callable[[float], ev.DpEvent]:
    """The plan of ``count`` Gaussian releases at one multiplier (one event if ``count = 1``)."""
    if count == 1:
        return gaussian_event
    return lambda z: ev.ComposedDpEvent([gaussian_event(z)] * count)


# -- the scalar Gaussian and Laplace mechanisms -----------------------------------------------

#: Sums over ten records in the public range [0, 1]; the canary is a record at the bound 1.
_SUM_RECORDS = 10


def _sum_neighbours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = rng.uniform(0.0, 1.0, _SUM_RECORDS)
    return x, np.append(x, 1.0)


def _sum(x: np.ndarray) -> Arrays:
    return (np.array([x.sum()]),)


def _vectorised_sum_audit(
    release: Callable[[np.random.Generator, float, np.ndarray], tuple[np.ndarray, ev.DpEvent]],
) -> Callable[[np.random.Generator, int, float], Scores]:
    """An audit of a mechanism on one sum, all trials in one release of ``trials`` copies of
    the statistic (independent noise per coordinate): the score is the output itself."""

    def run(rng: np.random.Generator, trials: int, param: float, delta: float) -> Scores:
        del delta
        out, event = [], None
        for data in _sum_neighbours(rng):
            y, event = release(rng, param, np.full(trials, data.sum()))
            out.append(np.asarray(y, dtype=np.float64))
        return out[0], out[1], event

    return run


#: The contract's matrix input (the statistic is the value itself).
_MATRIX = np.random.default_rng(1).uniform(-3.0, 3.0, size=(100, 100))
_MATRIX = _MATRIX + _MATRIX.T
_RNG = np.random.default_rng  # the bad-input calls raise before drawing
_VALUE = np.zeros(3)


def _snapping_scale(sensitivity: float, size: int) -> Callable[[float, Any], float]:
    """Snapping's calibrated ``lambda`` (units of the sensitivity) for ``size`` coordinates."""
    return lambda eps, _: (
        snapping_laplace_parameters(l1_sensitivity=sensitivity, epsilon=eps, size=size).scale
        / sensitivity
    )


def _snapping_rounding(sensitivity: float, size: int) -> Callable[[float, Any], float]:
    """Half of snapping's output grid step (units of the sensitivity)."""
    return lambda eps, _: (
        snapping_laplace_parameters(l1_sensitivity=sensitivity, epsilon=eps, size=size).grid
        / 2.0
        / sensitivity
    )


_GAUSSIAN = Mechanism(
    name="gaussian",
    description="Gaussian mechanism (jdp.mechanisms.noise.gaussian_mechanism) on a sum of "
    "values in [0, 1]; canary 1; score: the output",
    param="noise_multiplier",
    plan=gaussian_event,
    neighbours=_sum_neighbours,
    release=lambda rng, z, x: _one(
        gaussian_mechanism(rng, _sum(x)[0], l2_sensitivity=1.0, noise_multiplier=z)
    ),
    statistic=_sum,
    sensitivities=(1.0,),
    family="gaussian",
    contract_param=1.5,
    bad=(
        (
            partial(gaussian_mechanism, _RNG(0), _VALUE, l2_sensitivity=0.0, noise_multiplier=1),
            "expected l2_sensitivity > 0, got 0.0",
        ),
        (
            partial(gaussian_mechanism, _RNG(0), _VALUE, l2_sensitivity=1.0, noise_multiplier=-1),
            "noise_multiplier >= 0, got -1",
        ),
    ),
    audit=_vectorised_sum_audit(
        lambda rng, z, v: gaussian_mechanism(rng, v, l2_sensitivity=1.0, noise_multiplier=z)
    ),
    audit_trials=5_000_000,
    end_to_end=True,
)


def _laplace_entry(*, secure: bool) -> Mechanism:
    lap = partial(laplace_mechanism, l1_sensitivity=1.0, secure_noise=secure)
    return Mechanism(
        name="laplace" if secure else "laplace-textbook",
        description=(
            "Laplace mechanism by snapping (the default, proved in binary64)"
            if secure
            else "textbook Laplace sampler (secure_noise=False; its cut is charged)"
        )
        + " on a sum of values in [0, 1]; canary 1; score: the output",
        param="epsilon",
        plan=partial(laplace_event, secure_noise=secure),
        neighbours=_sum_neighbours,
        release=lambda rng, eps, x: _one(lap(rng, _sum(x)[0], epsilon=eps)),
        statistic=_sum,
        sensitivities=(1.0,),
        family="laplace",
        contract_param=0.52,  # lambda just below a power of two: grid step ~ lambda
        scale=_snapping_scale(1.0, 1) if secure else None,
        rounding=_snapping_rounding(1.0, 1) if secure else None,
        bad=((partial(lap, _RNG(0), _VALUE, epsilon=0.0), "expected epsilon > 0, got 0.0"),)
        + (
            ((partial(lap, _RNG(0), _VALUE, epsilon=1.0, max_records=0), "max_records >= 1"),)
            if secure
            else ()
        ),
        audit=_vectorised_sum_audit(lambda rng, eps, v: lap(rng, v, epsilon=eps)),
        audit_trials=1_000_000,
        end_to_end=True,
    )


_GAUSSIAN_SYMMETRIC = Mechanism(
    name="gaussian-symmetric",
    description="Gaussian mechanism on a symmetric matrix (upper triangle noised, mirrored); "
    "audited as analyze-gauss",
    param="noise_multiplier",
    plan=gaussian_event,
    neighbours=lambda rng: (_MATRIX, _MATRIX),
    release=lambda rng, z, m: _one(
        gaussian_mechanism(rng, m, l2_sensitivity=2.0, noise_multiplier=z, symmetric=True)
    ),
    statistic=lambda m: (m,),
    sensitivities=(2.0,),
    family="gaussian",
    contract_param=2.0,
    symmetric=True,
    bad=(
        (
            partial(
                gaussian_mechanism,
                _RNG(0),
                np.zeros((2, 3)),
                l2_sensitivity=1.0,
                noise_multiplier=1.0,
                symmetric=True,
            ),
            r"expected a square matrix for symmetric noise, got shape \(2, 3\)",
        ),
    ),
    audited=False,
)

# -- the encoding-phase releases ----------------------------------------------------------------

_CLIP = 0.8


def _sphere_neighbours(d: int, c: float, n: int = 8) -> Callable[[np.random.Generator], tuple]:
    """``n`` records on the sphere of radius ``c`` and the same plus the canary ``c e_1``."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x = rng.uniform(-1.0, 1.0, size=(n, d))
        x *= c / np.linalg.norm(x, axis=1, keepdims=True)
        return x, np.vstack([x, boundary_canary(d, c)])

    return make


def _ball_neighbours(d: int, c: float, n: int = 8) -> Callable[[np.random.Generator], tuple]:
    """``n`` records in the box ``[-c/2, c/2]^d`` and the same plus the canary ``c e_1``."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x = rng.uniform(-0.5 * c, 0.5 * c, size=(n, d))
        return x, np.vstack([x, boundary_canary(d, c)])

    return make


def _analyze_gauss() -> Mechanism:
    from jdp.encoding.pca import noisy_scatter_gaussian, scatter_sum

    d = 6
    centre = np.zeros(d)
    return Mechanism(
        name="analyze-gauss",
        description="Analyze-Gauss noisy scatter (jdp.encoding.pca.noisy_scatter_gaussian); "
        "canary C e1 (the scatter moves by C^2); score: Gaussian likelihood ratio",
        param="noise_multiplier",
        plan=gaussian_event,
        neighbours=_sphere_neighbours(d, _CLIP, n=200),
        release=lambda rng, z, x: _one(
            noisy_scatter_gaussian(rng, x, centre, noise_multiplier=z, l2_clip_norm=_CLIP)
        ),
        statistic=lambda x: (scatter_sum(x, centre, l2_clip_norm=_CLIP),),
        sensitivities=(_CLIP**2,),  # ||y y^T||_F over the triangle <= C^2
        family="gaussian",
        contract_param=3.0,
        symmetric=True,
        bad=(
            (
                partial(
                    noisy_scatter_gaussian,
                    _RNG(0),
                    np.zeros((3, d)),
                    centre,
                    noise_multiplier=1.0,
                    l2_clip_norm=0,
                ),
                "expected l2_clip_norm > 0, got 0",
            ),
        ),
        audit_trials=40_000,
    )


def _lap_pca(*, secure: bool) -> Mechanism:
    from jdp.encoding.pca import lap_pca_l1_sensitivity, noisy_scatter_laplace, scatter_sum

    d = 2
    lower, upper, centre = -np.ones(d), np.ones(d), np.zeros(d)
    sensitivity = lap_pca_l1_sensitivity(np.maximum(upper - centre, centre - lower))
    size = d * (d + 1) // 2

    def neighbours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x = rng.uniform(-1.0, 1.0, size=(8, d))
        return x, np.vstack([x, corner_canary(lower, upper)])  # attains the L1 sensitivity

    return Mechanism(
        name="lap-pca" if secure else "lap-pca-textbook",
        description=(
            "Lap-PCA noisy scatter (noisy_scatter_laplace) by snapping, the default"
            if secure
            else "Lap-PCA with the textbook Laplace sampler (retired: this audit breaks it, "
            "Mironov 2012)"
        )
        + "; canary: the box corner; score: Laplace likelihood ratio, every bit",
        param="epsilon",
        plan=partial(laplace_event, secure_noise=secure),
        neighbours=neighbours,
        release=lambda rng, eps, x: _one(
            noisy_scatter_laplace(
                rng, x, centre, epsilon=eps, lower=lower, upper=upper, secure_noise=secure
            )
        ),
        statistic=lambda x: (scatter_sum(x, centre, lower=lower, upper=upper),),
        sensitivities=(sensitivity,),
        family="laplace",
        contract_param=2.0,
        scale=_snapping_scale(sensitivity, size) if secure else None,
        rounding=_snapping_rounding(sensitivity, size) if secure else None,
        symmetric=True,
        bad=(
            (
                partial(
                    noisy_scatter_laplace,
                    _RNG(0),
                    np.zeros((3, d)),
                    centre,
                    epsilon=-1.0,
                    lower=lower,
                    upper=upper,
                ),
                "expected epsilon > 0, got -1.0",
            ),
        ),
        audit_trials=40_000,
        expect="holds" if secure else "breaks",
    )


def _one(release: tuple[np.ndarray, ev.DpEvent]) -> tuple[Arrays, ev.DpEvent]:
    out, event = release
    return (out,), event


def _dp_em_step() -> Mechanism:
    from jdp.encoding.em import em_statistics, initial_mixture, noisy_em_statistics

    d = 2
    mixture = initial_mixture(np.random.default_rng(2), 2, d, l2_clip_norm=_CLIP)
    return Mechanism(
        name="dp-em-step",
        description="DP-EM statistics (jdp.encoding.em.noisy_em_statistics: N, S, Q); canary "
        "C e1; score: Gaussian likelihood ratio",
        param="noise_multiplier",
        plan=_gaussians(3),
        neighbours=_ball_neighbours(d, _CLIP, n=200),
        release=lambda rng, z, x: noisy_em_statistics(
            rng, x, mixture, noise_multiplier=z, l2_clip_norm=_CLIP
        ),
        statistic=lambda x: em_statistics(x, mixture, l2_clip_norm=_CLIP),
        sensitivities=(1.0, _CLIP, _CLIP**2),  # counts, first moments, second moments
        family="gaussian",
        contract_param=2.5,
        bad=(
            (
                partial(
                    noisy_em_statistics,
                    _RNG(0),
                    np.zeros((3, d)),
                    mixture,
                    noise_multiplier=-0.5,
                    l2_clip_norm=_CLIP,
                ),
                "expected noise_multiplier >= 0, got -0.5",
            ),
        ),
        audit_trials=30_000,
    )


def _dp_lloyd_step() -> Mechanism:
    from jdp.encoding.kmeans import lloyd_statistics, noisy_lloyd_step

    d = 2
    centres = np.array([[0.5, 0.0], [-0.5, 0.0]])

    def release(rng: np.random.Generator, z: float, x: np.ndarray) -> tuple[Arrays, ev.DpEvent]:
        _, event, released = noisy_lloyd_step(
            rng, x, centres, noise_multiplier=z, l2_clip_norm=_CLIP
        )
        return released, event

    return Mechanism(
        name="dp-lloyd-step",
        description="DP Lloyd statistics (jdp.encoding.kmeans.noisy_lloyd_step: counts and "
        "sums); canary C e1; score: Gaussian likelihood ratio",
        param="noise_multiplier",
        plan=_gaussians(2),
        neighbours=_ball_neighbours(d, _CLIP, n=200),
        release=release,
        statistic=lambda x: lloyd_statistics(x, centres, l2_clip_norm=_CLIP),
        sensitivities=(1.0, _CLIP),  # counts, sums of clipped records
        family="gaussian",
        contract_param=1.5,
        bad=(
            (
                partial(
                    noisy_lloyd_step,
                    _RNG(0),
                    np.zeros((3, d)),
                    centres,
                    noise_multiplier=1.0,
                    l2_clip_norm=-1.0,
                ),
                "expected l2_clip_norm > 0, got -1.0",
            ),
        ),
        audit_trials=30_000,
    )


# -- DPNorm, one DP-SGD step, whole fits (end to end) -----------------------------------------


def _dpnorm() -> Mechanism:
    from jdp.dpsgd.clip_schedules import AdaptiveClip, dpnorm, histogram_noise_cut

    max_norm, bins = 1.0, 2

    def plan(z: float) -> ev.DpEvent:
        clip = AdaptiveClip(max_norm=max_norm, bins=bins, noise_multiplier=z)
        return with_noise_cut(ev.GaussianDpEvent(z), histogram_noise_cut(clip))

    def neighbours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        del rng
        norms = np.zeros(4)  # norm 0: in no bin, so every count of D is 0
        return norms, np.append(norms, max_norm)  # the canary: the last bin

    def audit(rng: np.random.Generator, trials: int, z: float, delta: float) -> Scores:
        del delta
        clip = AdaptiveClip(max_norm=max_norm, bins=bins, noise_multiplier=z)
        run = jax.jit(
            jax.vmap(lambda k, n: dpnorm(k, n, jnp.ones(n.shape, bool), clip), in_axes=(0, None))
        )
        key = jax.random.key(int(rng.integers(2**31)))
        out = []
        for norms, k in zip(neighbours(rng), jax.random.split(key), strict=True):
            bound = np.asarray(run(jax.random.split(k, trials), jnp.asarray(norms)))
            out.append((bound == max_norm).astype(np.float64))
        return out[0], out[1], plan(z)

    return Mechanism(
        name="dpnorm",
        description="DPNorm (jdp.dpsgd.clip_schedules.dpnorm, DPGM's adaptive clip, 2 bins); "
        "D has no counted norm, the canary's is max_norm; score: released bound == max_norm",
        param="noise_multiplier",
        plan=plan,
        neighbours=neighbours,
        audit=audit,
        audit_trials=40_000,
        end_to_end=True,
    )


def _dpsgd_step() -> Mechanism:
    from jdp.dpsgd.batch_selection import padded_batch_size, poisson_batch
    from jdp.dpsgd.noise import dp_aggregate, noise_cut
    from jdp.dpsgd.settings import DPSGDConfig
    from jdp.dpsgd.step import make_dp_step

    n, d, c, q = 8, 2, 1.0, 0.5
    params = jnp.zeros(d)
    config = DPSGDConfig(
        l2_clip_norm=c, sampling_prob=q, expected_batch_size=q * n, steps=1, noise_multiplier=1.0
    )

    def plan(z: float) -> ev.DpEvent:
        return config.event(z, n, noise_cut=noise_cut(params))

    def neighbours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        # records along e2 (invisible to the score), the canary 10 C e1 (clipped to C e1)
        x = np.zeros((n, d))
        x[:, 1] = rng.uniform(-1.0, 1.0, n)
        return x, np.vstack([x, 10.0 * boundary_canary(d, c)])

    def loss_fn(p: jax.Array, example: jax.Array, key: jax.Array) -> jax.Array:
        del key
        return -jnp.dot(p, example)

    def audit(rng: np.random.Generator, trials: int, z: float, delta: float) -> Scores:
        del delta

        def chain(key: jax.Array) -> optax.GradientTransformation:
            return optax.chain(
                dp_aggregate(key, noise_multiplier=z, expected_batch_size=q * n), optax.sgd(1.0)
            )

        step = make_dp_step(loss_fn, chain(jax.random.key(0)), l2_clip_norm=c)

        def one(key: jax.Array, batch: jax.Array, mask: jax.Array) -> jax.Array:
            noise_key, example_key = jax.random.split(key)
            new, _, _ = step(params, chain(noise_key).init(params), batch, mask, example_key)
            return new[0]  # the coordinate the canary's gradient moves

        run = jax.jit(jax.vmap(one))
        padded = padded_batch_size(n + 1, q)
        key = jax.random.key(int(rng.integers(2**31)))
        out = []
        for x, k in zip(neighbours(rng), jax.random.split(key), strict=True):
            batches = [
                poisson_batch(rng, len(x), q, padded, overflow="raise")[0] for _ in range(trials)
            ]
            idx = np.stack([b.indices for b in batches])
            mask = np.stack([b.mask for b in batches])
            out.append(np.asarray(run(jax.random.split(k, trials), x[idx], mask), np.float64))
        return out[0], out[1], plan(z)

    return Mechanism(
        name="dpsgd-step",
        description="one Poisson-sampled DP-SGD step (jdp.dpsgd make_dp_step, dp_aggregate) "
        "on a linear model; canary gradient 10 C e1 (clipped to C); score: w_1 after the step",
        param="noise_multiplier",
        plan=plan,
        neighbours=neighbours,
        audit=audit,
        audit_trials=100_000,
        end_to_end=True,
    )


def _marginals() -> Mechanism:
    import pandas as pd

    from accounting import PrivacyBudget
    from jdp.data.schema import Column, Schema
    from jdp.synth import marginals
    from jdp.synth.base import get_method

    schema = Schema(columns=(Column(name="c", kind="categorical", categories=("a", "b", "c")),))
    config = marginals.MarginalsConfig(noise="gaussian", bins=32)  # no numeric column
    method = get_method("marginals")

    def neighbours(rng: np.random.Generator) -> tuple[Any, Any]:
        base = pd.DataFrame({"c": list(rng.choice(["a", "b", "c"], 6))})
        canary = pd.concat([base, pd.DataFrame({"c": ["a"]})], ignore_index=True)
        return schema.conform(base), schema.conform(canary)

    def counts(table: Any) -> np.ndarray:
        cells = marginals.codec(schema, config).encode(table)
        return np.concatenate([h.ravel() for h in marginals.cell_counts(cells, schema, config)])

    def audit(rng: np.random.Generator, trials: int, eps: float, delta: float) -> Scores:
        budget = PrivacyBudget(epsilon=eps, delta=delta)  # the fit calibrates itself
        tables = neighbours(rng)
        a, b = counts(tables[0]), counts(tables[1])
        key = jax.random.key(int(rng.integers(2**31)))
        out, event = [], None
        for t, k in zip(tables, jax.random.split(key), strict=True):
            ys = []
            for kk in jax.random.split(k, trials):
                model = method.fit(kk, t, budget, config)
                ys.append(np.asarray(model.params["noisy_counts"], dtype=np.float64))
                event = model.ledger.event
            out.append(np.stack(ys))
        std = (marginals.noise_multiplier("gaussian", budget) * np.sqrt(len(schema)),)
        return (
            gaussian_shift_score((out[0],), (a,), (b,), std),
            gaussian_shift_score((out[1],), (a,), (b,), std),
            event,
        )

    return Mechanism(
        name="dp-marginals",
        description="the marginals synthesizer's fit end to end (one categorical column, "
        "Gaussian); canary: one more record; score: Gaussian likelihood ratio of the counts",
        param="epsilon",
        plan=None,
        neighbours=neighbours,
        audit=audit,
        audit_trials=3_000,
        end_to_end=True,
    )


def _pca_gauss() -> Mechanism:
    from jdp.synth.pca_gauss.config import PCAGaussConfig
    from jdp.synth.pca_gauss.model import fit

    config = PCAGaussConfig(n_components=1, mode="unsupervised", pca_source="lap")

    def neighbours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        del rng
        x = np.zeros((6, 1))  # records at the centre: zero features
        return x, np.vstack([x, np.ones((1, 1))])  # the canary at the corner of [-1, 1]

    def audit(rng: np.random.Generator, trials: int, eps: float, delta: float) -> Scores:
        out, event = [], None
        for data in neighbours(rng):
            s = np.empty(trials)
            for i in range(trials):
                model = fit(rng, data, epsilon=eps, delta=delta, config=config)
                g = model.gaussians[0]
                # the released second-moment sum n_hat (Sigma + mu mu^T) (most of the budget;
                # the canary adds 1, the other records 0), as far as the projections keep it
                s[i] = max(g.count, 1.0) * float(g.cov[0, 0] + g.mean[0] ** 2)
                event = model.ledger.event
            out.append(s)
        return out[0], out[1], event

    return Mechanism(
        name="pca-gauss",
        description="PCA-Gauss fit end to end (Lap-PCA + Gaussian model, d = k = 1, pure DP, "
        "snapping); canary at the box corner; score: the released second-moment sum",
        param="epsilon",
        plan=None,
        neighbours=neighbours,
        audit=audit,
        audit_trials=5_000,
        end_to_end=True,
    )


#: Every catalogued mechanism, in the order they are listed.
def _repeated_scores(
    rng: np.random.Generator,
    neighbours: Callable[[np.random.Generator], tuple[Any, Any]],
    trials: int,
    score: Callable[[np.random.Generator, Any, float], float],
    param: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``trials`` scores of one release on each of the two neighbouring datasets (the
    end-to-end audits whose score is one released number)."""
    return tuple(
        np.array([score(rng, data, param) for _ in range(trials)]) for data in neighbours(rng)
    )


def _dp_quantiles() -> Mechanism:
    from jdp.mechanisms.quantiles import dp_quantiles, quantiles_event

    probs, lower, upper = (0.25, 0.5, 0.75), 0.0, 1e6

    def neighbours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        base = np.sort(rng.uniform(10.0, 20.0, size=7))
        return base, np.append(base, upper)  # the canary: one record at the range's top

    def median(rng: np.random.Generator, values: np.ndarray, eps: float) -> float:
        # the median: released first, at the root
        return dp_quantiles(rng, values, probs, lower=lower, upper=upper, epsilon=eps)[0][1]

    def audit(rng: np.random.Generator, trials: int, eps: float, delta: float) -> Scores:
        del delta
        return (
            *_repeated_scores(rng, neighbours, trials, median, eps),
            quantiles_event(eps, len(probs)),
        )

    return Mechanism(
        name="dp-quantiles",
        description="joint DP quantiles (jdp.mechanisms.quantiles, 3 quantiles over [0, 1e6]); "
        "canary: one more record at 1e6; score: the released median",
        param="epsilon",
        plan=lambda eps: quantiles_event(eps, len(probs)),
        neighbours=neighbours,
        audit=audit,
        audit_trials=5_000,
        end_to_end=True,
    )


def _dp_knots() -> Mechanism:
    import pandas as pd

    from jdp.data.quantile_scale import COUNT_SHARE, release_all_knots
    from jdp.data.schema import Column
    from jdp.mechanisms.noise import laplace_event

    probs, top = (0.25, 0.5, 0.75), 1e6
    columns = [
        Column(name="a", kind="continuous", lower=0.0, upper=top),
        Column(name="b", kind="continuous", lower=0.0, upper=top, point_masses=(0.0,)),
    ]

    def plan(eps: float) -> ev.DpEvent:
        return ev.ComposedDpEvent(
            [laplace_event(COUNT_SHARE * eps), ev.PureDpEvent(epsilon=(1 - COUNT_SHARE) * eps)]
        )

    def neighbours(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
        base = pd.DataFrame(
            {"a": np.sort(rng.uniform(10.0, 20.0, 7)), "b": [0.0, 0.0, 5.0, 6.0, 7.0, 0.0, 8.0]}
        )
        # the canary: a at the range's top (its count, so the split, and its knots move), b at
        # its mass (no count)
        return base, pd.concat([base, pd.DataFrame({"a": [top], "b": [0.0]})], ignore_index=True)

    def median(rng: np.random.Generator, frame: pd.DataFrame, eps: float) -> float:
        knotted = release_all_knots(rng, frame, columns, epsilon=eps, probs=probs)[0]
        return knotted[0].quantiles[1][1]  # column a's released median

    def audit(rng: np.random.Generator, trials: int, eps: float, delta: float) -> Scores:
        del delta
        return (*_repeated_scores(rng, neighbours, trials, median, eps), plan(eps))

    return Mechanism(
        name="dp-knots",
        description="the knots of a numeric scale (jdp.data.quantile_scale.release_all_knots: "
        "value counts, their split of the rest, 3 quantiles per column over [0, 1e6]); canary: "
        "one more record at 1e6 in one column and at the other's mass; score: its released median",
        param="epsilon",
        plan=plan,
        neighbours=neighbours,
        audit=audit,
        audit_trials=5_000,
        end_to_end=True,
    )


CATALOGUE: tuple[Mechanism, ...] = (
    _GAUSSIAN,
    _GAUSSIAN_SYMMETRIC,
    _laplace_entry(secure=True),
    _laplace_entry(secure=False),
    _analyze_gauss(),
    _lap_pca(secure=True),
    _lap_pca(secure=False),
    _dp_em_step(),
    _dp_lloyd_step(),
    _dpnorm(),
    _dpsgd_step(),
    _marginals(),
    _pca_gauss(),
    _dp_quantiles(),
    _dp_knots(),
)


def by_name() -> dict[str, Mechanism]:
    """The catalogue by name."""
    return {m.name: m for m in CATALOGUE}
