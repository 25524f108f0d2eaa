"""Programs a fit runs once (the networks' initial draws), compiled for that.

Flax's initialisers run eagerly: one compiled program per kernel shape and per operation (21
programs for P3GM's networks on Adult, 30 for dp-GAN's). Traced into one program they
compile once; and a program run once gains nothing from the CPU backend's (LLVM)
optimisation passes, which are most of its compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

#: XLA options for a program run once on a CPU: no backend (LLVM) optimisation, which cuts
#: its compilation from 1.6 s to 0.5 s for DP-VAE's networks on Adult; the initial weights
#: are the same draws, up to float rounding. Other backends compile as usual (a TPU's
#: compiler may not know the option).
RUN_ONCE_OPTIONS = {"xla_backend_optimization_level": 0}


def run_once(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` as one jit-compiled program, with :data:`RUN_ONCE_OPTIONS` on a CPU.
    ``fn``'s other inputs (configs, layouts) are closed over: static."""
    options = RUN_ONCE_OPTIONS if jax.default_backend() == "cpu" else None
    return jax.jit(fn, compiler_options=options)(*args)
