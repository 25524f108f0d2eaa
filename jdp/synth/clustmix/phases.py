"""ClustMix's two modes on arrays, each one fit function (:data:`jdp.synth.clustmix.model.MODES`).

Records ``x`` lie in ``[0, 1]^D`` (public min-max / one-hot encoding) with class codes
``y`` in ``0..C-1``. ClustMix is class-conditional: each class's records are clustered
separately and the mixtures of a cluster carry its class's label.

Paper mode (:func:`fit_paper`), as published:

1. constrained GMM per class, every cluster ``>= l`` records (:func:`constrained_gmm`);
2. KIP with the 3A loss (Eq. 6) on the cluster means against all records (if ``adapt``);
   each cluster's mixtures are moved by its mean's KIP displacement;
3. every cluster cut into disjoint groups of ``l`` records (a random permutation), each group's
   mean plus ``N(0, sigma^2 I)``, ``sigma`` from Eq. 8 at the budget
   (:func:`jdp.mechanisms.mixing.paper_noise_std`).

Its ledger holds the paper's *claim* -- an ``EpsilonDeltaDpEvent`` at the budget for the
mixing, no-op entries for the two phases that read the data in the clear -- every entry with
``mode="paper"`` and the note "paper's claimed guarantee, not proven".

Strict mode (:func:`fit_strict`), DP as a whole (docs/privacy.md, "ClustMix"):

1. DP k-means (or DP-EM) per class on released-centre space (:func:`dp_cluster_centres`; the
   classes partition the records: parallel composition); a class's size is private, so it
   runs for any size, 0 or fewer records than ``n_clusters`` included, with the same ledger;
2. each record assigned to its nearest *released* centre of its class (per record);
3. noisy cluster sizes (Gaussian, sensitivity 1); cluster ``k`` gets
   ``m_k = floor(max(s~_k, 0) / l)`` groups; a class with fewer than ``K`` also gets one per
   cluster without a group whose mixture's noise stays within the box
   (:func:`groups_per_cluster`);
4. DP-KIP on the released centres (if ``adapt``): the displacement of each centre;
5. each record hashed into one of its cluster's ``m_k`` groups (:func:`bucket_groups`, a
   public salt), the centred group sums released by one Gaussian mechanism (sensitivity
   ``sqrt(D)/2``, :func:`jdp.mechanisms.mixing.mix`) and divided by ``s~_k / m_k``.

One scale calibrates every phase's noise (:func:`strict_plan`,
:func:`accounting.calibrate.calibrate`, RDP); no noise level is ever chosen on private data.

References:
  Madl, Xu, Choudhury & Howard, "Approximate, Adapt, Anonymize (3A): a framework for privacy
  preserving training data release for machine learning" (Eq. 6: the 3A loss; Eq. 8: the
  mixing's noise).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from accounting import PrivacyBudget
from accounting import events as ev
from accounting.calibrate import calibrate
from accounting.ledger import PAPER_CLAIM, PrivacyLedger
from jdp.encoding.constrained_gmm import (
    assign_to_centres,
    constrained_gmm,
    dp_cluster_centres,
    dp_cluster_event,
    releases_per_step,
)
from jdp.mechanisms.mixing import bucket_groups, mix, paper_mix, paper_mu, paper_noise_std
from jdp.mechanisms.noise import gaussian_event, gaussian_mechanism
from jdp.progress import phase, track
from jdp.random import numpy_rng, split
from jdp.synth.clustmix.config import AUTO_NOISE_STD, ClustMixConfig, Records
from jdp.synth.clustmix.dp_kip import centred_problem, dp_kip_displacement, support_noise_cut
from kip.kip import fit_support

#: Strict mode refuses a plan whose mixtures would carry more noise than this per feature
#: (data-free: from the budget, ``l`` and ``D`` only): its output would be noise.
MAX_NOISE_STD = 1.0
#: The label every paper-mode ledger entry's note starts with (the ledger's report says it too).
PAPER_NOTE = PAPER_CLAIM


@dataclass(frozen=True)
class ClustMixRelease:
    """What a ClustMix fit releases: the noisy mixtures, their labels and the ledger.

    Attributes:
      mixtures: ``(M, D)`` noisy mixtures of the Anonymise step, not clipped and without
        the Adapt shift: each coordinate estimates its group's mean with zero-mean noise, so
        class-level averages of them estimate the class's means (clipping would bias a
        coordinate near a box end towards the inside; the shift moves them off, see
        :func:`jdp.synth.clustmix.model.denoise_mixtures`).
      shift: ``(M, D)`` the Adapt displacement of each mixture's cluster (zeros without it).
      labels: ``(M,)`` class codes.
      ledger: every phase's entry.
      info: public facts of the fit (noise levels, numbers of groups) for reports;
        ``info["noise_std"]`` bounds the noise std of each coordinate of a mixture
        (data-free).
    """

    mixtures: np.ndarray
    shift: np.ndarray
    labels: np.ndarray
    ledger: PrivacyLedger
    info: dict[str, Any]

    @property
    def features(self) -> np.ndarray:
        """The synthetic records: the shifted mixtures clipped to ``[0, 1]^D``
        (post-processing)."""
        return np.clip(self.mixtures + self.shift, 0.0, 1.0)

    @property
    def params(self) -> dict[str, np.ndarray]:
        """The arrays a fitted model keeps: the release and its data-free noise level (the
        other facts of ``info`` are for reports)."""
        return {
            "mixtures": self.mixtures,
            "shift": self.shift,
            "labels": self.labels,
            "noise_std": np.array(self.info["noise_std"]),
        }


# -- paper mode -------------------------------------------------------------------------------
def kip_displacement(
    key: jax.Array,
    centres: np.ndarray,
    centre_labels: np.ndarray,
    records: Records,
    config: ClustMixConfig,
) -> np.ndarray:
    """Paper mode's Adapt: KIP with the 3A loss (Eq. 6, ``alpha``) on the cluster means against
    all records (centred on the box centre, centred one-hot labels), read in the clear.
    Returns the displacement ``adapted - centres`` of every mean. **Not DP.**"""
    kip_config = config.kip_config()
    with phase("Adapt: KIP step", total=kip_config.steps) as shown:
        result = fit_support(
            key,
            *centred_problem(centres, centre_labels, *records),
            kip_config,
            on_step=lambda t: shown.update(),
        )
    return np.asarray(result.support_x) + 0.5 - centres


def mixture_size(config: ClustMixConfig, noise_std_of_one: float) -> int:
    """``l``: ``config.mixture_size``, or for ``"auto"`` the least ``l`` with
    ``noise_std_of_one / l <= AUTO_NOISE_STD`` (a mixture of ``l`` records carries ``1 / l``
    of one record's per-feature noise std in both modes). Public: the noise std is a function
    of the budget, the width and the classes."""
    if config.mixture_size != "auto":
        return config.mixture_size
    return max(1, math.ceil(noise_std_of_one / AUTO_NOISE_STD))


def paper_mixing(
    config: ClustMixConfig, n_classes: int, n_features: int, budget: PrivacyBudget
) -> tuple[int, float]:
    """Paper mode's mixture size ``l`` and Eq. 8 noise std ``sigma`` at ``l``, at the budget
    basic composition leaves (the paper composes basically). Data-free."""
    sigma = functools.partial(
        paper_noise_std, budget.left.epsilon, budget.left.delta, n_classes=n_classes,
        n_features=n_features,
    )  # fmt: skip
    l = mixture_size(config, sigma(mixture_size=1))
    return l, sigma(mixture_size=l)


def fit_paper(
    key: jax.Array, records: Records, budget: PrivacyBudget, config: ClustMixConfig
) -> ClustMixRelease:
    """The published ClustMix (module docstring). **Not DP**: its ledger records the paper's
    claim, labelled :data:`PAPER_NOTE`."""
    x, y, n_classes = records
    epsilon, delta = budget.left.epsilon, budget.left.delta  # the paper composes basically
    cluster_key, kip_key, mix_key = split(key, 3)
    rng = numpy_rng(cluster_key)
    d = x.shape[1]
    (l, sigma), k = paper_mixing(config, n_classes, d, budget), config.n_clusters
    members, centres, centre_labels, class_l = [], [], [], []
    for c in track(range(n_classes), "constrained GMM, class", current=True):
        rows = np.flatnonzero(y == c)
        l_c = min(l, rows.size // k)  # a small class: the largest l its k clusters can hold
        if l_c < 1:
            raise ValueError(
                f"class {c} holds fewer records than n_clusters={k}: no cluster of it can be "
                "mixed; lower n_clusters"
            )
        clustering = constrained_gmm(
            rng, x[rows], k, l_c, steps=config.gmm_steps, timeout_s=config.gmm_timeout_s
        )
        members += [rows[clustering.labels == j] for j in range(k)]
        centres.append(clustering.means)
        centre_labels += [c] * k
        class_l.append(l_c)
    centres = np.concatenate(centres)
    centre_labels = np.asarray(centre_labels)
    shift = np.zeros_like(centres)
    if config.adapt:
        shift = kip_displacement(kip_key, centres, centre_labels, records, config)
    mix_rng = numpy_rng(mix_key)
    groups, group_cluster = [], []
    for j, rows in enumerate(members):  # cluster j of class j // k, groups of its class's l
        l_c = class_l[j // k]
        m = rows.size // l_c
        groups.append(mix_rng.permutation(rows)[: m * l_c].reshape(m, l_c))
        group_cluster += [j] * m
    means = []
    for c, l_c in enumerate(class_l):  # Eq. 8 at each class's l: the same claimed mu
        sigma_c = paper_noise_std(
            epsilon, delta, mixture_size=l_c, n_classes=n_classes, n_features=d
        )
        class_groups = np.concatenate(groups[c * k : (c + 1) * k])
        mixed, _ = paper_mix(mix_rng, x, class_groups, noise_std=sigma_c, n_classes=n_classes)
        means.append(mixed)
    means = np.concatenate(means)
    group_cluster = np.asarray(group_cluster)
    mu = paper_mu(sigma, mixture_size=l, n_classes=n_classes, n_features=d)
    ledger = PrivacyLedger().record(
        "clustmix/approximate", ev.NoOpDpEvent(), mode="paper",
        note=f"{PAPER_NOTE}: constrained GMM on the private records without noise",
    )  # fmt: skip
    if config.adapt:
        ledger = ledger.record(
            "clustmix/adapt", ev.NoOpDpEvent(), mode="paper",
            note=f"{PAPER_NOTE}: KIP reads every private record without noise",
        )  # fmt: skip
    ledger = ledger.record(
        "clustmix/anonymise",
        ev.EpsilonDeltaDpEvent(epsilon=float(epsilon), delta=float(delta)),
        mode="paper",
        note=(
            f"{PAPER_NOTE}: Eq. 8, mu = sqrt(C D)/(l sigma) = {mu:.4g} with C={n_classes}, "
            f"D={d}, l={l}, sigma={sigma:.4g} (per class l={class_l}, each with its own "
            "sigma for the same mu), converted to (epsilon, delta) by GDP"
        ),
    )
    info = {
        "noise_std": sigma,
        "mu": mu,
        "groups": len(group_cluster),
        "mixture_size": l,
        "class_mixture_sizes": class_l,
    }
    return ClustMixRelease(means, shift[group_cluster], centre_labels[group_cluster], ledger, info)


# -- strict mode ------------------------------------------------------------------------------
def strict_multipliers(config: ClustMixConfig, scale: float) -> dict[str, float]:
    """The noise multiplier of each strict phase at ``scale``: a Gaussian phase with share
    ``w`` of the privacy loss (``mu^2`` units) gets ``scale / sqrt(w / r)``, ``r`` its number of
    Gaussian releases; DP-KIP's ``T`` Poisson steps at rate ``q`` count as ``q^2 T`` (their
    CLT ``mu``; only the split is heuristic, the plan is accounted exactly)."""
    r = releases_per_step(config.clustering) * config.cluster_steps
    q, steps = config.kip_dpsgd.sampling_prob, config.kip_dpsgd.num_steps
    return {
        "cluster": scale * math.sqrt(r / config.cluster_share),
        "sizes": scale / math.sqrt(config.size_share),
        "kip": scale * q * math.sqrt(steps / config.kip_share),
        "mixing": scale / math.sqrt(config.mixing_share),
    }


def kip_event(
    config: ClustMixConfig, noise_multiplier: float, *, n_classes: int, n_features: int
) -> ev.DpEvent:
    """What strict mode's DP-KIP spends (data-free): ``config.kip_dpsgd``'s event at
    ``noise_multiplier``, with the sampler's cut on its support, the ``n_classes *
    n_clusters`` released centres of ``n_features`` (and their labels when learned)."""
    labels = n_classes if config.kip_config().learn_labels else None
    cut = support_noise_cut(n_classes * config.n_clusters, n_features, labels)
    return config.kip_dpsgd.event(noise_multiplier, 0, noise_cut=cut)  # n: fixed-size only


def strict_plan(
    config: ClustMixConfig, n_classes: int, n_features: int, scale: float
) -> ev.ComposedDpEvent:
    """The data-free event of a strict fit at ``scale`` on ``n_features`` columns: DP
    clustering (per class, in parallel), noisy sizes, DP-KIP (if ``adapt``), mixing -- in
    that order."""
    z = strict_multipliers(config, scale)
    cluster = dp_cluster_event(config.clustering, z["cluster"], config.cluster_steps)
    events = [ev.ParallelComposedDpEvent([cluster] * n_classes), gaussian_event(z["sizes"])]
    if config.adapt:
        events.append(kip_event(config, z["kip"], n_classes=n_classes, n_features=n_features))
    events.append(gaussian_event(z["mixing"]))
    return ev.ComposedDpEvent(events)


def assign_clusters(x: np.ndarray, y: np.ndarray, centres: list[np.ndarray]) -> np.ndarray:
    """Global cluster ``c K + k`` of every record: ``k`` its nearest released centre among its
    class ``c``'s ``centres[c]`` (``(K, D)`` each). Per record: post-processing."""
    cluster = np.empty(x.shape[0], dtype=np.int64)
    for c, found in enumerate(centres):
        rows = np.flatnonzero(y == c)
        cluster[rows] = c * found.shape[0] + assign_to_centres(found, x[rows])
    return cluster


