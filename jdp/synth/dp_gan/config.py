"""The configuration of dp-GAN (Frigerio et al. 2019, Alg. 1)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from numbers import Real

from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)
from jdp.data.quantile_scale import QUANTILES, NumericScale
from jdp.dpsgd import DPSGDConfig, Performance, check_template

GENERATORS: tuple[str, ...] = ("mlp", "lstm")
CRITICS: tuple[str, ...] = ("mlp", "lstm")
#: ``DPGANConfig.dpsgd``'s default: ``C_0 = 1``, ``q = 0.01``, ``B̄ = 64``, 5 epochs; the
#: noise unset (calibrated to the fit's budget with the state counts).
DPSGD_TEMPLATE = DPSGDConfig(
    l2_clip_norm=1.0, sampling_prob=0.01, expected_batch_size=64.0, epochs=5.0
)
#: ``DPGANConfig.performance``'s default: the automatic clipping path.
PERFORMANCE = Performance()
#: The share of epsilon the default numeric scale's knots spend.
KNOTS_SHARE = 0.2
#: The default numeric scale: released knots at :data:`KNOTS_SHARE`.
KNOTS = dataclasses.replace(QUANTILES, share=KNOTS_SHARE)


def _widths(name: str, value) -> tuple[int, ...]:
    widths = tuple(value)
    for w in widths:
        check_count(name, w, minimum=1)
    return tuple(int(w) for w in widths)


def _check_clip_start(clip: object) -> None:
    """The critic's clip bound is a plain number ``C_0`` (its schedule is ``clipping_decay``)."""
    if isinstance(clip, bool) or not isinstance(clip, Real):
        raise TypeError(
            "expected dpsgd.l2_clip_norm to be a number (the start value C_0; the schedule is "
            f"clipping_decay), got {type(clip).__name__}"
        )
    check_positive("dpsgd.l2_clip_norm", clip)


