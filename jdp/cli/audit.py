"""``jdp audit``: empirical privacy audits (lower bounds on epsilon, membership inference).

jdp audit mechanism NAME|all [--trials N] [--epsilon 1] [--delta 1e-5] [--json]
jdp audit --model DIR --dataset NAME [--members 1000] [--density kde|gmm] [--json]

The first form runs the black-box audit of a library mechanism (its noise calibrated to
--epsilon, --delta) and prints the claimed epsilon (from the mechanism's own privacy event)
beside the audited lower bound. The second samples a saved model and runs membership-inference
attacks (distance to closest record, DOMIAS density ratio) on records of the dataset's training
split (members: the model must have been fitted on that split) against its test split. Audits
are measurements: a lower bound above the claim falsifies it, an attack AUC near 0.5 proves
nothing; DCR is an attack, not a privacy guarantee.
"""

from __future__ import annotations

import argparse

from jdp.cli._args import add_command, add_flags, json_line


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "audit",
        __doc__,
        help="audit a mechanism (epsilon lower bound) or a model (membership inference)",
    )
    parser.add_argument(
        "what",
        nargs="*",
        metavar="mechanism NAME",
        help="audit the registered mechanism NAME ('all': every one)",
    )
    parser.add_argument("--model", metavar="DIR", help="saved model (jdp fit --out) to attack")
    add_flags(
        parser,
        "dataset",
        "epsilon",
        "delta",
        "seed",
        "json",
        dataset={"help": "named dataset the model was fitted on (train: members, test: others)"},
        epsilon={"type": float, "default": 1.0, "help": "mechanism audits: target epsilon"},
        seed={"help": "seed of the trials / sampling (default 0: audits are measurements)"},
    )
    parser.add_argument("--trials", type=int, help="trials per dataset (default: the registry's)")
    parser.add_argument("--members", type=int, default=1000, help="member records attacked")
    parser.add_argument("--density", choices=["kde", "gmm"], default="kde", help="DOMIAS density")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.what:
        if len(args.what) != 2 or args.what[0] != "mechanism":
            raise ValueError("expected 'jdp audit mechanism NAME' or 'jdp audit --model DIR'")
        return run_mechanisms(args, args.what[1])
    if not (args.model and args.dataset):
        raise ValueError("expected --model DIR and --dataset NAME (or 'mechanism NAME')")
    return run_model(args)


def run_mechanisms(args: argparse.Namespace, name: str) -> int:
    from jdp.audit.run import MECHANISM_AUDITS, run_mechanism_audit

    names = sorted(MECHANISM_AUDITS) if name == "all" else [name]
    if name != "all" and name not in MECHANISM_AUDITS:
        raise ValueError(f"unknown mechanism {name!r}; expected one of {sorted(MECHANISM_AUDITS)}")
    seed = 0 if args.seed is None else args.seed
    results = [
        run_mechanism_audit(
            n, seed=seed, trials=args.trials, epsilon=args.epsilon, delta=args.delta
        )
        for n in names
    ]
    if args.json:
        print(json_line({"mechanisms": [r.as_dict() for r in results]}))
        return 0
    print(
        f"{'mechanism':17s} {'claimed eps':>11s} {'lower bound':>11s} {'ratio':>6s} "
        f"{'trials':>9s} {'wall s':>7s}  end to end"
    )
    for r in results:
        print(
            f"{r.name:17s} {r.epsilon:11.3f} {r.lower_bound:11.3f} {r.tightness:6.2f} "
            f"{r.trials:9d} {r.wall_s:7.1f}  {'yes' if r.end_to_end else 'no (one release)'}"
            + ("  [retired sampler: expected to break]" if r.expect == "breaks" else "")
        )
    print(
        f"delta = {args.delta:g}; 95% Clopper-Pearson lower bounds, thresholds chosen on "
        "held-out trials. A lower bound above the claim would falsify it."
    )
    return 0


def run_model(args: argparse.Namespace) -> int:
    import jax

    from jdp.audit.mia import mia_section, mia_split, synthetic_data_mia
    from jdp.data.datasets import load_dataset
    from jdp.eval.report import format_table
    from jdp.synth.io import load

    model = load(args.model)
    dataset = load_dataset(args.dataset)
    seed = 0 if args.seed is None else args.seed
    members, nonmembers, reference = mia_split(
        dataset.train, dataset.test, members=args.members, seed=seed
    )
    results = synthetic_data_mia(
        jax.random.key(seed), model, members, nonmembers, reference, density=args.density
    )
    section, _ = mia_section(results, method=model.method, epsilon=model.epsilon())
    if args.json:
        print(json_line({"mia": section}))
        return 0
    eps = section["epsilon"]
    print(
        f"membership inference against {model.method} "
        f"({'non-private' if eps is None else f'epsilon {eps:.3g}'}), "
        f"{results[0].n_members} members and {results[0].n_nonmembers} non-members"
    )
    rows = [
        {
            "attack": r.name,
            "AUC": r.auc,
            "95% CI": f"[{r.auc_ci[0]:.3f}, {r.auc_ci[1]:.3f}]",
            "held-out accuracy": r.accuracy,
        }
        for r in results
    ]
    print(format_table(rows, list(rows[0])))
    print(section["note"])
    return 0
