"""P3GM's two phases (Takagi et al., Algorithm 1): the encoding phase and the decoding phase.

1. **DP-PCA** (encoding phase, Sec. IV-D): rows ``x`` (encoded by the public
   :class:`~jdp.data.transforms.TableEncoder`, then divided by its public ``row_norm_bound``
   ``b`` so ``||x / b|| <= 1``) are centred at a DP mean and projected on the top ``d'``
   eigenvectors of the Analyze-Gauss release (:func:`jdp.encoding.pca.dp_pca_gaussian`). The
   projection ``c_x = (x / b - mu_DP) V`` is the *fixed encoder mean* ``mu_phi(x)``.
2. **DP-EM** (Sec. IV-D): a ``K``-component Gaussian mixture ``r_lambda`` fitted on the
   projections ``c_x`` (:func:`jdp.encoding.em.dp_em`, ``T_e`` accounted iterations); the
   paper's diagonal ``K = 3, T_e = 20`` is a config, the default one full-covariance
   Gaussian in one release (:class:`~jdp.synth.p3gm.config.P3GMConfig`).
3. **DP-SGD** (decoding phase, Sec. IV-C, eq. (7)): the ELBO
   ``E_q[log p(x|z)] - KL(q(z|x) || r_lambda)`` with ``q(z|x) = N(c_x, diag sigma_phi(x)^2)``,
   ``sigma_phi`` the learned encoder head, the KL by Hershey & Olsen's variational
   approximation ([23], :func:`jdp.nn.vae.kl_to_mixture`), trained by
   :func:`jdp.dpsgd.train.train` (per-example clipping, Poisson sampling) on the template
   ``config.dpsgd`` filled with the calibrated noise.

The latent is handled in standardized coordinates of the released mixture
(:func:`standardized_prior`). The baselines differ by the fields of their
:class:`~jdp.synth.p3gm.variants.Variant`; every function taking ``variant`` accepts a variant
or its name.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from accounting import PrivacyLedger
from jdp.dpsgd import train
from jdp.dpsgd.noise import noise_cut
from jdp.encoding import em, pca
from jdp.mechanisms.release import record_release
from jdp.mechanisms.suffstats import ScaledRows, iter_chunks
from jdp.nn.heads import (
    HeadLayout,
    into_heads,
    layout_width,
    log_likelihood,
    raw_width,
    uniform_binned_heads,
)
from jdp.nn.once import run_once
from jdp.nn.vae import Decoder, Encoder, kl_to_mixture, kl_to_standard_normal
from jdp.progress import phase
from jdp.random import jit_once, normal, split
from jdp.synth.p3gm.config import P3GMConfig
from jdp.synth.p3gm.variants import Variant, get_variant

#: The decoder's initial fit (:func:`initial_decoder`) runs as at most this many equal scans,
#: so that a terminal sees it advance.
_INIT_CHUNKS = 20

# -- the encoding phase: the fixed encoder mean and the prior --------------------------------------


def project(params: dict[str, Any], x: jax.Array) -> jax.Array:
    """The fixed encoder mean ``c_x = (x / b - centre) V`` (the DP-PCA projection)."""
    proj = params["projection"]
    return (x / proj["row_norm_bound"] - proj["centre"]) @ proj["components"]


def fixed_means(projection: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """:func:`project` of every row of ``x`` (numpy), a block of rows at a time
    (:func:`jdp.mechanisms.suffstats.iter_chunks`): each row's ``c_x`` is the same, and no
    temporary of the size of ``x`` is made."""
    params = {"projection": projection}
    parts = [project(params, chunk) for chunk in iter_chunks(x)]
    return np.concatenate(parts) if parts else np.zeros((0, projection["components"].shape[1]))


def latent_moments(prior: dict[str, Any]) -> dict[str, np.ndarray]:
    """Mean and std per latent coordinate of the DP mixture (post-processing of DP-EM):
    ``m = sum_k w_k mu_k``, ``s^2 = sum_k w_k (sigma_k^2 + mu_k^2) - m^2`` (``sigma_k^2`` the
    diagonal of a full component covariance)."""
    w = np.asarray(prior["weights"])[:, None]
    means, var = np.asarray(prior["means"]), component_variances(prior)
    m = np.sum(w * means, axis=0)
    return {"mean": m, "std": np.sqrt(np.sum(w * (var + means**2), axis=0) - m**2)}


def component_variances(prior: dict[str, Any]) -> np.ndarray:
    """``(K, d')`` per-coordinate variances of the mixture's components: ``prior["variances"]``
    itself (diagonal components) or the diagonals of its ``(K, d', d')`` full covariances."""
    var = np.asarray(prior["variances"])
    return np.diagonal(var, axis1=1, axis2=2) if var.ndim == 3 else var


def prior_mixture(params: dict[str, Any]) -> em.Mixture:
    """The DP mixture ``r_lambda`` as an :class:`~jdp.encoding.em.Mixture` (its covariance
    type read off the stored covariances: ``(K, d')`` diagonal, ``(K, d', d')`` full)."""
    prior = params["prior"]
    var = np.asarray(prior["variances"], dtype=np.float64)
    return em.Mixture(
        weights=np.asarray(prior["weights"], dtype=np.float64),
        means=np.asarray(prior["means"], dtype=np.float64),
        covariances=var,
        covariance_type="full" if var.ndim == 3 else "diag",
    )


def standardized_prior(params: dict[str, Any]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The DP mixture in standardized coordinates ``u = (z - m) / s``: (weights, means,
    chols), ``chols`` the ``(K, d', d')`` lower Cholesky factors of the components'
    covariances ``S^-1 Sigma_k S^-1`` (``S = diag(s)``; ``S^-1 L_k`` for ``Sigma_k = L_k L_k^T``,
    ``diag(sigma_k / s)`` for a diagonal component).

    The latent is handled in these coordinates (the encoder mean ``(c_x - m) / s``, the
    reparametrised draw, the decoder input): an invertible affine map fixed by released
    values, under which the KL term is invariant, and which gives the decoder inputs of unit
    scale whatever the scale of the projection (DP-SGD moves weights slowly).
    """
    prior, scale = params["prior"], params["latent_scale"]
    means = (prior["means"] - scale["mean"]) / scale["std"]
    var = jnp.asarray(prior["variances"])
    chols = jnp.linalg.cholesky(var) if var.ndim == 3 else jax.vmap(jnp.diag)(jnp.sqrt(var))
    return prior["weights"], means, chols / jnp.asarray(scale["std"])[:, None]


def standardize(params: dict[str, Any], z: jax.Array) -> jax.Array:
    """``u = (z - m) / s`` with the DP mixture's moments (:func:`latent_moments`)."""
    scale = params["latent_scale"]
    return (z - scale["mean"]) / scale["std"]


def encoding_phase(
    rng: np.random.Generator,
    x: np.ndarray,
    row_norm_bound: float,
    config: P3GMConfig,
    noise: dict[str, float] | None,
    target_coords: tuple[int, int] | None = None,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """DP-PCA then DP-EM on the projections (``noise=None``: the non-private PGM limit).

    With ``config.latent_excludes_target`` the encoded target's coordinates
    ``[start, stop) = target_coords`` (public: the schema's layout) are left out of the
    fixed encoder mean (zero loadings), so the decoder must predict the label from the
    features' latent.

    DP-PCA and the DP mean read ``x / b`` as a :class:`~jdp.mechanisms.suffstats.ScaledRows`
    (a block at a time, never a second matrix of the size of ``x``): the same statistics of the
    same rows, bit for bit, and the same noise as from a divided copy.

    Returns the ``"projection"``, ``"prior"`` and ``"latent_scale"`` parameter groups and the
    phases' ledger.
    """
    d = x.shape[1]
    keep = np.ones(d, dtype=bool)  # the coordinates the fixed encoder mean reads
    if config.latent_excludes_target and target_coords is not None:
        keep[target_coords[0] : target_coords[1]] = False
    # x[:, keep] / b, made a block at a time by the chunked sums (no copy of x)
    inputs = ScaledRows(data=x, scale=row_norm_bound, columns=keep)
    ledger = PrivacyLedger()
    if config.latent_dim is None:  # no reduction: the fixed mean is the DP-centred row
        with phase("DP mean"):
            release = pca.dp_mean_gaussian(
                rng,
                inputs,
                noise_multiplier=0.0 if noise is None else noise["pca"],
                l2_clip_norm=config.pca_clip_norm,
            )
        centre, ledger = record_release(ledger, "dp-mean", release)
        components = np.eye(inputs.shape[1])
    else:
        z = 0.0 if noise is None else noise["pca"]
        with phase("DP-PCA"):
            result, pca_ledger = pca.dp_pca_gaussian(
                rng,
                inputs,
                config.latent_dim,
                noise_multiplier=z,
                centre="dp",
                l2_clip_norm=config.pca_clip_norm,
            )
        centre, components = result.centre, result.components
        ledger = ledger + pca_ledger
    # embedded in the full row: zero centre and zero loadings on the coordinates left out
    projection = {
        "components": np.zeros((d, components.shape[1])),
        "centre": np.zeros(d),
    }
    projection["components"][keep] = components
    projection["centre"][keep] = centre
    projection["row_norm_bound"] = np.asarray(row_norm_bound, dtype=np.float64)
    latent = fixed_means(projection, x)
    fitted, em_ledger = em.dp_em(
        rng,
        latent,
        config.n_components,
        noise_multiplier=0.0 if noise is None else noise["em"],
        steps=config.em_steps,
        covariance_type=config.prior_covariance,
        l2_clip_norm=config.em_clip_norm,
        reg_covar=config.reg_covar,
    )
    mix = fitted.mixture
    prior = {"weights": mix.weights, "means": mix.means, "variances": mix.covariances}
    fixed = {"projection": projection, "prior": prior, "latent_scale": latent_moments(prior)}
    return fixed, ledger + em_ledger


# -- the decoding phase ----------------------------------------------------------------------------


def latent_width(config: P3GMConfig, d: int, fixed: dict[str, Any] | None = None) -> int:
    """The width of the fixed projection when there is one; else ``d'``, or the data width
    ``d`` when the reduction is skipped (``latent_dim=None``)."""
    if fixed and "projection" in fixed:
        return int(fixed["projection"]["components"].shape[1])
    return d if config.latent_dim is None else config.latent_dim


def networks(
    config: P3GMConfig, variant: Variant, layout: HeadLayout, fixed: dict[str, Any] | None = None
) -> tuple[Encoder | None, Decoder]:
    """(encoder, or None for a zero encoder variance; decoder) of a variant.

    The encoder has a mean head only when the variant learns its mean; its log-variance head
    starts at ``config.logvar_init`` beside a fixed mean (DP-VAE keeps the default 0). The
    decoder emits the layout's :func:`~jdp.nn.heads.raw_width` outputs.
    """
    latent = latent_width(config, layout_width(layout), fixed)
    if not variant.has_encoder:
        encoder = None
    elif variant.fixed_mean:
        encoder = Encoder(config.hidden, latent, learn_mean=False, logvar_init=config.logvar_init)
    else:
        encoder = Encoder(config.hidden, latent, learn_mean=True)
    return encoder, Decoder(config.hidden, raw_width(layout))


def init_networks(
    key: jax.Array,
    config: P3GMConfig,
    variant: Variant,
    layout: HeadLayout,
    fixed: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Initial ``{"encoder"?, "decoder"}`` flax parameters (data-independent)."""
    d = layout_width(layout)
    encoder, decoder = networks(config, variant, layout, fixed)
    k_enc, k_dec = jax.random.split(key)
    dec = decoder.init(k_dec, jnp.zeros((latent_width(config, d, fixed),)))
    # binned heads start uniform over their cells, whatever z
    out_layer = uniform_binned_heads(dec["params"]["out"], layout)
    out = {"decoder": {**dec, "params": {**dec["params"], "out": out_layer}}}
    if encoder is not None:
        out["encoder"] = encoder.init(k_enc, jnp.zeros((d,)))
    return out


def sgd_noise_cut(config: P3GMConfig, variant: Variant | str, layout: HeadLayout) -> float:
    """DP-SGD's sampler cut per step (:func:`jdp.dpsgd.noise.noise_cut`) on the trainable
    networks of a variant, from their shapes (public: config and layout)."""
    shapes = jax.eval_shape(
        lambda: init_networks(jax.random.key(0), config, get_variant(variant), layout)
    )
    return noise_cut(shapes)


def example_terms(
    trainable: dict[str, Any],
    fixed: dict[str, Any],
    x: jax.Array,
    key: jax.Array,
    *,
    config: P3GMConfig,
    variant: Variant | str,
    layout: HeadLayout,
) -> tuple[jax.Array, jax.Array]:
    """``(log p(x | z), KL)`` of ONE example with one reparametrised ``z`` (eq. (7), L = 1).

    * fixed mean (p3gm, pgm): ``q = N(c_x, diag e^logvar(x))`` with ``c_x`` the fixed
      projection, in the standardized coordinates of :func:`standardized_prior`; KL to the
      mixture prior by Hershey & Olsen's approximation.
    * zero variance (p3gm-ae): ``z = c_x``; the KL term is a constant and is dropped.
    * learned mean (dp-vae): learned mean and log-variance; KL to ``N(0, I)`` in closed form.
    """
    variant = get_variant(variant)
    encoder, decoder = networks(config, variant, layout, fixed)
    if encoder is None:
        z, kl = standardize(fixed, project(fixed, x)), jnp.zeros(())
    else:
        mean, logvar = encoder.apply(trainable["encoder"], x)
        if variant.fixed_mean:
            mean = standardize(fixed, project(fixed, x))
            kl = kl_to_mixture(mean, logvar, *standardized_prior(fixed))
        else:
            kl = kl_to_standard_normal(mean, logvar)
        z = mean + jnp.exp(0.5 * logvar) * normal(key, mean.shape)
    return log_likelihood(decoder.apply(trainable["decoder"], z), x, layout), kl


def inverse_projection(fixed: dict[str, Any], z: jax.Array) -> jax.Array:
    """The DP-PCA reconstruction ``x = b (z V^T + centre)`` of a latent ``z`` (data space)."""
    proj = fixed["projection"]
    return proj["row_norm_bound"] * (z @ proj["components"].T + proj["centre"])


def initial_decoder(
    key: jax.Array,
    decoder_params: Any,
    fixed: dict[str, Any],
    layout: HeadLayout,
    config: P3GMConfig,
) -> Any:
    """Start the decoder at the released encoding phase (post-processing, no data access).

    ``config.decoder_init_steps`` Adam steps (batch ``config.decoder_init_batch``) maximise
    ``log p(x~ | u)`` for ``z ~ r_lambda`` (the DP mixture), ``u`` its standardized
    coordinates and ``x~`` = :func:`into_heads` of the DP-PCA reconstruction
    :func:`inverse_projection` ``(z)``: the decoder starts as (a smooth version of) the
    inverse of the fixed encoder mean instead of a random map, and DP-SGD refines it.
    Reads only released values (``projection``, ``prior``, ``latent_scale``), so it spends
    nothing. The P3GM reference code does the same before DP-SGD (``tsubasat/P3GM``,
    ``src/p3gm.py``, ``pcapretrain``: 3,000 steps of batch 100, squared error); the paper
    does not mention it.

    Binned heads are left out of this fit and stay uniform (:func:`init_networks`): the
    reconstruction of a numeric coordinate is a conditional mean, and fitting a histogram to
    it would start the column collapsed at that mean, which DP-SGD then has to undo.
    """
    decoder = Decoder(config.hidden, raw_width(layout))
    optimizer = optax.adam(config.learning_rate)
    batch = config.decoder_init_batch
    steps = config.decoder_init_steps
    # the scan in equal chunks (the same steps, so the same result) to show its progress
    chunks = max(c for c in range(1, _INIT_CHUNKS + 1) if steps % c == 0)
    size = steps // chunks

    def run(
        carry: tuple[Any, Any], fixed: dict[str, Any], key: jax.Array, start: jax.Array
    ) -> tuple[Any, Any]:
        # one program for every chunk: the prior, the keys and the chunk's slice of them in it
        weights, means, chols = standardized_prior(fixed)
        scale = fixed["latent_scale"]

        def loss(params: Any, k: jax.Array) -> jax.Array:
            k_c, k_z = jax.random.split(k)
            comp = jax.random.categorical(k_c, jnp.log(weights), shape=(batch,))
            noise = normal(k_z, (batch, means.shape[1]))
            u = means[comp] + jnp.einsum("bij,bj->bi", chols[comp], noise)
            x = inverse_projection(fixed, u * scale["std"] + scale["mean"])
            raw = decoder.apply(params, u.astype(jnp.float32))
            ll = jax.vmap(functools.partial(log_likelihood, layout=layout, skip=("binned",)))
            return -jnp.mean(ll(raw, into_heads(x, layout)))

        def step(carry: tuple[Any, Any], k: jax.Array) -> tuple[tuple[Any, Any], None]:
            params, state = carry
            grads = jax.grad(loss)(params, k)
            updates, state = optimizer.update(grads, state, params)
            return (optax.apply_updates(params, updates), state), None

        keys = jax.lax.dynamic_slice_in_dim(jax.random.split(key, steps), start, size)
        return jax.lax.scan(step, carry, keys)[0]

    chunk = jax.jit(run)
    carry = (decoder_params, run_once(optimizer.init, decoder_params))
    with phase("decoder init step", total=steps) as shown:
        for i in range(chunks):
            carry = chunk(carry, fixed, key, i * size)
            shown.update(size)
    return carry[0]


def negative_elbo(
    fixed: dict[str, Any], layout: HeadLayout, config: P3GMConfig, variant: Variant | str
) -> Callable[[dict[str, Any], jax.Array, jax.Array], jax.Array]:
    """DP-SGD's loss of ONE example: ``KL - log p(x | z)`` (:func:`example_terms`), the row
    rounded to float32 first (as a float32 copy of the table would hold it)."""
    fixed_j = jax.tree_util.tree_map(jnp.asarray, fixed)

    def loss_fn(params: dict[str, Any], example: jax.Array, k: jax.Array) -> jax.Array:
        example = example.astype(jnp.float32)
        ll, kl = example_terms(
            params, fixed_j, example, k, config=config, variant=variant, layout=layout
        )
        return kl - ll

    return loss_fn


def decoding_phase(
    key: jax.Array,
    x: np.ndarray,
    fixed: dict[str, Any],
    layout: HeadLayout,
    config: P3GMConfig,
    variant: Variant | str,
    noise_multiplier: float | None,
    *,
    trainable: dict[str, Any] | None = None,
    steps: int | None = None,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """DP-SGD on the negative ELBO: ``config.dpsgd.with_noise(noise_multiplier)``
    (``noise_multiplier=None``: the non-private limit, no noise and no clipping).

    ``trainable`` continues from given parameters and ``steps`` overrides the template's run
    length (both for learning curves: :func:`jdp.synth.p3gm.paper.train_by_epoch`; a fit
    trains once from a fresh initialisation).

    DP-SGD gathers its batches from ``x`` itself (host rows, whatever their float dtype) and
    the loss rounds each example to float32: the values a float32 copy of ``x`` would hold,
    without that copy beside ``x`` (the same rows, batches and noise: privacy unchanged).
    """
    variant = get_variant(variant)
    init_key, train_key = split(key)
    if trainable is None:
        trainable = run_once(lambda k: init_networks(k, config, variant, layout, fixed), init_key)
        if variant.fixed_mean and config.decoder_init_steps > 0:
            trainable["decoder"] = initial_decoder(
                jit_once(lambda k: jax.random.fold_in(k, 1))(init_key),
                trainable["decoder"],
                fixed,
                layout,
                config,
            )
    loss_fn = negative_elbo(fixed, layout, config, variant)
    if noise_multiplier is None:
        dpsgd = dataclasses.replace(config.dpsgd, l2_clip_norm=math.inf).with_noise(0.0)
    else:
        dpsgd = config.dpsgd.with_noise(noise_multiplier)
    if steps is not None:
        dpsgd = dataclasses.replace(dpsgd, steps=steps, epochs=None)
    result = train(
        train_key,
        loss_fn,
        trainable,
        optax.adam(config.learning_rate),
        x,  # the rows themselves (host, no float32 copy): each gathered batch is cast
        dpsgd,
        performance=config.performance,
    )
    return result.params, result.ledger
