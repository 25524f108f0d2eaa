"""Data-parallel DP-SGD on simulated CPU devices: does it hold, and what does it cost?

Runs ``--runs`` fresh subprocesses per device count (``--devices``, default 2 and 4, taken in
turn), each with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``. Each subprocess
builds the DP-SGD step of ``scripts/bench_dpsgd.py``'s MLP case (784-1000-10, softmax
cross-entropy, ghost clipping, ``z = 1``) on one device and sharded over all N
(:func:`jdp.dpsgd.data_mesh`), checks that one step from the same state and key gives the same
parameters (max abs difference), runs a few steps of :func:`jdp.dpsgd.train` on the mesh (the
loop users call: Poisson batches, padding, host-to-device transfers), then times both steps
round-robin (one step of each in turn, carrying the state, ``--reps`` rounds): wall and CPU
milliseconds per step, median. CPU time is the work on a shared machine, where the wall clock
also counts the wait for a core.

A run that dies is counted by cause: ``abort`` (SIGABRT, XLA's collective rendezvous giving
up: ``--xla_cpu_collective_call_terminate_timeout_seconds``, 40 s by default), ``fail``
(another error), ``hang`` (no answer in ``--timeout`` seconds). XLA is asked to log any
rendezvous wait longer than 5 s (``--xla_cpu_collective_call_warn_stuck_timeout_seconds=5``);
such waits are counted as ``stalls``, the early sign of an abort.

    python scripts/multi_device_check.py [--runs 20] [--devices 2,4] [--batch 256] [--reps 20]

``--quick``: 2 runs per device count, batch 64, 5 rounds. With ``--json`` one JSON object on
stdout: per device count ``ok``, ``abort``, ``fail``, ``hang``, ``stalls``, ``max_diff`` and the
median over runs of ``ratio_wall`` / ``ratio_cpu`` (sharded step over one-device step). The
table also goes to ``docs/results/multi_device_check.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import _harness as H

WARN_STUCK_S = 5
STUCK = "may be stuck"


def _child(args: argparse.Namespace) -> dict:
    """One subprocess: equality, a short mesh ``train``, round-robin timing."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import NamedSharding, PartitionSpec

    from jdp.dpsgd import DPSGDConfig, Performance, data_mesh, dp_aggregate, make_dp_step, train
    from jdp.nn.mlp import MLP

    n = jax.device_count()
    if n != args.child_devices:
        raise RuntimeError(f"expected {args.child_devices} devices, got {n}")
    batch = args.batch
    model = MLP((1000, 10))
    params = model.init(jax.random.key(0), jnp.zeros(784))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, 4 * batch).astype(np.int32)

    def loss_fn(p, example, key):
        del key
        return optax.softmax_cross_entropy_with_integer_labels(
            model.apply(p, example["x"]), example["y"]
        )

    chain = optax.chain(
        dp_aggregate(jax.random.key(1), noise_multiplier=1.0, expected_batch_size=batch),
        optax.sgd(1e-3),
    )
    mesh = data_mesh()
    mask = jnp.ones(batch, bool)
    host = {"x": x[:batch], "y": y[:batch]}
    steps = {
        "one": (
            make_dp_step(loss_fn, chain, l2_clip_norm=1.0, method="ghost"),
            jax.device_put(host),
        ),
        "mesh": (
            make_dp_step(loss_fn, chain, l2_clip_norm=1.0, method="ghost", mesh=mesh),
            jax.device_put(host, NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))),
        ),
    }
    state = chain.init(params)
    after = {
        k: step(params, state, b, mask, jax.random.key(2))[0] for k, (step, b) in steps.items()
    }
    pairs = zip(jax.tree.leaves(after["one"]), jax.tree.leaves(after["mesh"]), strict=True)
    diff = max(float(jnp.max(jnp.abs(a - b))) for a, b in pairs)

    config = DPSGDConfig(
        l2_clip_norm=1.0,
        sampling_prob=0.25,
        expected_batch_size=batch,
        steps=3,
        noise_multiplier=1.0,
    )
    trained = train(
        jax.random.key(3),
        loss_fn,
        params,
        optax.sgd(1e-3),
        {"x": x, "y": y},
        config,
        performance=Performance(clipping="ghost", mesh=mesh),
    )
    jax.block_until_ready(trained.params)

    def runner(name: str):
        step, b = steps[name]
        carry = {"params": params, "state": state, "t": 0}

        def run() -> None:
            carry["t"] += 1
            p, s, _ = step(carry["params"], carry["state"], b, mask, jax.random.key(carry["t"]))
            carry["params"], carry["state"] = jax.block_until_ready((p, s))

        run()  # warm: the sharded step's output layout differs from its input's
        return run

    runs = {name: runner(name) for name in steps}
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.reps):
        for name, run in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            run()
            wall[name].append(1e3 * (time.perf_counter() - w0))
            cpu[name].append(1e3 * (time.process_time() - c0))
    ms = {f"{k}_wall_ms": statistics.median(v) for k, v in wall.items()}
    ms |= {f"{k}_cpu_ms": statistics.median(v) for k, v in cpu.items()}
    return {"devices": n, "max_diff": diff, **ms}


