"""Benchmark dp-GAN's DP critic step against the non-private WGAN-GP critic step.

The critic's per-example loss is the whole WGAN-GP loss of one real record,
``D(G(z)) - D(x) + lambda (||grad D(u x + (1-u) G(z))|| - 1)^2`` (:mod:`jdp.synth.dp_gan.losses`);
the DP step clips its per-example gradient (a double backward through the critic) and adds
the Gaussian noise (:func:`jdp.dpsgd.make_dp_step`), the non-private step takes the gradient
of the batch mean of the same loss. Cases (batch ``--batch``, Adam on the critic):

* ``mlp_adult``: the MLP critic (128, 128) over an encoded Adult record (the public encoding
  of :func:`jdp.synth.dp_gan.model.codec`; random rows of that width);
* ``lstm_series``: the LSTM critic (width 32) over a 48-step univariate series.

Paths: ``nonprivate``; ``dp`` (the path DP-SGD's automatic clipping picks for this loss: the
exact gradient-penalty ghost path for the leaky-ReLU MLP critic, the general ``vmap`` path for
the LSTM critic); ``dp_chunked`` (the same in micro-batches of ``--chunk``, bounded memory;
the ghost path ignores it). ``scripts/bench_critic.py`` compares the paths side by side.
All paths of a case are built in one process and timed round-robin
(``time_round_robin`` of ``scripts/_harness.py``), so load spikes hit every path alike.

    python scripts/bench_dpgan.py [--reps 30] [--batch 64] [--json] [--quick]

``--json`` prints one object: per case ``ms`` (median per path), ``ratio_dp`` and
``ratio_dp_chunked`` (over ``nonprivate``), ``method`` (the path ``auto`` chose), and the
top-level ``mlp_ratio`` / ``lstm_ratio`` (``dp / nonprivate``; the issue's target is
``<= 2`` for the MLP critic). The table also goes to ``docs/results/bench_dpgan.md``.
"""

from __future__ import annotations

import argparse
import functools
from types import SimpleNamespace
from typing import Any

import _harness as H

CASES = ("mlp_adult", "lstm_series")
PATHS = ("nonprivate", "dp", "dp_chunked")


def _case(case: str):
    """(DPGANConfig, head layout) of a case."""
    from jdp.data.datasets import adult_schema
    from jdp.data.series import series_schema
    from jdp.synth.dp_gan import DPGANConfig
    from jdp.synth.dp_gan.model import codec

    if case == "mlp_adult":
        config = DPGANConfig()
        return config, codec(adult_schema(), config).layout
    config = DPGANConfig(
        generator="lstm", critic="lstm", generator_hidden=(32,), critic_hidden=(32,)
    )
    return config, codec(series_schema(48, lower=-1.0, upper=1.0), config).layout


def critic_bench(config: Any, layout: Any, batch: int) -> SimpleNamespace:
    """The pieces every critic-step benchmark shares: the WGAN-GP critic ``loss``, its
    ``params`` and generator state ``gen_state``, a uniform batch ``x`` with its ``mask`` and
    ``key``, the DP ``chain`` (Adam after ``dp_aggregate``) and its ``dp_state``, the
    automatic path ``auto``, and ``nonprivate``: a runner of one jitted non-private step."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from jdp.dpsgd import choose_method, dp_aggregate
    from jdp.nn.heads import layout_width
    from jdp.synth.dp_gan.losses import make_critic_loss
    from jdp.synth.dp_gan.model import init_state, networks

    generator, critic = networks(config, layout)
    params, gen_state = init_state(jax.random.key(0), config, layout)
    loss = make_critic_loss(generator, critic, latent_dim=config.latent_dim, gp_weight=10.0)
    x = jnp.asarray(
        np.random.default_rng(0).uniform(-1, 1, (batch, layout_width(layout))), jnp.float32
    )
    mask, key = jnp.ones(batch, bool), jax.random.key(1)
    adam = optax.adam(1e-3, b1=0.5, b2=0.9)
    opt_state = adam.init(params)

    @jax.jit
    def nonprivate(p, o, b, k, s):
        keys = jax.random.split(k, b.shape[0])
        grads = jax.grad(lambda q: jnp.mean(jax.vmap(lambda e, kk: loss(q, e, kk, s))(b, keys)))(p)
        updates, o = adam.update(grads, o, p)
        return optax.apply_updates(p, updates), o

    chain = optax.chain(dp_aggregate(key, noise_multiplier=1.0, expected_batch_size=batch), adam)
    return SimpleNamespace(
        loss=loss, params=params, gen_state=gen_state, x=x, mask=mask, key=key, chain=chain,
        dp_state=chain.init(params), auto=choose_method(loss, params, x[:1], model_state=gen_state),
        nonprivate=lambda: jax.block_until_ready(
            nonprivate(params, opt_state, x, key, gen_state)
        ),
    )  # fmt: skip


def build(case: str, batch: int, chunk: int) -> tuple[dict, str]:
    """Zero-argument runners of one jitted critic step per path, and the auto path."""
    from jdp.dpsgd import make_dp_step

    config, layout = _case(case)
    b = critic_bench(config, layout, batch)
    runs = {"nonprivate": b.nonprivate}
    for path, micro in (("dp", None), ("dp_chunked", chunk)):
        step = make_dp_step(
            b.loss,
            b.chain,
            l2_clip_norm=1.0,
            method=b.auto,
            microbatch_size=micro,
            with_model_state=True,
        )
        args = (b.params, b.dp_state, b.x, b.mask, b.key, b.gen_state)
        runs[path] = functools.partial(_run_dp, step, args)
    for run in runs.values():
        run()  # compile
    return runs, b.auto


def _run_dp(step, args: tuple) -> None:
    import jax

    jax.block_until_ready(step(*args))


def compute(args: argparse.Namespace) -> dict:
    reps = 5 if args.quick else args.reps
    out: dict = {"batch": args.batch, "reps": reps}
    for case in CASES:
        H.log(f"[bench] {case}: building")
        runs, method = build(case, args.batch, args.chunk)
        ms = H.time_round_robin(runs, reps, reps)
        out[case] = {
            "ms": ms,
            "method": method,
            "ratio_dp": ms["dp"] / ms["nonprivate"],
            "ratio_dp_chunked": ms["dp_chunked"] / ms["nonprivate"],
        }
    out["mlp_ratio"] = out["mlp_adult"]["ratio_dp"]
    out["lstm_ratio"] = out["lstm_series"]["ratio_dp"]
    return out


def render(out: dict) -> str:
    lines = [f"{'case':<12} {'path':<11} {'ms/step':>9} {'x nonprivate':>13}"]
    for case in CASES:
        for path, t in out[case]["ms"].items():
            ratio = t / out[case]["ms"]["nonprivate"]
            lines.append(f"{case:<12} {path:<11} {t:9.2f} {ratio:13.2f}")
    lines.append(
        f"DP path chosen by method='auto': {out['mlp_adult']['method']} (MLP), "
        f"{out['lstm_series']['method']} (LSTM); target: MLP ratio <= 2"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="5 rounds")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--batch", type=int, default=128, help="critic batch (Adult run: ~130)")
    p.add_argument("--chunk", type=int, default=16)
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
