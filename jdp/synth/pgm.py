"""PGM: the NON-PRIVATE phased generative model (Takagi et al., Sec. IV, Table V).

The same model and code as :mod:`jdp.synth.p3gm` with every phase run without noise and
without gradient clipping (exact PCA on the clipped mean-centred rows, exact EM, plain
Adam). It is NOT differentially private: its ledger holds one ``NonPrivateDpEvent`` per
phase, so its epsilon is infinite and :func:`jdp.synth.base.fit_model` refuses it under
any finite budget. It exists as the paper's non-private reference; call
:func:`jdp.synth.p3gm.fit_arrays` with ``variant="pgm"`` to fit it.
"""

from __future__ import annotations

from jdp.synth.base import Synthesizer
from jdp.synth.p3gm import register_variant

register_variant(
    "pgm", "PGM: NON-PRIVATE phased generative model (reference for P3GM; infinite epsilon)"
)


class PGM(Synthesizer):
    """PGM, scikit-learn style. NOT private: fitting under a finite budget raises."""

    method = "pgm"
