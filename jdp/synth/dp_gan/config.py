"""The configuration of dp-GAN (Frigerio et al. 2019, Alg. 1)."""

from __future__ import annotations

from dataclasses import dataclass

from accounting.validation import (
    check_count,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_probability,
)
from jdp.dpsgd import check_performance_flags, planned_steps

GENERATORS: tuple[str, ...] = ("mlp", "lstm")
CRITICS: tuple[str, ...] = ("mlp", "lstm")


def _widths(name: str, value) -> tuple[int, ...]:
    widths = tuple(value)
    for w in widths:
        check_count(name, w, minimum=1)
    return tuple(int(w) for w in widths)


@dataclass(frozen=True, kw_only=True)
class DPGANConfig:
    """Configuration of dp-GAN: a WGAN-GP whose critic is trained by DP-SGD.

    Privacy parameters (all public, fixed before training):
      l2_clip_norm: per-example clip bound ``C`` of the critic's gradient (Alg. 1).
      clipping_decay: dp-GAN's ``C_decay`` in ``(0, 1]``, applied once per generator step
        (every ``n_critic`` critic steps, :func:`jdp.dpsgd.clipping_decay`); ``None``: off.
      sampling_prob: Poisson rate ``q`` of the critic's batches.
      expected_batch_size: the public constant ``B̄`` the noisy sum is divided by (``q N``
        for a declared public ``N``); never computed from the private row count.
      steps, epochs: the critic's DP-SGD run length (exactly one; ``epochs`` means
        ``ceil(epochs / q)`` steps). The noise multiplier is calibrated so that this many
        steps meet the fit's budget; the run stops there.

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
      microbatch_size: per-example gradients held at once (performance only).
      state_share: for a table with state indicators (numeric columns with public point
        masses or missing values): the share of epsilon their noisy counts
        (:func:`jdp.synth.states.release_state_counts`) are first calibrated to; a common
        factor then makes the whole ledger meet the budget (public rule). Sampling matches
        the generator's states to these counts. Unused without state indicators.
      dpsgd_method: DP-SGD clipping path (performance only). ``"auto"`` probes the ghost
        path and falls back to the general one (the gradient penalty's double backward is
        not exact on the ghost path); the ledger note names the path that ran.
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
    l2_clip_norm: float = 1.0
    clipping_decay: float | None = None
    sampling_prob: float = 0.01
    expected_batch_size: float = 64.0
    steps: int | None = None
    epochs: float | None = 5.0
    microbatch_size: int | None = None
    state_share: float = 0.05
    dpsgd_method: str = "auto"

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
        check_positive("l2_clip_norm", self.l2_clip_norm)
        if self.clipping_decay is not None:
            check_probability("clipping_decay", self.clipping_decay)
            if not self.clipping_decay > 0:
                raise ValueError(f"expected clipping_decay > 0, got {self.clipping_decay}")
        check_positive("expected_batch_size", self.expected_batch_size)
        planned_steps(steps=self.steps, epochs=self.epochs, sampling_prob=self.sampling_prob)
        check_open_unit("state_share", self.state_share)
        check_performance_flags(microbatch_size=self.microbatch_size, method=self.dpsgd_method)

    @property
    def num_steps(self) -> int:
        """Critic (DP-SGD) steps: :func:`jdp.dpsgd.train.planned_steps` of this config."""
        return planned_steps(steps=self.steps, epochs=self.epochs, sampling_prob=self.sampling_prob)
