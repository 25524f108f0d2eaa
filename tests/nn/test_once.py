"""Programs run once: one compilation for a whole initial draw (:mod:`jdp.nn.once`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax
import jax.monitoring
import jax.numpy as jnp
import numpy as np

from jdp.data.schema import Column, Schema
from jdp.nn.once import run_once
from jdp.synth.dp_gan import DPGANConfig
from jdp.synth.dp_gan.model import codec, init_state

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def counted_compiles() -> Iterator[list[float]]:
    """The XLA compilations that finish inside the block, one duration each."""
    seen: list[float] = []

    def listen(event: str, duration: float, **_: object) -> None:
        if event == COMPILE_EVENT:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


def test_run_once_is_one_program_with_the_eager_values() -> None:
    def draw(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        a, b = jax.random.split(key)
        return jax.random.truncated_normal(a, -2.0, 2.0, (19, 23)), jax.random.normal(b, (29,))

    key = jax.random.key(3)
    with counted_compiles() as seen:
        once = run_once(draw, key)
    assert len(seen) == 1
    for got, want in zip(once, draw(key), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_dp_gan_networks_start_from_one_compiled_draw() -> None:
    # shapes no other test compiles, so an eager initialiser would compile here (30 programs
    # on Adult before run_once)
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0.0, upper=1.0),
            Column(name="c", kind="categorical", categories=("a", "b", "c", "d", "e")),
        )
    )
    config = DPGANConfig(latent_dim=11, generator_hidden=(13,), critic_hidden=(17,))
    with counted_compiles() as seen:
        critic, state = init_state(jax.random.key(0), config, codec(schema, config).layout)
    assert len(seen) == 1
    assert jax.tree_util.tree_all(
        jax.tree_util.tree_map(lambda x: bool(jnp.all(jnp.isfinite(x))), (critic, state))
    )
