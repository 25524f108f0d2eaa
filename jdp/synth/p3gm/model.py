"""P3GM on arrays: its codec, a fit (the phases of :mod:`jdp.synth.p3gm.phases` at the noise
of one joint calibration) and sampling (Takagi et al., Algorithm 1, Sec. IV-E).

A fit runs DP-PCA and DP-EM (the encoding phase, when the variant has a fixed encoder mean),
then DP-SGD (the decoding phase), each at the noise multiplier
:func:`~jdp.synth.p3gm.privacy.calibrate_noise` chose for the whole budget (Theorem 4).

Sampling (Sec. IV-E) draws ``z`` from the DP mixture ``r_lambda`` -- never ``N(0, I)`` -- and
then each column from the decoder's distribution given ``z``: categorical columns, the label
and the point-mass state indicators from their softmax, numeric columns from a histogram head
over their integers or public cells (``"binned"`` in :mod:`jdp.nn.heads`), so the synthetic
label distribution is the model's, not a copied ratio, and a numeric column keeps its spread.
DP-VAE (a learned encoder mean) draws ``z ~ N(0, I)``.

On tables the library's one adapter (:meth:`jdp.synth.base.Method.fit`) encodes with
:func:`codec`; on a plain array, build the codec from a head layout and a row bound::

    codec = P3GMCodec(layout=(("bernoulli", 784),), row_norm_bound=28.0)
    config = for_shape(P3GMConfig(), None, budget, rows=60_000)  # the public row count
    params, ledger = fit_arrays(key, x, codec, budget, config, variant="p3gm")
    rows = sample_arrays(key, params, codec, config, 1000, variant="p3gm")
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.dpsgd.settings import AUTO_RATE
from jdp.encoding import em
from jdp.nn.heads import (
    HeadLayout,
    check_layout,
    decode_sample,
    heads_for_encoder,
    layout_width,
    raw_width,
)
from jdp.nn.vae import Decoder
from jdp.random import numpy_rng, split
from jdp.synth.p3gm.config import P3GMConfig
from jdp.synth.p3gm.phases import (
    decoding_phase,
    encoding_phase,
    latent_width,
    prior_mixture,
    sgd_noise_cut,
    standardize,
)
from jdp.synth.p3gm.privacy import calibrate_noise, non_private_ledger
from jdp.synth.p3gm.variants import Variant, get_variant

__all__ = [
    "P3GMCodec",
    "check_latent_dim",
    "codec",
    "fit_arrays",
    "sample_arrays",
    "sample_latent",
    "table_encoder",
    "target_coords",
]


# -- the codec ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class P3GMCodec:
    """P3GM's public encoding (:class:`jdp.synth.base.Codec`): a function of the schema and
    the config, or declared by hand for plain arrays.

    Attributes:
      layout: the decoder's heads (:data:`jdp.nn.heads.HeadLayout`); rows have
        :func:`~jdp.nn.heads.layout_width` coordinates.
      row_norm_bound: a public bound ``b`` on the L2 norm of a row (the encoding phase reads
        ``x / b``; rows above it are clipped by the mechanisms).
      target_coords: ``[start, stop)`` of the target's coordinates, left out of the fixed
        encoder mean under ``P3GMConfig.latent_excludes_target`` (None: no target).
      encoder: the :class:`~jdp.data.transforms.TableEncoder` of a table (None for a codec
        of plain arrays, which cannot encode or decode a table).
    """

    layout: HeadLayout
    row_norm_bound: float
    target_coords: tuple[int, int] | None = None
    encoder: TableEncoder | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "layout", check_layout(self.layout))
        object.__setattr__(self, "row_norm_bound", float(self.row_norm_bound))
        if not (math.isfinite(self.row_norm_bound) and self.row_norm_bound > 0):
            raise ValueError(f"expected a finite row_norm_bound > 0, got {self.row_norm_bound}")
        width = layout_width(self.layout)
        if self.target_coords is not None:
            start, stop = self.target_coords
            if not 0 <= start < stop <= width:
                raise ValueError(
                    f"expected target_coords within [0, {width}), got {self.target_coords}"
                )
        if self.encoder is not None and self.encoder.width != width:
            raise ValueError(
                f"expected a layout of the encoder's width {self.encoder.width}, got {width}"
            )

    def encode(self, data: Table) -> np.ndarray:
        """The encoded ``(n, d)`` rows (private: they are the records), in float32: DP-SGD's
        loss rounds each example to float32 and the encoding phase reads float64 blocks of
        them (:class:`~jdp.mechanisms.suffstats.ScaledRows`), so a float64 copy would only
        double the memory a fit holds (issue 29: 16 Adults' 521k rows take 237 MiB, not
        475)."""
        return self._table_encoder().encode(data, dtype=np.float32)

    def decode(self, key: jax.Array, rows: np.ndarray) -> pd.DataFrame:
        """Drawn rows -> a table (post-processing; deterministic, so ``key`` is unused: the
        draws were made by :func:`sample_arrays`)."""
        del key
        return self._table_encoder().decode(rows)

    def _table_encoder(self) -> TableEncoder:
        if self.encoder is None:
            raise ValueError("this P3GMCodec was declared for arrays: it has no table encoder")
        return self.encoder


def table_encoder(schema: Schema) -> TableEncoder:
    """The public encoder: numeric columns min-max to [0, 1], one-hot categoricals (label too)."""
    return TableEncoder(schema, continuous_range=(0.0, 1.0))


def target_coords(encoder: TableEncoder) -> tuple[int, int] | None:
    """``[start, stop)`` of the target column in an encoded row (public), or None."""
    target = encoder.schema.target
    spans = [s for s in encoder.spans if s.name == target]
    return (spans[0].start, spans[-1].stop) if spans else None


def codec(schema: Schema, config: P3GMConfig) -> P3GMCodec:
    """The codec of a table (the registry's): :func:`table_encoder`, its heads by
    ``config.numeric_head`` (:func:`jdp.nn.heads.heads_for_encoder`, ``"auto"`` bounded by
    the decoder's ``hidden`` width), its public row bound and target coordinates."""
    encoder = table_encoder(schema)
    layout = heads_for_encoder(
        encoder,
        numeric_head=config.numeric_head,
        numeric_bins=config.numeric_bins,
        max_raw_width=config.hidden,
    )
    return P3GMCodec(
        layout=layout,
        row_norm_bound=encoder.row_norm_bound,
        target_coords=target_coords(encoder),
        encoder=encoder,
    )


# -- fit and sample on arrays ------------------------------------------------------------------


def check_latent_dim(config: P3GMConfig, codec: P3GMCodec) -> None:
    """Refuse (before any work) a ``latent_dim`` wider than the columns the fixed encoder
    mean reads: the codec's width, less the target's coordinates under
    ``latent_excludes_target``. Public: a function of the schema and the config."""
    inputs = layout_width(codec.layout)
    if config.latent_excludes_target and codec.target_coords is not None:
        inputs -= codec.target_coords[1] - codec.target_coords[0]
    if config.latent_dim is not None and config.latent_dim > inputs:
        raise ValueError(
            f"latent_dim={config.latent_dim} is more than the {inputs} encoded columns the "
            f"encoder mean reads on this table: set latent_dim <= {inputs} (jdp fit --set "
            f"latent_dim={inputs}, or latent_dim={inputs} in Python)"
        )


def for_shape(
    config: P3GMConfig, schema: Schema, budget: PrivacyBudget, rows: float | None
) -> P3GMConfig | None:
    """``config`` with ``dpsgd.sampling_prob="auto"`` resolved to ``min(1, B̄ / rows)``
    (:meth:`jdp.dpsgd.DPSGDConfig.for_rows`) for the declared or released row count ``rows``
    (``None`` while it is unknown); any other config unchanged. Public values only."""
    if config.dpsgd.sampling_prob != AUTO_RATE:
        return config
    if rows is None:
        return None
    return dataclasses.replace(config, dpsgd=config.dpsgd.for_rows(max(rows, 1.0)))


def fit_arrays(
    key: jax.Array,
    x: np.ndarray,
    codec: P3GMCodec,
    budget: PrivacyBudget,
    config: P3GMConfig,
    *,
    variant: Variant | str = "p3gm",
) -> tuple[dict[str, Any], PrivacyLedger]:
    """Fit a variant on encoded rows ``x`` (the decoder's data space, ``codec.layout``).

    Returns ``(params, ledger)``: ``params`` holds ``"trainable"`` (flax parameters),
    ``"projection"``, ``"prior"`` and ``"latent_scale"`` (absent without an encoding phase),
    all released values or post-processing of them.
    """
    variant = get_variant(variant)
    if variant.fixed_mean:
        check_latent_dim(config, codec)
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):  # a float32 table stays as it is
        x = x.astype(np.float64)
    enc_key, dec_key = split(key)
    layout = codec.layout
    cut = sgd_noise_cut(config, variant, layout)
    noise = calibrate_noise(config, variant, budget, noise_cut=cut) if variant.private else None
    fixed: dict[str, Any] = {}
    ledger = PrivacyLedger()
    if variant.fixed_mean:
        fixed, ledger = encoding_phase(
            numpy_rng(enc_key), x, codec.row_norm_bound, config, noise, codec.target_coords
        )
    trainable, sgd_ledger = decoding_phase(
        dec_key, x, fixed, layout, config, variant, None if noise is None else noise["sgd"]
    )
    ledger = ledger + sgd_ledger if variant.private else non_private_ledger(variant.phases(config))
    return {"trainable": trainable, **fixed}, ledger


def sample_latent(
    key: jax.Array, params: dict[str, Any], variant: Variant | str, n: int, latent_dim: int
) -> np.ndarray:
    """``z ~ r_lambda`` (the DP mixture) with a fixed encoder mean, ``N(0, I)`` without."""
    rng = numpy_rng(key)
    if not get_variant(variant).fixed_mean:
        return rng.standard_normal((n, latent_dim))
    return em.sample(rng, prior_mixture(params), n)


def sample_arrays(
    key: jax.Array,
    params: dict[str, Any],
    codec: P3GMCodec,
    config: P3GMConfig,
    n: int,
    *,
    variant: Variant | str = "p3gm",
) -> np.ndarray:
    """``n`` encoded synthetic rows: latent draw, decoder, head-wise draws (post-processing)."""
    variant = get_variant(variant)
    layout = codec.layout
    z_key, x_key = jax.random.split(key)
    z = sample_latent(z_key, params, variant, n, latent_width(config, layout_width(layout), params))
    if variant.fixed_mean:
        z = standardize(params, z)
    z = jnp.asarray(z, jnp.float32)
    out = _generate(x_key, params["trainable"]["decoder"], z, layout=layout, hidden=config.hidden)
    return np.asarray(out, dtype=np.float64)


@functools.partial(jax.jit, static_argnames=("layout", "hidden"))
def _generate(
    key: jax.Array, decoder_params: Any, z: jax.Array, *, layout: HeadLayout, hidden: int
) -> jax.Array:
    raw = Decoder(hidden, raw_width(layout)).apply(decoder_params, z)
    return decode_sample(key, raw, layout, stochastic=False)
