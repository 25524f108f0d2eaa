"""Programs a fit runs once (the networks' initial draws), compiled for that.

Flax's initialisers run eagerly: one compiled program per kernel shape and per operation (21
programs for P3GM's networks on Adult, 30 for dp-GAN's). Traced into one program they
compile once; and a program run once gains nothing from the CPU backend's (LLVM)
optimisation passes, which are most of its compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jdp.random import jit_once


def run_once(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` as one jit-compiled program, with :data:`jdp.random.RUN_ONCE_OPTIONS` on
    a CPU (:func:`jdp.random.jit_once`). ``fn``'s other inputs (configs, layouts) are closed
    over: static."""
    return jit_once(fn)(*args)