def groups_per_cluster(sizes: np.ndarray, l: int, smallest: float, n_classes: int) -> np.ndarray:
    """How many groups each cluster's records form, from the noisy sizes ``s`` of the
    ``n_classes * K`` clusters (class-major; post-processing): ``floor(s / l)``. A class with
    fewer full groups than clusters -- credit's frauds: 2 mixtures of about 370 records, too
    few for a classifier to learn the class from -- also gets one group from each of its
    clusters without one that holds at least ``smallest`` (noisy) records; such a mixture
    carries ``l / s`` times the noise std of a full one. Classes with at least ``K`` groups are
    left alone: on Adult, single groups of small clusters beside hundreds of full ones cost
    0.015 AUC (their noise outweighs them)."""
    s = np.maximum(np.asarray(sizes, dtype=np.float64), 0.0).reshape(n_classes, -1)
    n = (s // l).astype(np.int64)
    few = n.sum(axis=1, keepdims=True) < s.shape[1]
    return np.where(few & (n == 0) & (s >= smallest), 1, n).ravel()


def mixing_groups(
    x: np.ndarray, cluster: np.ndarray, n_groups: np.ndarray, salt: bytes
) -> np.ndarray:
    """Global group of every record: its hashed bucket among its cluster's ``n_groups``
    (released) groups, offset by the groups of the clusters before it; ``-1`` where its
    cluster has none. A function of the record, its cluster, ``n_groups`` and ``salt`` only
    (:func:`jdp.mechanisms.mixing.bucket_groups`)."""
    offsets = np.concatenate([[0], np.cumsum(n_groups)])
    bucket = bucket_groups(x, salt, n_groups[cluster])
    return np.where(bucket >= 0, offsets[cluster] + bucket, -1)


#: :func:`strict_scale`'s answers by their public inputs (the prior by its ``repr``: events
#: are not hashable); cleared past :data:`_SCALES_KEPT` entries.
_SCALES: dict[tuple, float] = {}
_SCALES_KEPT = 64


def strict_scale(
    config: ClustMixConfig, n_classes: int, n_features: int, budget: PrivacyBudget
) -> float:
    """The scale of a strict fit's plan (:func:`strict_plan`) that meets ``budget`` after its
    prior (:func:`accounting.calibrate.calibrate`): data-free, remembered so that the rule run
    before the fit (:func:`mixing_noise_std`) and the fit calibrate once."""
    memo = (config, n_classes, n_features, budget.epsilon, budget.delta, repr(budget.prior))
    if memo not in _SCALES:
        if len(_SCALES) >= _SCALES_KEPT:
            _SCALES.clear()
        _SCALES[memo] = calibrate(
            lambda s: strict_plan(config, n_classes, n_features, s),
            target_epsilon=budget.epsilon,
            target_delta=budget.delta,
            prior=budget.prior,
        )
    return _SCALES[memo]


def strict_mixing(
    config: ClustMixConfig, n_classes: int, n_features: int, budget: PrivacyBudget
) -> tuple[dict[str, float], int, float]:
    """A strict fit's noise multipliers, mixture size ``l`` and its mixtures' noise std per
    feature, ``z_mixing sqrt(D) / (2 l)`` (the centred group sums' sensitivity ``sqrt(D)/2``
    over the ``l`` records of a group). Data-free."""
    z = strict_multipliers(config, strict_scale(config, n_classes, n_features, budget))
    one = z["mixing"] * math.sqrt(n_features) / 2.0
    l = mixture_size(config, one)
    return z, l, one / l


def mixing_noise_std(
    config: ClustMixConfig, n_classes: int, n_features: int, budget: PrivacyBudget
) -> float:
    """The noise std per feature of a mixture of ``l`` records in ``config.mode``: strict
    mode's (:func:`strict_mixing`), or paper mode's Eq. 8 ``sigma`` at the budget basic
    composition leaves (a small class's mixtures, of fewer records, carry more). Data-free."""
    if config.mode == "strict":
        return strict_mixing(config, n_classes, n_features, budget)[2]
    return paper_mixing(config, n_classes, n_features, budget)[1]


def fit_strict(
    key: jax.Array, records: Records, budget: PrivacyBudget, config: ClustMixConfig
) -> ClustMixRelease:
    """Strict ClustMix (module docstring): (epsilon, delta)-DP under add/remove-one, every
    phase in the ledger (docs/privacy.md, "ClustMix")."""
    x, y, n_classes = records
    d = x.shape[1]
    z, l, noise_std = strict_mixing(config, n_classes, d, budget)
    scale, k = strict_scale(config, n_classes, d, budget), config.n_clusters
    if noise_std > MAX_NOISE_STD:
        raise ValueError(
            f"budget too small: the mixtures' noise std per feature would be {noise_std:.3g}, "
            f"above {MAX_NOISE_STD:g} (the width of the [0, 1] box); raise epsilon or "
            "mixture_size, or give the mixing a larger share"
        )
    cluster_key, size_key, kip_key, mix_key = split(key, 4)

    # 1. DP clustering per class (the classes partition the records).
    rng = numpy_rng(cluster_key)
    centres, class_events = [], []
    for c in track(range(n_classes), "DP clustering, class", current=True):
        found, class_ledger = dp_cluster_centres(
            rng, x[y == c], k, algorithm=config.clustering, noise_multiplier=z["cluster"],
            steps=config.cluster_steps, secure_noise=config.secure_noise,
        )  # fmt: skip
        centres.append(found)
        class_events.append(class_ledger.event)
    ledger = PrivacyLedger().record(
        "clustmix/dp-clustering", ev.ParallelComposedDpEvent(class_events),
        note=f"DP {config.clustering} per class, {config.cluster_steps} iterations",
    )  # fmt: skip
    centre_labels = np.repeat(np.arange(n_classes), k)

    # 2. per-record assignment to the released centres of the record's class.
    cluster = assign_clusters(x, y, centres)
    centres = np.concatenate(centres)

    # 3. noisy cluster sizes -> number of groups per cluster (post-processing).
    size_rng = numpy_rng(size_key)
    sizes, size_event = gaussian_mechanism(
        size_rng, np.bincount(cluster, minlength=n_classes * k).astype(np.float64),
        l2_sensitivity=1.0, noise_multiplier=z["sizes"], secure_noise=config.secure_noise,
    )  # fmt: skip
    ledger = ledger.record("clustmix/cluster-sizes", size_event, note="noisy count per cluster")
    # a group of m records carries z sqrt(D) / (2 m) per feature: at least MAX_NOISE_STD's m
    n_groups = groups_per_cluster(sizes, l, noise_std * l / MAX_NOISE_STD, n_classes)
    if n_groups.sum() == 0:
        raise ValueError(
            f"no cluster can supply a mixture at this budget (every noisy cluster size is "
            f"below mixture_size={l} and below the {noise_std * l / MAX_NOISE_STD:.3g} "
            "records one mixture needs to keep its noise within the box): lower n_clusters, "
            "or raise epsilon"
        )

    # 4. Adapt: DP-KIP on the released centres.
    shift = np.zeros_like(centres)
    if config.adapt:
        with phase("Adapt: DP-KIP"):
            shift, kip_ledger = dp_kip_displacement(
                kip_key, centres, centre_labels, records, config,
                noise_multiplier=z["kip"], public_size=float(np.maximum(sizes, 0.0).sum()),
            )  # fmt: skip
        ledger = ledger + kip_ledger

    # 5. Anonymise: per-record groups, one Gaussian release of all centred group sums.
    mix_rng = numpy_rng(mix_key)
    group = mixing_groups(x, cluster, n_groups, mix_rng.bytes(32))
    group_cluster = np.repeat(np.arange(n_classes * k), n_groups)
    divisors = np.maximum(sizes, 0.0)[group_cluster] / n_groups[group_cluster]
    mixtures, mix_event = mix(
        mix_rng, x, group, divisors, noise_multiplier=z["mixing"], secure_noise=config.secure_noise
    )
    ledger = ledger.record(
        "clustmix/mixing", mix_event, note=f"centred group sums, sensitivity sqrt(D)/2, l={l}"
    )
    info = {
        "scale": scale,
        "noise_multipliers": z,
        "noise_std": noise_std,
        "groups": int(n_groups.sum()),
        "mixture_size": l,
    }
    return ClustMixRelease(
        mixtures, shift[group_cluster], centre_labels[group_cluster], ledger, info
    )
