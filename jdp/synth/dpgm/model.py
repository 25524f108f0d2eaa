"""DPGM's fitting and sampling on encoded arrays, and the table glue (Acs et al. 2018, Alg. 1).

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
4. ``"dp-sgd"``: one generator per cluster (VAE or RBM) trained by DP-SGD with DPNorm's
   adaptive clipping (Algorithm 4, :class:`jdp.dpsgd.AdaptiveClip`) on that cluster only, all
   clusters with the same public Poisson rate ``q`` and number of steps ``T``; recorded as
   ONE :class:`~accounting.events.ParallelComposedDpEvent` of the ``k`` runs.

Sampling (post-processing): a cluster with probability proportional to its noisy size, then
a draw from that cluster's generator; each state block's probabilities are rescaled so that
the cluster's sampled states have the released state frequencies
(:func:`jdp.synth.states.match_state_counts`). Why, measured on Adult at epsilon = 1 (seed
0): the k-means put all rows in one cluster (the other nine have noisy sizes of pure noise,
1.3% of the weight) and that cluster's DP-trained softmax state head gave 0.877 zeros for
capital-gain where the cluster had 0.917, 0.910 for capital-loss against 0.953 (the noise
pulls a softmax towards uniform). Sampled zero shares, ``jdp fit --dataset adult --method
dpgm --epsilon 1 --seed S`` then 32,561 rows (real 0.917 / 0.953): before, seed 0 0.876 /
0.898, seed 1 0.863 / 0.906; after, 0.913 / 0.946 and 0.917 / 0.952. TSTR AUROC on the
same fitted models with and without the matching (LR, AdaBoost, GB, XGBoost): seed 0
0.719 0.741 0.770 0.693 vs 0.721 0.741 0.773 0.688; seed 1 0.727 0.745 0.771 0.684 vs
0.728 0.745 0.773 0.687 (unchanged).

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

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.dpsgd import AdaptiveClip, DPSGDConfig, train
from jdp.dpsgd.clip_schedules import adaptive_clip_event
from jdp.dpsgd.noise import noise_cut
from jdp.encoding.kmeans import KMeansResult, assign_clusters, dp_kernel_kmeans, dp_kmeans_event
from jdp.encoding.rff import draw_rff
from jdp.mechanisms.noise import gaussian_event, gaussian_mechanism
from jdp.mechanisms.release import record_release
from jdp.nn import rbm as rbm_lib
from jdp.nn.heads import HeadLayout, activate, heads_for_spans, layout_width, log_likelihood
from jdp.nn.vae import Decoder, Encoder, kl_to_standard_normal
from jdp.random import numpy_rng
from jdp.synth import states
from jdp.synth.base import FittedModel
from jdp.synth.dpgm.config import DPGMConfig
from jdp.verbosity import progress_on_terminal

__all__ = [
    "ClusterPartition",
    "calibrate_noise",
    "fit_arrays",
    "fit_table",
    "generator_noise_cut",
    "parallel_training_event",
    "partition_by_released_centres",
    "plan_events",
    "sample_arrays",
    "sample_cluster",
    "sample_table",
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


def cluster_event(config: DPGMConfig, noise_multiplier: float, *, noise_cut: float) -> ev.DpEvent:
    """One cluster's DP-SGD run: ``T`` steps of (histogram, gradient) on one Poisson batch;
    ``noise_cut`` is the gradient draw's sampler cut per step (:func:`generator_noise_cut`)."""
    return adaptive_clip_event(
        adaptive_clip(config, noise_multiplier),
        noise_multiplier,
        config.sampling_prob,
        config.num_steps,
        noise_cut=noise_cut,
    )


