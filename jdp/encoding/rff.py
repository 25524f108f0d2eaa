"""Random Fourier features for the Gaussian (RBF) kernel (Rahimi & Recht 2007; DPGM Sec. 3.3).

``z(x) = sqrt(2 / D) cos(x W + b)`` with ``W`` ``(m, D)`` i.i.d. ``N(0, 2 gamma)`` and ``b``
i.i.d. uniform on ``[0, 2 pi)`` satisfies ``E[z(x) . z(y)] = exp(-gamma ||x - y||^2)``.

Norm facts used for privacy (docs/privacy.md, "Random Fourier features"): for every ``x``,
``||z(x)||^2 = (2 / D) sum_j cos^2(.) <= 2`` (a data-independent *worst-case* bound
``sqrt(2)``) and ``E ||z(x)||^2 = 1`` over the draw of ``b`` (so ``E ||z(x)|| <= 1``, DPGM
Theorem 2, which bounds the expectation only). Drawing the map uses no data: it is free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.validation import check_count, check_positive
from jdp.mechanisms.suffstats import check_data_matrix

#: ``sup_x ||z(x)||_2`` for any random-Fourier-feature map of this form.
RFF_MAX_NORM = float(np.sqrt(2.0))


@dataclass(frozen=True, kw_only=True)
class RandomFourierFeatures:
    """A drawn feature map ``z(x) = sqrt(2 / D) cos(x @ frequencies + offsets)``.

    Attributes:
      frequencies: ``(m, D)``.
      offsets: ``(D,)`` in ``[0, 2 pi)``.
      gamma: the kernel width of ``exp(-gamma ||x - y||^2)`` it approximates.
    """

    frequencies: np.ndarray
    offsets: np.ndarray
    gamma: float

    def __post_init__(self) -> None:
        if self.frequencies.ndim != 2 or self.offsets.shape != (self.frequencies.shape[1],):
            raise ValueError(
                f"expected frequencies (m, D) and offsets (D,), got {self.frequencies.shape} "
                f"and {self.offsets.shape}"
            )
        self.frequencies.setflags(write=False)
        self.offsets.setflags(write=False)

    @property
    def n_features_in(self) -> int:
        return self.frequencies.shape[0]

    @property
    def n_components(self) -> int:
        return self.frequencies.shape[1]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Map the rows of ``x`` (``(n, m)``) to ``(n, D)`` features (float64)."""
        if x.ndim != 2 or x.shape[1] != self.n_features_in:
            raise ValueError(
                f"expected x to have {self.n_features_in} columns, got shape {x.shape}"
            )
        return np.sqrt(2.0 / self.n_components) * np.cos(x @ self.frequencies + self.offsets)

    def transform(self, x: np.ndarray, *, dtype: type = np.float32) -> np.ndarray:
        """Checked, chunked :meth:`__call__` into a new ``dtype`` array (public map of rows)."""
        x = check_data_matrix(x, n_cols=self.n_features_in)
        out = np.empty((x.shape[0], self.n_components), dtype=dtype)
        rows = max(1, 2**22 // max(self.n_components, self.n_features_in))
        for start in range(0, x.shape[0], rows):
            out[start : start + rows] = self(np.asarray(x[start : start + rows], dtype=np.float64))
        return out


def draw_rff(
    rng: np.random.Generator, n_features_in: int, n_components: int, *, gamma: float
) -> RandomFourierFeatures:
    """Draw a random Fourier feature map for ``exp(-gamma ||x - y||^2)`` (data-independent).

    The kernel's spectral density is ``N(0, 2 gamma I)``. (DPGM Sec. 4.1 writes the kernel as
    ``exp(-gamma ||x - y||_2)`` -- whose spectral density is a multivariate Cauchy, not a
    Gaussian -- and the Gaussian's "standard deviation 2 gamma"; see docs/errata.md.)
    """
    m = check_count("n_features_in", n_features_in, minimum=1)
    d = check_count("n_components", n_components, minimum=1)
    gamma = check_positive("gamma", gamma)
    return RandomFourierFeatures(
        frequencies=rng.normal(0.0, np.sqrt(2.0 * gamma), size=(m, d)),
        offsets=rng.uniform(0.0, 2.0 * np.pi, size=d),
        gamma=gamma,
    )


def median_heuristic_gamma(
    rng: np.random.Generator, x_public: np.ndarray, *, pairs: int = 2000
) -> float:
    """``1 / median ||x - y||^2`` over ``pairs`` random pairs of PUBLIC rows: the median
    heuristic for the RBF kernel's ``gamma`` (DPGM Sec. 6.2 sets it on public data).

    Reads the rows it is given without privacy: pass public rows only, never private ones.
    """
    x_public = np.asarray(x_public)
    i, j = rng.integers(len(x_public), size=(2, check_count("pairs", pairs, minimum=1)))
    return float(1.0 / np.median(np.sum((x_public[i] - x_public[j]) ** 2, axis=1)))


#: :func:`dim_for_noise`'s target: the norm of a centre's noise in feature space, a share of
#: the features' unit norm (measured on binarised MNIST at 10,000 and 60,000 records,
#: docs/results/reproduce_dpgm.md: the clustering collapses to one cluster from about 0.45 and
#: is best between 0.1 and 0.2 while ``D`` is below 200).
CENTRE_NOISE = 0.15
#: :func:`dim_for_noise`'s range of ``D``: past 200 features (DPGM's value) the kernel
#: approximation no longer improves the clustering on MNIST even without noise.
DIM_RANGE: tuple[int, int] = (10, 200)


def dim_for_noise(
    rows: float, n_clusters: int, noise_multiplier: float, *, l2_clip_norm: float = 1.0
) -> int:
    """The number ``D`` of random Fourier features for DP k-means on ``rows`` records (declared
    or released: public), from the noise alone.

    A centre is a noisy sum over its cluster, about ``rows / k`` records, with noise
    ``N(0, (z C)^2 I_D)``: its error has norm about ``z C sqrt(D) k / rows``, and grows with
    ``D`` while the features' norm stays 1. The rule takes the largest ``D`` whose centre noise
    is :data:`CENTRE_NOISE`, ``D = (0.15 rows / (k z C))^2``, within :data:`DIM_RANGE`. DPGM
    fixes ``D = 200`` (Sec. 6.2), which at 10,000 records and epsilon 1 puts noise of norm
    0.33 on each centre, and the clustering collapses. Reads public values only.
    """
    rows = check_positive("rows", rows)
    k = check_count("n_clusters", n_clusters, minimum=1)
    scale = check_positive("noise_multiplier", noise_multiplier) * check_positive(
        "l2_clip_norm", l2_clip_norm
    )
    dim = (CENTRE_NOISE * rows / (k * scale)) ** 2
    return int(np.clip(np.floor(dim), *DIM_RANGE))
