"""Benchmark dp-GAN's critic step on its clipping paths against the non-private step.

The critic's per-example loss is WGAN-GP's (:func:`jdp.synth.dp_gan.losses.make_critic_loss`:
``D(G(z)) - D(x) + lambda (||grad D(u x + (1-u) G(z))|| - 1)^2``, the generator of dp-GAN's
default widths held fixed). Paths, all one jitted Adam step of the critic on one batch:

* ``nonprivate``: the gradient of the batch mean of the same loss;
* ``general``: DP-SGD on the general path (``vmap`` of the per-example double backward),
  the whole batch at once, plus the Gaussian noise;
* ``general_micro``: the same in micro-batches of about ``--chunk`` (the divisor of the batch
  nearest to it; :func:`jdp.dpsgd.clipping.clipped_sum_general`);
* ``general_auto``: the general path with ``microbatch_size="auto"``
  (:func:`jdp.dpsgd.clipping.auto_microbatch_size`, the default of the clipping path objects
  where the general path stays);
* ``ghost_penalty``: DP-SGD on the exact gradient-penalty ghost path
  (:mod:`jdp.dpsgd.ghost_penalty`, what ``performance.clipping="auto"`` takes for this
  critic), plus the same noise.

Cases: ``mlp60``, a 60-128-128-1 leaky-ReLU critic (tanh records of width 60), and
``adult``, dp-GAN's default widths on the encoded Adult record (114-128-128-1, softmax heads);
batches 128, 256 and 414 (the Adult fit's padded batch). All paths of a case and batch are
built in one process and timed round-robin: each round times a block of steps of every path in
turn (a block lasts about 0.1 s), so load spikes hit every path alike; a path's time is the
median over ``--reps`` rounds (3 by default) of its per-step time.

    python scripts/bench_critic.py [--reps 3] [--batches 128,256,414] [--json] [--quick]

``--quick``: the ``mlp60`` case at batch 128 only. ``--json`` prints one object: per case and
batch ``ms`` (per path), ``ratio`` (over ``nonprivate``), ``auto`` (the path the automatic
choice takes) and ``micro`` (the micro-batch of ``general_micro`` and ``general_auto``). The
table also goes to ``docs/results/bench_critic.md``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import _harness as H
from bench_dpgan import critic_bench

CASES = ("mlp60", "adult")
PATHS = ("nonprivate", "general", "general_micro", "general_auto", "ghost_penalty")


def _layout(case: str):
    if case == "mlp60":
        return (("tanh", 60),)
    from jdp.data.datasets import adult_schema
    from jdp.synth.dp_gan import DPGANConfig
    from jdp.synth.dp_gan.model import codec

    return codec(adult_schema(), DPGANConfig()).layout


def _micro(batch: int, chunk: int) -> int:
    """The divisor of ``batch`` nearest to ``chunk`` (the smaller on a tie)."""
    divisors = [m for m in range(1, batch + 1) if batch % m == 0]
    return min(divisors, key=lambda m: (abs(m - chunk), m))


def build(case: str, batch: int, chunk: int) -> tuple[dict, str, dict]:
    """Zero-argument runners of one jitted critic step per path, the automatic path's choice,
    and the micro-batch sizes of ``general_micro`` and ``general_auto``."""
    import jax

    from jdp.dpsgd import make_dp_step
    from jdp.dpsgd.clipping import auto_microbatch_size
    from jdp.synth.dp_gan import DPGANConfig

    b = critic_bench(DPGANConfig(), _layout(case), batch)
    runs = {"nonprivate": b.nonprivate}
    count = sum(a.size for a in jax.tree_util.tree_leaves(b.params))
    micro = {
        "general_micro": _micro(batch, chunk),
        "general_auto": auto_microbatch_size(batch, count),
    }
    args = (b.params, b.dp_state, b.x, b.mask, b.key, b.gen_state)
    for path, method, m in (
        ("general", "general", None),
        ("general_micro", "general", micro["general_micro"]),
        ("general_auto", "general", "auto"),
        ("ghost_penalty", "ghost_penalty", None),
    ):
        step = make_dp_step(
            b.loss, b.chain, l2_clip_norm=1.0, method=method, microbatch_size=m,
            with_model_state=True,
        )  # fmt: skip
        runs[path] = lambda step=step: jax.block_until_ready(step(*args))
    for run in runs.values():
        run()  # compile
    return runs, b.auto, micro


def time_blocks(runs: dict, reps: int, block_s: float = 0.1) -> dict[str, float]:
    """Median ms per step per path: ``reps`` rounds, each timing a block of about ``block_s``
    seconds of steps of every path in turn."""
    sizes = {}
    for path, run in runs.items():
        t0 = time.perf_counter()
        run()
        sizes[path] = max(1, round(block_s / max(time.perf_counter() - t0, 1e-6)))
    times: dict[str, list[float]] = {p: [] for p in runs}
    for _ in range(reps):
        for path, run in runs.items():
            t0 = time.perf_counter()
            for _ in range(sizes[path]):
                run()
            times[path].append((time.perf_counter() - t0) / sizes[path])
    return {p: 1e3 * statistics.median(t) for p, t in times.items()}


def compute(args: argparse.Namespace) -> dict:
    cases = ("mlp60",) if args.quick else CASES
    batches = [128] if args.quick else [int(b) for b in args.batches.split(",")]
    out: dict = {"reps": args.reps, "chunk": args.chunk, "results": {}}
    for case in cases:
        for batch in batches:
            H.log(f"[bench] {case}, batch {batch}: building")
            runs, auto, micro = build(case, batch, args.chunk)
            ms = time_blocks(runs, args.reps)
            base = ms["nonprivate"]
            out["results"][f"{case}/{batch}"] = {
                "case": case,
                "batch": batch,
                "ms": ms,
                "ratio": {p: t / base for p, t in ms.items()},
                "auto": auto,
                "micro": micro,
            }
    return out


def render(out: dict) -> str:
    head = f"{'case':<7} {'batch':>5} {'path':<19} {'ms/step':>9} {'x nonprivate':>13}"
    lines = [
        (
            f"median of {out['reps']} rounds (blocks of ~0.1 s of steps, round-robin); "
            "critic Adam step incl. noise; (m): micro-batch (general_micro: the divisor nearest "
            f"--chunk {out['chunk']}; general_auto: the 4 MiB rule)"
        ),
        head,
    ]
    for r in out["results"].values():
        for path, t in r["ms"].items():
            name = f"{path} ({r['micro'][path]})" if path in r["micro"] else path
            lines.append(
                f"{r['case']:<7} {r['batch']:>5} {name:<19} {t:9.2f} {r['ratio'][path]:13.2f}"
            )
        lines.append(f"{r['case']:<7} {r['batch']:>5} auto takes: {r['auto']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="mlp60 at batch 128 only")
    p.add_argument("--reps", type=int, default=3, help="rounds (median)")
    p.add_argument("--batches", default="128,256,414")
    p.add_argument("--chunk", type=int, default=16, help="general_micro's micro-batch (about)")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
