"""Conditional sampling on the synthetic side (post-processing).

It acts on synthetic rows only, after the model is released, so it costs no privacy
(post-processing, Dwork & Roth 2014, Proposition 2.1) and never reads the private data.

* **Conditions** (:func:`parse_where`): ``COLUMN=VALUE`` on a categorical, integer or date
  column, a range ``COLUMN>V``, ``COLUMN>=V``, ``COLUMN<V`` or ``COLUMN<=V`` on a numeric
  column (``jdp sample --where sex=Female --where age>=60 --where hired>=2020-01-01``,
  ``Synthesizer.sample(where=...)``; a date column's ``V`` is an ISO date), checked against
  the public schema. All conditions must hold.
* **Conditional sampling** (:func:`sample_where`): rows satisfying the conditions, by
  rejection. Each round draws a batch from the model (:func:`jdp.synth.base.sample_model`)
  and keeps the matching rows, until ``n`` are kept. Kept rows are exact draws from the
  model's distribution conditioned on the event. The number of rounds is bounded: when the
  condition is too rare under the model to be met within ``max_draws`` rows, a clear error
  reports the acceptance rate seen (a property of the released model, public), rather than
  looping for ever or returning fewer rows.
* Declared constraints between columns (:mod:`jdp.data.constraints`) are enforced by
  :func:`jdp.synth.base.sample_model` on every draw, with the same rejection loop
  (:func:`jdp.synth.rejection.accepted_chunks`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import jax
import numpy as np
import pandas as pd

from jdp.data.schema import Column, Schema, date_to_days, iso_date
from jdp.synth.rejection import MAX_DRAWS_PER_ROW, accepted_chunks

__all__ = [
    "COMPARISONS",
    "Range",
    "describe",
    "matches",
    "matching_chunks",
    "parse_where",
    "sample_where",
]


#: The operators of a condition: equality on a categorical or integer column, the others
#: (a range) on a numeric column.
COMPARISONS: Mapping[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}

_CONDITION = re.compile(r"\s*(.*?)\s*(<=|>=|<|>|=)\s*(.*?)\s*")


@dataclass(frozen=True)
class Range:
    """The comparisons ``(operator, bound)`` a numeric column must all satisfy:
    ``Range(((">=", 30.0), ("<", 60.0)))`` for ``age>=30`` and ``age<60`` (a date column's
    bounds are ``pd.Timestamp`` dates, as its sampled values are)."""

    comparisons: tuple[tuple[str, float | pd.Timestamp], ...]

    def holds(self, values: pd.Series) -> np.ndarray:
        """Boolean mask of the ``values`` that satisfy every comparison (missing: never)."""
        mask = np.ones(len(values), dtype=bool)
        for op, bound in self.comparisons:
            mask &= COMPARISONS[op](values, bound).to_numpy(dtype=bool, na_value=False)
        return mask


def parse_where(items: str | Iterable[str] | Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """Conditions -> ``{column: value}`` (equality) or ``{column: Range}``, checked against
    the public ``schema``.

    ``items`` is a condition (``"age>=60"``), several (``["sex=Female", "age<30"]``) or a
    mapping ``{column: value}`` of equalities. A condition is ``COLUMN=VALUE`` on a
    categorical column (``VALUE`` one of its categories), an integer column (a whole number
    within the bounds) or a date column (an ISO date within the bounds, to the day), or
    ``COLUMN>V``, ``COLUMN>=V``, ``COLUMN<V``, ``COLUMN<=V`` on a numeric column (``V`` an
    ISO date on a date column), that some value within the bounds satisfies. The ranges on one column
    combine (``age>=30``, ``age<60``); equality on a continuous column (probability 0), a
    range on a categorical column and a column named in an equality and another condition
    are refused. ``["colour=green", "size>3"]`` -> ``{"colour": "green", "size":
    Range(((">", 3.0),))}``.

    Raises:
        ValueError: naming the item for a malformed, unknown or impossible condition.
    """
    if isinstance(items, str):
        items = [items]
    if isinstance(items, Mapping):
        conditions = [(f"{name}={value}", str(name), "=", value) for name, value in items.items()]
    else:
        conditions = [_split(item) for item in items]
    where: dict[str, Any] = {}
    for item, name, op, value in conditions:
        if name not in schema.names:
            raise ValueError(f"where {item!r}: no column {name!r} in the model's schema")
        condition = _checked(item, schema[name], op, value)
        previous = where.get(name)
        if previous is None:
            where[name] = condition
        elif isinstance(previous, Range) and isinstance(condition, Range):
            where[name] = Range(previous.comparisons + condition.comparisons)
        else:
            raise ValueError(f"where names column {name!r} twice")
    return where


def _split(item: str) -> tuple[str, str, str, str]:
    """``"age >= 60"`` -> ``("age >= 60", "age", ">=", "60")``; raises on a malformed item."""
    found = _CONDITION.fullmatch(item)
    if found is None or not found[1]:
        raise ValueError(
            "expected a condition COLUMN=VALUE, COLUMN>V, COLUMN>=V, COLUMN<V or COLUMN<=V, "
            f"got {item!r}"
        )
    return item, found[1], found[2], found[3]


def _checked(item: str, column: Column, op: str, value: Any) -> Any:
    """The condition ``column op value`` as :func:`parse_where` stores it: the category or
    integer an equality names, or a one-comparison :class:`Range`."""
    name = column.name
    if op == "=" and column.kind == "categorical":
        match = [c for c in column.categories if str(c) == str(value)]
        if not match:
            raise ValueError(f"where {item!r}: {value!r} is not a category of {name!r}")
        return match[0]
    if column.kind == "categorical":
        raise ValueError(f"where {item!r}: {name!r} is categorical: only {name}=VALUE applies")
    if op == "=" and not column.is_integer_valued:
        raise ValueError(
            f"where {item!r}: {name!r} is continuous; equality has probability 0 "
            f"(condition on a categorical or integer column, or give a range: {name}>=V)"
        )
    if column.kind == "date":
        return _checked_date(item, column, op, value)
    number = _number(value)
    if op == "=":
        if number is None or not number.is_integer():
            raise ValueError(f"where {item!r}: {name!r} holds integers")
        if not column.lower <= number <= column.upper:
            raise ValueError(
                f"where {item!r}: outside {name!r}'s bounds [{column.lower}, {column.upper}]"
            )
        return int(number)
    if number is None:
        raise ValueError(f"where {item!r}: {value!r} is not a number")
    edge = column.upper if op in (">", ">=") else column.lower
    if not COMPARISONS[op](edge, number):
        raise ValueError(
            f"where {item!r}: no value of {name!r} within its bounds "
            f"[{column.lower}, {column.upper}] satisfies it"
        )
    return Range(((op, number),))


def _checked_date(item: str, column: Column, op: str, value: Any) -> Any:
    """:func:`_checked` on a date column: ``value`` an ISO date (or a date object), checked
    against the bounds on its day count; kept as a ``pd.Timestamp`` (the sampled values are
    ``datetime64``)."""
    name = column.name
    try:
        days = float(date_to_days(value))
    except (TypeError, ValueError):
        raise ValueError(
            f"where {item!r}: {name!r} holds dates; expected an ISO date (YYYY-MM-DD), got "
            f"{value!r}"
        ) from None
    stamp = pd.Timestamp(iso_date(days))
    if op == "=":
        if not column.lower <= days <= column.upper:
            raise ValueError(f"where {item!r}: outside {name!r}'s bounds {column.bounds_text}")
        return stamp
    edge = column.upper if op in (">", ">=") else column.lower
    if not COMPARISONS[op](edge, days):
        raise ValueError(
            f"where {item!r}: no value of {name!r} within its bounds {column.bounds_text} "
            "satisfies it"
        )
    return Range(((op, stamp),))


def _shown(value: Any) -> str:
    """A condition's value or bound as text: a date as ISO, a number with ``:g``."""
    if isinstance(value, pd.Timestamp):
        return value.date().isoformat()
    return format(value, "g") if isinstance(value, float) else str(value)