def generator_noise_cut(config: DPGMConfig, width: int) -> float:
    """The sampler's cut of one DP-SGD step on a cluster's generator, from its shapes."""
    shapes = jax.eval_shape(lambda: init_generator(jax.random.key(0), config, width)[0])
    return noise_cut(shapes)


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
    """``{"kmeans": z_K, "sgd": z_G}`` for ONE ``(epsilon, delta)``, before any data is read.

    Each phase is first calibrated alone to its share (``kmeans_share``, the rest to DP-SGD),
    then one common factor makes the composition of the whole plan meet ``epsilon``
    (:func:`accounting.calibrate.calibrate`); ``noise_cut`` and ``state_counts`` as
    :func:`plan_events`.
    Raises a one-line ``ValueError`` when the k-means phase would need more noise than
    ``max_kmeans_noise``.
    """
    if not budget.delta > 0:
        raise ValueError(f"DPGM (Gaussian mechanisms) needs a budget delta > 0, got {budget.delta}")

    def composed(z_k: float | None, z_g: float | None) -> ev.DpEvent:
        plan = plan_events(config, z_k, z_g, noise_cut=noise_cut, state_counts=state_counts)
        return ev.ComposedDpEvent([e for _, e in plan])

    eps, delta = budget.epsilon, budget.delta
    z_k0 = calibrate(
        lambda s: composed(s, None), target_epsilon=eps * config.kmeans_share, target_delta=delta
    )
    z_g0 = calibrate(
        lambda s: composed(None, s),
        target_epsilon=eps * (1 - config.kmeans_share),
        target_delta=delta,
    )
    factor = calibrate(
        lambda f: composed(f * z_k0, f * z_g0), target_epsilon=eps, target_delta=delta
    )
    z = {"kmeans": factor * z_k0, "sgd": factor * z_g0}
    if z["kmeans"] > config.max_kmeans_noise:
        raise ValueError(
            f"budget too small for {config.kmeans_iterations} k-means iterations: epsilon={eps:g} "
            f"needs a k-means noise multiplier {z['kmeans']:.4g} > max_kmeans_noise="
            f"{config.max_kmeans_noise:g}; raise epsilon or kmeans_share, or lower "
            "kmeans_iterations"
        )
    return z


# -- the generators ------------------------------------------------------------------------------


def _vae(config: DPGMConfig, width: int) -> tuple[Encoder, Decoder]:
    return Encoder(config.hidden, config.latent_dim, learn_mean=True), Decoder(config.hidden, width)


def _rbm(config: DPGMConfig, width: int) -> rbm_lib.RBM:
    return rbm_lib.RBM(n_visible=width, n_hidden=config.hidden)


def init_generator(key: jax.Array, config: DPGMConfig, width: int) -> tuple[Any, Any]:
    """``(params, model_state)`` of one cluster's generator, drawn without data: VAE
    encoder/decoder (no state), or RBM parameters and persistent chains."""
    k_params, k_state = jax.random.split(key)
    if config.generator == "rbm":
        params = _rbm(config, width).init(k_params, jnp.zeros((width,)))
        return params, rbm_lib.init_chains(k_state, config.n_chains, width)
    encoder, decoder = _vae(config, width)
    k_enc, k_dec = jax.random.split(k_params)
    params = {
        "encoder": encoder.init(k_enc, jnp.zeros((width,))),
        "decoder": decoder.init(k_dec, jnp.zeros((config.latent_dim,))),
    }
    return params, None


def example_loss(config: DPGMConfig, layout: HeadLayout) -> Callable[..., jax.Array]:
    """The per-example loss of ONE record ``{"x": row, "w": 1}`` (``w = 0``: the padding row
    every cluster carries, whose gradient is exactly 0).

    VAE: the negative ELBO (Bernoulli/categorical heads, ``N(0, I)`` prior, one reparametrised
    draw). RBM: :func:`jdp.nn.rbm.cd_loss` against the persistent chains (``model_state``).
    """
    width = layout_width(layout)
    if config.generator == "rbm":
        rbm = _rbm(config, width)

        def rbm_loss(params, example, key, chains):
            return example["w"] * rbm_lib.cd_loss(rbm, params, example["x"], chains)

        return rbm_loss
    encoder, decoder = _vae(config, width)

    def vae_loss(params, example, key):
        x = example["x"]
        mean, logvar = encoder.apply(params["encoder"], x)
        z = mean + jnp.exp(0.5 * logvar) * jax.random.normal(key, mean.shape)
        ll = log_likelihood(decoder.apply(params["decoder"], z), x, layout)
        return example["w"] * (kl_to_standard_normal(mean, logvar) - ll)

    return vae_loss


