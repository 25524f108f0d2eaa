"""Benchmark one DP-SGD step against one non-private step (and Opacus, when installed).

Cases: an MLP 784-1000-10 with softmax cross-entropy (batch 256), and the P3GM decoder shape
d'=10 -> 1000 -> 784 with a squared-error reconstruction loss. Paths: non-private, ghost
(fast), ghost without the Gaussian draw (to separate clipping from noise cost), ghost with
``secure_noise=True`` (:func:`jdp.dpsgd.noise.secure_gaussian_sum`: integer Box-Muller noise
rounded to a power-of-two grid, the floating-point mitigation), general (``vmap`` in
micro-batches of ``--chunk``), naive full-batch ``vmap``, the noise draw alone
(``noise_draw``: :func:`jdp.dpsgd.noise.dp_aggregate` on a clipped sum, so that
``nonprivate + noise_draw`` is the floor a DP step cannot beat), the same draw and ghost step
with the sampler used before issue 24 (``noise_draw_before``, ``fast_before``:
``jax.random.normal``, cut near 5.4 standard deviations; the default now draws three 32-bit
words a pair to cut at 9.99, :func:`jdp.dpsgd.noise.standard_normal`), and, when installed
(``pip install 'jdp[bench]'``), Opacus hooks / ghost clipping on the same model and batch
(``torch``, ``opacus``) and jax_privacy's ``clipped_grad`` + ``gaussian_privatizer``
(``jax-privacy``; 2.0.0 installs next to JAX 0.10 without changing it).

The machine is shared, so all paths of a case are built in one process and timed
round-robin (one step of each path in turn, ``--reps`` rounds): load spikes hit every path
alike. Memory is measured apart: XLA's compiled temporary buffer size per jitted step, and
the peak RSS of a fresh subprocess that runs only that path.

    python scripts/bench_dpsgd.py [--reps 50] [--slow-reps 5] [--json] [--quick] [--no-rss]

``--quick`` is a smoke run (MLP only, batch 64, 3 rounds, no per-path RSS subprocesses).
``--no-rss`` keeps the full timing and skips the RSS subprocesses (on an accelerator, where the
host's RSS says little and each subprocess pays a compile; ``scripts/device_check.sh``).
With ``--json`` exactly one JSON object is printed on stdout (progress goes to stderr); its
top-level ``nonprivate_ms``, ``fast_ms``, ``fast_secure_noise_ms``, ``general_ms``,
``noise_draw_ms``, ``opacus_hooks_ms``, ``opacus_ghost_ms`` and ``jax_privacy_ms`` are the MLP
case (``null`` where Opacus or jax-privacy is absent), and ``ratio_fast_over_floor`` is
``fast / (nonprivate + noise_draw)``. The table also goes to ``docs/results/bench_dpsgd.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import _harness as H

# torch's OpenMP workers busy-wait after each op by default, stealing the cores from the XLA
# steps timed next to them in the round-robin; make them sleep instead (set before import).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

CASES = {"mlp": (784, (1000, 10)), "p3gm_decoder": (10, (1000, 784))}
JAX_PATHS = (
    "nonprivate",
    "noise_draw",
    "noise_draw_before",
    "fast",
    "fast_before",
    "fast_no_noise",
    "fast_secure_noise",
    "general",
    "naive_vmap",
)
TORCH_PATHS = ("opacus_hooks", "opacus_ghost")
JAX_PRIVACY_PATHS = ("jax_privacy",)
MISSING_JAX_PRIVACY = (
    "[bench] jax-privacy is not installed: the jax_privacy_ms column is skipped "
    "(pip install 'jdp[bench]' or pip install jax-privacy)"
)


def _data(case: str, batch: int):
    import numpy as np

    d_in, widths = CASES[case]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, d_in)).astype(np.float32)
    if case == "mlp":
        y = rng.integers(0, widths[-1], batch).astype(np.int32)
    else:
        y = rng.standard_normal((batch, widths[-1])).astype(np.float32)
    return x, y


def build_jax(case: str, path: str, batch: int, chunk: int):
    """A zero-argument function running one jitted step, and its XLA temp memory (MiB)."""
    import jax
    import jax.numpy as jnp
    import optax

    from jdp.dpsgd import ClippedSum, dp_aggregate, make_dp_step
    from jdp.nn.mlp import MLP

    d_in, widths = CASES[case]
    model = MLP(tuple(widths))
    params = model.init(jax.random.key(0), jnp.zeros(d_in))
    x, y = _data(case, batch)
    batch_data = {"x": jnp.asarray(x), "y": jnp.asarray(y)}

    def loss_fn(p, example, key):
        del key
        out = model.apply(p, example["x"])
        if case == "mlp":
            return optax.softmax_cross_entropy_with_integer_labels(out, example["y"])
        return 0.5 * jnp.sum(jnp.square(out - example["y"]))

    sgd = optax.sgd(1e-3)
    mask = jnp.ones(batch, bool)
    key = jax.random.key(1)
    if path == "nonprivate":
        opt_state = sgd.init(params)

        @jax.jit
        def step(p, o, b):
            grads = jax.grad(lambda q: jnp.mean(jax.vmap(lambda e: loss_fn(q, e, key))(b)))(p)
            updates, o = sgd.update(grads, o, p)
            return optax.apply_updates(p, updates), o

        run = lambda: jax.block_until_ready(step(params, opt_state, batch_data))
        lowered = step.lower(params, opt_state, batch_data)
    elif path == "noise_draw":  # the Gaussian draw and normalisation of one step, alone
        aggregate = dp_aggregate(key, noise_multiplier=1.0, expected_batch_size=batch)
        state = aggregate.init(params)
        clipped = ClippedSum(jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(1.0))
        step = jax.jit(aggregate.update)
        run = lambda: jax.block_until_ready(step(clipped, state))
        lowered = step.lower(clipped, state)
    elif path == "jax_privacy":
        step, state = _jax_privacy_step(loss_fn, sgd, params, batch, chunk, key)
        run = lambda: jax.block_until_ready(step(params, state, batch_data))
        lowered = step.lower(params, state, batch_data)
    else:
        method = "ghost" if path.startswith("fast") else "general"
        micro = chunk if path == "general" else None
        z = 0.0 if path == "fast_no_noise" else 1.0  # clipping cost without the Gaussian draw
        aggregate = dp_aggregate(
            key,
            noise_multiplier=z,
            expected_batch_size=batch,
            secure_noise=path == "fast_secure_noise",
        )
        chain = optax.chain(aggregate, sgd)
        opt_state = chain.init(params)
        step = make_dp_step(loss_fn, chain, l2_clip_norm=1.0, method=method, microbatch_size=micro)
        run = lambda: jax.block_until_ready(step(params, opt_state, batch_data, mask, key))
        lowered = step.lower(params, opt_state, batch_data, mask, key)
    temp = lowered.compile().memory_analysis()
    run()
    return run, (temp.temp_size_in_bytes / 2**20 if temp is not None else None)


def _jax_privacy_step(loss_fn, sgd, params, batch: int, chunk: int, key):
    """jax_privacy's DP-SGD step on the same loss: ``clipped_grad`` (``vmap`` in micro-batches
    of ``chunk``, as jdp's general path; its default ``microbatch_size=None`` was ~20x slower
    here) and ``gaussian_privatizer`` (std ``z C``), normalised by the batch size."""
    import jax
    import optax
    from jax_privacy import clipped_grad
    from jax_privacy.noise_addition import gaussian_privatizer

    grad_fn = clipped_grad(
        lambda p, example: loss_fn(p, example, key),
        l2_clip_norm=1.0,
        batch_argnums=1,
        keep_batch_dim=False,
        microbatch_size=chunk,
    )
    privatizer = gaussian_privatizer(stddev=1.0, prng_key=key)
    state = (sgd.init(params), privatizer.init(params))

    @jax.jit
    def step(p, s, b):
        noisy, noise_state = privatizer.update(grad_fn(p, b), s[1])
        grads = jax.tree_util.tree_map(lambda g: g / batch, noisy)
        updates, opt_state = sgd.update(grads, s[0], p)
        return optax.apply_updates(p, updates), (opt_state, noise_state)

    return step, state


def _half_squared_error(torch):
    """``0.5 ||out - y||^2`` per example (jdp's decoder loss), with the ``reduction``
    attribute Opacus's ghost clipping switches to ``"none"`` for per-sample losses."""

    class HalfSquaredError(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.reduction = "mean"

        def forward(self, out, y):
            per_example = 0.5 * torch.sum((out - y) ** 2, dim=1)
            return per_example if self.reduction == "none" else per_example.mean()

    return HalfSquaredError()


def build_opacus(case: str, path: str, batch: int):
    """A zero-argument function running one Opacus step (hooks or ghost clipping)."""
    import torch
    from opacus import PrivacyEngine

    d_in, widths = CASES[case]
    torch.manual_seed(0)
    layers, width = [], d_in
    for i, w in enumerate(widths):
        layers.append(torch.nn.Linear(width, w))
        if i + 1 < len(widths):
            layers.append(torch.nn.ReLU())
        width = w
    model = torch.nn.Sequential(*layers)
    x, y = _data(case, batch)
    xt, yt = (
        torch.from_numpy(x),
        torch.from_numpy(y).long() if case == "mlp" else torch.from_numpy(y),
    )
    criterion = torch.nn.CrossEntropyLoss() if case == "mlp" else _half_squared_error(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xt, yt), batch_size=batch)
    engine = PrivacyEngine()
    mode = "hooks" if path == "opacus_hooks" else "ghost"
    kwargs = {"criterion": criterion} if mode == "ghost" else {}
    made = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        grad_sample_mode=mode,
        poisson_sampling=False,
        **kwargs,
    )
    model, optimizer = made[0], made[1]
    loss_obj = made[2] if mode == "ghost" else criterion

    def run() -> None:
        optimizer.zero_grad()
        loss = loss_obj(model(xt), yt)
        loss.backward()
        optimizer.step()

    run()
    return run, None


