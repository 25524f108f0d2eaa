"""The synthesizer protocol: the fitted model, the registry, and ``fit_model``/``sample_model``.

How a method plugs in
=====================

A method lives in the module ``jdp/synth/<name>.py`` or the package ``jdp/synth/<name>/``
(the registry name with ``-`` written ``_``: the method ``"pca-gauss"`` lives in
``jdp/synth/pca_gauss/``) and registers itself when that module is imported::

    @dataclass(frozen=True, kw_only=True)
    class MyConfig:                    # JSON-serialisable fields, ALL with defaults,
        bins: int = 32                 # validated in __post_init__
        ...

    def fit(key: jax.Array, data: Table, budget: PrivacyBudget, config: MyConfig) -> FittedModel:
        ...
    def sample(key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
        ...

    register(Method(name="my-method", config_cls=MyConfig, fit=fit, sample=sample,
                    description="one line for `jdp fit --help`"))

    class MyMethod(Synthesizer):       # jdp.synth.estimator's scikit-learn-style class; export
        method = "my-method"           # it by adding "MyMethod": "jdp.synth.my_method" to
                                       # jdp._EXPORTS

A module may register several names (variants: ``jdp.synth.p3gm`` registers ``p3gm``,
``p3gm-ae``, ``dp-vae`` and ``pgm``); :func:`get_method` finds them by importing every
method module of ``jdp.synth`` when the name is not that of a module.

What ``fit`` receives
---------------------
* ``key`` -- a JAX PRNG key (typed ``jax.random.key`` or legacy ``PRNGKey``). numpy methods
  turn it into a generator with :func:`jdp.random.numpy_rng`.
* ``data`` -- a :class:`jdp.data.schema.Table`: ``data.frame`` is a pandas DataFrame whose
  columns are exactly ``data.schema.names`` in schema order, already checked (no NaN/inf,
  no unseen category) and clipped to the public bounds; numeric columns are float64
  (continuous) or int64 (integer), categorical columns hold the schema's category labels.
  ``data.schema`` says which columns are continuous / integer / categorical and which one is
  the target (``data.schema.target``, may be ``None``). To get arrays, build an encoder from
  the schema alone -- e.g. ``TableEncoder(data.schema, continuous_range=(-1, 1))`` in
  :mod:`jdp.data.transforms` (min-max to bounds, one-hot categoricals, column spans,
  unit-norm rows) -- so no encoder state is read off the data.
* ``budget`` -- the :class:`accounting.PrivacyBudget` to meet; ``fit_model`` checks after the
  fit that the model's ledger does not exceed it.
* ``config`` -- an instance of the method's ``config_cls``.

``len(data)`` (the row count) is private under add/remove neighbours: a method may use it
inside a mechanism whose analysis covers it, never copy it into the model.

What ``fit`` returns: a :class:`FittedModel` whose ``params`` is a nested ``dict`` of numpy
(or JAX) arrays -- only values released by mechanisms, or computed from them and from public
inputs -- whose ``ledger`` records every event spent, and whose ``schema``, ``config`` and
``budget`` are the public inputs. ``sample`` is post-processing: it may read only the model
and must return a DataFrame with the schema's columns, decoded to the user's labels
(``TableEncoder.decode`` does this).

Saving and loading live in :mod:`jdp.synth.io` (``params.npz`` + ``model.json``, nothing
executable stored); the scikit-learn-style classes in :mod:`jdp.synth.estimator`.
"""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting.compose import pure_spend
from accounting.validation import check_count
from jdp.data.constraints import enforce
from jdp.data.dp_schema import SchemaRelease
from jdp.data.schema import NONPRIVATE_SCHEMA_CLAIM, Schema, Table, UnaccountedSchemaWarning
from jdp.synth.signal import check_signal
from jdp.verbosity import warn_private

Params = Mapping[str, Any]  # nested dict of arrays
FitFn = Callable[[jax.Array, Table, PrivacyBudget, Any], "FittedModel"]
SampleFn = Callable[[jax.Array, "FittedModel", int], pd.DataFrame]


class DeltaWarning(UserWarning):
    """``delta >= 1/n``: a mechanism at this delta may release a record outright.

    ``n`` is private, so this warning is shown only under
    :func:`jdp.verbosity.show_private_details` (no public row count is declared anywhere to
    compare ``delta`` with instead)."""


# -- the fitted model ----------------------------------------------------------------------


@dataclass(frozen=True)
class FittedModel:
    """A fitted synthesizer: released parameters plus the public inputs and the ledger."""

    method: str
    params: Params
    schema: Schema
    config: Any
    budget: PrivacyBudget
    ledger: PrivacyLedger

    def epsilon(self, delta: float | None = None) -> float:
        """The epsilon the ledger composes to at ``delta`` (default: the budget's delta)."""
        return self.ledger.epsilon(self.budget.delta if delta is None else delta)

    def privacy_statement(self) -> str:
        """The ledger's report at the budget's delta, opened by
        :data:`~jdp.data.schema.NONPRIVATE_SCHEMA_CLAIM` when the schema was read off the
        data without DP (``schema.nonprivate``): the release is then not DP as a whole."""
        statement = self.ledger.report(self.budget.delta)
        if self.schema.nonprivate:
            return f"{NONPRIVATE_SCHEMA_CLAIM}\n{statement}"
        return statement


