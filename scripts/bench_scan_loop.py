"""Benchmark DP-SGD's compiled loop against the step-by-step loop (issue 31).

The problem is bench_dpsgd.py's P3GM decoder (d'=10 -> 1000 -> 784, squared-error
reconstruction, Adam; ``--widths 16,20`` a small one whose steps are short), on ``--rows``
records sampled at ``q = batch / rows`` (Poisson, the expected batch ``--batch``), on the
clipping path ``train`` chooses (ghost for this MLP). Both
loops are :class:`jdp.dpsgd.run.Run`s planned by :func:`jdp.dpsgd.run.start` from the same
key; one timed unit is ``K`` logical steps including the host's batch selection:

* ``step_loop``: ``K`` times :meth:`Run.step` on :meth:`Run.batches` (today's loop: the
  batch gathered with numpy on the host and copied to the device, the chunk's clipped sum
  and the update dispatched apart);
* ``compiled``: one :meth:`Run.block` on :meth:`Run.blocks` (the records on the device,
  ``K`` steps scanned in one dispatch, the state donated);
* ``noise_draw``: ``K`` Gaussian draws of :func:`jdp.dpsgd.noise.dp_aggregate` on the
  decoder's parameters alone, and ``clipped_sum``: ``K`` clipped sums of one padded batch
  (jitted, on the device): the parts of a step no loop removes (where the time goes).

Both loops are compiled and warmed before timing and timed round-robin (one unit of each in
turn, ``--reps`` rounds; the machine is shared). ``train_s`` is the wall time of whole
``train`` calls of ``--train-steps`` steps, compilation included (one call each, after the
timed units in the same process), which short runs spend mostly in XLA's compiler.

    python scripts/bench_scan_loop.py [--reps 10] [--block 32] [--widths 1000,784] [--json]
        [--quick]

``--quick``: 4 rounds of blocks of 8, no whole-``train`` rows. With ``--json`` one JSON
object is printed on stdout; ``speedup`` is the compiled loop's steps/s over the step loop's.
The table goes to ``docs/results/bench_scan_loop.md``.
"""

from __future__ import annotations

import argparse

import _harness as H
from bench_dpsgd import CASES

D_IN, WIDTHS = CASES["p3gm_decoder"]