def _before_issue_24(key, shape, dtype=float):
    """The DP-SGD draw before issue 24 (``jax.random.normal``), for the before/after rows."""
    import jax

    return jax.random.normal(key, shape, dtype)


def build(case: str, path: str, batch: int, chunk: int):
    if path in TORCH_PATHS:
        return build_opacus(case, path, batch)
    if path.endswith("_before"):  # traced (and warmed up) with the old draw, then restored
        from unittest import mock

        with mock.patch("jdp.dpsgd.noise.standard_normal", _before_issue_24):
            return build_jax(case, path.removesuffix("_before"), batch, chunk)
    return build_jax(case, path, batch, chunk)


def _child(args: argparse.Namespace) -> dict:
    """Build and run only ``args.path`` (the harness adds this process's ``peak_rss_mb``)."""
    run, _ = build(args.case, args.path, args.batch, args.chunk)
    for _ in range(3):
        run()
    return {"case": args.case, "path": args.path}


def _opacus_available() -> bool:
    try:
        import opacus  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _jax_privacy_available() -> bool:
    try:
        import jax_privacy  # noqa: F401
    except ImportError:
        H.log(MISSING_JAX_PRIVACY)
        return False
    return True


def peak_rss_alone(case: str, path: str, args: argparse.Namespace) -> float | None:
    """Peak RSS (MiB) of a fresh process that builds and runs only this path."""
    cmd = [sys.executable, __file__, "--child", "--case", case, "--path", path, "--json"]
    cmd += ["--no-results", "--batch", str(args.batch), "--chunk", str(args.chunk)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), check=False)
    if proc.returncode != 0:
        H.log(proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout)["peak_rss_mb"]


