"""Keys and generators: the one place a seed becomes randomness.

Every randomized JAX function takes ``key: jax.Array``; every randomized numpy function takes
``rng: np.random.Generator`` (DESIGN section 2, rule 6). This module turns a user's seed into a
key (:func:`key_from_seed`, fresh OS entropy when no seed is given) and a key into a numpy
generator (:func:`numpy_rng`), so host-side numpy mechanisms stay driven by the caller's key.

A fixed seed is for research reproducibility only; numpy's and JAX's samplers are not
floating-point safe (Mironov 2012): see ``secure_noise`` in :mod:`jdp.mechanisms.noise`.
"""

from __future__ import annotations

import functools
import math
import secrets
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from accounting.validation import check_count

__all__ = [
    "RUN_ONCE_OPTIONS",
    "jit_once",
    "key_from_seed",
    "normal",
    "numpy_rng",
    "once_options",
    "split",
]

#: :func:`normal` draws a multiple of this many values.
DRAW_MULTIPLE = 16


def key_from_seed(seed: int | None) -> jax.Array:
    """A typed JAX key from ``seed``, or from fresh OS entropy when ``seed is None``.

    With the default key implementation (``threefry2x32``, two 32-bit words) the key's words
    are the seed's two halves, ``[seed >> 32, seed mod 2^32]``: ``jax.random.key(seed)`` for
    every seed below ``2^32``, and distinct keys for distinct seeds up to ``2^64``, where
    ``jax.random.key`` (without 64-bit mode) keeps only the low 32 bits. Fresh entropy fills
    every word of the key from :mod:`secrets`: 64 bits, where ``jax.random.key`` of a fresh
    63-bit seed would keep 32 (a space an attacker could search). Built from the words on
    the host: no program is compiled.

    Args:
      seed: a non-negative integer below ``2^64``, or ``None``.

    Raises:
      ValueError: ``seed`` is negative or too large; TypeError: ``seed`` is not an integer.

    A fixed seed is for research reproducibility only: a real release must not use one.
    """
    impl = jax.config.jax_default_prng_impl
    if seed is None:
        words = jax.eval_shape(lambda: jax.random.key_data(jax.random.key(0))).shape
        data = np.array([secrets.randbits(32) for _ in range(math.prod(words))], np.uint32)
        return jax.random.wrap_key_data(data.reshape(words), impl=impl)
    check_count("seed", seed)
    if seed >= 2**64:
        raise ValueError(f"expected a seed below 2**64, got {seed}")
    if impl != "threefry2x32":  # another implementation seeds as JAX does
        return jax.random.key(seed)
    data = np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)
    return jax.random.wrap_key_data(data, impl=impl)


#: XLA options for a program run once, or a few times, on a CPU: no backend (LLVM)
#: optimisation, which is most of its compile time (DP-VAE's networks' initial draw on Adult:
#: 1.6 s -> 0.5 s; the same draws up to float rounding). Other backends compile as usual (a
#: TPU's compiler may not know the option). :func:`jdp.nn.once.run_once` and :func:`split`.
RUN_ONCE_OPTIONS = {"xla_backend_optimization_level": 0}


def once_options() -> dict[str, int] | None:
    """:data:`RUN_ONCE_OPTIONS` on a CPU backend, else ``None`` (``jax.jit``'s
    ``compiler_options``)."""
    return RUN_ONCE_OPTIONS if jax.default_backend() == "cpu" else None


def jit_once(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` jit-compiled with :func:`once_options`; called inside a traced function (where
    XLA takes no options) it is ``fn`` itself, traced into the caller's program."""
    compiled = jax.jit(fn, compiler_options=once_options())

    def call(*args: Any) -> Any:
        traced = any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(args))
        return fn(*args) if traced else compiled(*args)

    return call


@functools.cache
def _splitter(n: int) -> Callable[[jax.Array], tuple[jax.Array, ...]]:
    return jit_once(lambda key: tuple(jax.random.split(key, n)))


def split(key: jax.Array, n: int = 2) -> tuple[jax.Array, ...]:
    """``tuple(jax.random.split(key, n))``, the same keys, as one compiled program per ``n``
    and key type for the whole process. Eagerly, a split and its unpacking compile a program
    each, again at call sites whose key arrived committed differently (P3GM's fit compiled 8
    such programs). Inside a traced function it is the split itself."""
    return _splitter(n)(key)


def numpy_rng(key: jax.Array) -> np.random.Generator:
    """A numpy generator seeded from all the bits of a JAX key (typed or legacy ``PRNGKey``).

    The key's raw ``uint32`` words are the generator's entropy, so a typed key and the legacy
    key with the same data give the same stream.
    """
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.random.default_rng(np.asarray(key, dtype=np.uint32).ravel().tolist())


def normal(key: jax.Array, shape: tuple[int, ...], dtype: Any = float) -> jax.Array:
    """``N(0, I)`` of ``shape`` (not privacy noise: latent draws, reparametrisations), the
    values of ``jax.random.normal(key, shape)``, compiled faster: one flat draw of
    ``prod(shape)`` rounded up to a multiple of :data:`DRAW_MULTIPLE` values, the first
    ``prod(shape)`` shaped.

    The values are the same because JAX's threefry is partitionable (the default since JAX
    0.5, ``jax_threefry_partitionable``): each value's bits depend on its index alone, so a
    longer flat draw starts with the shorter one (with the flag off: another draw of the same
    law). The reason is XLA's CPU compiler: a threefry draw whose last axis is short and not a
    multiple of 8 compiles about 3x slower (``(414, 10)``: 0.9 s, the same draw flat 0.27 s),
    and a draw inside a per-example function becomes, batched by ``vmap``, one of shape
    ``(examples, size)`` (``(414, 16)``: 0.21 s against 0.7 s for ``(414, 10)``: about 0.5 s of
    every P3GM DP-SGD step's compilation).
    """
    size = math.prod(shape)
    drawn = -(-size // DRAW_MULTIPLE) * DRAW_MULTIPLE
    return jax.random.normal(key, (drawn,), dtype)[:size].reshape(shape)