def check_binary(x: np.ndarray) -> None:
    """The RBM models 0/1 vectors: refuse anything else (one line)."""
    if not np.all((x == 0.0) | (x == 1.0)):
        raise ValueError("the RBM needs binary (0/1) data; use generator='vae' for other data")


# -- fitting ---------------------------------------------------------------------------------------


def _train_cluster(
    key: jax.Array,
    x: np.ndarray,
    mean_size: float,
    z: float,
    config: DPGMConfig,
    layout: HeadLayout,
    *,
    progress: bool,
    desc: str,
) -> tuple[Any, ev.DpEvent]:
    """DP-SGD with adaptive clipping on one cluster's rows; returns (params, its event).

    Every cluster's data carries one extra all-zero row of weight 0 (so an empty cluster is
    trained too: noise only, as the mechanism prescribes); its gradient is 0 and its norm 0
    falls in no DPNorm bin. The update is normalised by ``q * max(mean_size, 1)``,
    ``mean_size`` the mean noisy cluster size (released; one value for every cluster, so the
    clusters' jitted steps are the same program and a compilation cache can share them).
    """
    width = layout_width(layout)
    init_key, train_key = jax.random.split(key)
    params, state = init_generator(init_key, config, width)
    data = {
        "x": jnp.asarray(np.concatenate([x, np.zeros((1, width))]), jnp.float32),
        "w": jnp.asarray(np.r_[np.ones(len(x)), 0.0], jnp.float32),
    }
    dp = DPSGDConfig(
        l2_clip_norm=adaptive_clip(config, z),
        sampling_prob=config.sampling_prob,
        expected_batch_size=config.sampling_prob * max(float(mean_size), 1.0),
        steps=config.num_steps,
        noise_multiplier=z,
    )
    rbm = config.generator == "rbm"
    result = train(
        train_key,
        example_loss(config, layout),
        params,
        optax.adam(config.learning_rate),
        data,
        dp,
        model_state=state,
        state_update_fn=rbm_lib.make_chain_update(_rbm(config, width), config.gibbs_steps)
        if rbm
        else None,
        method=config.dpsgd_method,
        microbatch_size=config.microbatch_size,
        label=desc,
        progress=progress,
    )
    (entry,) = result.ledger.entries
    return jax.tree_util.tree_map(np.asarray, result.params), entry.event


