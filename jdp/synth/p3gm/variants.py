"""P3GM's variants as values: what differs between P3GM, P3GM(AE), DP-VAE and PGM.

Takagi et al. compare P3GM with three models that share its code (Sec. V-A, VI-B, Table V).
They differ in three choices only, so a variant is those three fields:

================  ===============  ================  =========
variant           encoder mean     encoder variance  private
================  ===============  ================  =========
``p3gm``          DP-PCA (fixed)   learned           yes
``p3gm-ae``       DP-PCA (fixed)   zero              yes
``dp-vae``        learned          learned           yes
``pgm``           DP-PCA (fixed)   learned           no
================  ===============  ================  =========

A fixed encoder mean ``c_x`` comes from the encoding phase (DP-PCA, then DP-EM on the
projections), whose mixture ``r_lambda`` is the prior of the KL term and the sampling
distribution (Sec. IV-D, IV-E); a learned mean has no encoding phase and the prior
``N(0, I)`` (Kingma & Welling 2013). A zero encoder variance makes ``z = c_x``: no encoder
network and no KL term (P3GM(AE)). A non-private variant runs every phase without noise or
clipping and records ``NonPrivateDpEvent`` s (PGM: the paper's non-private reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jdp.synth.p3gm.config import PHASES, P3GMConfig

EncoderMean = Literal["dp-pca", "learned"]
EncoderVariance = Literal["learned", "zero"]


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One member of the P3GM family (see the module docstring).

    Attributes:
      name: the registry name.
      description: one line for ``jdp fit --help``.
      encoder_mean: ``"dp-pca"``: the fixed projection ``c_x`` of the encoding phase, with
        the DP mixture as prior; ``"learned"``: an encoder head, with the prior ``N(0, I)``.
      encoder_variance: ``"learned"`` (an encoder log-variance head) or ``"zero"``
        (``z = c_x``; needs the fixed mean).
      private: ``False`` runs every phase without noise and clipping (PGM).
    """

    name: str
    description: str
    encoder_mean: EncoderMean
    encoder_variance: EncoderVariance
    private: bool = True

    def __post_init__(self) -> None:
        if self.encoder_mean not in ("dp-pca", "learned"):
            raise ValueError(
                f"expected encoder_mean in ('dp-pca', 'learned'), got {self.encoder_mean!r}"
            )
        if self.encoder_variance not in ("learned", "zero"):
            raise ValueError(
                f"expected encoder_variance in ('learned', 'zero'), got {self.encoder_variance!r}"
            )
        if self.encoder_variance == "zero" and not self.fixed_mean:
            raise ValueError("expected encoder_mean='dp-pca' with encoder_variance='zero'")

    @property
    def fixed_mean(self) -> bool:
        """Whether the encoding phase runs: fixed mean ``c_x``, DP mixture prior."""
        return self.encoder_mean == "dp-pca"

    @property
    def has_encoder(self) -> bool:
        """Whether there is an encoder network (a learned variance head)."""
        return self.encoder_variance == "learned"

    def phases(self, config: P3GMConfig) -> tuple[str, ...]:
        """The phases that touch the data, in ledger order: DP-SGD alone without an
        encoding phase (the ``"pca"`` phase is the DP centre alone without
        ``config.latent_dim``)."""
        return PHASES if self.fixed_mean else ("sgd",)


P3GM = Variant(
    name="p3gm",
    description="P3GM: DP-PCA encoder mean, DP-EM mixture prior, DP-SGD decoder (Takagi et al.)",
    encoder_mean="dp-pca",
    encoder_variance="learned",
)
P3GM_AE = Variant(
    name="p3gm-ae",
    description="P3GM(AE): P3GM with encoder variance fixed to 0 (decoder-only DP-SGD)",
    encoder_mean="dp-pca",
    encoder_variance="zero",
)
DP_VAE = Variant(
    name="dp-vae",
    description="DP-VAE: VAE trained end to end by DP-SGD, N(0, I) prior (P3GM baseline)",
    encoder_mean="learned",
    encoder_variance="learned",
)
PGM = Variant(
    name="pgm",
    description="PGM: NON-PRIVATE phased generative model (reference for P3GM; infinite epsilon)",
    encoder_mean="dp-pca",
    encoder_variance="learned",
    private=False,
)

#: Every variant by name, in the order the paper introduces them.
VARIANTS: dict[str, Variant] = {v.name: v for v in (P3GM, P3GM_AE, PGM, DP_VAE)}


def get_variant(variant: Variant | str) -> Variant:
    """``variant`` itself, or the variant registered under that name."""
    if isinstance(variant, Variant):
        return variant
    if variant not in VARIANTS:
        raise ValueError(f"expected variant in {tuple(VARIANTS)}, got {variant!r}")
    return VARIANTS[variant]