@dataclass(frozen=True, kw_only=True)
class DPGANConfig:
    """Configuration of dp-GAN: a WGAN-GP whose critic is trained by DP-SGD.

    Privacy (public, fixed before training):
      dpsgd: the critic's DP-SGD run as a template with the noise unset
        (:class:`jdp.dpsgd.DPSGDConfig`): Poisson rate ``sampling_prob``, the declared
        ``expected_batch_size`` ``B̄`` (``q N`` for a public ``N``, never the private row
        count), the run length (``steps`` or ``epochs``, ``ceil(epochs / q)`` steps), and
        ``l2_clip_norm``, the per-example clip bound ``C_0`` of the critic's gradient (a
        number). The fit calibrates the noise multiplier ``z`` so that the planned steps and
        the state counts meet its budget (:func:`jdp.synth.dp_gan.model.calibrate_noise`).
        Poisson sampling only (add/remove-one neighbours).
      clipping_decay: dp-GAN's ``C_decay = d`` in ``(0, 1]`` (Sec. 4.1): critic step ``t``
        (from 0) clips at ``C_t = C_0 d^floor(t / n_critic)``, ``C_0 = dpsgd.l2_clip_norm``,
        i.e. the bound decays once per generator step (:func:`jdp.dpsgd.clipping_decay`,
        built at fit time; the config keeps the number so it stays JSON). ``None``: the
        constant bound ``C_0``. A public schedule: it changes ``C_t``, never ``z``.
      state_share: for a table with state indicators (numeric columns with public point
        masses or missing values): the share of epsilon their noisy counts
        (:func:`jdp.synth.states.release_state_counts`) are first calibrated to; a common
        factor then makes the whole ledger meet the budget (public rule). Sampling matches
        the generator's states to these counts. Unused without state indicators.

    Model and training:
      latent_dim: width of the generator's input noise.
      generator: ``"mlp"`` (table rows) or ``"lstm"`` (time series, Sec. 4: the encoded row
        of ``T * F`` numeric columns, time-major, is one series of ``T`` steps of
        ``series_features = F`` values; an LSTM of width ``generator_hidden[0]`` emits it).
      critic: ``"mlp"`` (over the flattened record or series) or ``"lstm"`` (time series: an
        LSTM of width ``critic_hidden[0]`` reads the ``T`` steps, its last output is scored).
      series_features: ``F``, values per time step (LSTM generator or critic).
      generator_hidden, critic_hidden: hidden widths of the MLPs (first entry: the LSTM
        state width of an LSTM network).
      n_critic: critic steps per generator step (``N_disc``, >= 1).
      gp_weight: the gradient-penalty weight ``lambda`` (>= 0; 10 in WGAN-GP).
      critic_learning_rate, generator_learning_rate: Adam steps (beta1 = 0.5, beta2 = 0.9).
      generator_batch_size: ``m`` latent draws per generator step (no data involved).
      generator_ema: the released generator is the exponential moving average of the
        generator's parameters over its steps with this decay in ``[0, 1)`` (0: the last
        iterate). Averaging GAN iterates damps the oscillation of adversarial training
        (Yazici et al., ICLR 2019); it is post-processing of the released critics, free.

    Performance:
      performance: the critic's DP-SGD compute flags (:class:`jdp.dpsgd.Performance`). The
        default automatic clipping path takes the exact gradient-penalty ghost path
        (:mod:`jdp.dpsgd.ghost_penalty`: the MLP critic is leaky-ReLU, piecewise linear) and
        the general one for the LSTM critic; the ledger note names the path that ran.
      scale: how numeric columns map to the generator's [0, 1] outputs
        (:class:`jdp.data.quantile_scale.NumericScale`); default knots released by DP
        quantiles from :data:`KNOTS_SHARE` of epsilon, through which sampling maps each
        generated value by the generator's own CDF
        (:func:`jdp.data.quantile_scale.onto_knots`): on all of Adult at epsilon 1 it took the
        numeric columns off their real interquartile range from 3 of 6 to 0-2; with a fifth of
        epsilon (a tenth left capital-loss's 1,500 non-zero records without signal) and the
        split by released value counts, to 0 (``scripts/numeric_columns.py``,
        ``docs/results/numeric_columns.md``).
    """

    latent_dim: int = 32
    generator: str = "mlp"
    critic: str = "mlp"
    series_features: int = 1
    generator_hidden: tuple[int, ...] = (128, 128)
    critic_hidden: tuple[int, ...] = (128, 128)
    n_critic: int = 5
    gp_weight: float = 10.0
    critic_learning_rate: float = 1e-3
    generator_learning_rate: float = 1e-3
    generator_batch_size: int = 64
    generator_ema: float = 0.0
    clipping_decay: float | None = None
    state_share: float = 0.05
    dpsgd: DPSGDConfig = DPSGD_TEMPLATE
    performance: Performance = PERFORMANCE
    scale: NumericScale = KNOTS

    def __post_init__(self) -> None:
        check_count("latent_dim", self.latent_dim, minimum=1)
        if self.generator not in GENERATORS:
            raise ValueError(f"expected generator in {GENERATORS}, got {self.generator!r}")
        if self.critic not in CRITICS:
            raise ValueError(f"expected critic in {CRITICS}, got {self.critic!r}")
        check_count("series_features", self.series_features, minimum=1)
        object.__setattr__(
            self, "generator_hidden", _widths("generator_hidden", self.generator_hidden)
        )
        object.__setattr__(self, "critic_hidden", _widths("critic_hidden", self.critic_hidden))
        if isinstance(self.n_critic, bool) or not isinstance(self.n_critic, int):
            raise TypeError(f"expected n_critic to be an int, got {type(self.n_critic).__name__}")
        if self.n_critic < 1:
            raise ValueError(
                f"expected n_critic >= 1 (critic steps per generator step), got {self.n_critic}"
            )
        check_nonnegative("gp_weight", self.gp_weight)
        check_positive("critic_learning_rate", self.critic_learning_rate)
        check_positive("generator_learning_rate", self.generator_learning_rate)
        check_count("generator_batch_size", self.generator_batch_size, minimum=1)
        check_nonnegative("generator_ema", self.generator_ema)
        if not self.generator_ema < 1:
            raise ValueError(f"expected generator_ema in [0, 1), got {self.generator_ema}")
        if self.clipping_decay is not None:
            check_probability("clipping_decay", self.clipping_decay)
            if not self.clipping_decay > 0:
                raise ValueError(f"expected clipping_decay > 0, got {self.clipping_decay}")
        check_open_unit("state_share", self.state_share)
        check_template(
            self.dpsgd,
            self.performance,
            calibrated_by="dp-GAN",
            poisson_because="dp-GAN is analysed under add/remove-one neighbours",
        )
        _check_clip_start(self.dpsgd.l2_clip_norm)
