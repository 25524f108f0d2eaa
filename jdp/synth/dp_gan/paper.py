"""dp-GAN's experiments (Frigerio et al., IFIP SEC 2019, Sec. 6): settings the paper does not
give, declared from public constants only, and its Table 1. ``scripts/reproduce_dpgan.py``
builds on it."""

from __future__ import annotations

import dataclasses

from jdp.data.datasets import PUBLIC_SIZES
from jdp.dpsgd import DPSGDConfig
from jdp.synth.dp_gan.config import DPGANConfig

PAPER_TABLE1 = {  # Frigerio et al. 2019, Table 1: accuracy on the balanced Adult test set
    "real": 0.772,
    "gan": 0.767,
    "eps3": {"dpgan": 0.737, "dpgan_decay": 0.753},
    "eps7": {"dpgan": 0.750, "dpgan_decay": 0.760},
}
#: Clipping decay ends the run at this fraction of the initial clip bound.
DECAY_FINAL_FRACTION = 0.25
#: Adult's training rows in quick mode (a fixed random subset of this public size).
ADULT_QUICK_ROWS = 8_000


def decay_for(config: DPGANConfig) -> float:
    """The per-generator-step decay that takes the clip bound to :data:`DECAY_FINAL_FRACTION`
    of its start over the planned run (a function of public settings only)."""
    generator_steps = max(1, config.dpsgd.num_steps // config.n_critic)
    return DECAY_FINAL_FRACTION ** (1.0 / generator_steps)


def with_decay(config: DPGANConfig) -> DPGANConfig:
    """``config`` with the clipping decay of :func:`decay_for`."""
    return dataclasses.replace(config, clipping_decay=decay_for(config))


def adult_config(quick: bool) -> DPGANConfig:
    """Poisson rate ``q = 0.004`` (an expected batch of 130 of Adult's documented 32,561
    training rows) and 10 epochs (2,500 critic steps, 500 generator steps); quick: ``q =
    0.01`` of the :data:`ADULT_QUICK_ROWS`-row subset, 5 epochs. Public constants only."""
    q, n = (0.01, ADULT_QUICK_ROWS) if quick else (0.004, PUBLIC_SIZES["adult"].train)
    epochs = 5.0 if quick else 10.0
    return DPGANConfig(dpsgd=DPSGDConfig(sampling_prob=q, expected_batch_size=q * n, epochs=epochs))
