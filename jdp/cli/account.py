"""``jdp account``: privacy of a training plan, or the noise that meets a target.

jdp account dpsgd --noise-multiplier 1.1 --sampling-prob 0.01 --steps 10000 --delta 1e-5
jdp account dpsgd --target-epsilon 3 --sampling-prob 0.01 --steps 10000 --delta 1e-5 --json
"""

from __future__ import annotations

import argparse
import math
import warnings

from jdp.cli._args import add_flags, json_line

# The accounting package (dp_accounting, scipy: about a second) is imported by the functions
# that account, not here: ``jdp account --help`` and argument parsing stay fast.

#: ``--accountant`` -> the accountant's name in :mod:`accounting.compose` ("best" is
#: :data:`accounting.compose.BEST`, the minimum of the rigorous accountants).
_ACCOUNTANTS = {"best": "best", "rdp": "rdp", "pld": "pld", "gdp": "gdp_clt"}
_DESCRIPTIONS = {
    "best": "the tightest of the rigorous accountants, as the ledger reports",
    "rdp": "Rényi DP accountant (exact subsampled-Gaussian RDP, improved conversion)",
    "pld": "privacy-loss-distribution accountant (dp_accounting)",
    "gdp": "mu-GDP central-limit APPROXIMATION (not a guarantee)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "account",
        help="privacy accounting of a training plan",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plans = parser.add_subparsers(dest="plan", required=True)
    dpsgd = plans.add_parser("dpsgd", help="DP-SGD: epsilon for a noise multiplier, or calibrate")
    noise = dpsgd.add_mutually_exclusive_group(required=True)
    noise.add_argument("--noise-multiplier", type=float, help="noise std / clip norm")
    noise.add_argument("--target-epsilon", type=float, help="calibrate the noise to this epsilon")
    dpsgd.add_argument("--sampling-prob", type=float, required=True, help="q = batch / n")
    dpsgd.add_argument("--steps", type=int, required=True, help="number of noisy steps")
    dpsgd.add_argument("--delta", type=float, required=True, help="target delta in (0, 1)")
    dpsgd.add_argument(
        "--accountant",
        choices=sorted(_ACCOUNTANTS),
        default="best",
        help="best (default: the minimum of the rigorous accountants, as a fitted model's "
        "ledger reports), rdp or pld (upper bounds); gdp: a CLT approximation, reporting only "
        "(warns)",
    )
    dpsgd.add_argument(
        "--sampling",
        choices=["poisson", "without_replacement"],
        default="poisson",
        help="batch sampling (without_replacement: fixed size, replace-one relation)",
    )
    dpsgd.add_argument("--dataset-size", type=int, help="n (needed for without_replacement)")
    dpsgd.add_argument(
        "--params",
        type=int,
        help="number of model parameters the noise is drawn on: charges the noise sampler's "
        "cut as jdp.dpsgd.train does (its ledger's figure for a model of this size, or "
        "slightly above); without it, the ideal Gaussian's figure",
    )
    add_flags(dpsgd, "json")
    dpsgd.set_defaults(func=run_dpsgd)


def account_dpsgd(
    *,
    sampling_prob: float,
    steps: int,
    delta: float,
    noise_multiplier: float | None = None,
    target_epsilon: float | None = None,
    accountant: str = "best",
    sampling: str = "poisson",
    dataset_size: int | None = None,
    params: int | None = None,
) -> dict:
    """The result of ``jdp account dpsgd`` as a dict (the ``--json`` object).

    ``noise_multiplier`` is ``z`` = noise std / clip norm for both samplings; the event is
    :func:`accounting.builders.dpsgd_event`'s, as in :func:`jdp.dpsgd.train.train`. The ``gdp``
    accountant (CLT approximation) warns when it reports and refuses to calibrate. ``best``
    calibrates with RDP (as :class:`jdp.dpsgd.train.DPSGDConfig` does) and reports the
    ledger's figure, which is at most the target; ``bound_by`` names the accountant that gave
    it. ``params``: the model's parameter count, whose noise draw's sampler cut is charged per
    step (one pair per parameter: :func:`jdp.dpsgd.train.train`'s charge for a one-leaf
    model, an upper bound on it for any model of that size).
    """
    from accounting.builders import dpsgd_event
    from accounting.calibrate import calibrate_noise_multiplier
    from accounting.compose import BEST, best_epsilon, compute_epsilon
    from accounting.relations import dpsgd_neighboring_relation
    from accounting.validation import check_open_unit

    if (noise_multiplier is None) == (target_epsilon is None):
        raise ValueError("expected exactly one of noise_multiplier and target_epsilon")
    if accountant not in _ACCOUNTANTS:
        raise ValueError(f"expected accountant in {sorted(_ACCOUNTANTS)}, got {accountant!r}")
    delta = check_open_unit("delta", delta)
    name = _ACCOUNTANTS[accountant]
    relation = dpsgd_neighboring_relation(sampling)
    if accountant == "gdp" and noise_multiplier is not None:
        warnings.warn(
            "the 'gdp' accountant is a central-limit APPROXIMATION that can under-report "
            "epsilon; it is not a privacy guarantee (use 'rdp' or 'pld')",
            UserWarning,
            stacklevel=2,
        )
    cut = 0.0 if params is None else _noise_cut(params)
    if noise_multiplier is None:
        noise_multiplier = calibrate_noise_multiplier(
            target_epsilon=target_epsilon,
            target_delta=delta,
            sampling_prob=sampling_prob,
            steps=steps,
            sampling=sampling,
            dataset_size=dataset_size,
            accountant=name,
            noise_cut=cut,
        )
    event = dpsgd_event(
        noise_multiplier,
        sampling_prob,
        steps,
        sampling=sampling,
        dataset_size=dataset_size,
        noise_cut=cut,
    )
    if name == BEST:
        bound = best_epsilon(event, delta, neighboring_relation=relation)
        eps, bound_by = bound.value, bound.accountant
    else:
        eps = compute_epsilon(event, delta, accountant=name, neighboring_relation=relation)
        bound_by = accountant
    return {
        "epsilon": eps,
        "bound_by": bound_by,
        "delta": delta,
        "noise_multiplier": noise_multiplier,
        "sampling_prob": sampling_prob,
        "steps": steps,
        "accountant": accountant,
        "approximation": accountant == "gdp",
        "calibrated": target_epsilon is not None,
        "target_epsilon": target_epsilon,
        "sampling": sampling,
        "neighboring_relation": relation.name,
        "params": params,
        "noise_cut_per_step": None if params is None else cut,
    }


def _noise_cut(params: int) -> float:
    """The sampler's cut per step charged for ``params`` parameters: one pair each and the
    overflow of one draw holding them all, an upper bound on
    :func:`jdp.dpsgd.noise.noise_cut` of any model with that many (one draw per dtype; the
    overflow bound is superadditive, so one draw is its worst arrangement)."""
    from accounting.validation import check_count
    from jdp.dpsgd.noise import PAIR_TAIL_MASS, deep_overflow  # JAX: imported only when asked

    n = check_count("params", params, minimum=1)
    return n * PAIR_TAIL_MASS + deep_overflow(n)


def statement(result: dict) -> str:
    """A readable privacy statement for an :func:`account_dpsgd` result."""
    from accounting.compose import make_accountant

    relation = (
        "add/remove-one" if result["neighboring_relation"] == "ADD_OR_REMOVE_ONE" else "replace-one"
    )
    eps = "inf" if math.isinf(result["epsilon"]) else f"{result['epsilon']:.4g}"
    head = (
        f"Calibrated noise multiplier {result['noise_multiplier']:.4g} for target epsilon "
        f"{result['target_epsilon']:g}.\n"
        if result["calibrated"]
        else ""
    )
    return (
        f"{head}DP-SGD: noise multiplier {result['noise_multiplier']:.4g}, sampling probability "
        f"{result['sampling_prob']:g} ({result['sampling'].replace('_', ' ')}), "
        f"{result['steps']} steps.\n"
        f"Privacy: ({eps}, {result['delta']:g})-differential privacy for {relation} "
        f"neighbouring datasets\n  [{_DESCRIPTIONS[result['accountant']]}"
        + (
            f": {make_accountant(result['bound_by']).title}"
            if result["accountant"] == "best"
            else ""
        )
        + "]."
        + (
            "\n  The noise sampler's cut is not charged (--params N charges it, as a fit does)."
            if result["params"] is None
            else f"\n  The noise sampler's cut is charged for {result['params']} parameters."
        )
    )


def run_dpsgd(args: argparse.Namespace) -> int:
    result = account_dpsgd(
        sampling_prob=args.sampling_prob,
        steps=args.steps,
        delta=args.delta,
        noise_multiplier=args.noise_multiplier,
        target_epsilon=args.target_epsilon,
        accountant=args.accountant,
        sampling=args.sampling,
        dataset_size=args.dataset_size,
        params=args.params,
    )
    print(json_line(result) if args.json else statement(result))
    return 0
