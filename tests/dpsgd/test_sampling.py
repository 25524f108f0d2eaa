"""Poisson and fixed-size batch selection, padding and the overflow policy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from jdp.dpsgd import batch_selection as smp


def _size(chunks):
    return sum(int(c.mask.sum()) for c in chunks)


def test_poisson_batch_sizes_follow_binomial():
    n, q, draws = 200, 0.05, 3000
    rng = np.random.default_rng(123)
    sizes = np.array([_size(smp.poisson_batch(rng, n, q, 12)) for _ in range(draws)])
    # chi-square goodness of fit on bins with expected count >= 5 (tails merged)
    support = np.arange(n + 1)
    expected = draws * stats.binom.pmf(support, n, q)
    lo, hi = support[expected >= 5][[0, -1]]
    observed = (
        [np.sum(sizes <= lo)]
        + [np.sum(sizes == k) for k in range(lo + 1, hi)]
        + [np.sum(sizes >= hi)]
    )
    exp = [draws * stats.binom.cdf(lo, n, q)]
    exp += [expected[k] for k in range(lo + 1, hi)] + [draws * stats.binom.sf(hi - 1, n, q)]
    result = stats.chisquare(observed, exp)
    assert result.pvalue > 1e-3


def test_poisson_membership_is_uniform_and_padded():
    n, q, draws = 30, 0.2, 2000
    rng = np.random.default_rng(5)
    counts = np.zeros(n)
    for _ in range(draws):
        (chunk,) = smp.poisson_batch(rng, n, q, 25)
        members = chunk.indices[chunk.mask]
        assert len(set(members)) == members.size  # no repeats
        assert np.all(chunk.indices[~chunk.mask] == 0)
        counts[members] += 1
    # each record's inclusion count is Binomial(draws, q); Bonferroni over n records
    z = (counts - draws * q) / np.sqrt(draws * q * (1 - q))
    assert np.max(np.abs(z)) < stats.norm.ppf(1 - 1e-3 / (2 * n))


def test_overflow_policy_accumulates_or_raises():
    rng = np.random.default_rng(0)
    chunks = smp.poisson_batch(rng, 40, 0.9, 8)
    assert len(chunks) > 1
    assert all(c.indices.shape == (8,) for c in chunks)
    members = np.concatenate([c.indices[c.mask] for c in chunks])
    assert len(set(members)) == members.size == _size(chunks)  # nothing dropped or repeated
    with pytest.raises(smp.BatchOverflowError, match="exceeds the padded size 8"):
        smp.poisson_batch(np.random.default_rng(0), 40, 0.9, 8, overflow="raise")


def test_padded_batch_size_meets_overflow_probability():
    n, q = 10_000, 0.01
    b = smp.padded_batch_size(n, q, overflow_prob=1e-6, multiple_of=8)
    assert b % 8 == 0
    assert stats.binom.sf(b, n, q) <= 1e-6
    assert stats.binom.sf(b - 8, n, q) > 1e-6 or b == 8


def test_fixed_size_batches():
    rng = np.random.default_rng(1)
    batch = smp.fixed_size_batch(rng, 50, 7)
    assert batch.mask.all() and len(set(batch.indices)) == 7
    logical = list(smp.batches(rng, 50, sampling_prob=0.1, steps=3, sampling="without_replacement"))
    assert [len(x) for x in logical] == [1, 1, 1] and all(x[0].indices.size == 5 for x in logical)


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5])
def test_sampling_prob_outside_unit_interval_raises(q):
    with pytest.raises(ValueError, match=r"expected sampling_prob in \(0, 1\]"):
        smp.poisson_batch(np.random.default_rng(0), 10, q, 4)


def test_invalid_policy_and_sizes_raise():
    with pytest.raises(ValueError, match="expected overflow in"):
        smp.poisson_batch(np.random.default_rng(0), 10, 0.5, 4, overflow="truncate")
    with pytest.raises(ValueError, match="expected batch_size <= dataset_size"):
        smp.fixed_size_batch(np.random.default_rng(0), 5, 6)
