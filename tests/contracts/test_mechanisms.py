"""One contract, every numpy mechanism (DESIGN section 3, "Tests").

Each :class:`Case` is a release ``(rng, privacy parameter) -> (noisy arrays, event)`` together
with what its documentation claims: the exact pre-noise statistic, the sensitivity of every
released array, the noise family and its scale, and the event. The contract, checked for each:

* no-privacy limit: with noise multiplier 0 the release is the exact statistic (Gaussian
  noise only; a Laplace mechanism has no finite-epsilon limit);
* the noise, divided by the documented sensitivity, has the claimed standard deviation
  (a fixed-seed statistical test whose bound is computed from the noise's fourth moment);
* same ``rng`` seed -> same output, a different seed -> different noise;
* the returned event is the documented one;
* bad input raises with the documented message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest

from accounting import events as ev
from jdp.encoding.em import em_statistics, initial_mixture, noisy_em_statistics
from jdp.encoding.kmeans import lloyd_statistics, noisy_lloyd_step
from jdp.encoding.pca import (
    lap_pca_l1_sensitivity,
    noisy_scatter_gaussian,
    noisy_scatter_laplace,
    scatter_sum,
)
from jdp.mechanisms.noise import (
    gaussian_mechanism,
    laplace_mechanism,
    snapping_laplace_parameters,
)

Arrays = tuple[np.ndarray, ...]
Release = Callable[[np.random.Generator, float], tuple[Arrays, ev.DpEvent]]
#: Pooled number of noise draws per scale test, and the width of its bound in standard errors.
N_DRAWS = 20_000
Z_BOUND = 6.0


@dataclass(frozen=True)
class Case:
    """A mechanism and what its docstring claims about it.

    Attributes:
      release: ``(rng, param) -> (arrays, event)``; ``param`` is the noise multiplier
        (Gaussian family) or epsilon (Laplace family).
      exact: the pre-noise statistic, one array per released array.
      sensitivities: the documented sensitivity of each released array.
      family: ``"gaussian"`` (noise / sensitivity ~ N(0, param^2); event one
        ``GaussianDpEvent(param)`` per released array) or ``"laplace"`` (noise / sensitivity
        ~ Laplace(1 / param); event ``LaplaceDpEvent(1 / param)``).
      param: the privacy parameter of the scale and seed tests.
      scale: the Laplace scale in units of the sensitivity when it is not ``1 / param``
        (snapping calibrates a slightly larger ``lambda``).
      rounding: the largest rounding error (units of sensitivity) the output grid adds.
      symmetric: the arrays are symmetric matrices whose upper triangle is the free part.
      bad: calls that must raise ``ValueError``, with the message pattern.
    """

    release: Release
    exact: Callable[[], Arrays]
    sensitivities: tuple[float, ...]
    family: str
    param: float
    scale: float | None = None
    rounding: float = 0.0
    symmetric: bool = False
    bad: tuple[tuple[Callable[[], object], str], ...] = ()

    @property
    def sd(self) -> float:
        """The claimed standard deviation of noise / sensitivity at ``param``."""
        if self.family == "gaussian":
            return self.param
        return math.sqrt(2.0) * (1.0 / self.param if self.scale is None else self.scale)

    @property
    def kurtosis(self) -> float:
        """``E[noise^4] / sd^4`` of the family: 3 (Gaussian), 6 (Laplace)."""
        return 3.0 if self.family == "gaussian" else 6.0

    def event(self, param: float) -> ev.DpEvent:
        """The documented event at ``param``."""
        if self.family == "laplace":
            return ev.LaplaceDpEvent(noise_multiplier=1.0 / param)
        one = ev.GaussianDpEvent(noise_multiplier=param)
        count = len(self.sensitivities)
        return one if count == 1 else ev.ComposedDpEvent([one] * count)

    def free(self, array: np.ndarray) -> np.ndarray:
        """The entries that carry independent noise."""
        return array[np.triu_indices(array.shape[0])] if self.symmetric else array.ravel()


X = np.random.default_rng(0).normal(size=(200, 6)) * 0.5  # rows of norm about 1.2
CLIP = 0.8
VALUE = np.linspace(-3.0, 3.0, 5000)
MATRIX = np.random.default_rng(1).normal(size=(100, 100))
MATRIX = MATRIX + MATRIX.T
X_EM = np.random.default_rng(4).normal(size=(200, 20)) * 0.3  # d = 20: 693 entries a release
MIXTURE = initial_mixture(
    np.random.default_rng(2), 3, 20, covariance_type="full", l2_clip_norm=CLIP
)
CENTRES = np.random.default_rng(3).normal(size=(4, 6)) * 0.3
BOX = (np.full(6, -1.5), np.full(6, 1.5))
SNAP = snapping_laplace_parameters(l1_sensitivity=2.0, epsilon=0.5, size=VALUE.size)
RNG = np.random.default_rng  # the bad-input calls raise before drawing


def _one(release: Callable[..., tuple[np.ndarray, ev.DpEvent]]) -> Release:
    """A single-array release as a one-tuple."""

    def wrapped(rng: np.random.Generator, param: float) -> tuple[Arrays, ev.DpEvent]:
        out, event = release(rng, param)
        return (out,), event

    return wrapped


def _lloyd_release(rng: np.random.Generator, z: float) -> tuple[Arrays, ev.DpEvent]:
    """The released (noisy counts, noisy sums) of one Lloyd step and its event."""
    _, event, released = noisy_lloyd_step(rng, X, CENTRES, noise_multiplier=z, l2_clip_norm=CLIP)
    return released, event


gauss = partial(gaussian_mechanism, l2_sensitivity=2.0)
lap = partial(laplace_mechanism, l1_sensitivity=2.0)
CASES: dict[str, Case] = {
    "gaussian": Case(
        release=_one(lambda rng, z: gauss(rng, VALUE, noise_multiplier=z)),
        exact=lambda: (VALUE,),
        sensitivities=(2.0,),
        family="gaussian",
        param=1.5,
        bad=(
            (
                partial(gaussian_mechanism, RNG(0), VALUE, l2_sensitivity=0.0, noise_multiplier=1),
                "expected l2_sensitivity > 0, got 0.0",
            ),
            (partial(gauss, RNG(0), VALUE, noise_multiplier=-1.0), "noise_multiplier >= 0, got -1"),
        ),
    ),
    "gaussian-symmetric": Case(
        release=_one(lambda rng, z: gauss(rng, MATRIX, noise_multiplier=z, symmetric=True)),
        exact=lambda: (MATRIX,),
        sensitivities=(2.0,),
        family="gaussian",
        param=2.0,
        symmetric=True,
        bad=(
            (
                partial(gauss, RNG(0), np.zeros((2, 3)), noise_multiplier=1.0, symmetric=True),
                r"expected a square matrix for symmetric noise, got shape \(2, 3\)",
            ),
        ),
    ),
    "laplace": Case(
        release=_one(lambda rng, eps: lap(rng, VALUE, epsilon=eps)),
        exact=lambda: (VALUE,),
        sensitivities=(2.0,),
        family="laplace",
        param=0.5,
        bad=((partial(lap, RNG(0), VALUE, epsilon=0.0), "expected epsilon > 0, got 0.0"),),
    ),
    "snapping": Case(
        release=_one(lambda rng, eps: lap(rng, VALUE, epsilon=eps, secure_noise=True)),
        exact=lambda: (VALUE,),
        sensitivities=(2.0,),
        family="laplace",
        param=0.5,
        scale=SNAP.scale / 2.0,  # the calibrated lambda, in units of the sensitivity
        rounding=SNAP.grid / 2.0 / 2.0,  # half a grid step, in units of the sensitivity
        bad=(
            (
                partial(lap, RNG(0), VALUE, epsilon=1.0, secure_noise=True, max_records=0),
                "expected max_records >= 1, got 0",
            ),
        ),
    ),
    "dp-pca-gaussian": Case(
        release=_one(
            lambda rng, z: noisy_scatter_gaussian(
                rng, X, np.zeros(6), noise_multiplier=z, l2_clip_norm=CLIP
            )
        ),
        exact=lambda: (scatter_sum(X, np.zeros(6), l2_clip_norm=CLIP),),
        sensitivities=(CLIP**2,),  # Analyze Gauss: ||y y^T||_F over the triangle <= C^2
        family="gaussian",
        param=3.0,
        symmetric=True,
        bad=(
            (
                partial(
                    noisy_scatter_gaussian,
                    RNG(0),
                    X,
                    np.zeros(6),
                    noise_multiplier=1.0,
                    l2_clip_norm=0,
                ),
                "expected l2_clip_norm > 0, got 0",
            ),
        ),
    ),
    "dp-pca-laplace": Case(
        release=_one(
            lambda rng, eps: noisy_scatter_laplace(
                rng, X, np.zeros(6), epsilon=eps, lower=BOX[0], upper=BOX[1]
            )
        ),
        exact=lambda: (scatter_sum(X, np.zeros(6), lower=BOX[0], upper=BOX[1]),),
        # Lap-PCA: (||r||_1^2 + ||r||_2^2) / 2 with r = 1.5 in every coordinate
        sensitivities=(lap_pca_l1_sensitivity(np.full(6, 1.5)),),
        family="laplace",
        param=2.0,
        symmetric=True,
        bad=(
            (
                partial(
                    noisy_scatter_laplace,
                    RNG(0),
                    X,
                    np.zeros(6),
                    epsilon=-1.0,
                    lower=BOX[0],
                    upper=BOX[1],
                ),
                "expected epsilon > 0, got -1.0",
            ),
        ),
    ),
    "dp-em-step": Case(
        release=lambda rng, z: noisy_em_statistics(
            rng, X_EM, MIXTURE, noise_multiplier=z, l2_clip_norm=CLIP
        ),
        exact=lambda: em_statistics(X_EM, MIXTURE, l2_clip_norm=CLIP),
        sensitivities=(1.0, CLIP, CLIP**2),  # counts, first moments, second moments
        family="gaussian",
        param=2.5,
        bad=(
            (
                partial(
                    noisy_em_statistics,
                    RNG(0),
                    X_EM,
                    MIXTURE,
                    noise_multiplier=-0.5,
                    l2_clip_norm=CLIP,
                ),
                "expected noise_multiplier >= 0, got -0.5",
            ),
        ),
    ),
    "dp-kmeans-step": Case(
        release=_lloyd_release,
        exact=lambda: lloyd_statistics(X, CENTRES, l2_clip_norm=CLIP),
        sensitivities=(1.0, CLIP),  # counts, sums of clipped records
        family="gaussian",
        param=1.5,
        bad=(
            (
                partial(
                    noisy_lloyd_step, RNG(0), X, CENTRES, noise_multiplier=1.0, l2_clip_norm=-1.0
                ),
                "expected l2_clip_norm > 0, got -1.0",
            ),
        ),
    ),
}
GAUSSIAN_CASES = [name for name, case in CASES.items() if case.family == "gaussian"]


def _normalised_noise(case: Case, rng: np.random.Generator) -> np.ndarray:
    """The free noise entries of enough releases to pool ``N_DRAWS``, divided by sensitivity."""
    exact = case.exact()
    per_release = sum(case.free(a).size for a in exact)
    parts = []
    for _ in range(math.ceil(N_DRAWS / per_release)):
        released, _ = case.release(rng, case.param)
        for out, value, s in zip(released, exact, case.sensitivities, strict=True):
            parts.append(case.free(np.asarray(out) - value) / s)
    return np.concatenate(parts)


@pytest.mark.parametrize("name", GAUSSIAN_CASES)
def test_no_privacy_limit_is_the_exact_statistic(name):
    case = CASES[name]
    released, event = case.release(np.random.default_rng(5), 0.0)
    for out, value in zip(released, case.exact(), strict=True):
        np.testing.assert_array_equal(out, value)
    assert event == case.event(0.0)


@pytest.mark.parametrize("name", list(CASES))
def test_noise_has_the_claimed_scale(name):
    """``|sd_hat - sd| <= rounding + Z * se(sd_hat)``: ``se`` from the delta method,
    ``Var(s^2) ~ (mu_4 - sd^4) / n`` and ``se(s) = se(s^2) / (2 sd)``; the rounding of a
    snapped output moves the sd by at most its largest error (Minkowski). The mean is within
    ``Z`` standard errors of 0 (plus the rounding)."""
    case = CASES[name]
    noise = _normalised_noise(case, np.random.default_rng(11))
    n = noise.size
    se_sd = math.sqrt((case.kurtosis - 1.0) * case.sd**4 / n) / (2.0 * case.sd)
    assert abs(noise.std(ddof=1) - case.sd) <= case.rounding + Z_BOUND * se_sd
    assert abs(noise.mean()) <= case.rounding + Z_BOUND * case.sd / math.sqrt(n)
    if case.symmetric:
        released, _ = case.release(np.random.default_rng(12), case.param)
        np.testing.assert_array_equal(released[0], released[0].T)


@pytest.mark.parametrize("name", list(CASES))
def test_same_seed_same_output_different_seed_different_noise(name):
    case = CASES[name]
    first, _ = case.release(np.random.default_rng(21), case.param)
    again, _ = case.release(np.random.default_rng(21), case.param)
    other, _ = case.release(np.random.default_rng(22), case.param)
    for a, b, c in zip(first, again, other, strict=True):
        np.testing.assert_array_equal(a, b)
        # continuous noise: every entry differs; snapped noise: two draws may share a grid point
        assert np.mean(case.free(a) != case.free(c)) > (0.5 if case.rounding else 1.0 - 1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_event_is_the_documented_one(name):
    case = CASES[name]
    _, event = case.release(np.random.default_rng(31), case.param)
    assert event == case.event(case.param)


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case.bad])
def test_bad_input_raises_with_its_message(name):
    for call, match in CASES[name].bad:
        with pytest.raises(ValueError, match=match):
            call()
