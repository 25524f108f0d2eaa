"""Conditional sampling on the synthetic side (post-processing).

It acts on synthetic rows only, after the model is released, so it costs no privacy
(post-processing, Dwork & Roth 2014, Proposition 2.1) and never reads the private data.

* **Conditional sampling** (:func:`sample_where`): rows whose columns equal given values
  (``jdp sample --where sex=Female``), by rejection. Each round draws a batch from the model
  (:func:`jdp.synth.base.sample_model`) and keeps the matching rows, until ``n`` are kept.
  Kept rows are exact draws from the model's distribution conditioned on the event. The
  number of rounds is bounded: when the condition is too rare under the model to be met
  within ``max_draws`` rows, a clear error reports the acceptance rate seen (a property of
  the released model, public), rather than looping for ever or returning fewer rows.
* Declared functional dependencies between columns (:mod:`jdp.data.constraints`) are
  enforced by :func:`jdp.synth.base.sample_model` on every draw.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jax
import numpy as np
import pandas as pd

from jdp.data.schema import Schema

__all__ = ["matches", "matching_chunks", "parse_where", "sample_where"]

#: Default bound on rows drawn by :func:`sample_where`, as a multiple of the rows asked for.
MAX_DRAWS_PER_ROW = 1000


def parse_where(items: Iterable[str], schema: Schema) -> dict[str, Any]:
    """``["sex=Female", "age=30"]`` -> ``{"sex": "Female", "age": 30}``, checked against
    the public ``schema``: the column exists, a categorical value is one of its categories,
    an integer value is a whole number within the bounds, a continuous column is refused
    (equality with a continuous draw has probability 0).

    Raises:
        ValueError: naming the item for a malformed, unknown or impossible condition.
    """
    where: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name:
            raise ValueError(f"expected --where COLUMN=VALUE, got {item!r}")
        if name not in schema.names:
            raise ValueError(f"--where {item!r}: no column {name!r} in the model's schema")
        if name in where:
            raise ValueError(f"--where names column {name!r} twice")
        column = schema[name]
        if column.kind == "categorical":
            match = [c for c in column.categories if str(c) == text]
            if not match:
                raise ValueError(f"--where {item!r}: {text!r} is not a category of {name!r}")
            where[name] = match[0]
        elif column.kind == "integer":
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"--where {item!r}: {name!r} holds integers") from None
            if not column.lower <= value <= column.upper:
                raise ValueError(
                    f"--where {item!r}: outside {name!r}'s bounds [{column.lower}, {column.upper}]"
                )
            where[name] = value
        else:
            raise ValueError(
                f"--where {item!r}: {name!r} is continuous; equality has probability 0 "
                "(condition on a categorical or integer column)"
            )
    return where


def matches(frame: pd.DataFrame, where: Mapping[str, Any]) -> np.ndarray:
    """Boolean mask of the rows of ``frame`` equal to every value of ``where``."""
    mask = np.ones(len(frame), dtype=bool)
    for name, value in where.items():
        mask &= (frame[name] == value).to_numpy()
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
    ``where`` yields ``sample_model(key, model, n)``.

    Raises:
        ValueError: when fewer than ``n`` rows matched within ``max_draws`` draws (the
            message gives the acceptance rate seen), or ``n < 1``.
    """
    from jdp.synth.base import sample_model

    if n < 1:
        raise ValueError(f"expected n >= 1, got {n}")
    if not where:
        yield sample_model(key, model, n)
        return
    limit = max(max_draws or MAX_DRAWS_PER_ROW * n, batch_rows)
    found = drawn = 0
    for i in range(-(-limit // batch_rows)):
        batch = sample_model(jax.random.fold_in(key, i), model, batch_rows)
        drawn += batch_rows
        chosen = batch[matches(batch, where)].iloc[: n - found].reset_index(drop=True)
        found += len(chosen)
        if len(chosen):
            yield chosen
        if found == n:
            return
    condition = ", ".join(f"{k}={v}" for k, v in where.items())
    raise ValueError(
        f"only {found} of {drawn} synthetic rows satisfy {condition} (acceptance "
        f"{found / drawn:.2g}); asked for {n}: ask for fewer rows or a likelier condition"
    )
