"""Every synthesizer the library ships, in one table: name -> (the module that registers it,
its scikit-learn-style class). Read by :func:`jdp.synth.base.get_method` (which imports the
module on first use) and by ``jdp``'s lazy exports; a method is added here, in one line, and
registers itself in its module (:func:`jdp.synth.base.register` refuses a name not listed).

This module imports nothing, so ``import jdp`` stays fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["METHODS"]

METHODS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "marginals": ("jdp.synth.marginals", "Marginals"),
        "tree": ("jdp.synth.tree", "TreeMarginals"),
        "mwem": ("jdp.synth.mwem", "MWEM"),
        "pca-gauss": ("jdp.synth.pca_gauss", "PCAGauss"),
        "p3gm": ("jdp.synth.p3gm", "P3GM"),
        "p3gm-ae": ("jdp.synth.p3gm", "P3GMAE"),
        "dp-vae": ("jdp.synth.p3gm", "DPVAE"),
        "pgm": ("jdp.synth.p3gm", "PGM"),
        "dp-gan": ("jdp.synth.dp_gan", "DPGAN"),
        "clustmix": ("jdp.synth.clustmix", "ClustMix"),
        "dpgm": ("jdp.synth.dpgm", "DPGM"),
    }
)
