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

Each scheme is also a strategy object (:class:`PoissonSampling`, :class:`FixedSizeSampling`;
jax_privacy's ``batch_selection`` is the anchor) that knows its neighbouring relation, the
clipped sum's sensitivity factor and the event of a run, all three taken from the one copy in
:mod:`accounting` (``accounting.relations``, ``accounting.builders.dpsgd_event``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import ClassVar, Literal, NamedTuple

import numpy as np
from scipy import stats

from accounting.builders import dpsgd_event
from accounting.events import DpEvent, NeighboringRelation
from accounting.relations import dpsgd_neighboring_relation, dpsgd_sensitivity_factor
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
        dataset_size: ``n``, the number of records (0 included: DP-SGD is defined for every
            ``n``, and nothing refuses a private count, DESIGN rule 7).
        sampling_prob: ``q`` in ``(0, 1]``.
        overflow_prob: tolerated probability that one step needs more than one chunk.
        multiple_of: round ``B`` up to a multiple of this (micro-batch size, device count).
    """
    n = check_count("dataset_size", dataset_size, minimum=0)
    q = check_probability("sampling_prob", sampling_prob)
    check_open_unit("overflow_prob", overflow_prob)
    m = check_count("multiple_of", multiple_of, minimum=1)
    size = max(1, int(stats.binom.ppf(1.0 - overflow_prob, n, q)))
    # at least one (masked) slot: a dataset of no records still takes its noisy steps
    return max(m, min(math.ceil(size / m) * m, math.ceil(n / m) * m))


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
    n = check_count("dataset_size", dataset_size, minimum=0)
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


class BatchSelection:
    """A batch-selection scheme and what its accounting needs (jax_privacy's
    ``batch_selection`` strategies): the batches, the neighbouring relation, the clipped
    sum's sensitivity factor and the event of a run, the last three from the ONE copy in
    :mod:`accounting` (:func:`accounting.relations.dpsgd_neighboring_relation`,
    :func:`accounting.relations.dpsgd_sensitivity_factor`,
    :func:`accounting.builders.dpsgd_event`).

    Subclasses set :attr:`name` and implement :meth:`natural_padded_size` and :meth:`batch`.
    Instances have no fields and compare equal by type.
    """

    name: ClassVar[Sampling]

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @property
    def neighboring_relation(self) -> NeighboringRelation:
        """Add/remove-one for Poisson sampling, replace-one for fixed-size batches."""
        return dpsgd_neighboring_relation(self.name)

    @property
    def sensitivity_factor(self) -> float:
        """The clipped sum's L2 sensitivity in units of ``C`` under :attr:`neighboring_relation`
        (1 under add/remove, 2 under replace-one)."""
        return dpsgd_sensitivity_factor(self.name)

    def event(
        self,
        noise_multiplier: float,
        sampling_prob: float,
        steps: int,
        dataset_size: int,
        *,
        noise_cut: float = 0.0,
    ) -> DpEvent:
        """The event of ``steps`` DP-SGD steps with noise std ``noise_multiplier * C``
        (:func:`accounting.builders.dpsgd_event`; ``dataset_size`` is read by fixed-size
        sampling only, whose replace-one analysis makes ``n`` public; ``noise_cut``: the
        sampler's cut per step)."""
        return dpsgd_event(
            noise_multiplier,
            sampling_prob,
            steps,
            sampling=self.name,
            dataset_size=dataset_size,
            noise_cut=noise_cut,
        )

    def natural_padded_size(
        self, dataset_size: int, sampling_prob: float, multiple_of: int
    ) -> int | None:
        """The scheme's fixed chunk length (``None``: every batch is one exact-size chunk)."""
        raise NotImplementedError

    def batch(
        self,
        rng: np.random.Generator,
        dataset_size: int,
        sampling_prob: float,
        padded_size: int | None,
        overflow: OverflowPolicy,
    ) -> list[PaddedBatch]:
        """One logical batch as a list of padded chunks."""
        raise NotImplementedError

    def padded_size(
        self,
        dataset_size: int,
        sampling_prob: float,
        *,
        multiple_of: int = 1,
        chunk_size: int | None = None,
    ) -> int | None:
        """The chunk length of the jitted step: :meth:`natural_padded_size`, capped at
        ``chunk_size`` (a logical batch larger than a chunk is then accumulated over several
        chunks before one noise draw; Poisson only)."""
        padded = self.natural_padded_size(dataset_size, sampling_prob, multiple_of)
        if chunk_size is None:
            return padded
        if padded is None:
            raise ValueError("expected chunk_size only with sampling='poisson'")
        chunk = check_count("chunk_size", chunk_size, minimum=1)
        if chunk % multiple_of:
            raise ValueError(f"expected chunk_size to be a multiple of {multiple_of}, got {chunk}")
        return min(padded, chunk)

    def batches(
        self,
        rng: np.random.Generator,
        dataset_size: int,
        *,
        sampling_prob: float,
        steps: int,
        padded_size: int | None = None,
        overflow: OverflowPolicy = "accumulate",
    ) -> Iterator[list[PaddedBatch]]:
        """Yield ``steps`` logical batches (:meth:`batch`), each a list of padded chunks."""
        n = check_count("dataset_size", dataset_size, minimum=0)
        q = check_probability("sampling_prob", sampling_prob)
        steps = check_count("steps", steps, minimum=1)
        padded = self.natural_padded_size(n, q, 1) if padded_size is None else padded_size
        for _ in range(steps):
            yield self.batch(rng, n, q, padded, overflow)


class PoissonSampling(BatchSelection):
    """Every record joins each batch independently with probability ``q`` (add/remove-one;
    ``PoissonSampledDpEvent``): :func:`poisson_batch` per step, in chunks of
    :func:`padded_batch_size`."""

    name: ClassVar[Sampling] = "poisson"

    def natural_padded_size(self, dataset_size: int, sampling_prob: float, multiple_of: int) -> int:
        return padded_batch_size(dataset_size, sampling_prob, multiple_of=multiple_of)

    def batch(self, rng, dataset_size, sampling_prob, padded_size, overflow) -> list[PaddedBatch]:
        return poisson_batch(rng, dataset_size, sampling_prob, padded_size, overflow=overflow)


class FixedSizeSampling(BatchSelection):
    """A uniformly random subset of exactly ``round(q n)`` records per step, without
    replacement (replace-one; ``SampledWithoutReplacementDpEvent``): :func:`fixed_size_batch`."""

    name: ClassVar[Sampling] = "without_replacement"

    def natural_padded_size(
        self, dataset_size: int, sampling_prob: float, multiple_of: int
    ) -> None:
        del dataset_size, sampling_prob, multiple_of

    def batch(self, rng, dataset_size, sampling_prob, padded_size, overflow) -> list[PaddedBatch]:
        del padded_size, overflow
        return [fixed_size_batch(rng, dataset_size, max(1, round(sampling_prob * dataset_size)))]


SELECTIONS: dict[str, BatchSelection] = {
    s.name: s for s in (PoissonSampling(), FixedSizeSampling())
}


def as_batch_selection(sampling: Sampling | BatchSelection) -> BatchSelection:
    """The strategy object for a scheme's name (a :class:`BatchSelection` is returned as is)."""
    if isinstance(sampling, BatchSelection):
        return sampling
    if sampling not in SELECTIONS:
        raise ValueError(
            f"expected sampling in ('poisson', 'without_replacement'), got {sampling!r}"
        )
    return SELECTIONS[sampling]


def batches(
    rng: np.random.Generator,
    dataset_size: int,
    *,
    sampling_prob: float,
    steps: int,
    sampling: Sampling | BatchSelection = "poisson",
    padded_size: int | None = None,
    overflow: OverflowPolicy = "accumulate",
) -> Iterator[list[PaddedBatch]]:
    """Yield ``steps`` logical batches of the scheme ``sampling``, each a list of padded chunks.

    For ``sampling="without_replacement"`` the batch size is ``round(q * n)`` and every
    logical batch is a single chunk.
    """
    return as_batch_selection(sampling).batches(
        rng,
        dataset_size,
        sampling_prob=sampling_prob,
        steps=steps,
        padded_size=padded_size,
        overflow=overflow,
    )
