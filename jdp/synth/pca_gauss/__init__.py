"""PCA-Gauss: a Gaussian (or one Gaussian per class) fitted under pure epsilon-DP on a
principal subspace, then sampled and mapped back to the data space.

Chanyaswad, Liu & Mittal, "Coupling Dimensionality Reduction with Generative Model for
Non-Interactive Private Data Release" (seed ``pca-gauss.txt``): Algorithm 1 (unsupervised: one Gaussian on the PCA features), Algorithm 2 (supervised: the
features and a numeric label), Algorithm 3 (classification: one Gaussian per class, composed in
parallel) -- :mod:`.model`; the table encoding -- :mod:`.codec`.

What differs from the paper (each derived in ``docs/privacy.md``, section PCA-Gauss, and
listed in ``docs/errata.md``): the data are centred on the public centre of their declared
bounds, never on the raw mean, and the mean is released by its own mechanism; the number of
records (per class, and overall under add/remove neighbours) is released as a noisy count,
never copied; the principal subspace always comes from an independent source (public sample,
Lap-PCA or Analyze-Gauss PCA, :mod:`jdp.encoding.pca`) so that samples can be mapped back to
the data space; Laplace noise is drawn on the upper triangle of the symmetric second-moment matrix and
mirrored; noisy covariances are projected to the PSD cone before sampling.

Notation and Lemma 1's bounds: :mod:`.subspace`.
"""

from __future__ import annotations

from jdp.mechanisms.moments import moment_sensitivity, moment_sums
from jdp.synth.base import Method, register
from jdp.synth.estimator import Synthesizer
from jdp.synth.feasibility import register_minimum
from jdp.synth.pca_gauss.codec import PCAGaussCodec, codec
from jdp.synth.pca_gauss.config import (
    MAX_COMPONENTS,
    MODES,
    PCA_SOURCES,
    MomentBudget,
    PCAGaussConfig,
    auto_components,
    auto_source,
)
from jdp.synth.pca_gauss.gaussian import (
    ADD_OR_REMOVE_ONE,
    REPLACE_ONE,
    Gaussian,
    gaussian_from_sums,
    project_psd,
    record_bounds,
    release_gaussian,
    sample_gaussian,
)
from jdp.synth.pca_gauss.model import (
    PCAGaussModel,
    class_weights,
    fit,
    fit_arrays,
    fit_components,
    fit_gaussians,
    sample,
    sample_arrays,
    sample_features,
)
from jdp.synth.pca_gauss.releases import released_statistics
from jdp.synth.pca_gauss.subspace import (
    Subspace,
    from_unit_box,
    one_hot_centre,
    row_radius,
    to_unit_box,
)
from jdp.synth.signal import register_releases

__all__ = [
    "ADD_OR_REMOVE_ONE",
    "MAX_COMPONENTS",
    "MODES",
    "PCA_SOURCES",
    "REPLACE_ONE",
    "Gaussian",
    "MomentBudget",
    "PCAGauss",
    "PCAGaussCodec",
    "PCAGaussConfig",
    "PCAGaussModel",
    "Subspace",
    "auto_components",
    "auto_source",
    "class_weights",
    "fit",
    "fit_components",
    "fit_gaussians",
    "from_unit_box",
    "gaussian_from_sums",
    "moment_sensitivity",
    "moment_sums",
    "one_hot_centre",
    "project_psd",
    "record_bounds",
    "release_gaussian",
    "released_statistics",
    "row_radius",
    "sample",
    "sample_features",
    "sample_gaussian",
    "to_unit_box",
]

register(
    Method(
        name="pca-gauss",
        config_cls=PCAGaussConfig,
        codec=codec,
        fit_arrays=fit_arrays,
        sample_arrays=sample_arrays,
        description="PCA-Gauss: Gaussian / per-class Gaussians on a DP principal subspace (pure eps)",
    )
)

register_releases("pca-gauss", released_statistics)
# measured at or below chance on spambase, above on 5,000 Adult rows (numeric_columns.md)
register_minimum("pca-gauss", failed="spambase", worked="adult-5k")
# at or below chance on creditcard at P3GM's sampling, 5,000 rows (222 frauds), above on 5,000
# Adult rows (numeric_columns.md)
register_minimum("pca-gauss", failed="creditcard-paper-5k", worked="adult-5k", of="smallest class")


class PCAGauss(Synthesizer):
    """``PCAGauss(epsilon=1, schema=..., n_components=5).fit(df).sample(n)``."""

    method = "pca-gauss"
