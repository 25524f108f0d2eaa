"""The configuration shared by P3GM and its baselines (Takagi et al., Sec. VI, Table IV)."""

from __future__ import annotations

from dataclasses import dataclass

from accounting.validation import check_count, check_positive
from jdp.data.quantile_scale import TAILS, NumericScale
from jdp.dpsgd import DPSGDConfig, Performance, check_template
from jdp.nn.heads import NUMERIC_HEADS

#: The three phases of a fit, in ledger order (Algorithm 1): DP-PCA (with its DP mean), DP-EM,
#: DP-SGD. ``P3GMConfig.budget_split`` gives one share per phase in this order.
PHASES: tuple[str, ...] = ("pca", "em", "sgd")

#: The covariance of the DP-EM prior's components (``P3GMConfig.prior_covariance``).
PRIOR_COVARIANCES: tuple[str, ...] = ("full", "diag")

#: ``P3GMConfig.dpsgd``'s default: Table IV's batch (``C = 1``, ``B̄ = 200``, 5 epochs) on any
#: table: ``q = B̄ / N`` for the declared or released row count ``N`` (``sampling_prob="auto"``;
#: the paper's ``200 / 45222`` on Adult), the noise unset (calibrated with the other phases).
DPSGD_TEMPLATE = DPSGDConfig(
    l2_clip_norm=1.0, sampling_prob="auto", expected_batch_size=200.0, epochs=5.0
)
#: ``P3GMConfig.performance``'s default: the automatic clipping path.
PERFORMANCE = Performance()


@dataclass(frozen=True, kw_only=True)
class P3GMConfig:
    """Configuration of P3GM and its baselines (defaults: P3GM Sec. VI, Table IV, Adult).

    The defaults that depart from the paper were chosen by ablation: measured by
    ``scripts/ablate_p3gm.py`` (``docs/results/ablate_p3gm.md``) and
    ``scripts/reproduce_p3gm.py`` (``docs/results/reproduce_p3gm.md``).

    Privacy parameters:
      dpsgd: the decoding phase's DP-SGD settings as a template (:class:`DPSGDConfig`: clip
        norm ``C``, Poisson rate ``q`` -- the paper's ``B / N`` --, the declared normaliser
        ``B̄``, never computed from the private row count -- ``q N`` for your declared
        ``N`` --, epochs or steps, accountant; default :data:`DPSGD_TEMPLATE`). Its noise
        stays unset: the fit calibrates ``z`` jointly with the other phases (Theorem 4,
        :func:`jdp.synth.p3gm.privacy.calibrate_noise`, with the template's accountant) and
        runs ``dpsgd.with_noise(z)``. The sampling must be Poisson (the phases compose under
        add/remove-one).
      budget_split: shares of epsilon for (DP-PCA incl. its DP mean, DP-EM, DP-SGD), each the
        epsilon that phase would spend alone before the joint calibration (Sec. VI-E's 3:7
        encoder:decoder split). Ignored by ``dp-vae`` (all to DP-SGD) and ``pgm``.
      pca_clip_norm: row bound ``C_p`` of the DP mean and of the centred rows in Analyze
        Gauss, in units of the public encoder bound (rows are scaled to norm <= 1, so 1 never
        clips); declare it near the typical centred row norm: the noise scales with ``C_p^2``
        while the signal stops growing once ``C_p`` passes the row norms.
      em_clip_norm: row bound ``C_e`` of the projections in DP-EM (``||c_x|| <= ||x/b - mu||``),
        declared near the typical projection norm for the same reason.

    Model and training:
      latent_dim: ``d'`` (10 in the paper); ``None`` skips the reduction (the paper's credit
        setting): the fixed encoder mean is the DP-centred row ``x / b - mu_DP`` and the
        ``"pca"`` share pays for the DP mean alone.
      n_components: mixture components ``K`` of the DP-EM prior (the paper's 3; default 1:
        every component costs ``T_e`` releases, and at the default budget their noise
        swamps the latent's small variances, so one Gaussian samples closer to the encoder
        means).
      em_iterations: ``T_e``; ``None``: 1 for one component (EM is then exact after one step),
        else the paper's 20. Read it through :attr:`em_steps`.
      prior_covariance: ``"full"`` (default) or ``"diag"`` (the paper's): a full covariance
        keeps the correlations of the projections on the noisy DP-PCA directions.
      hidden: hidden width of encoder and decoder (1000). learning_rate: Adam step (1e-3).
      reg_covar: variance floor of the mixture components.
      logvar_init: initial bias of the encoder's log-variance head, in standardized latent
        units (-4: posterior std 0.14 of the latent spread at the start; DP-VAE: 0).
      latent_excludes_target: leave the target's coordinates out of the fixed encoder mean, so
        the decoder learns ``p(label | features' latent)`` and a rare class is reachable from
        a prior draw; ``False`` is the paper's code (the label is one more input coordinate).
      decoder_init_steps: Adam steps that start the decoder at the inverse of the released
        DP-PCA map on draws from the DP mixture (post-processing, free:
        :func:`jdp.synth.p3gm.phases.initial_decoder`; the reference code's ``pcapretrain``);
        0 starts DP-SGD from a random decoder. decoder_init_batch: its batch.
      numeric_head: the decoder's likelihood for a numeric column
        (:func:`jdp.nn.heads.heads_for_encoder`): ``"binned"`` histograms keep a tabular
        column's spread, the paper's ``"bernoulli"`` (Sec. IV-C, right for pixels) collapses
        it to its conditional mean; ``"auto"`` takes binned when its output layer is at most
        ``hidden`` wide.
      numeric_bins: the most cells of a binned head (fewer are learnt faster under DP-SGD,
        more resolve finer).
      performance: DP-SGD's compute flags (:class:`Performance`: clipping path, chunk cap,
        mesh); they change neither the samples' distribution nor the ledger.
      scale: how numeric columns reach the unit scale
        (:class:`jdp.data.quantile_scale.NumericScale`; default ``"tails"``, DP-VAE's
        ``"log"`` (:data:`jdp.synth.p3gm.DEFAULTS`): the public log scale on right-tailed
        columns (declared lower bound >= 0), min-max on signed ones;
        measured against min-max and the log scale on every column in
        docs/results/numeric_columns.md; the paper's min-max is what
        :func:`jdp.synth.p3gm.paper.config_for` uses).
    """

    latent_dim: int | None = 10
    n_components: int = 1
    em_iterations: int | None = None
    prior_covariance: str = "full"
    hidden: int = 1000
    learning_rate: float = 1e-3
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
    dpsgd: DPSGDConfig = DPSGD_TEMPLATE
    performance: Performance = PERFORMANCE
    scale: NumericScale = TAILS

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
        check_positive("learning_rate", self.learning_rate)
        for name in ("pca_clip_norm", "em_clip_norm", "reg_covar"):
            check_positive(name, getattr(self, name))
        split = tuple(float(s) for s in self.budget_split)
        if len(split) != len(PHASES) or any(not s > 0 for s in split):
            raise ValueError(
                f"expected budget_split of three positive shares, got {self.budget_split}"
            )
        object.__setattr__(self, "budget_split", tuple(s / sum(split) for s in split))
        check_template(
            self.dpsgd,
            self.performance,
            calibrated_by="P3GM",
            poisson_because="P3GM's phases compose under add/remove-one",
        )

    @property
    def em_steps(self) -> int:
        """DP-EM iterations: ``em_iterations``, or when None 1 for one component, else 20."""
        if self.em_iterations is not None:
            return self.em_iterations
        return 1 if self.n_components == 1 else 20
