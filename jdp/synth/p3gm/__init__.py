"""P3GM (privacy-preserving phased generative model, Takagi et al.) and its baselines.

One model family, four registered methods: ``"p3gm"``, ``"p3gm-ae"``, ``"dp-vae"`` and
``"pgm"`` (the non-private reference), each a :class:`~jdp.synth.p3gm.variants.Variant` of the
same code. Modules: :mod:`~jdp.synth.p3gm.config` (:class:`P3GMConfig`),
:mod:`~jdp.synth.p3gm.variants` (what differs), :mod:`~jdp.synth.p3gm.phases` (DP-PCA, DP-EM,
DP-SGD), :mod:`~jdp.synth.p3gm.privacy` (the phases' events and their joint calibration,
Theorem 4), :mod:`~jdp.synth.p3gm.model` (the codec, fit and sampling on arrays) and
:mod:`~jdp.synth.p3gm.paper` (the paper's experiments).
"""

from __future__ import annotations

import functools

from jdp.data.quantile_scale import LOG
from jdp.synth.base import Method, register
from jdp.synth.estimator import Synthesizer
from jdp.synth.feasibility import register_minimum
from jdp.synth.p3gm.config import P3GMConfig
from jdp.synth.p3gm.model import P3GMCodec, codec, fit_arrays, for_shape, sample_arrays
from jdp.synth.p3gm.variants import VARIANTS, Variant

__all__ = ["DPVAE", "P3GM", "P3GMAE", "PGM", "P3GMCodec", "P3GMConfig", "Variant"]

#: Where a variant's default config departs from :class:`P3GMConfig`'s. DP-VAE takes the log
#: scale on every column (``"tails"`` differs from it on signed columns only): on creditcard
#: and creditcard-paper (5,000 rows, eps 1) its off columns and 2-way TVD improved and its
#: TSTR did not fall; P3GM's off columns and TVD improved too, but its TSTR fell on
#: creditcard-paper (4 seeds), so it keeps "tails" (docs/results/numeric_columns.md).
DEFAULTS: dict[str, tuple[tuple[str, object], ...]] = {"dp-vae": (("scale", LOG),)}

for _variant in VARIANTS.values():
    register(
        Method(
            name=_variant.name,
            config_cls=P3GMConfig,
            codec=codec,
            fit_arrays=functools.partial(fit_arrays, variant=_variant),
            sample_arrays=functools.partial(sample_arrays, variant=_variant),
            description=_variant.description,
            private=_variant.private,
            calibrates_prior=_variant.private,
            for_shape=for_shape,
            defaults=DEFAULTS.get(_variant.name, ()),
        )
    )


# measured at or below chance on spambase, above on 5,000 Adult rows (numeric_columns.md)
register_minimum("p3gm", failed="spambase", worked="adult-5k")
# DP-VAE: below chance on a seed of 5,000 Adult rows (as on crx and german), above on all of
# Adult (numeric_columns.md)
register_minimum("dp-vae", failed="adult-5k", worked="adult")
# both at or below chance on creditcard at P3GM's sampling, 5,000 rows (222 frauds: the label's
# relation lost), P3GM above on 5,000 Adult rows, DP-VAE on all of Adult (numeric_columns.md)
register_minimum("p3gm", failed="creditcard-paper-5k", worked="adult-5k", of="smallest class")
register_minimum("dp-vae", failed="creditcard-paper-5k", worked="adult", of="smallest class")


class P3GM(Synthesizer):
    """P3GM, scikit-learn style: ``P3GM(epsilon=1, delta=1e-5, schema=s).fit(df).sample(n)``."""

    method = "p3gm"


class P3GMAE(Synthesizer):
    """P3GM(AE): P3GM with the encoder variance fixed to 0 (Sec. V-A, VI-B): ``z = c_x``, no
    KL term, DP-SGD trains the decoder only; encoding phase, prior, split and ledger as P3GM."""

    method = "p3gm-ae"


class DPVAE(Synthesizer):
    """DP-VAE, P3GM's baseline (Sec. III, VI-B): a VAE trained end to end by DP-SGD, learned
    encoder mean, ``N(0, I)`` prior and sampling, the whole budget to DP-SGD."""

    method = "dp-vae"


class PGM(Synthesizer):
    """PGM, the NON-PRIVATE phased generative model (Sec. IV, Table V): P3GM without noise or
    clipping. Its ledger holds one ``NonPrivateDpEvent`` per phase, so its epsilon is
    infinite and :func:`jdp.synth.base.fit_model` refuses it under any finite budget."""

    method = "pgm"
