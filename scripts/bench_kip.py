"""Benchmark of kip/: closed-form NTK throughput, KIP and DP-KIP step time, peak memory.

Prints a table and, with ``--json``, one JSON object with at least ``kernel_entries_per_s``
(per depth, for a ``5000 x 100`` block at ``d = 784``: both the NNGP and the NTK are produced)
and ``kip_step_ms`` (one Adam step of KIP on 100 support points against a 5000-record target
batch, ``d = 784``, depth 1, the gradient through the kernel and the Cholesky solve included).

Timings are wall-clock after one compile-and-run warm-up, the best of ``repeats`` runs, with
``block_until_ready``; CPU time of the process is reported beside them (the machine is
shared). Peak memory is the growth of the process's maximum resident set size
(``resource.getrusage``) over the run of each part: XLA's CPU buffers are not visible to
``tracemalloc``, and ``jax.Device.memory_stats()`` is ``None`` on CPU.

neural-tangents is not importable here (DESIGN.md section 3). ``--nt-python PATH`` runs the
same block through ``neural_tangents.stax`` in its own pinned environment (see
``scripts/ntk_oracle_fixture.py`` for how to build one) in a subprocess; without it the JSON says
``"neural_tangents": "not available"``.

**float32 vs float64** (:attr:`kip.KIPConfig.dtype`, a performance flag): one row per dtype,
whatever ``--float32`` says: the KIP step time above in that dtype, and the accuracy of KIP on
scikit-learn's digits (8x8 images, no download; 10 support images, one per class, learned
against 1000 training images for ``DIGITS_STEPS`` steps, scored by KRR on the other 797), the
KRR run both in the same dtype (what a float32 user gets) and in float64 (the learned support
alone). ``dtype_rows`` in the JSON.

Usage: ``python scripts/bench_kip.py [--quick] [--json] [--float32] [--nt-python PATH]``
(``--quick``: a 1000 x 100 block, a 1000-record target batch, 2 repeats). The table also goes
to ``docs/results/bench_kip.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import textwrap
import time

import _harness as H
import jax
import jax.numpy as jnp
import numpy as np

from kip import KIPConfig, centred_one_hot, fit_support, krr_fit_predict, make_kernel_fn

D = 784
SUPPORT = 100
DEPTHS = (1, 2, 3)
#: KIP steps of the digits accuracy row (``--quick``: 100).
DIGITS_STEPS = 300


def bench_kernels(rows: int, repeats: int, dtype: jnp.dtype) -> dict:
    rng = np.random.default_rng(0)
    x1 = jnp.asarray(rng.uniform(size=(rows, D)), dtype=dtype)
    x2 = jnp.asarray(rng.uniform(size=(SUPPORT, D)), dtype=dtype)
    out = {}
    for depth in DEPTHS:
        rss0 = H.peak_rss_mb()
        f = make_kernel_fn(depth=depth, get="ntk")
        run = lambda f=f: jax.block_until_ready(f(x1, x2))
        run()  # compile
        wall, cpu = H.best_of(run, repeats)
        out[depth] = {
            "entries_per_s": rows * SUPPORT / wall,
            "wall_ms": 1e3 * wall,
            "cpu_ms": 1e3 * cpu,
            "peak_rss_growth_mb": H.peak_rss_mb() - rss0,
        }
        H.log(f"kernel depth {depth}: {out[depth]['entries_per_s']:.3g} entries/s")
    return out


def bench_kip_step(batch: int, repeats: int, dtype: str) -> dict:
    """Per-step time of fit_support: (T steps - 1 step) / (T - 1), both compiled."""
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 10, size=batch)
    tx, ty = rng.uniform(size=(batch, D)), centred_one_hot(labels, 10)
    sx, sy = rng.uniform(size=(SUPPORT, D)), centred_one_hot(np.arange(SUPPORT) % 10, 10)
    rss0 = H.peak_rss_mb()

    def run(steps: int) -> float:
        config = KIPConfig(steps=steps, target_batch_size=batch, dtype=dtype)
        return H.timed(fit_support, jax.random.key(0), sx, sy, tx, ty, config)[0]

    run(1)  # compile
    steps = 5
    best = min(run(steps) - run(1) for _ in range(repeats)) / (steps - 1)
    return {
        "kip_step_ms": 1e3 * best,
        "target_batch": batch,
        "peak_rss_growth_mb": H.peak_rss_mb() - rss0,
    }


def bench_dp_kip_step(n: int, q: float, dtype: str) -> dict:
    """Per-step time of DP-KIP (jdp.dpsgd.train, general per-example path)."""
    from jdp.dpsgd import DPSGDConfig
    from jdp.synth.clustmix.dp_kip import dp_kip

    rng = np.random.default_rng(2)
    tx, ty = rng.uniform(size=(n, D)), centred_one_hot(rng.integers(0, 10, size=n), 10)
    sx, sy = rng.uniform(size=(SUPPORT, D)), centred_one_hot(np.arange(SUPPORT) % 10, 10)

    def run(steps: int) -> float:
        config = KIPConfig(steps=steps, dtype=dtype)
        dpsgd = DPSGDConfig(
            l2_clip_norm=1.0, sampling_prob=q, expected_batch_size=q * n, steps=steps,
            noise_multiplier=1.0,
        )  # fmt: skip
        return H.timed(dp_kip, jax.random.key(0), sx, sy, tx, ty, config, dpsgd)[0]

    run(1)
    steps = 4
    return {"dp_kip_step_ms": 1e3 * (run(steps) - run(1)) / (steps - 1), "expected_batch": q * n}


def digits_accuracy(dtype: str, steps: int) -> dict:
    """KIP on scikit-learn's digits in ``dtype``: KRR test accuracy of the learned support
    (KRR in ``dtype`` and in float64), and of the initial support for reference."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = digits.data / 16.0
    x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)  # per image
    labels = digits.target
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    train, test = order[:1000], order[1000:]
    init = np.array([train[labels[train] == c][0] for c in range(10)])
    sx, sy = x[init], centred_one_hot(labels[init], 10)
    config = KIPConfig(steps=steps, target_batch_size=500, dtype=dtype)
    t0 = time.perf_counter()
    result = fit_support(
        jax.random.key(0), sx, sy, x[train], centred_one_hot(labels[train], 10), config
    )
    seconds = time.perf_counter() - t0

    def accuracy(support: np.ndarray, krr_dtype: str) -> float:
        with jax.enable_x64(krr_dtype == "float64"):
            kernel = config.kernel_fn()
            s, t = (jnp.asarray(a, dtype=krr_dtype) for a in (support, x[test]))
            scores = krr_fit_predict(
                kernel(t, s), kernel(s, s), jnp.asarray(sy, krr_dtype), reg=config.reg
            )
            return float(np.mean(np.argmax(np.asarray(scores), axis=1) == labels[test]))

    return {
        "accuracy": accuracy(result.support_x, dtype),
        "accuracy_float64_krr": accuracy(result.support_x, "float64"),
        "accuracy_init": accuracy(sx, "float64"),
        "fit_s": seconds,
        "steps": steps,
    }


