"""The scikit-learn-style layer: ``Cls(epsilon=1, delta=1e-5, schema=...).fit(df).sample(n)``.

A thin object over the pure core (:func:`jdp.synth.base.fit_model`,
:func:`jdp.synth.base.sample_chunks`, :func:`jdp.synth.conditions.matching_chunks`,
:func:`jdp.synth.io.save`) that behaves as the command line does (``jdp fit``, ``jdp
sample``): it holds the budget, the schema, the method's config and a key stream, and
nothing else. Every method exports its class from here (``class MyMethod(Synthesizer): method
= "my-method"``); each class's signature and docstring list its method's options.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget
from jdp.data.dp_schema import SchemaRelease, load_schema, schema_from_dict
from jdp.data.schema import Column, Schema, Table
from jdp.random import key_from_seed
from jdp.synth.base import FittedModel, byte_size, fit_model, get_method, rows_to_sample
from jdp.synth.conditions import matching_chunks, parse_where
from jdp.synth.io import load, save

__all__ = ["Synthesizer", "available_memory"]


class Synthesizer:
    """Estimator-style wrapper: ``Cls(epsilon=1, delta=1e-5, schema=...).fit(df).sample(n)``.

    Subclasses set ``method``. ``epsilon`` is required, as ``jdp fit --epsilon`` is: a privacy
    budget is a decision, not a default. Keyword arguments other than ``epsilon``, ``delta``,
    ``schema``, ``seed`` and ``rows`` (a row count declared public,
    :func:`~jdp.synth.base.fit_model`) are fields of the method's config (listed, with their
    defaults, by ``inspect.signature`` and ``help`` of the method's class); an unknown one
    raises ``TypeError`` naming the options. ``schema`` is a :class:`Schema`, a
    :class:`~jdp.data.dp_schema.SchemaRelease` (its cost is charged to the budget, see
    :func:`~jdp.synth.base.fit_model`), a dict of either, or the path of either's JSON file.
    ``seed=None`` (the default) draws fresh OS entropy for the fit and for each ``sample``
    call; a fixed seed makes fit and the sequence of ``sample`` calls reproducible (research
    only -- never for a real release).

    Attributes after ``fit``: ``model_`` (:class:`~jdp.synth.base.FittedModel`), ``ledger_``,
    ``schema_``, ``dtypes_`` (the fitted DataFrame's dtype names per column -- public
    metadata, not values -- which :meth:`sample` restores; empty after :meth:`load`, as a
    saved model does not hold them). :meth:`load` rebuilds a fitted object from a saved model;
    :meth:`get_params` returns the constructor's arguments (scikit-learn's convention:
    ``type(s)(**s.get_params())`` is an unfitted copy).
    """

    method: ClassVar[str]

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float = 1e-5,
        schema: Schema | SchemaRelease | str | Path | Mapping[str, Any] | None = None,
        seed: int | None = None,
        rows: float | None = None,
        **config: Any,
    ) -> None:
        if epsilon is None:
            raise TypeError(
                f"{type(self).__name__}() needs epsilon=...: a privacy budget is a decision "
                "(how much the release may reveal about any one record), not a default"
            )
        self.budget = PrivacyBudget(epsilon=epsilon, delta=delta)
        self.schema = _as_schema(schema)
        self.seed = seed
        self.rows = rows
        self.config = get_method(self.method).make_config(None, **config)
        self._key = key_from_seed(seed)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give the class its method's options: ``inspect.signature(cls)`` lists ``epsilon``
        (required), ``delta``, ``schema``, ``seed``, ``rows`` and every field of the method's
        config with its default, and its docstring gains the config's. Both are computed on
        access (:class:`_FromMethod`), so a class may be defined before its method
        registers."""
        super().__init_subclass__(**kwargs)
        cls.__signature__ = _FromMethod(_signature)
        cls.__doc__ = _FromMethod(functools.partial(_docstring, cls.__dict__.get("__doc__")))

    def _next_key(self) -> jax.Array:
        self._key, sub = jax.random.split(self._key)
        return sub

    def _fitted(self) -> FittedModel:
        if not hasattr(self, "model_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet: call fit(data) first")
        return self.model_

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments: ``epsilon``, ``delta``, ``schema``, ``seed`` and every
        field of the method's config (``deep`` is accepted for scikit-learn and ignored: no
        parameter is itself an estimator)."""
        del deep
        config = {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)}
        return {
            "epsilon": self.budget.epsilon,
            "delta": self.budget.delta,
            "schema": self.schema,
            "seed": self.seed,
            "rows": self.rows,
            **config,
        }

    @classmethod
    def load(cls, path: str | Path, *, seed: int | None = None) -> Synthesizer:
        """A fitted synthesizer from a model saved by :meth:`save` (or ``jdp fit``).

        Called on a method's class, the saved model must be of that method; called on
        :class:`Synthesizer`, the object is of the saved method's class. ``seed`` seeds the
        ``sample`` calls (default: fresh OS entropy). The budget, schema, config and ledger are
        the saved model's; loading spends nothing. The fitted frame's dtypes are not saved:
        :meth:`sample` returns the schema's (strings for a ``category`` column).
        """
        model = load(path)
        own = getattr(cls, "method", None)
        if own is not None and own != model.method:
            raise ValueError(
                f"{path} holds a {model.method!r} model, not {own!r}: load it with Synthesizer.load"
            )
        klass = cls if own is not None else _class_of(model.method)
        obj = klass.__new__(klass)
        obj.budget, obj.schema, obj.seed, obj.config = (
            model.budget,
            model.schema,
            seed,
            model.config,
        )
        obj.rows = None  # a refit judges its own table's shape
        obj._key = key_from_seed(seed)
        obj._set_fitted(model, {})
        return obj

    def _set_fitted(self, model: FittedModel, dtypes: Mapping[str, str]) -> None:
        self.model_, self.ledger_, self.schema_ = model, model.ledger, model.schema
        self.dtypes_ = dict(dtypes)

    def fit(self, data: pd.DataFrame | Table) -> Synthesizer:
        """Fit on ``data`` (a DataFrame with the schema given at construction, or a Table);
        remembers the DataFrame's dtype names (``dtypes_``) for :meth:`sample`."""
        model = fit_model(
            self._next_key(),
            self.method,
            data,
            self.budget,
            self.config,
            schema=self.schema,
            rows=self.rows,
        )
        frame = data.frame if isinstance(data, Table) else data
        self._set_fitted(
            model, {name: str(frame[name].dtype) for name in model.schema.names if name in frame}
        )
        return self

    def sample(
        self,
        n: int | None = None,
        *,
        where: str | Iterable[str] | Mapping[str, Any] | None = None,
    ) -> pd.DataFrame:
        """``n`` synthetic rows (post-processing: no privacy cost), as ``jdp sample`` draws.

        ``n=None`` draws the model's released noisy row count, an error for a method that
        releases none (:func:`jdp.synth.base.rows_to_sample`). ``where`` keeps only rows that
        satisfy every condition, drawn by rejection: ``"age>=60"``, a list of conditions, or a
        mapping ``{column: value}`` of equalities (:func:`jdp.synth.conditions.parse_where`,
        :func:`~jdp.synth.conditions.matching_chunks`). Rows are drawn in chunks
        (:func:`jdp.synth.base.sample_chunks`) into a table allocated once, after the first
        chunk, which refuses an output larger than the memory available. Columns take the
        fitted DataFrame's dtypes where the schema permits (``dtypes_``).

        Raises:
            TypeError: ``n`` is not an integer.
            ValueError: ``n < 1``; no ``n`` and no noisy row count; a condition the schema
                refuses or too rare under the model; the output would not fit in memory
                (stream it with :func:`jdp.synth.base.sample_chunks` instead).
        """
        model = self._fitted()  # before drawing: a refused call consumes no key
        rows = rows_to_sample(model, n)
        conditions = parse_where(where or (), model.schema)
        table = _gather(matching_chunks(self._next_key(), model, rows, conditions), rows)
        return _restore_dtypes(table, model.schema, self.dtypes_)

    def save(self, directory: str | Path, *, overwrite: bool = False) -> Path:
        """Save the fitted model (:func:`jdp.synth.io.save`). A non-empty ``directory`` is
        refused (``FileExistsError``), as ``jdp fit --out`` refuses one, unless
        ``overwrite=True``: replacing a saved model loses the record that its data was used."""
        try:
            return save(self._fitted(), directory, overwrite=overwrite)
        except FileExistsError as err:
            raise FileExistsError(
                f"{err}: choose another directory or pass overwrite=True"
            ) from None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.budget.epsilon:g}, delta={self.budget.delta:g}, "
            f"config={self.config})"
        )


