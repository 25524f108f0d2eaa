"""Time to account 10^6 DP-SGD steps: jdp's RDP accountant vs dp-accounting's RdpAccountant.

Both start from scratch in the same process (no caches), account
``SelfComposed(PoissonSampled(q, Gaussian(z)), steps)`` on their DEFAULT order grids (ours is a
superset of theirs) and convert to epsilon at ``delta``. Each is timed ``--repeats`` times;
the table shows the median and the epsilons.

    python scripts/bench_accounting.py [--steps 1000000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import dp_accounting

from accounting import events as ev
from accounting.builders import dpsgd_event
from accounting.compose import compute_epsilon


def _ours(event: ev.DpEvent, delta: float) -> float:
    return compute_epsilon(event, delta, accountant="rdp")


def _theirs(event: ev.DpEvent, delta: float) -> float:
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(event)
    return acc.get_epsilon(delta)


def _time(fn, event: ev.DpEvent, delta: float, repeats: int) -> tuple[float, float]:
    times, eps = [], float("nan")
    for _ in range(repeats):
        t0 = time.perf_counter()
        eps = fn(event, delta)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), eps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10**6)
    parser.add_argument("--noise-multiplier", type=float, default=1.1)
    parser.add_argument("--sampling-prob", type=float, default=0.01)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    event = dpsgd_event(args.noise_multiplier, args.sampling_prob, args.steps)
    print(
        f"accounting {args.steps} steps (q={args.sampling_prob}, z={args.noise_multiplier})",
        file=sys.stderr,
    )
    t_ours, eps_ours = _time(_ours, event, args.delta, args.repeats)
    t_theirs, eps_theirs = _time(_theirs, event, args.delta, args.repeats)
    result = {
        "steps": args.steps,
        "noise_multiplier": args.noise_multiplier,
        "sampling_prob": args.sampling_prob,
        "delta": args.delta,
        "repeats": args.repeats,
        "jdp_seconds": t_ours,
        "dp_accounting_seconds": t_theirs,
        "jdp_epsilon": eps_ours,
        "dp_accounting_epsilon": eps_theirs,
        "speedup": t_theirs / t_ours,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{'accountant':<28}{'median time (s)':>16}{'epsilon':>14}")
        print(f"{'jdp accounting.accountants.rdp':<28}{t_ours:>16.4f}{eps_ours:>14.6f}")
        print(f"{'dp_accounting RdpAccountant':<28}{t_theirs:>16.4f}{eps_theirs:>14.6f}")
        print(f"speed-up: {result['speedup']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
