"""The pieces of DP-SGD for a researcher's own JAX loop: batches, clipped gradients, accounting.

:func:`jdp.dpsgd.train.train` plans, samples, steps and accounts in one call. A loop of one's
own takes the same three rules from here, each the one copy ``train`` uses:

* :func:`poisson_batches`: the run's logical batches, drawn by the config's batch selection
  (:meth:`jdp.dpsgd.batch_selection.BatchSelection.batches`) in chunks of the padded length
  :func:`jdp.dpsgd.run.start` picks, with the same overflow policy;
* :func:`clipped_grad`: ``loss_fn`` (for ONE example) to ``(params, batch, mask[, key]) ->
  ClippedSum``, the clipped per-example gradient sum that
  :func:`jdp.dpsgd.noise.dp_aggregate` takes (the general or ghost path, chosen by
  :func:`jdp.dpsgd.step.choose_method`);
* :class:`Accountant`: the noise multiplier (given, or calibrated by
  :meth:`DPSGDConfig.calibrated_noise_multiplier`), the epsilon after the steps taken
  (:meth:`DPSGDConfig.epsilon_after`) and the ledger entry (:func:`jdp.dpsgd.run.run_ledger`,
  what ``train`` records).

::

    acct = Accountant(config, params=params)            # z given or calibrated
    opt = optax.chain(acct.privatizer(noise_key), optax.adam(1e-3))
    grad_fn = clipped_grad(loss_fn, config.l2_clip_norm)
    for chunks in poisson_batches(batch_key, n, config):
        sums = [grad_fn(params, take(data, c.indices), c.mask) for c in chunks]
        updates, opt_state = opt.update(accumulate(*sums), opt_state, params)
        params = optax.apply_updates(params, updates)
        acct.step()
    acct.epsilon(1e-5), acct.ledger("dp-sgd")

A complete example: ``docs/examples/custom_loop.py``.

Privacy:
    As :mod:`jdp.dpsgd.run`: each step is the subsampled Gaussian mechanism on a clipped sum
    of sensitivity ``C`` (noise std ``z C`` drawn by ``dp_aggregate``), ``T`` steps of the
    config's batch selection. The guarantee holds only if the loop does what the accountant
    is told: one noisy update per logical batch of :func:`poisson_batches`, the noise
    multiplier of :attr:`Accountant.noise_multiplier`, and :meth:`Accountant.step` once per
    update. A loop stopped early records the steps it took; one that steps past the plan is
    refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
import optax

from accounting.compose import BEST
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count
from jdp.dpsgd.batch_selection import PaddedBatch
from jdp.dpsgd.clipping import (
    ClippedSum,
    LossFn,
    Method,
    Params,
    add_clipped_sums,
    check_batch,
    check_clip_norm,
)
from jdp.dpsgd.noise import dp_aggregate, noise_cut
from jdp.dpsgd.run import run_ledger
from jdp.dpsgd.settings import DPSGDConfig, Performance
from jdp.dpsgd.step import choose_method, make_clipped_sum_fn
from jdp.random import numpy_rng

__all__ = ["Accountant", "ClippedGrad", "accumulate", "clipped_grad", "poisson_batches"]

Plan = DPSGDConfig | tuple[float, int]


def plan_config(plan: Plan, noise_multiplier: float | None = None) -> DPSGDConfig:
    """A :class:`DPSGDConfig` for ``plan``: a config as is, or ``(sampling_prob, steps)`` as a
    Poisson config with that rate and run length (its ``expected_batch_size``, which no
    accounting reads, left at 1). ``noise_multiplier``, where given, is set on it; a config
    that states its own noise too is refused (the noise is said in one place)."""
    if isinstance(plan, DPSGDConfig):
        config = plan
    elif isinstance(plan, tuple) and len(plan) == 2:
        q, steps = plan
        config = DPSGDConfig(sampling_prob=q, steps=steps, expected_batch_size=1.0)
    else:
        raise TypeError(
            f"expected a DPSGDConfig or a (sampling_prob, steps) pair, got {type(plan).__name__}"
        )
    if noise_multiplier is None:
        return config
    if config.noise_multiplier is not None or config.target_epsilon is not None:
        raise ValueError(
            "expected the noise in one place: the config already has noise_multiplier="
            f"{config.noise_multiplier} / target_epsilon={config.target_epsilon}, got "
            f"noise_multiplier={noise_multiplier} too"
        )
    return config.with_noise(noise_multiplier)


# -- batches -----------------------------------------------------------------------------------
def poisson_batches(
    key: jax.Array | np.random.Generator,
    dataset_size: int,
    plan: Plan,
    *,
    performance: Performance | None = None,
) -> Iterator[list[PaddedBatch]]:
    """The logical batches of a run, exactly as :func:`jdp.dpsgd.train.train` draws them.

    Each item is one step's batch as a list of fixed-shape :class:`PaddedBatch` chunks
    (``indices``: rows of the dataset, 0 where padded; ``mask``: True for real rows); the list
    has one chunk unless the Poisson batch overflowed the padded length, which the overflow
    policy (``performance.overflow``, default ``"accumulate"``) splits into more chunks of the
    same shape whose clipped sums are added before ONE noise draw (:func:`accumulate`), or
    refuses (``"raise"``). Gather ``x[chunk.indices]`` and pass ``chunk.mask`` on.

    Args:
        key: a JAX key (used once, through :func:`jdp.random.numpy_rng`, as ``train`` uses
            its sampling key) or a numpy generator.
        dataset_size: ``n``, the number of records.
        plan: a :class:`DPSGDConfig` (its rate, run length and batch selection: Poisson by
            default, fixed-size batches for ``sampling="without_replacement"``) or a
            ``(sampling_prob, steps)`` pair (Poisson).
        performance: the chunk flags ``train`` reads (:class:`Performance`: ``chunk_size``,
            a micro-batch or device multiple, ``overflow``); they change compute only.

    Yields:
        ``steps`` lists of :class:`PaddedBatch`.

    Privacy:
        The selection is the config's batch selection exactly (Poisson: every record in
        with probability ``q``, independently), the one :class:`Accountant` accounts.
    """
    config = plan_config(plan)
    performance = Performance() if performance is None else performance
    if not isinstance(performance, Performance):
        raise TypeError(
            f"expected performance to be a Performance, got {type(performance).__name__}"
        )
    n = check_count("dataset_size", dataset_size, minimum=0)
    rng = key if isinstance(key, np.random.Generator) else numpy_rng(key)
    padded = config.sampling.padded_size(
        n,
        config.sampling_prob,
        multiple_of=performance.chunk_multiple,
        chunk_size=performance.chunk_size,
    )
    return config.sampling.batches(
        rng,
        n,
        sampling_prob=config.sampling_prob,
        steps=config.num_steps,
        padded_size=padded,
        overflow=performance.overflow,
    )


def accumulate(*sums: ClippedSum) -> ClippedSum:
    """The clipped sum of one logical batch from its chunks' (gradient accumulation: the sums
    add, the sensitivity of the step stays that of one)."""
    if not sums:
        raise ValueError("expected at least one ClippedSum")
    total = sums[0]
    for part in sums[1:]:
        total = add_clipped_sums(total, part)
    return total


# -- clipped gradients -------------------------------------------------------------------------
def _is_traced(tree: Any) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _probe_values(p: Any) -> np.ndarray:
    """Generic (non-zero, non-repeating), data-free values of ``p``'s shape and dtype for the
    path check inside a trace: ``0.1 sin(1, 2, 3, ...)``."""
    size = int(np.prod(np.shape(p)))
    values = 0.1 * np.sin(np.arange(1, size + 1, dtype=np.float64))
    return values.reshape(np.shape(p)).astype(p.dtype)


class ClippedGrad:
    """``(params, batch, mask, key=None) -> ClippedSum``: see :func:`clipped_grad`.

    Attributes:
        method: the clipping path that runs (``"general"``, ``"ghost"`` or
            ``"ghost_penalty"``); ``None`` until the first call resolves ``"auto"``.
    """

    def __init__(
        self,
        loss_fn: LossFn,
        l2_clip_norm: Any,
        *,
        has_aux: bool,
        method: Method,
        microbatch_size: int | str | None,
    ) -> None:
        if not callable(loss_fn):
            raise TypeError(f"expected loss_fn to be callable, got {type(loss_fn).__name__}")
        self.loss_fn = loss_fn
        self.l2_clip_norm = check_clip_norm(l2_clip_norm)
        self.has_aux = has_aux
        self.microbatch_size = microbatch_size
        self.method = None if method == "auto" else method
        self._asked = method
        self._fn: Callable | None = None

    def _resolve(self, params: Params, batch: Any) -> Callable:
        if self._fn is None:
            # chosen on a zero record of the batch's public shape (never on a private one) and,
            # inside a trace, on synthetic parameters of the parameters' shapes
            example = jax.tree_util.tree_map(
                lambda x: np.zeros((1, *np.shape(x)[1:]), x.dtype), batch
            )
            if _is_traced(params):
                params = jax.tree_util.tree_map(_probe_values, params)
            with jax.ensure_compile_time_eval():  # concrete even inside the caller's jit
                self.method = choose_method(
                    self.loss_fn, params, example, has_aux=self.has_aux, method=self._asked
                )
            self._fn = make_clipped_sum_fn(
                self.loss_fn,
                has_aux=self.has_aux,
                microbatch_size=self.microbatch_size,
                method=self.method,
            )
        return self._fn

    def __call__(
        self, params: Params, batch: Any, mask: Any = None, key: jax.Array | None = None
    ) -> ClippedSum:
        if mask is None:
            raise TypeError(
                "expected the batch's mask: a padded batch has masked rows (row 0 repeated), "
                "and without the mask they would count as real examples; pass the mask of the "
                "PaddedBatch from jdp.dpsgd.poisson_batches (jnp.ones(len(batch), bool) for a "
                "batch with no padding)"
            )
        if not np.issubdtype(np.dtype(getattr(mask, "dtype", np.asarray(mask).dtype)), np.bool_):
            raise TypeError(f"expected a boolean mask, got dtype {mask.dtype}")
        check_batch(batch, mask)
        fn = self._resolve(params, batch)
        key = jax.random.key(0) if key is None else key
        clipped, _ = fn(params, batch, mask, key, self.l2_clip_norm)
        return clipped


def clipped_grad(
    loss_fn: LossFn,
    l2_clip_norm: Any,
    *,
    has_aux: bool = False,
    method: Method = "auto",
    microbatch_size: int | str | None = "auto",
) -> ClippedGrad:
    """Per-example clipped gradients as a function transform, for ``optax.chain(dp_aggregate(...),
    optimizer)``: ``clipped_grad(loss_fn, C)(params, batch, mask, key=None) -> ClippedSum``.

    ``ClippedSum.grads`` is ``sum_i mask_i g_i min(1, C / ||g_i||)`` over the rows of
    ``batch`` (``g_i`` the gradient of ``loss_fn`` on row ``i``; a non-finite one dropped) and
    ``ClippedSum.l2_sensitivity`` is ``C``: what ``dp_aggregate`` adds noise to. The path is
    the one ``train`` would take (:func:`jdp.dpsgd.step.choose_method`: ``"auto"`` takes the
    ghost path where it is exact, else the general path; chosen at the first call, on a zero
    record of the batch's shape) and the function is jitted.

    Args:
        loss_fn: the loss of ONE example, ``loss_fn(params, example, key)`` (see
            :mod:`jdp.dpsgd.clipping`; ``key`` a per-example key for dropout and the like).
        l2_clip_norm: ``C`` (or a pytree of per-leaf bounds).
        has_aux: whether ``loss_fn`` returns ``(loss, aux)``.
        method: ``"auto"``, ``"general"``, ``"ghost"`` or ``"ghost_penalty"``.
        microbatch_size: the general path's per-example gradients at a time (``"auto"``,
            a count, or ``None`` for the whole batch).

    The returned function takes ``mask`` (required: the padded rows must not count) and an
    optional ``key``, split into one key per row; without one a fixed key is used, which is
    fine for a loss that draws no randomness.

    Privacy:
        Adding or removing one row changes the sum by at most one clipped gradient: L2
        sensitivity ``C`` (per-layer bounds: ``sqrt(sum_l C_l^2)``).
    """
    return ClippedGrad(
        loss_fn, l2_clip_norm, has_aux=has_aux, method=method, microbatch_size=microbatch_size
    )


# -- accounting --------------------------------------------------------------------------------
class Accountant:
    """The privacy accounting of a custom DP-SGD loop, by ``train``'s rules.

    Build it from the plan, call :meth:`step` once per noisy update, read :meth:`epsilon`
    and record :meth:`ledger` at the end::

        acct = Accountant(config, params=params)                 # config: z or a target
        acct = Accountant((q, steps), noise_multiplier=1.1, params=params)

    Args:
        plan: a :class:`DPSGDConfig` (with a ``noise_multiplier`` or a target, calibrated by
            :meth:`DPSGDConfig.calibrated_noise_multiplier` as ``train`` does) or a
            ``(sampling_prob, steps)`` pair (Poisson; then ``noise_multiplier`` is required).
        noise_multiplier: ``z``, for a plan that does not state its noise.
        params: the model parameters (their shapes set the sampler's cut,
            :func:`jdp.dpsgd.noise.noise_cut`, which the ledger charges as ``train`` does),
        noise_cut: or that cut itself (one of ``params`` and ``noise_cut``).
        dataset_size: ``n``: read by fixed-size sampling's event and calibration only (Poisson
            ignores it).
        method: the clipping path, for the ledger's note (``ClippedGrad.method``; ``train``
            notes the path it ran).

    Attributes:
        config: the plan as a config (its noise, a multiplier or a target, resolved in
            :attr:`noise_multiplier`; its ``target_delta`` is :meth:`epsilon`'s default).
        noise_multiplier: ``z``, given or calibrated: give it to ``dp_aggregate``
            (:meth:`privatizer` does).
        steps: the planned number of steps.
        steps_taken: how many :meth:`step` has counted.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        noise_multiplier: float | None = None,
        params: Params = None,
        noise_cut: float | None = None,
        dataset_size: int | None = None,
        method: str | None = None,
    ) -> None:
        self._declared = isinstance(plan, DPSGDConfig)
        config = plan_config(plan, noise_multiplier).require_noise()
        if (params is None) == (noise_cut is None):
            raise ValueError(
                "expected exactly one of params (their shapes set the noise sampler's cut, "
                "which the ledger charges) and noise_cut"
            )
        if dataset_size is None and config.sampling.name == "without_replacement":
            raise ValueError(
                "expected dataset_size with sampling='without_replacement' (its replace-one "
                "event reads the public n)"
            )
        self.noise_cut = float(_noise_cut(params) if noise_cut is None else noise_cut)
        self.dataset_size = dataset_size
        self.noise_multiplier = config.calibrated_noise_multiplier(dataset_size, self.noise_cut)
        self.config = config
        self.steps = config.num_steps
        self.steps_taken = 0
        self.method = method

    def __repr__(self) -> str:
        return (
            f"Accountant(z={self.noise_multiplier:.6g}, q={self.config.sampling_prob:.6g}, "
            f"steps {self.steps_taken}/{self.steps})"
        )

    def privatizer(self, key: jax.Array) -> optax.GradientTransformation:
        """:func:`jdp.dpsgd.noise.dp_aggregate` with this plan's noise multiplier, declared
        ``expected_batch_size`` and ``secure_noise``: the first link of the optimiser chain,
        as ``train`` builds it."""
        if not self._declared:
            raise ValueError(
                "a (sampling_prob, steps) plan declares no expected_batch_size; plan with a "
                "DPSGDConfig, or build dp_aggregate(key, noise_multiplier=acct.noise_multiplier, "
                "expected_batch_size=...) yourself"
            )
        return dp_aggregate(
            key,
            noise_multiplier=self.noise_multiplier,
            expected_batch_size=self.config.expected_batch_size,
            secure_noise=self.config.secure_noise,
        )

    def step(self, count: int = 1) -> None:
        """Count ``count`` noisy updates (one per logical batch); refuses to pass the plan."""
        count = check_count("count", count, minimum=1)
        if self.steps_taken + count > self.steps:
            raise RuntimeError(
                f"the loop ran more steps than it accounted: the plan accounted for "
                f"{self.steps} steps, {self.steps_taken} were taken, and {count} more would "
                "spend more than the ledger says; plan a longer run (steps or epochs) before "
                "training"
            )
        self.steps_taken += count

    def epsilon(self, delta: float | None = None, accountant: str = BEST) -> float:
        """The epsilon at ``delta`` (default: the config's target delta) spent by the steps
        taken so far (:meth:`DPSGDConfig.epsilon_after`, by default the ledger's own rule:
        after the last step, the epsilon of ``train``'s ledger entry); 0 before any step."""
        if self.steps_taken == 0:
            return 0.0
        return self.config.epsilon_after(
            self.steps_taken,
            self.noise_multiplier,
            self.dataset_size,
            accountant,
            noise_cut=self.noise_cut,
            delta=delta,
        )

    def ledger(self, label: str = "dp-sgd") -> PrivacyLedger:
        """The loop's ledger entry: after the planned steps, exactly the entry ``train``
        records for the same plan (:func:`jdp.dpsgd.run.run_ledger`); before, the entry of the
        steps taken (what was spent), its note saying ``"k of T planned steps taken"``; with
        no step taken, an empty ledger."""
        relation = self.config.neighboring_relation
        if self.steps_taken == 0:
            return PrivacyLedger(neighboring_relation=relation)
        complete = self.steps_taken == self.steps
        config = self.config if complete else self.config.first_steps(self.steps_taken)
        note = "" if complete else f"{self.steps_taken} of {self.steps} planned steps taken"
        return run_ledger(
            config,
            self.noise_multiplier,
            self.dataset_size,
            noise_cut=self.noise_cut,
            method=self.method,
            label=label,
            note=note,
        )


def _noise_cut(params: Params) -> float:
    """The sampler's cut per step on parameters of these shapes (what ``start`` charges)."""
    return noise_cut(params)