# -- registry ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """A registered synthesizer: its name, config class and pure ``fit``/``sample``."""

    name: str
    config_cls: type
    fit: FitFn
    sample: SampleFn
    description: str = ""
    #: ``False`` for a non-private reference (e.g. ``pgm``): ``jdp fit`` refuses it up front.
    private: bool = True
    #: The model's released noisy row count (post-processing of released values), when the
    #: method releases one: ``jdp sample``'s default ``-n`` (:func:`noisy_row_count`).
    noisy_rows: Callable[[FittedModel], int] | None = None

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config_cls):
            raise TypeError(f"method {self.name!r}: config_cls must be a dataclass")

    def make_config(self, config: Any = None, **overrides: Any) -> Any:
        """``config`` (or the default config) with ``overrides`` replaced."""
        if config is None:
            config = self.config_cls()
        if not isinstance(config, self.config_cls):
            raise TypeError(
                f"method {self.name!r} expects a {self.config_cls.__name__}, "
                f"got {type(config).__name__}"
            )
        return dataclasses.replace(config, **overrides) if overrides else config


_REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add ``method`` to the registry (re-registering the same name replaces it)."""
    _REGISTRY[method.name] = method
    return method


#: Modules of ``jdp.synth`` that are infrastructure, not methods.
_NOT_METHODS = frozenset({"base", "io", "estimator"})


def get_method(name: str) -> Method:
    """The registered method ``name``, importing its home on first use.

    Its home is the module or package ``jdp.synth.<name>`` (``-`` written ``_``) when one
    exists; a package may register several names (``jdp.synth.p3gm`` registers ``p3gm``,
    ``p3gm-ae``, ``dp-vae`` and ``pgm``), so a name without a home of its own is looked up
    after importing every method module (:func:`available_methods`). Errors raised while
    importing a method's module propagate.
    """
    if name not in _REGISTRY:
        home = _home_module(name)
        if home is not None:
            importlib.import_module(home)
    if name not in _REGISTRY and name not in available_methods():
        raise ValueError(f"unknown synthesizer {name!r}; available: {available_methods()}")
    return _REGISTRY[name]


def _home_module(name: str) -> str | None:
    """``jdp.synth.<name>`` if that module or package exists (found without importing it)."""
    import importlib.util

    stem = name.replace("-", "_") if isinstance(name, str) else ""
    if not stem.isidentifier() or stem in _NOT_METHODS:
        return None
    module = f"jdp.synth.{stem}"
    return module if importlib.util.find_spec(module) is not None else None


def available_methods() -> list[str]:
    """Names of all methods shipped in ``jdp.synth`` (imports each method module or package
    once; a package may register several names)."""
    import pkgutil

    import jdp.synth

    for info in pkgutil.iter_modules(jdp.synth.__path__):
        if not info.name.startswith("_") and info.name not in _NOT_METHODS:
            importlib.import_module(f"jdp.synth.{info.name}")
    return sorted(_REGISTRY)


# -- the pure core, wrapped with checks ------------------------------------------------------


def fit_model(
    key: jax.Array,
    method: str,
    data: Table | pd.DataFrame,
    budget: PrivacyBudget,
    config: Any = None,
    *,
    schema: Schema | SchemaRelease | None = None,
) -> FittedModel:
    """Fit ``method`` under ``budget``; check the ledger meets it.

    ``data`` is a :class:`Table`, or a DataFrame together with ``schema``. When ``schema`` is a
    :class:`~jdp.data.dp_schema.SchemaRelease` (a schema released with DP from this same
    data), its cost is charged to ``budget``: the method is fitted on the remaining
    ``(epsilon - epsilon_s, delta - delta_s)`` (basic composition) and the release's entries
    open the model's ledger (a ``Table`` must then be conformed to the release's schema).
    Warns (:class:`DeltaWarning`) when ``delta >= 1/n`` -- only under
    :func:`jdp.verbosity.show_private_details`, as ``n`` is private --, and
    (:class:`~jdp.data.schema.UnaccountedSchemaWarning`) when the schema came from a release
    but the release is not given: its cost is then missing from the ledger, and
    (:class:`~jdp.synth.signal.NoSignalWarning`) when a released statistic's noise exceeds
    any signal it could carry (:func:`~jdp.synth.signal.check_signal`). Raises
    ``RuntimeError`` if the ledger composes to more than ``budget.epsilon`` at
    ``budget.delta`` (a bug in the method).
    """
    m = get_method(method)
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"expected a PrivacyBudget, got {type(budget).__name__}")
    spent, release = PrivacyLedger(), None
    if isinstance(schema, SchemaRelease):
        release, spent, schema = schema, schema.ledger, schema.schema
        if isinstance(data, Table) and data.schema != schema:
            raise ValueError("the Table was conformed to another schema than the release's")
    used = data.schema if isinstance(data, Table) else schema
    if used is not None and used.from_release and not spent.entries:
        warnings.warn(
            "this schema was released with DP (infer_schema_dp) but is used without its "
            "SchemaRelease: its privacy cost is not in the model's ledger; pass the release "
            "(or its saved file) as the schema",
            UnaccountedSchemaWarning,
            stacklevel=2,
        )
    if not isinstance(data, Table):
        if schema is None:
            raise ValueError(
                "a schema is required: declare one (jdp.Schema), load one (Schema.load), or use "
                "jdp.data.dp_schema.infer_schema_dp"
            )
        data = (schema if release is None else release).conform(data)  # maps to 'other'
    # n is private: whether delta >= 1/n (and 1/n itself) is for the data holder's eyes only
    message = budget.delta_warning(len(data), show_n=True)
    if message:
        warn_private(message, DeltaWarning, stacklevel=2)
    remaining = _remaining_budget(budget, spent)
    model = m.fit(key, data, remaining, m.make_config(config))
    if spent.entries:
        model = dataclasses.replace(model, ledger=spent + model.ledger, budget=budget)
    spent_eps = model.epsilon()
    if spent_eps > budget.epsilon * (1 + 1e-9):
        raise RuntimeError(
            f"method {method!r} spent epsilon={spent_eps:.6g} at delta={budget.delta:g}, "
            f"over the budget epsilon={budget.epsilon:g}"
        )
    check_signal(model)
    return model


def _remaining_budget(budget: PrivacyBudget, spent: PrivacyLedger) -> PrivacyBudget:
    """``budget`` less what ``spent`` used, by basic composition (for pure/approximate spends)."""
    if not spent.entries:
        return budget
    eps_s, delta_s = pure_spend(spent.event)
    if eps_s >= budget.epsilon or delta_s > budget.delta:
        raise ValueError(
            f"expected the schema release ({eps_s:.4g}, {delta_s:.3g}) to leave part of the "
            f"budget ({budget.epsilon:g}, {budget.delta:g}) for the model"
        )
    return PrivacyBudget(epsilon=budget.epsilon - eps_s, delta=budget.delta - delta_s)


#: Rows drawn per chunk by :func:`sample_chunks` (bounds the memory of a large draw).
SAMPLE_CHUNK_ROWS = 50_000


def noisy_row_count(model: FittedModel) -> int | None:
    """The model's released noisy row count, or ``None`` when its method releases none.

    Post-processing of the released parameters: no privacy cost, and never the exact (private)
    number of training rows.
    """
    count = get_method(model.method).noisy_rows
    return None if count is None else max(1, int(count(model)))


def sample_chunks(
    key: jax.Array, model: FittedModel, n: int, chunk_rows: int = SAMPLE_CHUNK_ROWS
) -> Iterator[pd.DataFrame]:
    """``n`` synthetic rows as consecutive tables of at most ``chunk_rows`` rows each.

    Chunk 0 is ``sample_model(key, model, rows_0)``, chunk ``i > 0`` is
    ``sample_model(jax.random.fold_in(key, i), model, rows_i)``: memory is bounded by one chunk
    whatever ``n``, each chunk has its own key (a chunk's draws do not repeat another's), the
    rows are the same for a given ``(key, n, chunk_rows)``, and ``n <= chunk_rows`` gives the
    rows of ``sample_model(key, model, n)``. Post-processing: no privacy cost. Raises
    ``ValueError`` for more than ``2**32`` chunks (``fold_in`` takes 32-bit data).
    """
    n = check_count("n", n, minimum=1)
    chunk_rows = check_count("chunk_rows", chunk_rows, minimum=1)
    chunks = -(-n // chunk_rows)
    if chunks > 2**32:
        raise ValueError(f"expected at most 2**32 chunks of {chunk_rows} rows, got n={n}")
    for i in range(chunks):
        rows = min(chunk_rows, n - i * chunk_rows)
        yield sample_model(key if i == 0 else jax.random.fold_in(key, i), model, rows)


def sample_model(key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
    """Draw ``n`` synthetic rows from a fitted model (post-processing: no privacy cost).

    The schema's declared functional dependencies (:mod:`jdp.data.constraints`) are enforced
    on the drawn rows: each dependent column is rewritten from its determinant.
    """
    n = check_count("n", n, minimum=1)
    out = get_method(model.method).sample(key, model, n)
    if list(out.columns) != model.schema.names or len(out) != n:
        raise RuntimeError(
            f"method {model.method!r} returned a table that does not match its schema"
        )
    return enforce(out, model.schema.constraints)