def _problem(args: argparse.Namespace):
    """``(loss_fn, params, data)`` of the decoder ``D_IN -> widths`` on ``args.rows`` random
    records (standard normal inputs and targets)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jdp.nn.mlp import MLP

    model = MLP(args.widths)
    params = model.init(jax.random.key(0), jnp.zeros(D_IN))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, D_IN)).astype(np.float32)
    y = rng.standard_normal((args.rows, args.widths[-1])).astype(np.float32)

    def loss_fn(p, example, key):
        del key
        return 0.5 * jnp.sum(jnp.square(model.apply(p, example["x"]) - example["y"]))

    return loss_fn, params, {"x": x, "y": y}


def _config(args: argparse.Namespace, steps: int):
    from jdp.dpsgd import DPSGDConfig

    q = args.batch / args.rows
    return DPSGDConfig(
        l2_clip_norm=1.0,
        sampling_prob=q,
        expected_batch_size=float(args.batch),
        steps=steps,
        noise_multiplier=1.0,
    )


def _units(args: argparse.Namespace) -> tuple[dict, str]:
    """One zero-argument unit of ``K`` steps per path (warmed), and the clipping path."""
    import jax
    import jax.numpy as jnp
    import optax

    from jdp.dpsgd import ClippedSum, Performance, dp_aggregate, make_clipped_sum_fn, start

    loss_fn, params, data = _problem(args)
    k = args.block
    steps = k * (args.reps + 2)
    runs = {
        name: start(
            jax.random.key(1),
            loss_fn,
            params,
            optax.adam(1e-3),
            data,
            _config(args, steps),
            Performance(steps_per_dispatch=spd),
        )
        for name, spd in (("step_loop", 1), ("compiled", k))
    }
    loop, compiled = runs["step_loop"], runs["compiled"]
    states = {name: run.init(params) for name, run in runs.items()}
    batches, blocks = loop.batches(), compiled.blocks()

    def step_loop() -> None:
        state = states["step_loop"]
        for _ in range(k):
            state = loop.step(state, next(batches))
        states["step_loop"] = jax.block_until_ready(state)

    def compiled_loop() -> None:
        state, _ = compiled.block(states["compiled"], next(blocks))
        states["compiled"] = jax.block_until_ready(state)

    aggregate = dp_aggregate(jax.random.key(2), noise_multiplier=1.0, expected_batch_size=1.0)
    clipped = ClippedSum(jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(1.0))
    draw = jax.jit(aggregate.update)
    noise = {"state": aggregate.init(params)}

    def noise_draw() -> None:
        for _ in range(k):
            out, noise["state"] = draw(clipped, noise["state"])
        jax.block_until_ready(out)

    sum_fn = make_clipped_sum_fn(loss_fn, method=compiled.clipping)
    (rows, mask), *_ = next(compiled.batches())
    rows = jax.device_put(rows)

    def clipped_sum() -> None:
        for _ in range(k):
            out = sum_fn(params, rows, mask, jax.random.key(3), 1.0)
        jax.block_until_ready(out)

    units = {
        "step_loop": step_loop,
        "compiled": compiled_loop,
        "noise_draw": noise_draw,
        "clipped_sum": clipped_sum,
    }
    for unit in units.values():  # compile and warm
        unit()
    return units, compiled.clipping


def _train_seconds(args: argparse.Namespace) -> dict[str, float]:
    """Wall seconds of one whole ``train`` call per loop, compilation included."""
    import jax
    import optax

    from jdp.dpsgd import Performance, train

    loss_fn, params, data = _problem(args)
    out = {}
    for name, spd in (("step_loop", 1), ("compiled", "auto")):
        seconds, result = H.timed(
            train,
            jax.random.key(1),
            loss_fn,
            params,
            optax.adam(1e-3),
            data,
            _config(args, args.train_steps),
            performance=Performance(steps_per_dispatch=spd),
        )
        jax.block_until_ready(result.params)
        out[name] = seconds
    return out


def compute(args: argparse.Namespace) -> dict:
    if args.quick:
        args.reps, args.block = 4, 8
    H.log(f"[bench] P3GM decoder, batch {args.batch} of {args.rows} rows: building, warming")
    units, clipping = _units(args)
    H.log(f"[bench] timing {args.reps} rounds of {args.block} steps per path")
    ms = H.time_round_robin(units, args.reps, args.reps)
    per_step = {name: v / args.block for name, v in ms.items()}
    steps_per_s = {name: 1e3 / v for name, v in per_step.items()}
    train_s = None if args.quick else _train_seconds(args)
    return {
        "widths": args.widths,
        "batch": args.batch,
        "rows": args.rows,
        "block": args.block,
        "reps": args.reps,
        "clipping": clipping,
        "ms_per_step": per_step,
        "steps_per_s": steps_per_s,
        "speedup": steps_per_s["compiled"] / steps_per_s["step_loop"],
        "host_share_step_loop": 1 - per_step["compiled"] / per_step["step_loop"],
        "device_floor_ms": per_step["noise_draw"] + per_step["clipped_sum"],
        "train_steps": args.train_steps,
        "train_s": train_s,
    }


def render(out: dict) -> str:
    lines = [
        (
            f"decoder MLP {D_IN}-{'-'.join(map(str, out['widths']))}, Adam, batch "
            f"{out['batch']} (Poisson, {out['rows']} rows), {out['clipping']} clipping; median "
            f"of {out['reps']} round-robin units of {out['block']} steps"
        ),
        f"{'path':12s} {'ms/step':>9s} {'steps/s':>9s}",
    ]
    for name, v in out["ms_per_step"].items():
        lines.append(f"{name:12s} {v:9.2f} {out['steps_per_s'][name]:9.1f}")
    lines.append(f"compiled loop / step loop, steps per second: {out['speedup']:.2f}x")
    lines.append(
        f"noise draw + clipped sum alone: {out['device_floor_ms']:.2f} ms a step (the device's "
        "share, which no loop removes); what the compiled loop saves, "
        f"{100 * out['host_share_step_loop']:.0f}% of a step-loop step, is the host's"
    )
    if out["train_s"]:
        t = out["train_s"]
        lines.append(
            f"whole train() of {out['train_steps']} steps, compilation included: step loop "
            f"{t['step_loop']:.1f} s, compiled (auto) {t['compiled']:.1f} s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="smoke run: 4 rounds of 8 steps, no train() rows")
    p.add_argument("--reps", type=int, default=10, help="timed units per path (median)")
    p.add_argument("--block", type=int, default=32, help="steps per unit (the compiled K)")
    p.add_argument("--batch", type=int, default=200, help="expected Poisson batch")
    p.add_argument("--rows", type=int, default=10000, help="records (q = batch / rows)")
    p.add_argument("--train-steps", type=int, default=100, help="steps of the train() rows")
    p.add_argument(
        "--widths",
        type=lambda text: tuple(int(w) for w in text.split(",")),
        default=WIDTHS,
        help="the decoder's layer widths (default: P3GM's, 1000,784)",
    )
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
