"""The configuration shared by P3GM and its baselines (Takagi et al., Sec. VI, Table IV)."""

from __future__ import annotations

from dataclasses import dataclass

from accounting.validation import check_count, check_positive, check_probability
from jdp.dpsgd import check_performance_flags, planned_steps

#: The three phases of a fit, in ledger order (Algorithm 1): DP-PCA (with its DP mean), DP-EM,
#: DP-SGD. ``P3GMConfig.budget_split`` gives one share per phase in this order.
PHASES: tuple[str, ...] = ("pca", "em", "sgd")

#: The covariance of the DP-EM prior's components (``P3GMConfig.prior_covariance``).
PRIOR_COVARIANCES: tuple[str, ...] = ("full", "diag")

#: The decoder likelihoods of a numeric column (``P3GMConfig.numeric_head``).
NUMERIC_HEADS: tuple[str, ...] = ("auto", "binned", "bernoulli")


@dataclass(frozen=True, kw_only=True)
class P3GMConfig:
    """Configuration of P3GM and its baselines (defaults: P3GM Sec. VI, Table IV, Adult).

    Privacy parameters:
      budget_split: shares of epsilon for (DP-PCA incl. its DP mean, DP-EM, DP-SGD), each the
        epsilon that phase would spend alone before the joint calibration (Sec. VI-E: a
        3:7 encoder:decoder split; (0.1, 0.2, 0.7) here). Ignored by ``dp-vae`` (all to
        DP-SGD) and ``pgm`` (non-private).
      l2_clip_norm: DP-SGD per-example gradient bound ``C``.
      pca_clip_norm: row bound ``C_p`` of the DP mean and of the centred rows in Analyze
        Gauss, in units of the public encoder bound (rows are scaled to norm <= 1, so 1
        never clips). Declare it near the typical norm of a centred row: the noise scales
        with ``C_p^2`` while the signal stops growing once ``C_p`` passes the row norms (a
        bound 4x the typical norm costs 16x in signal-to-noise).
      em_clip_norm: row bound ``C_e`` of the projections in DP-EM (``||c_x|| <= ||x/b - mu||``);
        the noise on the mixture's second moments scales with ``C_e^2``, so declare it near
        the typical projection norm, as ``C_p``.
      sampling_prob: DP-SGD Poisson rate ``q`` (the paper's ``B / N``: 200 / 45222 on Adult).
      expected_batch_size: the public constant ``B̄`` DP-SGD divides its noisy sum by (the
        paper's ``B = 200``, which is ``q N`` on Adult at the default ``q``). Declared, never
        computed from the private row count; set it to ``q N`` for your declared ``N`` to
        keep the paper's step size.

    Model and training:
      latent_dim: ``d'`` (10 in the paper); ``None`` skips the reduction (the paper's
        Kaggle-credit setting): the fixed encoder mean is then the DP-centred row
        ``x / b - mu_DP`` (the ``"pca"`` share pays for the DP mean alone) and no PCA is run.
      n_components: mixture components ``K`` of the DP-EM prior (the paper's 3; default 1).
        Every component costs ``T_e`` releases of its count, mean and second moments, and
        at the default budget the noise on them dominates the latent's small variances:
        on Adult at epsilon 1 the paper's ``K = 3, T_e = 20`` (multiplier 110 per release)
        collapsed to one component on every seed (weights ``[0, 1, 0]``) with per-coordinate
        variances off by 2-4x on the last coordinates, so the prior put samples where the
        decoder never saw an encoder mean (2-way TVD 0.082-0.108 against 0.065 decoded at
        the real encoder means). One full-covariance Gaussian is one release: 2-way TVD
        0.074 / 0.076 / 0.079 on seeds 0 / 1 / 2 (DP marginals 0.080 / 0.081 / 0.080),
        TSTR AUROC LR 0.854 / 0.862 / 0.853 (was 0.852 / 0.869 / 0.863).
      em_iterations: ``T_e``; ``None`` (default): 1 when ``K = 1`` (EM with one component is
        exact after one step: every responsibility is 1, so more iterations only spend
        budget), else the paper's 20. Read it through :attr:`em_steps`.
      prior_covariance: ``"full"`` (default) or ``"diag"`` (the paper's) covariance of the
        mixture components. Full covariances keep the correlations of the encoder means
        (the DP-PCA directions are noisy, so the projections are correlated): Adult at
        epsilon 1, seed 0, a Gaussian fitted without noise to the encoder means gives
        2-way TVD 0.073 with a full covariance and 0.083 with a diagonal one.
      hidden: hidden width of encoder and decoder (1000).
      epochs: DP-SGD epochs (steps = ceil(epochs / q)). learning_rate: Adam step (1e-3).
      reg_covar: variance floor of the mixture components.
      logvar_init: initial bias of the encoder's log-variance head, in standardized latent
        units (-4: posterior std 0.14 of the latent spread at the start; DP-VAE: 0).
      latent_excludes_target: leave the target column's coordinates out of the fixed encoder
        mean (DP-PCA, the DP mean and DP-EM see the features only), so the decoder learns
        ``p(label | features' latent)`` and a sampled label follows the sampled features.
        ``False`` (the paper's code: the label is one more input coordinate) lets the
        decoder read the label off ``c_x``, which a rare class (credit: 0.17%) then never
        reaches when ``z`` is drawn from the Gaussian prior.
      decoder_init_steps: Adam steps that start the decoder at the inverse of the released
        DP-PCA map on draws from the DP mixture (post-processing, free:
        :func:`jdp.synth.p3gm.model.initial_decoder`; the reference code's ``pcapretrain``
        runs 3,000); 0 starts DP-SGD from a random decoder. decoder_init_batch: its batch.
      numeric_head: the decoder's likelihood for a numeric column (:func:`jdp.synth.p3gm.model.head_layout`).
        ``"binned"``: a histogram head (:mod:`jdp.nn.heads`, ``"binned"``) over the column's
        integers, or ``numeric_bins`` equal cells of its public bounds, sampled at
        generation, so a column keeps its spread and shape; ``"bernoulli"`` (the paper's
        Sec. IV-C choice, right for pixel intensities): a sigmoid cross-entropy head decoded
        at its mean, which collapses a tabular column towards its conditional mean (Adult at
        epsilon 1: age and hours-per-week 1-way TVD 0.47 and 0.41); ``"auto"``: binned when
        the binned output layer is at most ``hidden`` wide (tables with a few numeric
        columns, such as Adult), bernoulli otherwise (MNIST's 784 pixels, credit's 30
        continuous columns). A function of the public schema and the config.
      numeric_bins: the most cells of a binned head (an integer column with at most this
        many values gets one cell per value). Fewer cells are learnt faster under DP-SGD,
        more resolve finer: Adult at epsilon 1, seed 0, 2-way TVD 0.120 / 0.103 / 0.124 with
        128 / 32 / 16 (16 cells blur hours-per-week's spike at 40).
      microbatch_size: per-example gradients held in memory at once (performance only).
      dpsgd_method: per-example clipping path of :func:`jdp.dpsgd.train.train` (performance only:
        ``"auto"`` picks ghost clipping, ``"general"`` compiles faster for tiny networks).
    """

    latent_dim: int | None = 10
    n_components: int = 1
    em_iterations: int | None = None
    prior_covariance: str = "full"
    hidden: int = 1000
    epochs: float = 5.0
    sampling_prob: float = 200 / 45222
    expected_batch_size: float = 200.0
    learning_rate: float = 1e-3
    l2_clip_norm: float = 1.0
    pca_clip_norm: float = 1.0
    em_clip_norm: float = 1.0
    budget_split: tuple[float, float, float] = (0.1, 0.2, 0.7)
    reg_covar: float = 1e-6
    logvar_init: float = -4.0
    decoder_init_steps: int = 1000
    latent_excludes_target: bool = False
    decoder_init_batch: int = 100
    numeric_head: str = "auto"
    numeric_bins: int = 32
    microbatch_size: int | None = None
    dpsgd_method: str = "auto"

    def __post_init__(self) -> None:
        if self.latent_dim is not None:
            check_count("latent_dim", self.latent_dim, minimum=1)
        check_count("n_components", self.n_components, minimum=1)
        if self.em_iterations is not None:
            check_count("em_iterations", self.em_iterations, minimum=1)
        if self.prior_covariance not in PRIOR_COVARIANCES:
            raise ValueError(
                f"expected prior_covariance in {PRIOR_COVARIANCES}, got {self.prior_covariance!r}"
            )
        check_count("hidden", self.hidden, minimum=1)
        check_count("decoder_init_steps", self.decoder_init_steps, minimum=0)
        check_count("decoder_init_batch", self.decoder_init_batch, minimum=1)
        check_count("numeric_bins", self.numeric_bins, minimum=2)
        if self.numeric_head not in NUMERIC_HEADS:
            raise ValueError(f"expected numeric_head in {NUMERIC_HEADS}, got {self.numeric_head!r}")
        check_positive("epochs", self.epochs)
        check_probability("sampling_prob", self.sampling_prob)
        check_positive("expected_batch_size", self.expected_batch_size)
        check_positive("learning_rate", self.learning_rate)
        for name in ("l2_clip_norm", "pca_clip_norm", "em_clip_norm", "reg_covar"):
            check_positive(name, getattr(self, name))
        split = tuple(float(s) for s in self.budget_split)
        if len(split) != len(PHASES) or any(not s > 0 for s in split):
            raise ValueError(
                f"expected budget_split of three positive shares, got {self.budget_split}"
            )
        object.__setattr__(self, "budget_split", tuple(s / sum(split) for s in split))
        check_performance_flags(microbatch_size=self.microbatch_size, method=self.dpsgd_method)

    @property
    def em_steps(self) -> int:
        """DP-EM iterations: ``em_iterations``, or when None 1 for one component, else 20."""
        if self.em_iterations is not None:
            return self.em_iterations
        return 1 if self.n_components == 1 else 20

    @property
    def steps(self) -> int:
        """DP-SGD steps ``ceil(epochs / q)`` (at least one; :func:`jdp.dpsgd.train.planned_steps`)."""
        return planned_steps(steps=None, epochs=self.epochs, sampling_prob=self.sampling_prob)