class _FromMethod:
    """A class attribute built on access from the class (``build(cls)``), so that it can
    read the method's registration, which may come after the class."""

    def __init__(self, build: Callable[[type[Synthesizer]], Any]) -> None:
        self._build = build

    def __get__(self, obj: object, owner: type[Synthesizer]) -> Any:
        return self._build(owner)


def _config_class(cls: type[Synthesizer]) -> type | None:
    """The config class of ``cls``'s method, or ``None`` while it has no registered method."""
    try:
        return get_method(cls.method).config_cls
    except (AttributeError, ValueError):
        return None


def _signature(cls: type[Synthesizer]) -> inspect.Signature | None:
    """``cls``'s keyword-only parameters: :class:`Synthesizer`'s (``epsilon`` without a
    default) and the config fields with the method's defaults (its default config:
    :meth:`~jdp.synth.base.Method.make_config`); ``None`` (``__init__``'s signature) without
    a method."""
    config_cls = _config_class(cls)
    if config_cls is None:
        return None
    config = get_method(cls.method).make_config(None)
    own = inspect.signature(Synthesizer.__init__, eval_str=True).parameters.values()
    params = [
        p.replace(default=inspect.Parameter.empty, annotation=float) if p.name == "epsilon" else p
        for p in own
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    hints = typing.get_type_hints(config_cls)
    for field in dataclasses.fields(config_cls):
        if field.init:
            params.append(
                inspect.Parameter(
                    field.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=getattr(config, field.name),
                    annotation=hints.get(field.name, inspect.Parameter.empty),
                )
            )
    return inspect.Signature(params)


def _docstring(own: str | None, cls: type[Synthesizer]) -> str | None:
    """``own`` (the class's docstring) followed by an ``Options`` section: the config class's
    docstring, whose fields are the keyword arguments besides the budget's."""
    config_cls = _config_class(cls)
    if config_cls is None or not config_cls.__doc__:
        return own
    options = inspect.cleandoc(config_cls.__doc__).replace("\n", "\n    ")
    return (
        f"{inspect.cleandoc(own or cls.__name__)}\n\n"
        f"Options (keyword arguments besides epsilon, delta, schema, seed and rows; the fields "
        f"of {config_cls.__module__}.{config_cls.__qualname__}, see inspect.signature):\n\n"
        f"    {options}\n"
    )


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: ``MemAvailable`` of ``/proc/meminfo``
    (Linux), else the free physical pages, else all physical pages (``os.sysconf``); ``None``
    when none of them can be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            return os.sysconf(pages) * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            continue
    return None


def _check_memory(n: int, chunk: pd.DataFrame) -> None:
    """Refuse ``n`` rows whose columns, at the bytes per row of ``chunk`` (their first rows),
    would not fit in the memory available (:func:`available_memory`)."""
    per_row = chunk.memory_usage(index=False).sum() / len(chunk)
    need, free = n * per_row, available_memory()
    if free is not None and need > free:
        raise ValueError(
            f"sample(n={n}) would take about {byte_size(need)} of memory ({per_row:.0f} bytes "
            f"per row), but {byte_size(free)} is available: ask for fewer rows, or stream them "
            "with jdp.synth.base.sample_chunks(key, synth.model_, n)"
        )


def _gather(chunks: Iterator[pd.DataFrame], n: int) -> pd.DataFrame:
    """The ``n`` rows of ``chunks`` as one table. A first chunk of ``n`` rows is the table;
    otherwise, after the first chunk's memory check (:func:`_check_memory`), each column is
    allocated once and each chunk copied in: peak memory is about the output plus one chunk."""
    columns: dict[str, np.ndarray] = {}
    start = 0
    for chunk in chunks:
        if not columns:
            if len(chunk) == n:
                return chunk
            _check_memory(n, chunk)
            dtypes = chunk.dtypes
            columns = {name: np.empty(n, dtype=chunk[name].to_numpy().dtype) for name in chunk}
        stop = start + len(chunk)
        for name, values in columns.items():
            values[start:stop] = chunk[name].to_numpy()
        start = stop
    table = pd.DataFrame(columns, copy=False)  # one block per column: no consolidating copy
    return table.astype({k: v for k, v in dtypes.items() if not isinstance(v, np.dtype)})


def _restore_dtypes(table: pd.DataFrame, schema: Schema, dtypes: Mapping[str, str]) -> pd.DataFrame:
    """``table`` with each column named in ``dtypes`` cast to the dtype :func:`_dtype_for`
    permits; the other columns keep their decoded dtype."""
    casts = {name: _dtype_for(schema[name], text) for name, text in dtypes.items()}
    casts = {name: dtype for name, dtype in casts.items() if dtype is not None}
    return table.astype(casts) if casts else table


def _dtype_for(column: Column, text: str) -> Any:
    """The dtype a sampled ``column`` takes for the fitted frame's dtype ``text`` where the
    schema permits it: ``category`` on a categorical column (with the schema's categories), a
    float dtype on a numeric column, an integer dtype on an integer column whose bounds it
    holds (a nullable column: a nullable integer dtype only), a time-zone-naive
    ``datetime64`` unit on a date column (decoded as ``datetime64[ns]``); ``None`` otherwise
    (a date column fitted from text or a time-zone-aware dtype stays ``datetime64[ns]``)."""
    dtype = pd.api.types.pandas_dtype(text)
    if column.kind == "date":
        naive = isinstance(dtype, np.dtype) and np.issubdtype(dtype, np.datetime64)
        return dtype if naive else None
    if isinstance(dtype, pd.CategoricalDtype):
        return (
            pd.CategoricalDtype(list(column.categories)) if column.kind == "categorical" else None
        )
    if pd.api.types.is_float_dtype(dtype):
        return dtype if column.is_numeric else None
    if not column.is_integer_valued or not pd.api.types.is_integer_dtype(dtype):
        return None
    if column.nullable and isinstance(dtype, np.dtype):
        return None
    info = np.iinfo(getattr(dtype, "numpy_dtype", dtype))
    return dtype if info.min <= column.lower and column.upper <= info.max else None


def _as_schema(
    schema: Schema | SchemaRelease | str | Path | Mapping[str, Any] | None,
) -> Schema | SchemaRelease | None:
    """A schema or a DP schema release (kept whole, so that its cost reaches the ledger)."""
    if schema is None or isinstance(schema, (Schema, SchemaRelease)):
        return schema
    if isinstance(schema, Mapping):
        return schema_from_dict(schema)
    if isinstance(schema, (str, Path)):
        return load_schema(schema)
    raise TypeError(
        f"expected a Schema, a SchemaRelease, a dict or a JSON path, got {type(schema).__name__}"
    )


def _class_of(method: str) -> type[Synthesizer]:
    """The :class:`Synthesizer` subclass of a registered method (imported with it), or a
    plain subclass made for it when the method exports none."""
    get_method(method)  # imports the method's module, which defines its class
    pending, found = list(Synthesizer.__subclasses__()), []
    while pending:
        klass = pending.pop()
        pending.extend(klass.__subclasses__())
        if getattr(klass, "method", None) == method:
            found.append(klass)
    if found:
        return found[0]
    return type(f"Synthesizer[{method}]", (Synthesizer,), {"method": method})
