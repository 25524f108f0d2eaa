"""The scikit-learn-style layer: ``Cls(epsilon=1, delta=1e-5, schema=...).fit(df).sample(n)``.

A thin object over the pure core (:func:`jdp.synth.base.fit_model`,
:func:`jdp.synth.base.sample_model`, :func:`jdp.synth.io.save`): it holds the budget, the
schema, the method's config and a key stream, and nothing else. Every method exports its
class from here (``class MyMethod(Synthesizer): method = "my-method"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import jax
import pandas as pd

from accounting import PrivacyBudget
from jdp.data.dp_schema import SchemaRelease, load_schema, schema_from_dict
from jdp.data.schema import Schema, Table
from jdp.random import key_from_seed
from jdp.synth.base import FittedModel, fit_model, get_method, sample_model
from jdp.synth.io import load, save

__all__ = ["Synthesizer"]


class Synthesizer:
    """Estimator-style wrapper: ``Cls(epsilon=1, delta=1e-5, schema=...).fit(df).sample(n)``.

    Subclasses set ``method``. Keyword arguments other than ``epsilon``, ``delta``, ``schema``,
    ``seed`` and ``rows`` (a row count declared public, :func:`~jdp.synth.base.fit_model`) are
    fields of the method's config. ``schema`` is a :class:`Schema`, a
    :class:`~jdp.data.dp_schema.SchemaRelease` (its cost is charged to the budget, see
    :func:`~jdp.synth.base.fit_model`), a dict of either, or the path of either's JSON file.
    ``seed=None`` (the default) draws fresh OS entropy for the fit and for each ``sample``
    call; a fixed seed makes fit and the sequence of ``sample`` calls reproducible (research
    only -- never for a real release).

    Attributes after ``fit``: ``model_`` (:class:`~jdp.synth.base.FittedModel`), ``ledger_``,
    ``schema_``. :meth:`load` rebuilds a fitted object from a saved model; :meth:`get_params`
    returns the constructor's arguments (scikit-learn's convention:
    ``type(s)(**s.get_params())`` is an unfitted copy).
    """

    method: ClassVar[str]

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        schema: Schema | SchemaRelease | str | Path | Mapping[str, Any] | None = None,
        seed: int | None = None,
        rows: float | None = None,
        **config: Any,
    ) -> None:
        self.budget = PrivacyBudget(epsilon=epsilon, delta=delta)
        self.schema = _as_schema(schema)
        self.seed = seed
        self.rows = rows
        self.config = get_method(self.method).make_config(None, **config)
        self._key = key_from_seed(seed)

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
        the saved model's; loading spends nothing.
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
        obj._set_fitted(model)
        return obj

    def _set_fitted(self, model: FittedModel) -> None:
        self.model_, self.ledger_, self.schema_ = model, model.ledger, model.schema

    def fit(self, data: pd.DataFrame | Table) -> Synthesizer:
        """Fit on ``data`` (a DataFrame with the schema given at construction, or a Table)."""
        self._set_fitted(
            fit_model(
                self._next_key(),
                self.method,
                data,
                self.budget,
                self.config,
                schema=self.schema,
                rows=self.rows,
            )
        )
        return self

    def sample(self, n: int) -> pd.DataFrame:
        """``n`` synthetic rows (post-processing: no privacy cost)."""
        model = self._fitted()  # before drawing: a refused call consumes no key
        return sample_model(self._next_key(), model, n)

    def save(self, directory: str | Path) -> Path:
        """Save the fitted model (:func:`jdp.synth.io.save`)."""
        return save(self._fitted(), directory)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.budget.epsilon:g}, delta={self.budget.delta:g}, "
            f"config={self.config})"
        )


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
