"""P3GM: privacy-preserving phased generative model, and its baselines (Takagi et al.).

One module family (this file holds the shared core; ``dp_vae.py``, ``p3gm_ae.py`` and
``pgm.py`` register the baselines with it). A fit is three phases (Algorithm 1):

1. **DP-PCA** (encoding phase, Sec. IV-D): rows ``x`` (encoded by the public
   :class:`~jdp.data.transforms.TableEncoder`, then divided by its public
   ``row_norm_bound`` so ``||x|| <= 1``) are centred at a DP mean and projected on the top
   ``d'`` eigenvectors of the Analyze-Gauss release (:func:`jdp.encoding.pca.dp_pca_gaussian`). The
   projection ``c_x = (x / b - mu_DP) V`` is the *fixed encoder mean* ``mu_phi(x)``.
2. **DP-EM** (Sec. IV-D): a ``K``-component diagonal Gaussian mixture ``r_lambda`` fitted on
   the projections ``c_x`` (:func:`jdp.encoding.em.dp_em`, ``T_e`` accounted iterations).
3. **DP-SGD** (decoding phase, Sec. IV-C, eq. (7)): the ELBO
   ``E_q[log p(x|z)] - KL(q(z|x) || r_lambda)`` with ``q(z|x) = N(c_x, diag sigma_phi(x)^2)``,
   ``sigma_phi`` the learned encoder head, the KL by Hershey & Olsen's variational
   approximation ([23], :func:`jdp.nn.vae.kl_to_mixture`), trained by
   :func:`jdp.dpsgd.train.train` (per-example clipping, Poisson sampling).

Sampling (Sec. IV-E) draws ``z`` from the DP mixture ``r_lambda`` -- never ``N(0, I)`` -- and
decodes; the label is one of the decoded columns (a softmax head), so the synthetic label
distribution is the model's, not a copied ratio.

Variants (Sec. V-A, VI-B): ``"p3gm"``; ``"p3gm-ae"`` (encoder variance fixed to 0: ``z = c_x``,
no KL term, no encoder network); ``"pgm"`` (the same model with every phase non-private,
ledger entries ``NonPrivateDpEvent``); ``"dp-vae"`` (end-to-end VAE under DP-SGD, learned
encoder mean, prior and sampling ``N(0, I)``, the whole budget to DP-SGD).

Privacy (P3GM Theorem 4, computed rather than assumed): the ledger holds the phases' events
``["dp-mean", "dp-pca", "dp-em" x T_e, "dp-sgd"]``; :func:`calibrate_noise` chooses their
noise multipliers from ONE ``(epsilon, delta)``: each phase first gets the multiplier that
alone spends ``split_i * epsilon``, then one common factor on all of them is calibrated
(:func:`accounting.calibrate.calibrate`) so that the RDP composition of all events meets
``epsilon`` exactly (docs/privacy.md, "P3GM composition").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.builders import dpsgd_event
from accounting.validation import check_count, check_positive, check_probability
from jdp.encoding import em, pca
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.nn.vae import (
    Decoder,
    Encoder,
    HeadLayout,
    decode_sample,
    kl_to_mixture,
    kl_to_standard_normal,
    log_likelihood,
)
from jdp.random import numpy_rng
from jdp.synth.base import FittedModel, Method, Synthesizer, register
from jdp.dpsgd.train import train

Variant = Literal["p3gm", "p3gm-ae", "pgm", "dp-vae"]
VARIANTS: tuple[str, ...] = ("p3gm", "p3gm-ae", "pgm", "dp-vae")
PHASES = ("pca", "em", "sgd")


@dataclass(frozen=True, kw_only=True)
class P3GMConfig:
    """Configuration of P3GM and its baselines (defaults: P3GM Sec. VI, Table IV, Adult).

    Privacy parameters:
      budget_split: shares of epsilon for (DP-PCA incl. its DP mean, DP-EM, DP-SGD), each the
        epsilon that phase would spend alone before the joint calibration (Sec. VI-E: a
        3:7 encoder:decoder split; (0.1, 0.2, 0.7) here). Ignored by ``dp-vae`` (all to
        DP-SGD) and ``pgm`` (non-private).
      l2_clip_norm: DP-SGD per-example gradient bound ``C``.
      pca_clip_norm: row bound of the centred rows in Analyze Gauss (rows are scaled to norm
        <= 1 by the public encoder bound, so 1 rarely clips).
      em_clip_norm: row bound of the projections in DP-EM (``||c_x|| <= ||x - mu||``).
      sampling_prob: DP-SGD Poisson rate ``q`` (the paper's ``B / N``: 200 / 45222 on Adult).
      expected_batch_size: the public constant ``B̄`` DP-SGD divides its noisy sum by (the
        paper's ``B = 200``, which is ``q N`` on Adult at the default ``q``). Declared, never
        computed from the private row count; set it to ``q N`` for your declared ``N`` to
        keep the paper's step size.

    Model and training:
      latent_dim: ``d'`` (10 in the paper); ``None`` skips the reduction (the paper's
        Kaggle-credit setting): the fixed encoder mean is then ``x / b`` itself and no PCA is run.
      n_components: mixture components ``K`` (3). em_iterations: ``T_e`` (20).
      hidden: hidden width of encoder and decoder (1000).
      epochs: DP-SGD epochs (steps = ceil(epochs / q)). learning_rate: Adam step (1e-3).
      reg_covar: variance floor of the mixture components.
      logvar_init: initial bias of the encoder's log-variance head, in standardized latent
        units (-4: posterior std 0.14 of the latent spread at the start; DP-VAE: 0).
      microbatch_size: per-example gradients held in memory at once (performance only).
      dpsgd_method: per-example clipping path of :func:`jdp.dpsgd.train.train` (performance only:
        ``"auto"`` picks ghost clipping, ``"general"`` compiles faster for tiny networks).
    """

    latent_dim: int | None = 10
    n_components: int = 3
    em_iterations: int = 20
    hidden: int = 1000
    epochs: float = 5.0
    sampling_prob: float = 200 / 45222
    expected_batch_size: float = 200.0
    learning_rate: float = 1e-3
    l2_clip_norm: float = 1.0
    pca_clip_norm: float = 1.0
    em_clip_norm: float = 1.0
    budget_split: tuple[float, float, float] = (0.1, 0.2, 0.7)
    reg_covar: float = 1e-6
    logvar_init: float = -4.0
    microbatch_size: int | None = None
    dpsgd_method: str = "auto"

    def __post_init__(self) -> None:
        if self.latent_dim is not None:
            check_count("latent_dim", self.latent_dim, minimum=1)
        check_count("n_components", self.n_components, minimum=1)
        check_count("em_iterations", self.em_iterations, minimum=1)
        check_count("hidden", self.hidden, minimum=1)
        check_positive("epochs", self.epochs)
        check_probability("sampling_prob", self.sampling_prob)
        check_positive("expected_batch_size", self.expected_batch_size)
        check_positive("learning_rate", self.learning_rate)
        for name in ("l2_clip_norm", "pca_clip_norm", "em_clip_norm", "reg_covar"):
            check_positive(name, getattr(self, name))
        split = tuple(float(s) for s in self.budget_split)
        if len(split) != 3 or any(not s > 0 for s in split):
            raise ValueError(
                f"expected budget_split of three positive shares, got {self.budget_split}"
            )
        object.__setattr__(self, "budget_split", tuple(s / sum(split) for s in split))
        if self.microbatch_size is not None:
            check_count("microbatch_size", self.microbatch_size, minimum=1)
        if self.dpsgd_method not in ("auto", "general", "ghost"):
            raise ValueError(
                f"expected dpsgd_method in ('auto', 'general', 'ghost'), got {self.dpsgd_method!r}"
            )

    @property
    def steps(self) -> int:
        return max(1, math.ceil(self.epochs / self.sampling_prob))


# -- the data layout ---------------------------------------------------------------------------


def table_encoder(schema: Schema) -> TableEncoder:
    """The public encoder: numeric columns min-max to [0, 1], one-hot categoricals (label too)."""
    return TableEncoder(schema, continuous_range=(0.0, 1.0))


def head_layout(encoder: TableEncoder) -> HeadLayout:
    """Decoder heads from the encoder's spans: a Bernoulli (cross-entropy) head per [0, 1]
    numeric coordinate (pixels, min-max scaled columns), a softmax head per categorical."""
    layout: list[tuple[str, int]] = []
    for span in encoder.spans:
        kind = "categorical" if span.activation == "softmax" else "bernoulli"
        if layout and kind == "bernoulli" and layout[-1][0] == "bernoulli":
            layout[-1] = ("bernoulli", layout[-1][1] + span.size)
        else:
            layout.append((kind, span.size))
    return tuple(layout)


# -- privacy: the phases' events and their joint calibration --------------------------------------


def single_phase_events(
    config: P3GMConfig, phase: str, noise_multiplier: float
) -> list[tuple[str, ev.DpEvent]]:
    """The labelled events one phase records at noise multiplier ``z``.

    They mirror what :func:`jdp.encoding.pca.dp_pca_gaussian` (``centre="dp"``: a DP mean, then the
    scatter release), :func:`jdp.encoding.em.dp_em` (three Gaussian releases per iteration) and
    :func:`jdp.dpsgd.train.train` record; :func:`fit_arrays` checks the fitted ledger against the
    target, so a mismatch cannot go unnoticed.
    """
    z = noise_multiplier
    if phase == "pca":
        return [("dp-mean", ev.GaussianDpEvent(z)), ("dp-pca", ev.GaussianDpEvent(z))]
    if phase == "em":
        return [("dp-em", ev.ComposedDpEvent([ev.GaussianDpEvent(z)] * 3))] * config.em_iterations
    if phase == "sgd":
        return [("dp-sgd", dpsgd_event(z, config.sampling_prob, config.steps))]
    raise ValueError(f"expected phase in {PHASES}, got {phase!r}")


def phase_events(config: P3GMConfig, multipliers: dict[str, float]) -> list[tuple[str, ev.DpEvent]]:
    """All labelled events of a fit with these per-phase multipliers, in ledger order."""
    return [
        e
        for p in PHASES
        if p in multipliers
        for e in single_phase_events(config, p, multipliers[p])
    ]


def private_phases(config: P3GMConfig, variant: Variant) -> tuple[str, ...]:
    """Which phases touch the data privately: DP-VAE has only DP-SGD; no PCA without ``d'``."""
    if variant == "dp-vae":
        return ("sgd",)
    return PHASES if config.latent_dim is not None else ("em", "sgd")


def calibrate_noise(
    config: P3GMConfig, variant: Variant, budget: PrivacyBudget
) -> dict[str, float]:
    """Noise multipliers of the private phases for ONE ``(epsilon, delta)`` (Theorem 4).

    Phase ``i`` with share ``s_i`` (renormalised over the phases present) first gets
    ``z_i`` with ``eps(phase_i(z_i)) = s_i * epsilon`` alone; then one factor ``k`` is
    calibrated so that the RDP composition of all phases at ``(k z_i)_i`` is
    ``epsilon``-DP at ``delta`` (``k < 1``: RDP composes better than the sum).
    """
    from accounting.calibrate import calibrate

    phases = private_phases(config, variant)
    shares = {p: config.budget_split[PHASES.index(p)] for p in phases}
    total = sum(shares.values())

    def composed(z: dict[str, float]) -> ev.DpEvent:
        return ev.ComposedDpEvent([e for _, e in phase_events(config, z)])

    base = {
        p: calibrate(
            lambda s, p=p: composed({p: s}),
            target_epsilon=budget.epsilon * shares[p] / total,
            target_delta=budget.delta,
        )
        for p in phases
    }
    factor = calibrate(
        lambda k: composed({p: k * z for p, z in base.items()}),
        target_epsilon=budget.epsilon,
        target_delta=budget.delta,
    )
    return {p: factor * z for p, z in base.items()}


# -- the fixed encoder mean and the prior ----------------------------------------------------------


def project(params: dict[str, Any], x: jax.Array) -> jax.Array:
    """The fixed encoder mean ``c_x = (x / b - centre) V`` (the DP-PCA projection)."""
    proj = params["projection"]
    return (x / proj["row_norm_bound"] - proj["centre"]) @ proj["components"]


def latent_moments(prior: dict[str, Any]) -> dict[str, np.ndarray]:
    """Mean and std per latent coordinate of the DP mixture (post-processing of DP-EM):
    ``m = sum_k w_k mu_k``, ``s^2 = sum_k w_k (sigma_k^2 + mu_k^2) - m^2``."""
    w = np.asarray(prior["weights"])[:, None]
    means, var = np.asarray(prior["means"]), np.asarray(prior["variances"])
    m = np.sum(w * means, axis=0)
    return {"mean": m, "std": np.sqrt(np.sum(w * (var + means**2), axis=0) - m**2)}


def standardized_prior(params: dict[str, Any]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The DP mixture in standardized coordinates ``u = (z - m) / s``: (weights, means, logvars).

    The latent is handled in these coordinates (the encoder mean ``(c_x - m) / s``, the
    reparametrised draw, the decoder input): an invertible affine map fixed by released
    values, under which the KL term is invariant, and which gives the decoder inputs of unit
    scale whatever the scale of the projection (DP-SGD moves weights slowly).
    """
    prior, scale = params["prior"], params["latent_scale"]
    means = (prior["means"] - scale["mean"]) / scale["std"]
    return prior["weights"], means, jnp.log(prior["variances"]) - 2 * jnp.log(scale["std"])


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
) -> tuple[dict[str, Any], PrivacyLedger]:
    """DP-PCA then DP-EM on the projections (``noise=None``: the non-private PGM limit).

    Returns the ``"projection"`` and ``"prior"`` parameter groups and the phases' ledger.
    """
    scaled = x / row_norm_bound
    d = x.shape[1]
    ledger = PrivacyLedger()
    if config.latent_dim is None:
        projection = {"components": np.eye(d), "centre": np.zeros(d)}
    else:
        z = 0.0 if noise is None else noise["pca"]
        result, pca_ledger = pca.dp_pca_gaussian(
            rng,
            scaled,
            config.latent_dim,
            noise_multiplier=z,
            centre="dp",
            l2_clip_norm=config.pca_clip_norm,
        )
        projection = {"components": result.components, "centre": result.centre}
        ledger = ledger + pca_ledger
    projection["row_norm_bound"] = np.asarray(row_norm_bound, dtype=np.float64)
    latent = (scaled - projection["centre"]) @ projection["components"]
    fitted, em_ledger = em.dp_em(
        rng,
        latent,
        config.n_components,
        noise_multiplier=0.0 if noise is None else noise["em"],
        steps=config.em_iterations,
        covariance_type="diag",
        l2_clip_norm=config.em_clip_norm,
        reg_covar=config.reg_covar,
    )
    mix = fitted.mixture
    prior = {"weights": mix.weights, "means": mix.means, "variances": mix.covariances}
    fixed = {"projection": projection, "prior": prior, "latent_scale": latent_moments(prior)}
    return fixed, ledger + em_ledger


# -- the decoding phase ----------------------------------------------------------------------------


def networks(config: P3GMConfig, variant: Variant, d: int) -> tuple[Encoder | None, Decoder, int]:
    """(encoder or None for P3GM(AE), decoder, latent width) of a variant."""
    latent = d if config.latent_dim is None else config.latent_dim
    if variant == "p3gm-ae":
        encoder = None
    elif variant == "dp-vae":
        encoder = Encoder(config.hidden, latent, learn_mean=True)
    else:
        encoder = Encoder(config.hidden, latent, learn_mean=False, logvar_init=config.logvar_init)
    return encoder, Decoder(config.hidden, d), latent


def init_networks(key: jax.Array, config: P3GMConfig, variant: Variant, d: int) -> dict[str, Any]:
    """Initial ``{"encoder"?, "decoder"}`` flax parameters (data-independent)."""
    encoder, decoder, latent = networks(config, variant, d)
    k_enc, k_dec = jax.random.split(key)
    out = {"decoder": decoder.init(k_dec, jnp.zeros((latent,)))}
    if encoder is not None:
        out["encoder"] = encoder.init(k_enc, jnp.zeros((d,)))
    return out


def example_terms(
    trainable: dict[str, Any],
    fixed: dict[str, Any],
    x: jax.Array,
    key: jax.Array,
    *,
    config: P3GMConfig,
    variant: Variant,
    layout: HeadLayout,
) -> tuple[jax.Array, jax.Array]:
    """``(log p(x | z), KL)`` of ONE example with one reparametrised ``z`` (eq. (7), L = 1).

    * p3gm / pgm: ``q = N(c_x, diag e^logvar(x))`` with ``c_x`` the fixed projection, in the
      standardized coordinates of :func:`standardized_prior`; KL to the mixture prior by
      Hershey & Olsen's approximation.
    * p3gm-ae: ``z = c_x`` (variance 0); the KL term is a constant and is dropped.
    * dp-vae: learned mean and log-variance; KL to ``N(0, I)`` in closed form.
    """
    encoder, decoder, _ = networks(config, variant, x.shape[0])
    if variant == "p3gm-ae":
        z, kl = standardize(fixed, project(fixed, x)), jnp.zeros(())
    else:
        mean, logvar = encoder.apply(trainable["encoder"], x)
        if variant == "dp-vae":
            kl = kl_to_standard_normal(mean, logvar)
        else:
            mean = standardize(fixed, project(fixed, x))
            kl = kl_to_mixture(mean, logvar, *standardized_prior(fixed))
        z = mean + jnp.exp(0.5 * logvar) * jax.random.normal(key, mean.shape)
    return log_likelihood(decoder.apply(trainable["decoder"], z), x, layout), kl


def decoding_phase(
    key: jax.Array,
    x: np.ndarray,
    fixed: dict[str, Any],
    layout: HeadLayout,
    config: P3GMConfig,
    variant: Variant,
    noise_multiplier: float | None,
    *,
    trainable: dict[str, Any] | None = None,
    epochs: float | None = None,
    steps: int | None = None,
    progress: bool = False,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """DP-SGD on the negative ELBO (``noise_multiplier=None``: non-private, no clipping).

    ``trainable`` continues from given parameters and ``epochs`` or ``steps`` (at most one)
    overrides the config's run length (both for learning curves; a fit trains once from a
    fresh initialisation).
    """
    if epochs is not None and steps is not None:
        raise ValueError("expected at most one of epochs and steps")
    init_key, train_key = jax.random.split(key)
    if trainable is None:
        trainable = init_networks(init_key, config, variant, x.shape[1])
    fixed_j = jax.tree_util.tree_map(jnp.asarray, fixed)

    def loss_fn(params: dict[str, Any], example: jax.Array, k: jax.Array) -> jax.Array:
        ll, kl = example_terms(
            params, fixed_j, example, k, config=config, variant=variant, layout=layout
        )
        return kl - ll

    private = noise_multiplier is not None
    result = train(
        train_key,
        loss_fn,
        trainable,
        optax.adam(config.learning_rate),
        jnp.asarray(x, jnp.float32),
        l2_clip_norm=config.l2_clip_norm if private else math.inf,
        sampling_prob=config.sampling_prob,
        expected_batch_size=config.expected_batch_size,
        epochs=None if steps is not None else (config.epochs if epochs is None else epochs),
        steps=steps,
        noise_multiplier=noise_multiplier if private else 0.0,
        microbatch_size=config.microbatch_size,
        method=config.dpsgd_method,
        progress=progress,
    )
    return result.params, result.ledger


# -- fit and sample on arrays ----------------------------------------------------------------------


def fit_arrays(
    key: jax.Array,
    x: np.ndarray,
    layout: HeadLayout,
    row_norm_bound: float,
    budget: PrivacyBudget,
    config: P3GMConfig,
    variant: Variant = "p3gm",
    *,
    progress: bool = False,
) -> tuple[dict[str, Any], PrivacyLedger]:
    """Fit a variant on an encoded matrix ``x`` (rows in the decoder's data space).

    Returns ``(params, ledger)``: ``params`` holds ``"trainable"`` (flax parameters),
    ``"projection"``, ``"prior"`` and ``"latent_scale"`` (absent for DP-VAE), all released
    values or post-processing of them.
    """
    if variant not in VARIANTS:
        raise ValueError(f"expected variant in {VARIANTS}, got {variant!r}")
    x = np.asarray(x, dtype=np.float64)
    enc_key, dec_key = jax.random.split(key)
    noise = None if variant == "pgm" else calibrate_noise(config, variant, budget)
    fixed: dict[str, Any] = {}
    ledger = PrivacyLedger()
    if variant != "dp-vae":
        fixed, ledger = encoding_phase(numpy_rng(enc_key), x, row_norm_bound, config, noise)
    trainable, sgd_ledger = decoding_phase(
        dec_key, x, fixed, layout, config, variant, None if noise is None else noise["sgd"]
    )
    ledger = ledger + sgd_ledger
    if variant == "pgm":
        ledger = PrivacyLedger()
        for phase in ("pca", "em", "sgd") if config.latent_dim is not None else ("em", "sgd"):
            ledger = ledger.record(
                f"{phase} (non-private)", ev.NonPrivateDpEvent(), note="PGM: no noise, no clipping"
            )
    return {"trainable": trainable, **fixed}, ledger


def sample_latent(
    key: jax.Array, params: dict[str, Any], variant: Variant, n: int, latent_dim: int
) -> np.ndarray:
    """``z ~ r_lambda`` (the DP mixture) for P3GM-family models, ``N(0, I)`` for DP-VAE."""
    rng = numpy_rng(key)
    if variant == "dp-vae":
        return rng.standard_normal((n, latent_dim))
    prior = params["prior"]
    mixture = em.Mixture(
        weights=np.asarray(prior["weights"], dtype=np.float64),
        means=np.asarray(prior["means"], dtype=np.float64),
        covariances=np.asarray(prior["variances"], dtype=np.float64),
        covariance_type="diag",
    )
    return em.sample(rng, mixture, n)


def sample_arrays(
    key: jax.Array,
    params: dict[str, Any],
    layout: HeadLayout,
    config: P3GMConfig,
    variant: Variant,
    n: int,
) -> np.ndarray:
    """``n`` encoded synthetic rows: latent draw, decoder, head-wise decoding (post-processing)."""
    d = sum(w for _, w in layout)
    latent = d if config.latent_dim is None else config.latent_dim
    z_key, x_key = jax.random.split(key)
    z = sample_latent(z_key, params, variant, n, latent)
    if variant != "dp-vae":
        z = standardize(params, z)
    z = jnp.asarray(z, jnp.float32)
    out = _generate(x_key, params["trainable"]["decoder"], z, layout=layout, hidden=config.hidden)
    return np.asarray(out, dtype=np.float64)


@functools.partial(jax.jit, static_argnames=("layout", "hidden"))
def _generate(
    key: jax.Array, decoder_params: Any, z: jax.Array, *, layout: HeadLayout, hidden: int
) -> jax.Array:
    raw = Decoder(hidden, sum(w for _, w in layout)).apply(decoder_params, z)
    return decode_sample(key, raw, layout, stochastic=False)


# -- the synthesizer protocol ----------------------------------------------------------------------


def fit_variant(variant: Variant) -> Any:
    """The registry ``fit`` of a variant: Table -> encoded matrix -> :func:`fit_arrays`."""

    def fit(key: jax.Array, data: Table, budget: PrivacyBudget, config: P3GMConfig) -> FittedModel:
        encoder = table_encoder(data.schema)
        params, ledger = fit_arrays(
            key,
            encoder.encode(data),
            head_layout(encoder),
            encoder.row_norm_bound,
            budget,
            config,
            variant,
        )
        return FittedModel(
            method=variant,
            params=params,
            schema=data.schema,
            config=config,
            budget=budget,
            ledger=ledger,
        )

    return fit


def sample_variant(variant: Variant) -> Any:
    """The registry ``sample`` of a variant (post-processing of the fitted model)."""

    def sample(key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
        encoder = table_encoder(model.schema)
        x = sample_arrays(key, model.params, head_layout(encoder), model.config, variant, n)
        return encoder.decode(x)

    return sample


def register_variant(variant: Variant, description: str) -> Method:
    """Register a variant under its name with the shared config, fit and sample."""
    return register(
        Method(
            name=variant,
            config_cls=P3GMConfig,
            fit=fit_variant(variant),
            sample=sample_variant(variant),
            description=description,
        )
    )


register_variant(
    "p3gm", "P3GM: DP-PCA encoder mean, DP-EM mixture prior, DP-SGD decoder (Takagi et al.)"
)


class P3GM(Synthesizer):
    """P3GM, scikit-learn style: ``P3GM(epsilon=1, delta=1e-5, schema=s).fit(df).sample(n)``."""

    method = "p3gm"


__all__ = [
    "P3GM",
    "P3GMConfig",
    "calibrate_noise",
    "fit_arrays",
    "head_layout",
    "phase_events",
    "project",
    "sample_arrays",
    "table_encoder",
]
