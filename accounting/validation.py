"""Argument validation shared by every layer (accounting is the lowest one).

Messages follow one form, ``"expected <name> <condition>, got <value>"``, so that a
user (or the CLI, which prints them as one line) sees which argument is wrong.
"""

from __future__ import annotations

import math
from numbers import Integral, Real


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"expected {name} to be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"expected {name} to be finite, got {value}")
    return value


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as float after checking ``value > 0`` (finite unless ``allow_inf``)."""
    if allow_inf and isinstance(value, Real) and float(value) == math.inf:
        return math.inf
    v = _real(name, value)
    if not v > 0:
        raise ValueError(f"expected {name} > 0, got {value}")
    return v


def check_nonnegative(name: str, value: object) -> float:
    """Return ``value`` as float after checking ``value >= 0`` and finite."""
    v = _real(name, value)
    if not v >= 0:
        raise ValueError(f"expected {name} >= 0, got {value}")
    return v


def check_open_unit(name: str, value: object) -> float:
    """Check ``0 < value < 1`` (e.g. ``delta``)."""
    v = _real(name, value)
    if not 0 < v < 1:
        raise ValueError(f"expected {name} in (0, 1), got {value}")
    return v


def check_probability(name: str, value: object) -> float:
    """Check ``0 < value <= 1`` (e.g. ``sampling_prob``)."""
    v = _real(name, value)
    if not 0 < v <= 1:
        raise ValueError(f"expected {name} in (0, 1], got {value}")
    return v


def check_count(name: str, value: object, *, minimum: int = 0) -> int:
    """Check that ``value`` is an integer ``>= minimum`` (e.g. ``steps``)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, Real) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"expected {name} to be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"expected {name} >= {minimum}, got {value}")
    return int(value)