def fit_arrays(
    key: jax.Array,
    x: np.ndarray,
    layout: HeadLayout,
    budget: PrivacyBudget,
    config: DPGMConfig,
    *,
    init_public: np.ndarray | None = None,
    state_blocks: tuple[tuple[int, int], ...] = (),
    progress: bool = False,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """DPGM (Algorithm 1) on encoded rows ``x`` in ``[0, 1]^d`` under ``budget``.

    Args:
      key: randomness (noise, feature map, initialisations, batches).
      x: ``(n, d)`` private encoded rows (0/1 for the RBM).
      layout: the VAE's output heads (``(("bernoulli", d),)`` for binary data).
      budget: ``(epsilon, delta)`` the ledger meets.
      config: :class:`DPGMConfig`.
      init_public: ``(k, d)`` *public* rows whose features start k-means (DPGM footnote 3);
        default: ``k`` uniform random rows of ``[0, 1]^d`` drawn from ``key`` (no data read;
        they start Lloyd better than random points of feature space).
      state_blocks: public ``(start, stop)`` coordinates of one-hot state blocks (a
        :class:`~jdp.data.transforms.TableEncoder`'s state indicators) whose per-cluster
        counts are released (:func:`jdp.synth.states.release_state_counts`) for sampling
        to match.
      progress: one progress bar per cluster.

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
      are uniform (post-processing of the released sizes).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != layout_width(layout):
        raise ValueError(f"expected x of shape (n, {layout_width(layout)}), got {x.shape}")
    if config.generator == "rbm":
        check_binary(x)
    for start, stop in state_blocks:
        if not 0 <= start < stop <= x.shape[1]:
            raise ValueError(f"expected state blocks inside [0, {x.shape[1]}), got {state_blocks}")
    z = calibrate_noise(
        config,
        budget,
        noise_cut=generator_noise_cut(config, x.shape[1]),
        state_counts=bool(state_blocks),
    )
    k = config.n_clusters
    k_rff, k_kmeans, k_sizes, k_train = jax.random.split(key, 4)
    gamma = 1.0 / x.shape[1] if config.gamma is None else config.gamma
    public_rng = numpy_rng(k_rff)
    feature_map = draw_rff(public_rng, x.shape[1], config.rff_dim, gamma=gamma)
    if init_public is None:
        init_public = public_rng.random((k, x.shape[1]))
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
    if state_blocks:
        state_counts, ledger = record_release(
            ledger,
            STATES_LABEL,
            states.release_state_counts(
                numpy_rng(jax.random.fold_in(k_sizes, 1)),
                partition.labels,
                k,
                x,
                state_blocks,
                z["kmeans"],
            ),
            note=f"per-cluster state counts of {len(state_blocks)} blocks (L2 sensitivity "
            f"sqrt({len(state_blocks)}))",
        )
    clusters, events = {}, []
    for j, cluster_key in enumerate(jax.random.split(k_train, k)):
        params, event = _train_cluster(
            cluster_key,
            x[partition.members(j)],
            sizes.sum() / k,
            z["sgd"],
            config,
            layout,
            progress=progress,
            desc=f"dpgm cluster {j + 1}/{k}",
        )
        clusters[f"c{j}"] = params
        events.append(event)
    note = f"z={z['sgd']:.6g}, z_hist={config.hist_noise_ratio * z['sgd']:.6g}, k={k} clusters"
    ledger = ledger.record(SGD_LABEL, parallel_training_event(partition, events), note=note)
    weights = np.maximum(sizes, 0.0)
    total = weights.sum()  # released: the fallback is post-processing, not a private branch
    weights = weights / total if total > 0 else np.full(k, 1.0 / k)
    params = {
        "kmeans": {
            "centres": result.centres,
            "frequencies": feature_map.frequencies,
            "offsets": feature_map.offsets,
        },
        "cluster_weights": weights,
        "state_counts": state_counts,
        "clusters": clusters,
    }
    return params, ledger


# -- sampling --------------------------------------------------------------------------------------


def sample_arrays(
    key: jax.Array,
    params: dict[str, Any],
    layout: HeadLayout,
    config: DPGMConfig,
    n: int,
    *,
    return_clusters: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic rows in encoded space: a cluster ``~ cluster_weights`` (the noisy
    sizes), then that cluster's generator (post-processing of released values).

    Rows are the generators' means: the VAE decoder's activated heads
    (:func:`jdp.nn.heads.activate`: Bernoulli means, each categorical block's softmax) at a
    latent draw, the RBM's visible probabilities after ``sample_burn_in`` Gibbs sweeps.
    Binary columns and categories are drawn from these means by the caller
    (:func:`sample_table`). ``return_clusters`` also returns each row's cluster.
    """
    rng = numpy_rng(key)
    weights = np.asarray(params["cluster_weights"], dtype=np.float64)
    which = rng.choice(len(weights), size=n, p=weights / weights.sum())
    out = np.zeros((n, layout_width(layout)))
    keys = jax.random.split(jax.random.fold_in(key, 1), len(weights))
    for j in np.unique(which):
        rows = np.flatnonzero(which == j)
        out[rows] = sample_cluster(keys[j], params, layout, config, int(j), len(rows))
    return (out, which) if return_clusters else out


def sample_cluster(
    key: jax.Array, params: dict[str, Any], layout: HeadLayout, config: DPGMConfig, j: int, n: int
) -> np.ndarray:
    """``n`` rows (means, as :func:`sample_arrays`) from cluster ``j``'s generator."""
    gen = jax.tree_util.tree_map(jnp.asarray, params["clusters"][f"c{j}"])
    return np.asarray(_generate(key, gen, n, layout=layout, config=config), dtype=np.float64)


@functools.partial(jax.jit, static_argnames=("n", "layout", "config"))
def _generate(key: jax.Array, params: Any, n: int, *, layout: HeadLayout, config: DPGMConfig):
    width = layout_width(layout)
    if config.generator == "rbm":
        return rbm_lib.sample(key, _rbm(config, width), params, n, burn_in=config.sample_burn_in)[1]
    z = jax.random.normal(key, (n, config.latent_dim))
    return activate(_vae(config, width)[1].apply(params["decoder"], z), layout)


# -- tables ----------------------------------------------------------------------------------------


def table_encoder(schema: Schema) -> TableEncoder:
    """The public encoder: numeric columns min-max to [0, 1], one-hot categoricals; a binary
    (0/1) column is an integer column with bounds [0, 1] and encodes to itself."""
    return TableEncoder(schema, continuous_range=(0.0, 1.0))


def binary_columns(encoder: TableEncoder) -> np.ndarray:
    """Coordinates of the integer columns with bounds [0, 1] (drawn 0/1 when sampling)."""
    return np.array(
        [
            span.start
            for col, span in zip(encoder.columns, encoder.spans)
            if col.kind == "integer" and (col.lower, col.upper) == (0, 1)
        ],
        dtype=np.int64,
    )


def check_rbm_schema(encoder: TableEncoder) -> None:
    """The RBM needs every encoded coordinate to be 0/1: integer [0, 1] columns and one-hot
    categoricals (a schema-level, public check)."""
    for col in encoder.columns:
        if col.is_numeric and not (col.kind == "integer" and (col.lower, col.upper) == (0, 1)):
            raise ValueError(
                f"the RBM needs binary data: column {col.name!r} is {col.kind} in "
                f"[{col.lower:g}, {col.upper:g}]; declare 0/1 integer columns or use "
                "generator='vae'"
            )


def fit_table(key: jax.Array, data: Table, budget: PrivacyBudget, config: DPGMConfig):
    """The registry ``fit``: Table -> public encoding -> :func:`fit_arrays` (the state
    indicators' per-cluster counts released for sampling)."""
    encoder = table_encoder(data.schema)
    if config.generator == "rbm":
        check_rbm_schema(encoder)
    layout = heads_for_spans(encoder.spans, merge=True)
    params, ledger = fit_arrays(
        key,
        encoder.encode(data),
        layout,
        budget,
        config,
        state_blocks=states.state_blocks(encoder),
        progress=progress_on_terminal(),
    )
    return FittedModel(
        method="dpgm",
        params=params,
        schema=data.schema,
        config=config,
        budget=budget,
        ledger=ledger,
    )


def sample_table(key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
    """The registry ``sample``: encoded rows with each state block's probabilities matched
    to its cluster's released state counts (:func:`~jdp.synth.states.match_state_counts`), then binary columns
    drawn 0/1 and each one-hot block's category drawn in proportion to its values (the RBM's
    visible probabilities, the VAE's softmax;
    :meth:`~jdp.data.transforms.TableEncoder.sample_blocks`), decoded."""
    encoder = table_encoder(model.schema)
    layout = heads_for_spans(encoder.spans, merge=True)
    gen_key, draw_key = jax.random.split(key)
    blocks = states.state_blocks(encoder)
    x, which = sample_arrays(gen_key, model.params, layout, model.config, n, return_clusters=True)
    x = states.match_state_counts(x, which, np.asarray(model.params["state_counts"]), blocks)
    rng = numpy_rng(draw_key)
    cols = binary_columns(encoder)
    x[:, cols] = rng.random((n, len(cols))) < x[:, cols]
    return encoder.decode(encoder.sample_blocks(rng, x, "all"))