def bench_dtypes(batch: int, repeats: int, steps: int) -> dict:
    """float32 vs float64: the KIP step time and the digits accuracy, per dtype."""
    rows = {}
    for dtype in ("float32", "float64"):
        rows[dtype] = {
            "kip_step_ms": bench_kip_step(batch, repeats, dtype)["kip_step_ms"],
            **digits_accuracy(dtype, steps),
        }
        H.log(f"dtype {dtype}: {rows[dtype]}")
    return rows


NT_SNIPPET = textwrap.dedent(
    """
    import sys, time, types, json
    sys.modules["neural_tangents.experimental"] = types.ModuleType("neural_tangents.experimental")
    import jax, numpy as np
    jax.config.update("jax_enable_x64", {x64})
    from neural_tangents import stax
    rng = np.random.default_rng(0)
    dt = np.float64 if {x64} else np.float32
    x1 = jax.numpy.asarray(rng.uniform(size=({rows}, {d})), dtype=dt)
    x2 = jax.numpy.asarray(rng.uniform(size=({s}, {d})), dtype=dt)
    out = {{}}
    for depth in (1, 2, 3):
        layers = [stax.Dense(512, W_std=2**0.5, b_std=0.1), stax.Relu()] * depth
        _, _, kf = stax.serial(*layers, stax.Dense(1, W_std=2**0.5, b_std=0.1))
        kf = jax.jit(kf, static_argnames="get")
        kf(x1, x2, "ntk").block_until_ready()
        best = float("inf")
        for _ in range({repeats}):
            t0 = time.perf_counter(); kf(x1, x2, "ntk").block_until_ready()
            best = min(best, time.perf_counter() - t0)
        out[depth] = {rows} * {s} / best
    print(json.dumps(out))
    """
)


