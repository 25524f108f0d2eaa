"""DP-SGD: batch selection, per-example clipping (general and ghost paths), noise, multi-device
sums, clip schedules, the optax-style step and the training loop.

The public face::

    from jdp.dpsgd import DPSGDConfig, train
    result = train(key, loss_fn, params, optax.adam(1e-3), data,
                   DPSGDConfig(l2_clip_norm=1.0, sampling_prob=0.01, expected_batch_size=200,
                               epochs=5, noise_multiplier=1.1))

Modules (each imports only those above it): :mod:`~jdp.dpsgd.batch_selection` (Poisson and
fixed-size strategies, their relation and event), :mod:`~jdp.dpsgd.clipping` (per-example
gradients, clip factors, the general path), :mod:`~jdp.dpsgd.ghost_clipping` (the ghost path),
:mod:`~jdp.dpsgd.ghost_penalty` (the ghost path of WGAN-GP's critic loss),
:mod:`~jdp.dpsgd.noise` (every noise draw; the optax privatizer :func:`dp_aggregate`),
:mod:`~jdp.dpsgd.clip_schedules`, :mod:`~jdp.dpsgd.parallel`, :mod:`~jdp.dpsgd.step` (path
choice, :func:`make_dp_step`, :func:`dp_sgd`), :mod:`~jdp.dpsgd.settings` (the privacy
parameters and the performance flags), :mod:`~jdp.dpsgd.run` (a planned run and the pieces of
a loop), :mod:`~jdp.dpsgd.train`, :mod:`~jdp.dpsgd.loop` (the pieces of a researcher's own loop:
:func:`poisson_batches`, :func:`clipped_grad`, :class:`Accountant`; see
``docs/examples/custom_loop.py``).
"""

from jdp.dpsgd.batch_selection import (
    BatchSelection,
    FixedSizeSampling,
    PaddedBatch,
    PoissonSampling,
    as_batch_selection,
)
from jdp.dpsgd.clip_schedules import AdaptiveClip, clipping_decay
from jdp.dpsgd.clipping import ClippedSum, StepInfo, per_example_grads, per_layer_clip_norms
from jdp.dpsgd.ghost_penalty import GradientPenaltyLoss
from jdp.dpsgd.loop import Accountant, ClippedGrad, accumulate, clipped_grad, poisson_batches
from jdp.dpsgd.noise import dp_aggregate, gaussian_noise
from jdp.dpsgd.parallel import data_mesh
from jdp.dpsgd.run import Run, start
from jdp.dpsgd.settings import (
    AutoClipping,
    ClippingPath,
    DPSGDConfig,
    GeneralClipping,
    GhostClipping,
    GhostPenaltyClipping,
    Performance,
    check_template,
    clipping_path,
    planned_steps,
)
from jdp.dpsgd.step import (
    DPSGDState,
    StepKeys,
    choose_method,
    clipped_grad_sum,
    dp_sgd,
    make_clipped_sum_fn,
    make_dp_step,
)
from jdp.dpsgd.train import TrainResult, train

__all__ = [
    "Accountant",
    "AdaptiveClip",
    "AutoClipping",
    "BatchSelection",
    "ClippedGrad",
    "ClippedSum",
    "ClippingPath",
    "DPSGDConfig",
    "DPSGDState",
    "FixedSizeSampling",
    "GeneralClipping",
    "GhostClipping",
    "GhostPenaltyClipping",
    "GradientPenaltyLoss",
    "PaddedBatch",
    "Performance",
    "PoissonSampling",
    "Run",
    "StepInfo",
    "StepKeys",
    "TrainResult",
    "accumulate",
    "as_batch_selection",
    "check_template",
    "choose_method",
    "clipped_grad",
    "clipped_grad_sum",
    "clipping_decay",
    "clipping_path",
    "data_mesh",
    "dp_aggregate",
    "dp_sgd",
    "gaussian_noise",
    "make_clipped_sum_fn",
    "make_dp_step",
    "per_example_grads",
    "per_layer_clip_norms",
    "planned_steps",
    "poisson_batches",
    "start",
    "train",
]