def _number(value: Any) -> float | None:
    """``value`` as a float: a numeric string or a real number (not a bool); else ``None``."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, Real) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    return None


def describe(where: Mapping[str, Any]) -> str:
    """The conditions as text: ``"sex=Female, age>=30, age<60"``."""
    return ", ".join(
        ", ".join(f"{name}{op}{_shown(bound)}" for op, bound in value.comparisons)
        if isinstance(value, Range)
        else f"{name}={_shown(value)}"
        for name, value in where.items()
    )


def matches(frame: pd.DataFrame, where: Mapping[str, Any]) -> np.ndarray:
    """Boolean mask of the rows of ``frame`` that satisfy every condition of ``where``
    (:func:`parse_where`'s: a value to equal, or a :class:`Range`)."""
    mask = np.ones(len(frame), dtype=bool)
    for name, value in where.items():
        if isinstance(value, Range):
            mask &= value.holds(frame[name])
        else:
            mask &= (frame[name] == value).to_numpy(dtype=bool, na_value=False)
    return mask


def sample_where(
    key: jax.Array,
    model: Any,
    n: int,
    where: Mapping[str, Any],
    *,
    max_draws: int | None = None,
    batch_rows: int = 50_000,
) -> pd.DataFrame:
    """``n`` synthetic rows of ``model`` satisfying ``where``, by rejection (all of
    :func:`matching_chunks` in one table)."""
    return pd.concat(
        list(matching_chunks(key, model, n, where, max_draws=max_draws, batch_rows=batch_rows)),
        ignore_index=True,
    )


def matching_chunks(
    key: jax.Array,
    model: Any,
    n: int,
    where: Mapping[str, Any],
    *,
    max_draws: int | None = None,
    batch_rows: int = 50_000,
) -> Iterator[pd.DataFrame]:
    """``n`` synthetic rows of ``model`` satisfying ``where``, by rejection, as consecutive
    tables (memory bounded by one batch).

    Round ``i`` draws ``batch_rows`` rows under ``jax.random.fold_in(key, i)`` and yields the
    matching ones, until ``n`` rows were yielded (the last table cut to fit). ``max_draws``
    (default ``MAX_DRAWS_PER_ROW * n``, at least one batch) bounds the rows drawn. An empty
    ``where`` yields the chunks of ``sample_chunks(key, model, n)``
    (:func:`jdp.synth.base.sample_chunks`).

    Raises:
        ValueError: when fewer than ``n`` rows matched within ``max_draws`` draws (the
            message gives the acceptance rate seen), or ``n < 1``.
    """
    from jdp.synth.base import sample_chunks, sample_model

    if n < 1:
        raise ValueError(f"expected n >= 1, got {n}")
    if not where:
        yield from sample_chunks(key, model, n)
        return
    limit = max(max_draws or MAX_DRAWS_PER_ROW * n, batch_rows)
    yield from accepted_chunks(
        lambda i: sample_model(jax.random.fold_in(key, i), model, batch_rows),
        lambda batch: matches(batch, where),
        n,
        rounds=-(-limit // batch_rows),
        what=describe(where),
        hint="ask for fewer rows or a likelier condition",
    )
