"""Encoding-phase algorithms on the host (numpy): DP-PCA, DP-EM, DP (kernel) k-means on random
Fourier features. Each returns its output with the ledger of what it spent; each has a
data-free ``*_event`` plan and a ``*_calibrated`` variant
(:func:`jdp.mechanisms.release.run_calibrated`).

* :mod:`~jdp.encoding.pca` -- Analyze Gauss, Lap-PCA, public PCA, DP means.
* :mod:`~jdp.encoding.em` -- DP-EM for Gaussian mixtures (Park et al. 2017).
* :mod:`~jdp.encoding.kmeans` -- DP Lloyd on raw or random Fourier features, DPNorm (DPGM).
* :mod:`~jdp.encoding.rff` -- random Fourier features (data-independent, free).

Only numpy/scipy are imported here (no JAX); nothing here imports :mod:`jdp.dpsgd`.
"""

from jdp.encoding.em import EmResult, Mixture, dp_em, dp_em_calibrated, dp_em_event
from jdp.encoding.kmeans import (
    KMeansResult,
    assign_clusters,
    dp_kernel_kmeans,
    dp_kmeans,
    dp_kmeans_calibrated,
    dp_kmeans_event,
)
from jdp.encoding.pca import (
    PcaResult,
    dp_pca_gaussian,
    dp_pca_gaussian_calibrated,
    dp_pca_gaussian_event,
    dp_pca_laplace,
    public_pca,
)
from jdp.encoding.rff import RandomFourierFeatures, draw_rff

__all__ = [
    "EmResult",
    "KMeansResult",
    "Mixture",
    "PcaResult",
    "RandomFourierFeatures",
    "assign_clusters",
    "dp_em",
    "dp_em_calibrated",
    "dp_em_event",
    "dp_kernel_kmeans",
    "dp_kmeans",
    "dp_kmeans_calibrated",
    "dp_kmeans_event",
    "dp_pca_gaussian",
    "dp_pca_gaussian_calibrated",
    "dp_pca_gaussian_event",
    "dp_pca_laplace",
    "draw_rff",
    "public_pca",
]
