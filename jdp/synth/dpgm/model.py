"""DPGM on encoded arrays: the partition and its parallel event, the data-free plan and
calibration, the codec, fitting and sampling (Acs et al. 2019, Alg. 1).

Fit, in ledger order:

1. ``"dp-kmeans"`` x ``T_K``: DP kernel k-means on random Fourier features of the encoded
   rows (:func:`jdp.encoding.kmeans.dp_kernel_kmeans`, Algorithm 2): released centres.
2. Every record goes to its nearest *released* centre (:func:`partition_by_released_centres`):
   a private partition that is a function of the record and public values only.
3. ``"dpgm-cluster-sizes"``: the cluster sizes plus Gaussian noise (one record changes one
   count by 1): what sampling picks a cluster by, and the public normaliser of each
   cluster's DP-SGD update.
   ``"dpgm-state-counts"`` (only for a table with state indicators, e.g. a numeric column
   with a public point mass): each cluster's count of every state plus Gaussian noise at the
   same multiplier (one record changes one count per state block: L2 sensitivity
   ``sqrt(m)`` for ``m`` blocks).
4. ``"dp-sgd"``: one generator per cluster (:mod:`jdp.synth.dpgm.generators`) trained by
   DP-SGD with DPNorm's adaptive clipping (Algorithm 4, :class:`jdp.dpsgd.AdaptiveClip`) on
   that cluster only, all clusters with the same public Poisson rate ``q`` and number of
   steps ``T`` (:func:`cluster_dpsgd`), the ``k`` runs as one batched program
   (:func:`jdp.synth.dpgm.training.train_clusters`: compute only); recorded as ONE
   :class:`~accounting.events.ParallelComposedDpEvent` of the ``k`` runs.

Sampling (post-processing): a cluster with probability proportional to its noisy size, then
the means of that cluster's generator; each state block's probabilities are rescaled so that
the cluster's sampled states have the released state frequencies
(:func:`jdp.synth.states.match_state_counts`: the DP-SGD noise pulls a softmax state head
towards uniform; the sampled zero shares are measured by ``scripts/sweep_epsilon.py``, see
``docs/results/sweep_epsilon.md``); the codec then draws binary columns and one-hot blocks.

Privacy:
    Add/remove-one neighbours throughout. The per-cluster runs compose in parallel because
    the partition is by released centres: adding a record changes no other record's cluster,
    so exactly one cluster's training set gains one record (docs/privacy.md, "DPGM"). The
    sampling rate ``q`` and the run length are public constants; the only cluster-size
    dependent values used (update normaliser, mixture weights) are the released noisy sizes.
    The noise multipliers are calibrated from the fit's ``(epsilon, delta)`` before any data
    is read (:func:`calibrate_noise`), with the exact RDP analysis of the shared-batch steps
    (tighter than DPGM's Hölder bound, which ``accountant="holder"`` reproduces).

References:
    Acs, Melis, Castelluccia & De Cristofaro, "Differentially Private Mixture of Generative
    Neural Networks", IEEE TKDE 31(6), 2019: Alg. 1-4, Sec. 4-5.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate_shares
from jdp.data.schema import Schema
from jdp.dpsgd import AdaptiveClip, DPSGDConfig
from jdp.dpsgd.noise import noise_cut
from jdp.encoding.kmeans import KMeansResult, assign_clusters, dp_kernel_kmeans, dp_kmeans_event
from jdp.encoding.rff import dim_for_noise, draw_rff
from jdp.mechanisms.noise import gaussian_event, gaussian_mechanism
from jdp.mechanisms.release import record_release
from jdp.random import numpy_rng, split
from jdp.synth import states
from jdp.synth.base import Params
from jdp.synth.dpgm.codec import DPGMCodec, codec
from jdp.synth.dpgm.config import DPGMConfig
from jdp.synth.dpgm.generators import generator_for
from jdp.synth.dpgm.training import train_clusters

__all__ = [
    "ClusterPartition",
    "adaptive_clip",
    "calibrate_noise",
    "cluster_dpsgd",
    "cluster_event",
    "fit_arrays",
    "for_shape",
    "generator_noise_cut",
    "mixture_weights",
    "parallel_training_event",
    "partition_by_released_centres",
    "plan_events",
    "sample_arrays",
    "sample_cluster",
]

KMEANS_LABEL = "dp-kmeans"
SIZES_LABEL = "dpgm-cluster-sizes"
STATES_LABEL = "dpgm-state-counts"
SGD_LABEL = "dp-sgd"


# -- the partition and its parallel composition ------------------------------------------------


@dataclass(frozen=True)
class ClusterPartition:
    """Private records split by their nearest released centre (never released itself).

    Built only by :func:`partition_by_released_centres`; :func:`parallel_training_event`
    accepts nothing else, so parallel composition is claimed only for this partition.

    Attributes:
      labels: ``(n,)`` cluster index of every private record (private).
      n_clusters: ``k``.
    """

    labels: np.ndarray
    n_clusters: int

    def members(self, j: int) -> np.ndarray:
        """Indices of the records of cluster ``j`` (private)."""
        return np.flatnonzero(self.labels == j)

    def counts(self) -> np.ndarray:
        """Exact cluster sizes (private: release only through a mechanism)."""
        return np.bincount(self.labels, minlength=self.n_clusters).astype(np.float64)


def partition_by_released_centres(
    result: KMeansResult, ledger: PrivacyLedger, x: np.ndarray
) -> ClusterPartition:
    """Assign every row of ``x`` to its nearest released centre.

    Each record's cluster is a function of that record and of the released centres alone
    (:func:`jdp.encoding.kmeans.assign_clusters`), so adding or removing a record changes no
    other record's cluster: the partition is disjoint *given public values*, which is what
    parallel composition needs. ``ledger`` must hold the centres' release
    (``"dp-kmeans"`` entries); otherwise the centres are not public and the claim would fail.
    """
    if KMEANS_LABEL not in ledger.labels:
        raise ValueError(
            "parallel composition across clusters needs centres released by an accounted "
            f"mechanism: the ledger has no {KMEANS_LABEL!r} entry"
        )
    labels = assign_clusters(result, x)
    return ClusterPartition(labels=labels, n_clusters=result.centres.shape[0])


def parallel_training_event(
    partition: ClusterPartition, events: list[ev.DpEvent]
) -> ev.ParallelComposedDpEvent:
    """The per-cluster runs' events composed in parallel (one component per cluster).

    Privacy:
      Add/remove-one: the record is in exactly one cluster of a partition by released
      centres, so one component sees it (McSherry 2009, Thm. 4); the accountants take the
      worst component (:class:`~accounting.events.ParallelComposedDpEvent`). Any other
      partition (e.g. labels computed from non-released, data-dependent centres) is refused.
    """
    if not isinstance(partition, ClusterPartition):
        raise TypeError(
            "parallel composition is claimed only for a partition by released centres "
            f"(partition_by_released_centres), got {type(partition).__name__}"
        )
    if len(events) != partition.n_clusters:
        raise ValueError(f"expected {partition.n_clusters} per-cluster events, got {len(events)}")
    return ev.ParallelComposedDpEvent(list(events))


# -- planning and calibration (data-free) ------------------------------------------------------


def adaptive_clip(config: DPGMConfig, noise_multiplier: float) -> AdaptiveClip:
    """DPNorm's configuration for a gradient noise multiplier ``z``: histogram noise
    ``hist_noise_ratio * z`` over ``clip_bins`` bins of ``(0, clip_max_norm]``."""
    return AdaptiveClip(
        max_norm=config.clip_max_norm,
        bins=config.clip_bins,
        noise_multiplier=config.hist_noise_ratio * noise_multiplier,
    )


def cluster_dpsgd(config: DPGMConfig, noise_multiplier: float, mean_size: float) -> DPSGDConfig:
    """Every cluster's DP-SGD run: the template ``config.dpsgd`` with the noise ``z``,
    DPNorm's clip (:func:`adaptive_clip`) and the normaliser ``q max(mean_size, 1)``.

    ``mean_size`` is the mean *noisy* cluster size (released; one value for every cluster, so
    the clusters' jitted steps are the same program and a compilation cache can share them).
    """
    dp = config.dpsgd
    return dataclasses.replace(
        dp.with_noise(noise_multiplier),
        l2_clip_norm=adaptive_clip(config, noise_multiplier),
        expected_batch_size=dp.sampling_prob * max(float(mean_size), 1.0),
    )


def cluster_event(config: DPGMConfig, noise_multiplier: float, *, noise_cut: float) -> ev.DpEvent:
    """One cluster's DP-SGD run: ``T`` steps of (histogram, gradient) on one Poisson batch
    (:meth:`jdp.dpsgd.DPSGDConfig.event` of :func:`cluster_dpsgd`, which does not read the
    normaliser nor, under Poisson sampling, the row count); ``noise_cut`` is the gradient
    draw's sampler cut per step (:func:`generator_noise_cut`)."""
    return cluster_dpsgd(config, noise_multiplier, 1.0).event(
        noise_multiplier, 0, noise_cut=noise_cut
    )


def generator_noise_cut(config: DPGMConfig, width: int) -> float:
    """The sampler's cut of one DP-SGD step on a cluster's generator, from its shapes."""
    generator = generator_for(config)
    return noise_cut(jax.eval_shape(lambda: generator.init(jax.random.key(0), width)))


def plan_events(
    config: DPGMConfig,
    z_kmeans: float | None,
    z_sgd: float | None,
    *,
    noise_cut: float,
    state_counts: bool = False,
) -> list[tuple[str, ev.DpEvent]]:
    """The labelled events a fit records at these multipliers (a phase is left out at
    ``None``), in ledger order; the ``"dp-kmeans"`` iterations as one self-composition.
    ``state_counts``: the table has state blocks, whose per-cluster counts are released at
    the k-means phase's multiplier (a public rule: the counts are sizes per state)."""
    out: list[tuple[str, ev.DpEvent]] = []
    if z_kmeans is not None:
        out.append((KMEANS_LABEL, dp_kmeans_event(z_kmeans, config.kmeans_iterations)))
        out.append((SIZES_LABEL, gaussian_event(z_kmeans)))
        if state_counts:
            out.append((STATES_LABEL, gaussian_event(z_kmeans)))
    if z_sgd is not None:
        one = cluster_event(config, z_sgd, noise_cut=noise_cut)
        out.append((SGD_LABEL, ev.ParallelComposedDpEvent([one] * config.n_clusters)))
    return out


def calibrate_noise(
    config: DPGMConfig, budget: PrivacyBudget, *, noise_cut: float, state_counts: bool = False
) -> dict[str, float]:
    """``{"kmeans": z_K, "sgd": z_G}`` for ONE ``(epsilon, delta)``, before any data is read
    (:func:`_calibrated`; cached, as it reads public values only)."""
    return dict(_calibrated(config, budget, noise_cut, state_counts))


@functools.lru_cache(maxsize=64)
def _calibrated(
    config: DPGMConfig, budget: PrivacyBudget, noise_cut: float, state_counts: bool
) -> tuple[tuple[str, float], ...]:
    """:func:`calibrate_noise`'s multipliers as ``(phase, z)`` pairs.

    Each phase is first calibrated alone to its share (``kmeans_share``, the rest to DP-SGD),
    then one common factor makes the composition of the whole plan meet ``epsilon``
    (:func:`accounting.calibrate.calibrate_shares` with the template's ``accountant``);
    ``noise_cut`` and ``state_counts`` as :func:`plan_events`. The search composes the plan
    with ONE cluster's run in place of the ``k`` identical ones: under add/remove-one every
    accountant takes the worst component of a parallel composition (RDP the maximum curve,
    PLD the maximum over the cases, one case per component), so the figure is the same to
    the bit and the multipliers are those of the ``k``-cluster plan, at ``1/k`` of the work
    (the ledger still records the ``k`` runs; ``test_calibration_of_one_cluster_is_the_plans``).
    Raises a one-line ``ValueError`` when the k-means phase would need more noise than
    ``max_kmeans_noise``.
    """
    if not budget.delta > 0:
        raise ValueError(f"DPGM (Gaussian mechanisms) needs a budget delta > 0, got {budget.delta}")

    one_cluster = dataclasses.replace(config, n_clusters=1)

    def composed(z: Mapping[str, float]) -> ev.DpEvent:
        plan = plan_events(
            one_cluster, z.get("kmeans"), z.get("sgd"), noise_cut=noise_cut,
            state_counts=state_counts,
        )  # fmt: skip
        return ev.ComposedDpEvent([e for _, e in plan])

    eps, share = budget.epsilon, config.kmeans_share
    z = calibrate_shares(
        composed, {"kmeans": share, "sgd": 1 - share}, target_epsilon=eps,
        target_delta=budget.delta, accountant=config.dpsgd.accountant, prior=budget.prior,
    )  # fmt: skip
    if z["kmeans"] > config.max_kmeans_noise:
        raise ValueError(
            f"budget too small for {config.kmeans_iterations} k-means iterations: epsilon={eps:g} "
            f"needs a k-means noise multiplier {z['kmeans']:.4g} > max_kmeans_noise="
            f"{config.max_kmeans_noise:g}; raise epsilon or kmeans_share, or lower "
            "kmeans_iterations"
        )
    return tuple(z.items())


# -- fitting ---------------------------------------------------------------------------------------


def for_shape(
    config: DPGMConfig, schema: Schema, budget: PrivacyBudget, rows: float | None
) -> DPGMConfig | None:
    """``config`` with ``rff_dim="auto"`` resolved by :func:`jdp.encoding.rff.dim_for_noise`
    from ``rows`` (declared or released) and the k-means noise :func:`calibrate_noise` gives
    ``budget`` (``None`` while the row count is unknown); any other config unchanged. Public
    values only."""
    if config.rff_dim != "auto":
        return config
    if rows is None:
        return None
    shape = codec(schema, config)
    z = calibrate_noise(
        config,
        budget,
        noise_cut=generator_noise_cut(config, shape.width),
        state_counts=bool(shape.state_blocks),
    )
    dim = dim_for_noise(
        max(rows, 1.0), config.n_clusters, z["kmeans"], l2_clip_norm=config.kmeans_clip
    )
    return dataclasses.replace(config, rff_dim=dim)


def fit_arrays(
    key: jax.Array,
    x: np.ndarray,
    codec: DPGMCodec,
    budget: PrivacyBudget,
    config: DPGMConfig,
    *,
    init_public: np.ndarray | None = None,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """DPGM (Algorithm 1) on encoded rows ``x`` in ``[0, 1]^d`` under ``budget``.

    Args:
      key: randomness (noise, feature map, initialisations, batches).
      x: ``(n, d)`` private encoded rows (0/1 for the RBM), ``d = codec.width``.
      codec: :class:`DPGMCodec` (its head layout and state blocks; public).
      budget: ``(epsilon, delta)`` the ledger meets.
      config: :class:`DPGMConfig`.
      init_public: ``(k, d)`` *public* rows whose features start k-means (DPGM footnote 3);
        default: ``k`` uniform random rows of ``[0, 1]^d`` drawn from ``key`` (no data read;
        they start Lloyd better than random points of feature space).

    Returns:
      ``(params, ledger)``: params ``{"kmeans": {centres, frequencies, offsets},
      "cluster_weights": (k,), "state_counts": (k, S), "clusters": {"c0": ..., ...}}`` (all
      released or computed from released values; ``S = 0`` without state blocks) and the
      ledger ``["dp-kmeans" x T_K, "dpgm-cluster-sizes", ("dpgm-state-counts",) "dp-sgd"]``.

    Raises:
      ValueError (one line, before anything is written): non-binary data for the RBM, a
      budget too small for the planned k-means iterations. Never on the (private) number of
      rows: any ``n``, 0 included, fits with the same ledger (DESIGN rule 7); a cluster with
      no record trains on noise only, and when no noisy size is positive the mixture weights
      are uniform (:func:`mixture_weights`).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != codec.width:
        raise ValueError(f"expected x of shape (n, {codec.width}), got {x.shape}")
    if config.rff_dim == "auto":
        raise ValueError(
            "rff_dim='auto' is resolved from a public row count (for_shape, as the fit does); "
            "give an int to use the arrays directly"
        )
    generator = generator_for(config)
    generator.check_rows(x)
    blocks = codec.state_blocks
    cut = generator_noise_cut(config, codec.width)
    z = calibrate_noise(config, budget, noise_cut=cut, state_counts=bool(blocks))
    k = config.n_clusters
    k_rff, k_kmeans, k_sizes, k_train = split(key, 4)
    gamma = 1.0 / codec.width if config.gamma is None else config.gamma
    public_rng = numpy_rng(k_rff)
    feature_map = draw_rff(public_rng, codec.width, config.rff_dim, gamma=gamma)
    if init_public is None:
        init_public = public_rng.random((k, codec.width))
    result, ledger = dp_kernel_kmeans(
        numpy_rng(k_kmeans),
        x,
        k,
        noise_multiplier=z["kmeans"],
        steps=config.kmeans_iterations,
        gamma=gamma,
        l2_clip_norm=config.kmeans_clip,
        init_public=init_public,
        feature_map=feature_map,
    )
    partition = partition_by_released_centres(result, ledger, x)
    sizes, ledger = record_release(
        ledger,
        SIZES_LABEL,
        gaussian_mechanism(
            numpy_rng(k_sizes),
            partition.counts(),
            l2_sensitivity=1.0,
            noise_multiplier=z["kmeans"],
        ),
        note="noisy cluster sizes (add/remove: one count changes by 1)",
    )
    state_counts = np.zeros((k, 0))
    if blocks:
        state_counts, ledger = record_release(
            ledger,
            STATES_LABEL,
            states.release_state_counts(
                numpy_rng(jax.random.fold_in(k_sizes, 1)),
                partition.labels,
                k,
                x,
                blocks,
                z["kmeans"],
            ),
            note=f"per-cluster state counts of {len(blocks)} blocks (L2 sensitivity "
            f"sqrt({len(blocks)}))",
        )
    dp = cluster_dpsgd(config, z["sgd"], sizes.sum() / k)
    trained = train_clusters(
        jax.random.split(k_train, k),
        generator,
        codec.layout,
        dp,
        config.performance,
        [x[partition.members(j)] for j in range(k)],
    )
    clusters = {f"c{j}": params for j, params in enumerate(trained)}
    events = [cluster_event(config, z["sgd"], noise_cut=cut)] * k
    note = f"z={z['sgd']:.6g}, z_hist={config.hist_noise_ratio * z['sgd']:.6g}, k={k} clusters"
    ledger = ledger.record(SGD_LABEL, parallel_training_event(partition, events), note=note)
    params = {
        "kmeans": {
            "centres": result.centres,
            "frequencies": feature_map.frequencies,
            "offsets": feature_map.offsets,
        },
        "cluster_weights": mixture_weights(sizes),
        "state_counts": state_counts,
        "clusters": clusters,
    }
    return params, ledger


def mixture_weights(sizes: np.ndarray) -> np.ndarray:
    """``max(n~_j, 0) / sum``, uniform when no released size ``n~_j`` is positive
    (post-processing of the released sizes, not a private branch)."""
    weights = np.maximum(np.asarray(sizes, dtype=np.float64), 0.0)
    total = weights.sum()
    return weights / total if total > 0 else np.full(len(weights), 1.0 / len(weights))


# -- sampling --------------------------------------------------------------------------------------


def sample_arrays(
    key: jax.Array, params: Params, codec: DPGMCodec, config: DPGMConfig, n: int
) -> np.ndarray:
    """``n`` rows in encoded space for :meth:`DPGMCodec.decode` (post-processing of released
    values): a cluster ``~ cluster_weights`` (the noisy sizes), then that cluster's generator
    means (:func:`sample_cluster`), each state block rescaled so that the cluster's states
    have its released state frequencies (:func:`jdp.synth.states.match_state_counts`)."""
    rng = numpy_rng(key)
    weights = np.asarray(params["cluster_weights"], dtype=np.float64)
    which = rng.choice(len(weights), size=n, p=weights / weights.sum())
    out = np.zeros((n, codec.width))
    keys = jax.random.split(jax.random.fold_in(key, 1), len(weights))
    for j in np.unique(which):
        rows = np.flatnonzero(which == j)
        out[rows] = sample_cluster(keys[j], params, codec, config, int(j), len(rows))
    counts = np.asarray(params["state_counts"], dtype=np.float64)
    return states.match_state_counts(out, which, counts, codec.state_blocks)


def sample_cluster(
    key: jax.Array, params: Params, codec: DPGMCodec, config: DPGMConfig, j: int, n: int
) -> np.ndarray:
    """``n`` rows from cluster ``j``'s generator: the VAE decoder's activated heads
    (Bernoulli means, each categorical block's softmax) at a latent draw, the RBM's visible
    probabilities after ``sample_burn_in`` Gibbs sweeps."""
    generator = generator_for(config)
    gen = jax.tree_util.tree_map(jnp.asarray, params["clusters"][f"c{j}"])
    return np.asarray(generator.sample(key, gen, codec.layout, n), dtype=np.float64)
