"""The exponential mechanism's sampler (Gumbel-max)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from jdp.mechanisms.selection import gumbel_max


def test_gumbel_max_draws_the_softmax_law_and_never_a_zero_weight():
    logits = np.array([0.0, 1.0, -np.inf, 2.0, -1.0])
    rng = np.random.default_rng(0)
    n = 20_000
    counts = np.bincount([gumbel_max(rng, logits) for _ in range(n)], minlength=logits.size)
    assert counts[2] == 0
    keep = np.isfinite(logits)
    p = np.exp(logits[keep]) / np.exp(logits[keep]).sum()
    assert stats.chisquare(counts[keep], n * p).pvalue > 1e-6


def test_gumbel_max_same_seed_same_choice_and_bad_input():
    logits = np.linspace(0.0, 1.0, 50)
    draws = [gumbel_max(np.random.default_rng(s), logits) for s in (3, 3)]
    assert draws[0] == draws[1]
    assert len({gumbel_max(np.random.default_rng(s), logits) for s in range(20)}) > 1
    with pytest.raises(ValueError, match="at least one finite entry"):
        gumbel_max(np.random.default_rng(0), np.full(3, -np.inf))
