"""DP-VAE: a VAE trained end to end by DP-SGD, P3GM's baseline (Takagi et al., Sec. III, VI-B).

Shares everything with :mod:`jdp.synth.p3gm` except where the paper says it differs: the
encoder learns its mean as well as its variance, the prior (and the sampling distribution)
is ``N(0, I)`` with the closed-form KL, and there is no encoding phase, so the whole budget
goes to DP-SGD (its ledger is one ``"dp-sgd"`` entry).
"""

from __future__ import annotations

from jdp.synth.base import Synthesizer
from jdp.synth.p3gm import register_variant

register_variant(
    "dp-vae", "DP-VAE: VAE trained end to end by DP-SGD, N(0, I) prior (P3GM baseline)"
)


class DPVAE(Synthesizer):
    """DP-VAE, scikit-learn style (config: :class:`jdp.synth.p3gm.P3GMConfig`)."""

    method = "dp-vae"
