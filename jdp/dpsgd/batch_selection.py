"""Host-side batch selection that matches the privacy accountant.

Two schemes, each accounted as what it is (DESIGN.md, privacy rule 4):

* **Poisson sampling** (``sampling="poisson"``): every record joins the step's batch
  independently with probability ``q = sampling_prob``, so the batch size is
  ``Binomial(n, q)``. This is the scheme the subsampled-Gaussian RDP/PLD analyses assume
  (``PoissonSampledDpEvent``; Abadi et al. 2016, as used by P3GM II-D and dp-GAN Alg. 1).
* **Fixed-size sampling without replacement** (``sampling="without_replacement"``): a
  uniformly random subset of exactly ``L`` records (``SampledWithoutReplacementDpEvent``,
  analysed under replace-one neighbours).

Jitted steps need fixed shapes. A Poisson batch is therefore delivered as ``indices`` of a
fixed padded length ``B`` plus a boolean ``mask``; padded slots point at row 0 (a real, finite
row) and carry ``mask = False``; the DP step gives them clip weight exactly 0, so they
contribute exactly zero.

**Overflow policy.** ``B`` is chosen so that ``P(Binomial(n, q) > B)`` is tiny, but a larger
batch can still occur. We never truncate it silently (that would change the sampling
distribution the accountant assumed). The policy is explicit:

* ``"accumulate"`` (default): the batch is split into ``ceil(size / B)`` padded chunks of the
  same shape; the DP step sums their clipped gradients and adds noise once (gradient
  accumulation). The released update is exactly the Poisson DP-SGD update, so the
  accounting is exact and needs no extra term; only that step costs more compute.
* ``"raise"``: raise :class:`BatchOverflowError` (for users who need a fixed per-step cost).

The padded length is a function of ``n`` and ``q`` only; it changes compute, never the
output distribution.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Literal, NamedTuple

import numpy as np
from scipy import stats

from accounting.validation import check_count, check_open_unit, check_probability

Sampling = Literal["poisson", "without_replacement"]
OverflowPolicy = Literal["accumulate", "raise"]


class BatchOverflowError(RuntimeError):
    """A Poisson batch exceeded the padded size under ``overflow="raise"``."""


class PaddedBatch(NamedTuple):
    """One fixed-shape chunk of a logical batch.

    Attributes:
        indices: ``int`` array of shape ``(B,)``; row indices into the dataset (0 where padded).
        mask: ``bool`` array of shape ``(B,)``; True for real examples.
    """

    indices: np.ndarray
    mask: np.ndarray


def padded_batch_size(
    dataset_size: int, sampling_prob: float, *, overflow_prob: float = 1e-6, multiple_of: int = 1
) -> int:
    """Smallest ``B``, a multiple of ``multiple_of``, with ``P(Bin(n, q) > B) <= overflow_prob``.

    Args:
        dataset_size: ``n``, the number of records.
        sampling_prob: ``q`` in ``(0, 1]``.
        overflow_prob: tolerated probability that one step needs more than one chunk.
        multiple_of: round ``B`` up to a multiple of this (micro-batch size, device count).
    """
    n = check_count("dataset_size", dataset_size, minimum=1)
    q = check_probability("sampling_prob", sampling_prob)
    check_open_unit("overflow_prob", overflow_prob)
    m = check_count("multiple_of", multiple_of, minimum=1)
    size = max(1, int(stats.binom.ppf(1.0 - overflow_prob, n, q)))
    return min(math.ceil(size / m) * m, math.ceil(n / m) * m)


def _pad(indices: np.ndarray, padded_size: int) -> PaddedBatch:
    out = np.zeros(padded_size, dtype=np.int64)
    mask = np.zeros(padded_size, dtype=bool)
    out[: indices.size] = indices
    mask[: indices.size] = True
    return PaddedBatch(out, mask)


def poisson_batch(
    rng: np.random.Generator,
    dataset_size: int,
    sampling_prob: float,
    padded_size: int,
    *,
    overflow: OverflowPolicy = "accumulate",
) -> list[PaddedBatch]:
    """Draw one Poisson batch and return it as one or more padded chunks.

    The batch size is drawn as ``Binomial(n, q)`` and the members as a uniform subset of that
    size, which is the same distribution as ``n`` independent ``Bernoulli(q)`` inclusions.

    Args:
        rng: numpy random generator (first argument, never defaulted).
        dataset_size: ``n``.
        sampling_prob: ``q`` in ``(0, 1]``.
        padded_size: fixed chunk length ``B`` (see :func:`padded_batch_size`).
        overflow: ``"accumulate"`` (split into several chunks) or ``"raise"``.

    Returns:
        A list of :class:`PaddedBatch`; its length is 1 unless the batch overflowed. An empty
        batch is one all-masked chunk (the step then releases pure noise, as it must).

    Privacy:
        The set of selected records is exactly Poisson(q) under either policy, so the step
        is accounted as ``PoissonSampledDpEvent(q, ...)``.
    """
    n = check_count("dataset_size", dataset_size, minimum=1)
    q = check_probability("sampling_prob", sampling_prob)
    b = check_count("padded_size", padded_size, minimum=1)
    if overflow not in ("accumulate", "raise"):
        raise ValueError(f"expected overflow in ('accumulate', 'raise'), got {overflow!r}")
    size = int(rng.binomial(n, q))
    members = np.sort(rng.choice(n, size=size, replace=False))
    if size > b and overflow == "raise":
        raise BatchOverflowError(
            f"Poisson batch of {size} records exceeds the padded size {b}; use "
            "overflow='accumulate' or a larger padded_size"
        )
    chunks = max(1, math.ceil(size / b))
    return [_pad(members[i * b : (i + 1) * b], b) for i in range(chunks)]


def fixed_size_batch(rng: np.random.Generator, dataset_size: int, batch_size: int) -> PaddedBatch:
    """A uniformly random subset of exactly ``batch_size`` records (without replacement).

    Privacy:
        Accounted as ``SampledWithoutReplacementDpEvent(n, batch_size, ...)`` under
        replace-one neighbours; normalisation by ``batch_size`` is then exact.
    """
    n = check_count("dataset_size", dataset_size, minimum=1)
    size = check_count("batch_size", batch_size, minimum=1)
    if size > n:
        raise ValueError(f"expected batch_size <= dataset_size ({n}), got {size}")
    return PaddedBatch(np.sort(rng.choice(n, size=size, replace=False)), np.ones(size, dtype=bool))


def batches(
    rng: np.random.Generator,
    dataset_size: int,
    *,
    sampling_prob: float,
    steps: int,
    sampling: Sampling = "poisson",
    padded_size: int | None = None,
    overflow: OverflowPolicy = "accumulate",
) -> Iterator[list[PaddedBatch]]:
    """Yield ``steps`` logical batches, each a list of padded chunks.

    For ``sampling="without_replacement"`` the batch size is ``round(q * n)`` and every
    logical batch is a single chunk.
    """
    n = check_count("dataset_size", dataset_size, minimum=1)
    q = check_probability("sampling_prob", sampling_prob)
    steps = check_count("steps", steps, minimum=1)
    if sampling == "poisson":
        b = padded_batch_size(n, q) if padded_size is None else padded_size
        for _ in range(steps):
            yield poisson_batch(rng, n, q, b, overflow=overflow)
    elif sampling == "without_replacement":
        size = max(1, round(q * n))
        for _ in range(steps):
            yield [fixed_size_batch(rng, n, size)]
    else:
        raise ValueError(
            f"expected sampling in ('poisson', 'without_replacement'), got {sampling!r}"
        )
