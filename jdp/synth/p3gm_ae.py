"""P3GM(AE): P3GM with the encoder variance fixed to 0 (Takagi et al., Sec. V-A, VI-B).

The encoder is then the fixed DP-PCA projection alone (``z = c_x``), the KL term is constant
and dropped, and DP-SGD trains the decoder only; the encoding phase, the DP mixture prior
used for sampling, the budget split and the ledger are those of P3GM
(:mod:`jdp.synth.p3gm`).
"""

from __future__ import annotations

from jdp.synth.base import Synthesizer
from jdp.synth.p3gm import register_variant

register_variant("p3gm-ae", "P3GM(AE): P3GM with encoder variance fixed to 0 (decoder-only DP-SGD)")


class P3GMAE(Synthesizer):
    """P3GM(AE), scikit-learn style (config: :class:`jdp.synth.p3gm.P3GMConfig`)."""

    method = "p3gm-ae"
