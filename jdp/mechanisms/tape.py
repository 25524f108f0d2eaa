"""The one choke point every release passes: record a fit's releases, or replay them.

Every primitive that releases something computed from private data is decorated with
:func:`released`: the host noise mechanisms (:func:`jdp.mechanisms.noise.gaussian_mechanism`,
:func:`jdp.mechanisms.noise.laplace_mechanism`), the exponential mechanism
(:func:`jdp.mechanisms.selection.gumbel_max`) and a DP-SGD run
(:func:`jdp.dpsgd.train.train`). Everything else a fit computes from the data must reach its
output only through them. Outside a tape the decorator is a plain call. Inside
:func:`recording` each call runs and its output is appended to the tape together with its
*public fingerprint* (what the call may depend on: shapes of the private arguments, every
public argument, a numpy generator's state); inside :func:`replaying` each call returns the
recorded output instead of running, after checking that its fingerprint is the recorded one,
and sets a numpy generator it was given to the state the recorded call left it in.

So a fit on ``D`` recorded and a fit on a neighbour ``D'`` replayed are identical exactly when
the fit depends on the data only through its releases: a raw count, a category list, a
refusal on a private size or a data-dependent shape shows as a :class:`TapeMismatch` or a
different model (``tests/contracts/test_synthesizers.py``, the record/replay contract).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

__all__ = [
    "Tape",
    "TapeMismatch",
    "generator_state",
    "public",
    "recording",
    "released",
    "replaying",
]

F = TypeVar("F", bound=Callable[..., Any])


class TapeMismatch(AssertionError):
    """A replayed fit called a release with another fingerprint, or a different number of
    releases, than the recorded fit: something besides the releases depends on the data."""


@dataclass
class Tape:
    """The releases of one fit, in order: ``(name, fingerprint, output, generator state
    after)`` each. ``mode`` is set by :func:`recording` / :func:`replaying`."""

    entries: list[tuple[str, Any, Any, Any]] = field(default_factory=list)
    mode: Literal["record", "replay"] = "record"
    position: int = 0
    depth: int = 0

    def __len__(self) -> int:
        return len(self.entries)


_TAPE: ContextVar[Tape | None] = ContextVar("jdp_release_tape", default=None)


@contextlib.contextmanager
def _active(tape: Tape, mode: Literal["record", "replay"]) -> Iterator[Tape]:
    tape.mode, tape.position = mode, 0
    token = _TAPE.set(tape)
    try:
        yield tape
    finally:
        _TAPE.reset(token)


def recording(tape: Tape) -> contextlib.AbstractContextManager[Tape]:
    """Append every release made inside the block to ``tape``."""
    return _active(tape, "record")


@contextlib.contextmanager
def replaying(tape: Tape) -> Iterator[Tape]:
    """Answer every release made inside the block from ``tape``, in order; at the end every
    recorded release must have been asked for (:class:`TapeMismatch` otherwise)."""
    with _active(tape, "replay"):
        yield tape
    if tape.position != len(tape.entries):
        raise TapeMismatch(
            f"the replayed fit made {tape.position} releases, the recorded one {len(tape)}"
        )


def generator_state(rng: object) -> Any:
    """A numpy generator's bit-generator state (``None`` for anything else, e.g. a JAX key,
    which is a value and is fingerprinted as one)."""
    return rng.bit_generator.state if isinstance(rng, np.random.Generator) else None


def released(fingerprint: Callable[..., Any]) -> Callable[[F], F]:
    """Route calls of a release primitive through the active tape, if any.

    ``fingerprint`` takes the primitive's own arguments (bound by name) and returns what the
    call may depend on besides the private values themselves: shapes of private arrays,
    public arguments, comparable by ``==``. A numpy generator passed as the first argument
    is fingerprinted and restored by the tape itself.
    """

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tape = _TAPE.get()
            if tape is None or tape.depth > 0:
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            rng = next(iter(bound.arguments.values()), None)
            seen = (generator_state(rng), fingerprint(**bound.arguments))
            if tape.mode == "record":
                tape.depth += 1
                try:
                    output = fn(*args, **kwargs)
                finally:
                    tape.depth -= 1
                tape.entries.append((fn.__qualname__, seen, output, generator_state(rng)))
                return output
            if tape.position >= len(tape.entries):
                raise TapeMismatch(f"{fn.__qualname__}: more releases than the recorded fit made")
            name, recorded, output, after = tape.entries[tape.position]
            tape.position += 1
            if name != fn.__qualname__ or not _same(seen, recorded):
                raise TapeMismatch(
                    f"release {tape.position} ({fn.__qualname__}) differs from the recorded "
                    f"{name}: {seen!r} != {recorded!r}"
                )
            if after is not None:
                rng.bit_generator.state = after
            return copy.deepcopy(output)

        return wrapper  # type: ignore[return-value]

    return decorate


def public(x: Any, depth: int = 0) -> Any:
    """``x`` as a structure ``==`` can compare across two fits: arrays as numpy arrays,
    dataclasses by their compared fields, functions by name and closure, partials by their
    parts, generators by state (for fingerprints of public arguments)."""
    if depth > 20:
        return repr(type(x))
    deeper = functools.partial(public, depth=depth + 1)
    if isinstance(x, np.random.Generator):
        return ("generator", generator_state(x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = dataclasses.fields(x)
        return (
            type(x).__qualname__,
            {f.name: deeper(getattr(x, f.name)) for f in fields if f.compare},
        )
    if isinstance(x, functools.partial):
        return ("partial", deeper(x.func), deeper(x.args), deeper(x.keywords))
    if inspect.isfunction(x):
        cells = tuple(deeper(c.cell_contents) for c in x.__closure__ or ())
        return ("function", x.__module__, x.__qualname__, cells)
    if isinstance(x, dict):
        return {k: deeper(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return tuple(deeper(v) for v in x)
    if isinstance(x, np.ndarray) or hasattr(x, "__array__"):
        try:
            return np.asarray(x)
        except TypeError:  # e.g. a typed JAX key: callers pass its key data
            return repr(x)
    return x


def _same(a: Any, b: Any) -> bool:
    """Structural equality that compares arrays elementwise (and their shapes and dtypes)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