def one_run(devices: int, args: argparse.Namespace) -> dict:
    """Run one subprocess with ``devices`` simulated CPU devices; classify how it ended."""
    flags = [
        os.environ.get("XLA_FLAGS", ""),
        f"--xla_force_host_platform_device_count={devices}",
        f"--xla_cpu_collective_call_warn_stuck_timeout_seconds={WARN_STUCK_S}",
    ]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": " ".join(f for f in flags if f)}
    cmd = [sys.executable, __file__, "--child", "--json", "--no-results"]
    cmd += ["--child-devices", str(devices), "--batch", str(args.batch), "--reps", str(args.reps)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=args.timeout, check=False
        )
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else e.stderr or ""
        return {"status": "hang", "stalls": stderr.count(STUCK), "seconds": args.timeout}
    seconds = time.perf_counter() - start
    stalls = proc.stderr.count(STUCK)
    if proc.returncode == 0:
        return {"status": "ok", "stalls": stalls, "seconds": seconds, **json.loads(proc.stdout)}
    aborted = proc.returncode in (-6, 134) or "Termination timeout" in proc.stderr
    H.log(proc.stderr[-2000:])
    return {
        "status": "abort" if aborted else "fail",
        "rc": proc.returncode,
        "stalls": stalls,
        "seconds": seconds,
    }


def summarise(runs: list[dict]) -> dict:
    """Counts by outcome, stalls, the worst difference, median ratios over the good runs."""
    good = [r for r in runs if r["status"] == "ok"]
    out = {s: sum(r["status"] == s for r in runs) for s in ("ok", "abort", "fail", "hang")}
    out["stalls"] = sum(r["stalls"] for r in runs)
    out["max_diff"] = max((r["max_diff"] for r in good), default=None)
    for key in ("one_wall_ms", "mesh_wall_ms", "one_cpu_ms", "mesh_cpu_ms"):
        out[key] = statistics.median(r[key] for r in good) if good else None
    for clock in ("wall", "cpu"):
        ratios = [r[f"mesh_{clock}_ms"] / r[f"one_{clock}_ms"] for r in good]
        out[f"ratio_{clock}"] = statistics.median(ratios) if ratios else None
        out[f"ratio_{clock}_max"] = max(ratios, default=None)
    return out


def compute(args: argparse.Namespace) -> dict:
    if args.child:
        return _child(args)
    if args.quick:
        args.runs, args.batch, args.reps = 2, 64, 5
    runs: dict[int, list[dict]] = {n: [] for n in args.devices}
    for i in range(args.runs):
        for n in args.devices:
            r = one_run(n, args)
            runs[n].append(r)
            H.log(
                f"[multi-device] run {i + 1}/{args.runs}, {n} devices: {r['status']}, "
                f"{r['seconds']:.0f} s, stalls {r['stalls']}"
            )
    return {
        "runs": args.runs,
        "batch": args.batch,
        "reps": args.reps,
        "cpus": os.cpu_count(),
        "devices": {str(n): summarise(r) for n, r in runs.items()},
        "all_runs": {str(n): r for n, r in runs.items()},
    }


def render(out: dict) -> str:
    if "all_runs" not in out:  # a --child run
        return ""
    lines = [
        (
            f"{out['runs']} fresh processes per device count on {out['cpus']} CPUs (simulated "
            f"CPU devices); MLP 784-1000-10, ghost clipping, z = 1, batch {out['batch']}; "
            f"{out['reps']} round-robin steps each, median ms per step"
        ),
        (
            f"{'devices':>7s} {'ok':>3s} {'abort':>5s} {'fail':>4s} {'hang':>4s} {'stalls':>6s} "
            f"{'max diff':>9s} {'one ms':>7s} {'mesh ms':>8s} {'x wall':>7s} {'x CPU':>6s} "
            f"{'worst x wall':>12s}"
        ),
    ]
    nan = float("nan")
    for n, s in out["devices"].items():

        def f(key: str, s: dict = s) -> float:
            return nan if s[key] is None else s[key]

        lines.append(
            f"{n:>7s} {s['ok']:3d} {s['abort']:5d} {s['fail']:4d} {s['hang']:4d} "
            f"{s['stalls']:6d} {f('max_diff'):9.1e} {f('one_wall_ms'):7.2f} "
            f"{f('mesh_wall_ms'):8.2f} {f('ratio_wall'):7.2f} {f('ratio_cpu'):6.2f} "
            f"{f('ratio_wall_max'):12.2f}"
        )
    lines.append(
        "x wall, x CPU: median over runs of (sharded step / one-device step, same process); "
        f"stalls: rendezvous waits over {WARN_STUCK_S} s"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="smoke run: 2 runs per device count, batch 64, 5 rounds")
    p.add_argument("--runs", type=int, default=20, help="subprocesses per device count")
    p.add_argument(
        "--devices",
        type=lambda s: [int(n) for n in s.split(",")],
        default=[2, 4],
        help="comma-separated simulated device counts (default 2,4)",
    )
    p.add_argument("--batch", type=int, default=256, help="padded batch (a multiple of devices)")
    p.add_argument("--reps", type=int, default=20, help="timed round-robin rounds per run")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is a hang")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--child-devices", type=int, help=argparse.SUPPRESS)
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    sys.exit(main())
