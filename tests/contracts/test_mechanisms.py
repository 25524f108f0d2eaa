"""One contract, every catalogued noisy release (DESIGN section 3, "Tests").

The mechanisms and what their documentation claims (the exact pre-noise statistic, the
sensitivity of every released array, the noise family and its scale, the event, the bad
inputs) are the catalogue's (:data:`jdp.audit.catalogue.CATALOGUE`), which the auditor reads
too. The contract, checked for each release of a noisy statistic:

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
from dataclasses import dataclass

import numpy as np
import pytest

from accounting import events as ev
from jdp.audit.catalogue import CATALOGUE, Mechanism

#: Pooled number of noise draws per scale test, and the width of its bound in standard errors.
N_DRAWS = 20_000
Z_BOUND = 6.0


@dataclass(frozen=True)
class Case:
    """A catalogued mechanism (:data:`jdp.audit.catalogue.CATALOGUE`) at its contract input."""

    mechanism: Mechanism

    @property
    def data(self) -> object:
        return self.mechanism.neighbours(np.random.default_rng(0))[0]

    @property
    def param(self) -> float:
        return self.mechanism.contract_param

    def release(self, rng: np.random.Generator, param: float) -> tuple[tuple, ev.DpEvent]:
        return self.mechanism.release(rng, param, self.data)

    def exact(self) -> tuple[np.ndarray, ...]:
        return self.mechanism.statistic(self.data)

    @property
    def rounding(self) -> float:
        return self.mechanism.max_rounding(self.param, self.data)

    @property
    def sd(self) -> float:
        """The claimed standard deviation of noise / sensitivity at ``param``."""
        if self.mechanism.family == "gaussian":
            return self.param
        return math.sqrt(2.0) * self.mechanism.laplace_scale(self.param, self.data)

    @property
    def kurtosis(self) -> float:
        """``E[noise^4] / sd^4`` of the family: 3 (Gaussian), 6 (Laplace)."""
        return 3.0 if self.mechanism.family == "gaussian" else 6.0

    def free(self, array: np.ndarray) -> np.ndarray:
        """The entries that carry independent noise."""
        if self.mechanism.symmetric:
            return array[np.triu_indices(array.shape[0])]
        return np.asarray(array).ravel()


#: The contract covers every catalogued release of a noisy statistic.
CASES: dict[str, Case] = {m.name: Case(m) for m in CATALOGUE if m.statistic is not None}
GAUSSIAN_CASES = [n for n, c in CASES.items() if c.mechanism.family == "gaussian"]


def test_every_noisy_statistic_of_the_catalogue_is_under_contract():
    """A catalogued release with a statistic is checked here; the rest are whole fits or
    discrete outputs, audited end to end (jdp.audit.run)."""
    assert set(CASES) == {"gaussian", "gaussian-symmetric", "laplace", "laplace-textbook",
                          "analyze-gauss", "lap-pca", "lap-pca-textbook", "dp-em-step",
                          "dp-lloyd-step"}  # fmt: skip
    for m in CATALOGUE:
        assert m.statistic is not None or m.audit is not None, m.name


def _normalised_noise(case: Case, rng: np.random.Generator) -> np.ndarray:
    """The free noise entries of enough releases to pool ``N_DRAWS``, divided by sensitivity."""
    exact = case.exact()
    per_release = sum(case.free(a).size for a in exact)
    parts = []
    for _ in range(math.ceil(N_DRAWS / per_release)):
        released, _ = case.release(rng, case.param)
        for out, value, s in zip(released, exact, case.mechanism.sensitivities, strict=True):
            parts.append(case.free(np.asarray(out) - value) / s)
    return np.concatenate(parts)


@pytest.mark.parametrize("name", GAUSSIAN_CASES)
def test_no_privacy_limit_is_the_exact_statistic(name):
    case = CASES[name]
    released, event = case.release(np.random.default_rng(5), 0.0)
    for out, value in zip(released, case.exact(), strict=True):
        np.testing.assert_array_equal(out, value)
    assert event == case.mechanism.plan(0.0)


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
    if case.mechanism.symmetric:
        released, _ = case.release(np.random.default_rng(12), case.param)
        np.testing.assert_array_equal(released[0], released[0].T)


@pytest.mark.parametrize("name", list(CASES))
def test_same_seed_same_output_different_seed_different_noise(name):
    case = CASES[name]
    first, _ = case.release(np.random.default_rng(21), case.param)
    again, _ = case.release(np.random.default_rng(21), case.param)
    others = [case.release(np.random.default_rng(seed), case.param)[0] for seed in range(22, 30)]
    for i, (a, b) in enumerate(zip(first, again, strict=True)):
        np.testing.assert_array_equal(a, b)
        # continuous noise: every entry differs; snapped noise: two draws may share a grid
        # point (eight other seeds, so that a one-entry release is tested too)
        differ = np.mean([case.free(a) != case.free(other[i]) for other in others])
        assert differ > (0.5 if case.rounding else 1.0 - 1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_event_is_the_documented_one(name):
    case = CASES[name]
    _, event = case.release(np.random.default_rng(31), case.param)
    assert event == case.mechanism.plan(case.param)


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case.mechanism.bad])
def test_bad_input_raises_with_its_message(name):
    for call, match in CASES[name].mechanism.bad:
        with pytest.raises(ValueError, match=match):
            call()