def bench_case(case: str, paths: tuple, args: argparse.Namespace) -> dict:
    H.log(f"[bench] {case}: building {', '.join(paths)}")
    built = {p: build(case, p, args.batch, args.chunk) for p in paths}
    H.log(f"[bench] {case}: timing {args.reps} rounds")
    ms = H.time_round_robin({p: b[0] for p, b in built.items()}, args.reps, args.slow_reps)
    skip_rss = args.quick or args.no_rss
    rss = {p: None if skip_rss else peak_rss_alone(case, p, args) for p in paths}
    base = ms["nonprivate"]
    torch_best = min((ms[p] for p in TORCH_PATHS if p in ms), default=None)
    return {
        "ms": ms,
        "xla_temp_mib": {p: b[1] for p, b in built.items()},
        "peak_rss_mb": rss,
        "ratio_fast": ms["fast"] / base,
        "ratio_fast_over_floor": ms["fast"] / (base + ms["noise_draw"]),
        "ratio_fast_over_floor_before": ms["fast_before"] / (base + ms["noise_draw_before"]),
        "ratio_fast_after_over_before": ms["fast"] / ms["fast_before"],
        "ratio_jax_privacy_over_fast": ms["jax_privacy"] / ms["fast"]
        if "jax_privacy" in ms
        else None,
        "ratio_secure_noise_over_fast": ms["fast_secure_noise"] / ms["fast"],
        "ratio_general": ms["general"] / base,
        "ratio_naive_vmap": ms["naive_vmap"] / base,
        "speedup_over_opacus_best": torch_best / ms["fast"] if torch_best else None,
    }


