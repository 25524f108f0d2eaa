"""3A / ClustMix's anonymise step: noisy means of groups of records (mixing + Gaussian noise).

Records ``x_i`` lie in the public box ``[0, 1]^D`` (features min-max scaled to declared bounds,
one-hot categoricals). A *mixture* is the mean of a group of records plus Gaussian noise
(Madl et al., Thm. 2, Eq. 7). Two mechanisms, one per ClustMix mode:

* :func:`mix` (strict mode): groups are formed per record (:func:`bucket_groups`: a keyed hash
  of the record into one of a public number of buckets), so adding or removing one record
  changes exactly one group's *sum*. We release the group sums of the centred records
  ``x_i - 1/2`` (each of L2 norm ``<= sqrt(D) / 2``) with the Gaussian mechanism, and divide
  them by public divisors (post-processing). L2 sensitivity of the whole vector of sums under
  add/remove-one: ``sqrt(D) / 2`` (:func:`mixing_sensitivity`; derived in docs/privacy.md,
  "ClustMix").
* :func:`paper_mix` (paper mode): means of disjoint groups of exactly ``l`` records, noise
  ``sigma`` from the paper's Eq. 8, ``mu = sqrt(C D) / (l sigma)``. That ``mu`` is the
  paper's claim, not a proof: its groups are formed from all records together, so one record
  can change every group (docs/errata.md, "3A / ClustMix").

The conversion between ``mu`` and ``(epsilon, delta)`` is accounting's
(:func:`accounting.accountants.gdp.mu_for_epsilon_delta`, Dong, Roth & Su 2019, Cor. 2.13).

References:
  Madl, Xu, Choudhury & Howard, "Approximate, Adapt, Anonymize (3A)", Sec. "Anonymize through
  Gaussian Differential Privacy", Thm. 2, Eqs. 7-8; Lee et al. 2019 (DPMix).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from accounting import events as ev
from accounting.accountants.gdp import mu_for_epsilon_delta
from accounting.validation import check_count, check_positive
from jdp.mechanisms.noise import gaussian_mechanism

__all__ = [
    "bucket_groups",
    "group_sums",
    "mix",
    "mixing_sensitivity",
    "paper_mix",
    "paper_mu",
    "paper_noise_std",
]

#: Centre of the public box ``[0, 1]^D``: records are centred on it before summing.
BOX_CENTRE = 0.5


def check_unit_box(x: object, name: str = "x") -> np.ndarray:
    """``x`` as a float64 ``(n, D)`` array inside ``[0, 1]^D``; one-line errors otherwise."""
    a = np.asarray(x)
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.bool_)
    ):
        raise TypeError(
            f"expected {name} to be numeric, got dtype {a.dtype} (encode non-numeric columns "
            "with a public encoding first, e.g. jdp.data.transforms.TableEncoder)"
        )
    a = a.astype(np.float64)
    if a.ndim != 2 or a.shape[1] < 1:
        raise ValueError(f"expected {name} of shape (n, D), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"expected {name} to be finite, got NaN or inf")
    if a.size and (a.min() < 0.0 or a.max() > 1.0):
        raise ValueError(f"expected {name} inside the public box [0, 1]^D (min-max scale it)")
    return a


def mixing_sensitivity(n_features: int) -> float:
    """L2 sensitivity of the vector of all group sums of centred records, add/remove-one.

    One record enters exactly one group (:func:`bucket_groups`), and its centred value
    ``x - 1/2`` has every coordinate in ``[-1/2, 1/2]``: ``||x - 1/2||_2 <= sqrt(D) / 2``.
    """
    return math.sqrt(check_count("n_features", n_features, minimum=1)) / 2.0


def bucket_groups(x: np.ndarray, salt: bytes, n_buckets: np.ndarray) -> np.ndarray:
    """Bucket of each record: ``blake2b(salt, bytes(x_i)) mod n_buckets_i`` (``-1`` where
    ``n_buckets_i = 0``).

    The bucket of record ``i`` is a function of ``x_i``, the public ``salt`` and its own public
    bucket count only -- never of the other records -- so adding or removing one record leaves
    every other record's bucket unchanged (a positional rule, e.g. chunking a permutation into
    consecutive groups, would shift the later groups). Identical records share a bucket.

    Args:
      x: ``(n, D)`` records (float64 bytes are hashed).
      salt: a fresh random key (drawn from the mechanism's generator; 1..64 bytes).
      n_buckets: ``(n,)`` non-negative integers, public per record (e.g. the number of groups
        of the record's cluster, a function of released values).
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    counts = np.asarray(n_buckets)
    if counts.shape != (x.shape[0],) or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"expected integer n_buckets of shape ({x.shape[0]},), got {counts.shape}")
    if counts.size and counts.min() < 0:
        raise ValueError("expected n_buckets >= 0")
    if not isinstance(salt, bytes) or not 1 <= len(salt) <= 64:
        raise ValueError("expected salt to be 1..64 bytes")
    out = np.full(x.shape[0], -1, dtype=np.int64)
    for i in np.flatnonzero(counts > 0):
        digest = hashlib.blake2b(x[i].tobytes(), key=salt, digest_size=8).digest()
        out[i] = int.from_bytes(digest, "little") % int(counts[i])
    return out


def group_sums(x: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``(n_groups, D)`` sums of the centred records ``x_i - 1/2`` per group (``-1``: in none)."""
    group = np.asarray(group)
    if group.shape != (x.shape[0],) or not np.issubdtype(group.dtype, np.integer):
        raise ValueError(f"expected integer group ids of shape ({x.shape[0]},), got {group.shape}")
    if group.size and (group.min() < -1 or group.max() >= n_groups):
        raise ValueError(f"expected group ids in -1..{n_groups - 1}")
    sums = np.zeros((n_groups, x.shape[1]))
    used = group >= 0
    np.add.at(sums, group[used], x[used] - BOX_CENTRE)
    return sums


def mix(
    rng: np.random.Generator,
    x: np.ndarray,
    group: np.ndarray,
    divisors: np.ndarray,
    *,
    noise_multiplier: float,
    secure_noise: bool = False,
) -> tuple[np.ndarray, ev.DpEvent]:
    """Strict-mode mixing: ``1/2 + (S_g + N(0, (z sqrt(D)/2)^2 I)) / divisors_g`` per group.

    ``S_g = sum_{i : group_i = g} (x_i - 1/2)``.

    Args:
      rng: the noise source.
      x: ``(n, D)`` private records in ``[0, 1]^D``.
      group: ``(n,)`` group id of each record in ``0..G-1`` (``-1``: the record is in no group),
        each a function of that record and of public values only (:func:`bucket_groups`).
      divisors: ``(G,)`` public positive divisors (e.g. the expected group size from released
        cluster sizes): the mixture is the noisy sum over the divisor, centred back.
      noise_multiplier: ``z``: the sums get noise of std ``z sqrt(D) / 2`` per coordinate.
      secure_noise: see :func:`jdp.mechanisms.noise.gaussian_mechanism`.

    Returns:
      ``((G, D) noisy mixtures, gaussian_event(z))``
      (:func:`jdp.mechanisms.noise.gaussian_event`).

    Privacy:
      Add/remove-one. When group ids are per-record functions, adding or removing one record
      changes one ``S_g`` by ``+-(x - 1/2)``, so the L2 sensitivity of ``(S_1, ..., S_G)`` is
      ``sqrt(D) / 2`` (:func:`mixing_sensitivity`): one Gaussian mechanism, ``(1/z)``-GDP,
      whatever ``G``. Divisors are public, so dividing is post-processing.

    References:
      Madl et al. (3A), Thm. 2 / Eq. 7 (here with add/remove-one sums instead of replace-one
      means of exactly ``l`` records; docs/privacy.md, "ClustMix").
    """
    x = check_unit_box(x)
    divisors = np.asarray(divisors, dtype=np.float64)
    if divisors.ndim != 1 or divisors.size < 1 or not np.all(divisors > 0):
        raise ValueError("expected a 1-D array of positive public divisors, one per group")
    noisy, event = gaussian_mechanism(
        rng,
        group_sums(x, group, divisors.size),
        l2_sensitivity=mixing_sensitivity(x.shape[1]),
        noise_multiplier=noise_multiplier,
        secure_noise=secure_noise,
    )
    return BOX_CENTRE + noisy / divisors[:, None], event


def paper_mu(noise_std: float, *, mixture_size: int, n_classes: int, n_features: int) -> float:
    """The paper's Eq. 8 ``mu = sqrt(C D) / (l sigma)`` (its claim, see the module docstring)."""
    sigma = check_positive("noise_std", noise_std)
    c = check_count("n_classes", n_classes, minimum=1)
    d = check_count("n_features", n_features, minimum=1)
    return math.sqrt(c * d) / (check_count("mixture_size", mixture_size, minimum=1) * sigma)


def paper_noise_std(
    epsilon: float, delta: float, *, mixture_size: int, n_classes: int, n_features: int
) -> float:
    """The paper's per-feature noise std: Eq. 8 solved for ``sigma`` at ``(epsilon, delta)``.

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` is decreasing in ``mu``;
    accounting's root finder gives the largest ``mu`` meeting ``delta``
    (:func:`~accounting.accountants.gdp.mu_for_epsilon_delta`), and
    ``sigma = sqrt(C D) / (l mu)``. The paper uses Nelder-Mead on the same equation.
    """
    mu = mu_for_epsilon_delta(epsilon, delta)
    c = check_count("n_classes", n_classes, minimum=1)
    d = check_count("n_features", n_features, minimum=1)
    return math.sqrt(c * d) / (check_count("mixture_size", mixture_size, minimum=1) * mu)


def paper_mix(
    rng: np.random.Generator, x: np.ndarray, groups: np.ndarray, *, noise_std: float, n_classes: int
) -> tuple[np.ndarray, ev.DpEvent]:
    """Paper-mode mixing (Eq. 7): the mean of each group of ``l`` records plus ``N(0, sigma^2 I)``.

    Args:
      rng: the noise source.
      x: ``(n, D)`` private records in ``[0, 1]^D``.
      groups: ``(G, l)`` record indices, each record in at most one group.
      noise_std: ``sigma`` (e.g. :func:`paper_noise_std`).
      n_classes: ``C`` of Eq. 8.

    Returns:
      ``((G, D) noisy means, gaussian_event(1 / mu))`` with ``mu`` of :func:`paper_mu`: the
      release is the Gaussian mechanism at the paper's claimed L2 sensitivity
      ``sqrt(C D) / l``, so its event is ``mu``-GDP exactly when that claim holds.

    Privacy:
      **The paper's claim, not proven** (docs/errata.md): Thm. 2 bounds the change of one
      mean when one record is replaced *inside its group*; the groups themselves are formed
      from the clustering of all records, so one record can move every group.
    """
    x = check_unit_box(x)
    groups = np.asarray(groups)
    if groups.ndim != 2 or groups.shape[1] < 1 or not np.issubdtype(groups.dtype, np.integer):
        raise ValueError(f"expected (G, l) integer group indices, got {groups.shape}")
    if groups.size and (groups.min() < 0 or groups.max() >= x.shape[0]):
        raise ValueError("expected group indices of rows of x")
    if len(np.unique(groups)) != groups.size:
        raise ValueError("expected every record in at most one group")
    l, d = groups.shape[1], x.shape[1]
    mu = paper_mu(noise_std, mixture_size=l, n_classes=n_classes, n_features=d)
    return gaussian_mechanism(
        rng,
        x[groups].mean(axis=1),
        l2_sensitivity=math.sqrt(n_classes * d) / l,
        noise_multiplier=1.0 / mu,
    )