def bench_neural_tangents(python: str | None, rows: int, repeats: int, x64: bool) -> dict | str:
    if python is None:
        return "not available (neural-tangents does not import on this JAX; pass --nt-python)"
    code = NT_SNIPPET.format(x64=x64, rows=rows, d=D, s=SUPPORT, repeats=repeats)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=900, env=env, check=True
        )
    except (OSError, subprocess.SubprocessError) as err:
        return f"not available ({type(err).__name__})"
    return {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def compute(args: argparse.Namespace) -> dict:
    rows, batch, repeats = (1000, 1000, 2) if args.quick else (5000, 5000, 3)
    x64 = not args.float32
    dtype = "float64" if x64 else "float32"
    with jax.enable_x64(x64):
        kernels = bench_kernels(rows, repeats, jnp.dtype(dtype))
    step = bench_kip_step(batch, repeats, dtype)
    dp_step = bench_dp_kip_step(2000 if args.quick else 10000, 0.05, dtype)
    dtype_rows = bench_dtypes(batch, repeats, 100 if args.quick else DIGITS_STEPS)
    nt = bench_neural_tangents(args.nt_python, rows, repeats, x64)
    return {
        "device": str(jax.devices()[0]),
        "cpu_count": os.cpu_count(),
        "dtype": dtype,
        "kernel_block": [rows, SUPPORT, D],
        "kernel_entries_per_s": {d: k["entries_per_s"] for d, k in kernels.items()},
        "kernels": kernels,
        "kip_step_ms": step["kip_step_ms"],
        "kip_step": step,
        "dp_kip_step": dp_step,
        "dtype_rows": dtype_rows,
        "neural_tangents_entries_per_s": nt,
        "quick": args.quick,
    }


def render(result: dict) -> str:
    rows, _, d = result["kernel_block"]
    step, dp_step = result["kip_step"], result["dp_kip_step"]
    nt = result["neural_tangents_entries_per_s"]
    lines = [
        f"kip benchmark ({result['dtype']}, {result['device']}, block {rows} x {SUPPORT}, d={d})",
        f"{'depth':>5} {'entries/s':>12} {'wall ms':>9} {'cpu ms':>9} {'rss+ MB':>8} {'NT entries/s':>13}",
    ]  # fmt: skip
    for depth, k in result["kernels"].items():
        nt_rate = f"{nt[depth]:.3g}" if isinstance(nt, dict) else "n/a"
        lines.append(
            f"{depth:>5} {k['entries_per_s']:>12.3g} {k['wall_ms']:>9.1f} {k['cpu_ms']:>9.1f} "
            f"{k['peak_rss_growth_mb']:>8.1f} {nt_rate:>13}"
        )
    lines.append(
        f"KIP step (100 support, {step['target_batch']} targets, depth 1): "
        f"{step['kip_step_ms']:.1f} ms; DP-KIP step (expected batch "
        f"{dp_step['expected_batch']:.0f}): {dp_step['dp_kip_step_ms']:.1f} ms"
    )
    lines.append(
        f"{'dtype':>7} {'KIP step ms':>11} {'digits acc':>10} {'acc, f64 KRR':>12} "
        f"{'acc at init':>11} {'fit s':>6}"
    )
    for name, r in result["dtype_rows"].items():
        lines.append(
            f"{name:>7} {r['kip_step_ms']:>11.1f} {r['accuracy']:>10.4f} "
            f"{r['accuracy_float64_krr']:>12.4f} {r['accuracy_init']:>11.4f} {r['fit_s']:>6.1f}"
        )
    f32, f64 = result["dtype_rows"]["float32"], result["dtype_rows"]["float64"]
    lines.append(
        f"float32 / float64: step time {f32['kip_step_ms'] / f64['kip_step_ms']:.2f}x, "
        f"digits accuracy {f32['accuracy'] - f64['accuracy']:+.4f} "
        f"({f32['steps']} KIP steps, 10 support images)"
    )
    if not isinstance(nt, dict):
        lines.append(f"neural-tangents: {nt}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="a 1000 x 100 block, 1000 targets, 2 repeats")
    p.add_argument("--float32", action="store_true", help="float32 instead of float64")
    p.add_argument("--nt-python", default=None, help="python of a neural-tangents env")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