def compute(args: argparse.Namespace) -> dict:
    if args.child:
        return _child(args)
    if args.quick:
        args.reps, args.slow_reps, args.batch, args.cases = 3, 1, 64, "mlp"
    paths = JAX_PATHS + (TORCH_PATHS if _opacus_available() else ())
    paths += JAX_PRIVACY_PATHS if _jax_privacy_available() else ()
    summary = {case: bench_case(case, paths, args) for case in args.cases.split(",")}
    mlp = summary.get("mlp", {}).get("ms", {})
    return {
        "nonprivate_ms": mlp.get("nonprivate"),
        "fast_ms": mlp.get("fast"),
        "fast_no_noise_ms": mlp.get("fast_no_noise"),
        "fast_secure_noise_ms": mlp.get("fast_secure_noise"),
        "general_ms": mlp.get("general"),
        "naive_vmap_ms": mlp.get("naive_vmap"),
        "opacus_hooks_ms": mlp.get("opacus_hooks"),
        "opacus_ghost_ms": mlp.get("opacus_ghost"),
        "noise_draw_ms": mlp.get("noise_draw"),
        "noise_draw_before_ms": mlp.get("noise_draw_before"),
        "fast_before_ms": mlp.get("fast_before"),
        "jax_privacy_ms": mlp.get("jax_privacy"),
        "ratio_fast_over_floor": summary.get("mlp", {}).get("ratio_fast_over_floor"),
        "batch": args.batch,
        "reps": args.reps,
        "slow_reps": args.slow_reps,
        "general_chunk": args.chunk,
        "cases": summary,
    }


def render(out: dict) -> str:
    if "cases" not in out:  # a --child run: its peak RSS only
        return ""
    lines = [
        (
            f"median ms per step, batch {out['batch']}, {out['reps']} reps ({out['slow_reps']} "
            f"for paths > 200 ms), round-robin; general path chunk {out['general_chunk']}"
        ),
        (
            f"{'case':14s} {'path':17s} {'ms':>9s} {'x nonpriv':>10s} {'XLA temp MiB':>13s} "
            f"{'peak RSS MiB':>13s}"
        ),
    ]
    nan = float("nan")
    for case, s in out["cases"].items():
        base = s["ms"]["nonprivate"]
        for p, v in s["ms"].items():
            temp, rss = s["xla_temp_mib"][p], s["peak_rss_mb"][p]
            lines.append(
                f"{case:14s} {p:17s} {v:9.2f} {v / base:10.2f} "
                f"{temp if temp is not None else nan:13.1f} {rss if rss is not None else nan:13.0f}"
            )
        lines.append(
            f"{case:14s} secure-noise step / plain-noise step (ghost): "
            f"{s['ratio_secure_noise_over_fast']:.2f}x"
        )
        lines.append(
            f"{case:14s} fast path / (non-private + noise draw) floor: "
            f"{s['ratio_fast_over_floor']:.2f}x (before issue 24's sampler: "
            f"{s['ratio_fast_over_floor_before']:.2f}x); fast step after / before: "
            f"{s['ratio_fast_after_over_before']:.2f}x"
        )
        if s["ratio_jax_privacy_over_fast"]:
            lines.append(
                f"{case:14s} jax_privacy step / jdp fast path: "
                f"{s['ratio_jax_privacy_over_fast']:.2f}x"
            )
        if s["speedup_over_opacus_best"]:
            lines.append(
                f"{case:14s} jdp fast path speed-up over Opacus's best mode: "
                f"{s['speedup_over_opacus_best']:.2f}x"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="smoke run: mlp, batch 64, 3 rounds, no RSS runs")
    p.add_argument("--reps", type=int, default=50, help="timed steps per path (median)")
    p.add_argument("--slow-reps", type=int, default=5, help="timed steps for paths > 200 ms")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--chunk", type=int, default=32, help="micro-batch of the general path")
    p.add_argument("--cases", default="mlp,p3gm_decoder")
    p.add_argument("--no-rss", action="store_true", help="skip the per-path peak RSS subprocesses")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
