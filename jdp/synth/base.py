"""The synthesizer protocol: a method on arrays, one table adapter, the registry, and
``fit_model``/``sample_model``.

How a method plugs in
=====================

A method works on arrays; the library turns tables into its arrays and back, once, here. It
gives three things and registers them::

    @dataclass(frozen=True, kw_only=True)
    class MyConfig:                    # JSON-serialisable fields, ALL with defaults,
        bins: int = 32                 # validated in __post_init__
        ...

    class MyCodec:                     # the public encoding: built from schema + config only
        def encode(self, data: Table) -> Any: ...                       # what fit_arrays reads
        def decode(self, key: jax.Array, rows: Any) -> pd.DataFrame: ...  # post-processing

    def fit_arrays(key, encoded, codec, budget, config) -> tuple[Params, PrivacyLedger]: ...
    def sample_arrays(key, params, codec, config, n) -> Any: ...        # rows codec decodes

    register(Method(name="my-method", config_cls=MyConfig,
                    codec=lambda schema, config: MyCodec(...),
                    fit_arrays=fit_arrays, sample_arrays=sample_arrays,
                    description="one line for `jdp fit --help`"))

    class MyMethod(Synthesizer):       # jdp.synth.estimator's scikit-learn-style class
        method = "my-method"

A method the library ships adds one line to :data:`jdp.synth.registry.METHODS` (name ->
module, class), which :func:`get_method` imports on first use and ``jdp`` exports from; a
user's own method registers from its own module. One module may register several names
(variants: ``jdp.synth.p3gm`` registers ``p3gm``, ``p3gm-ae``, ``dp-vae`` and ``pgm``).
:meth:`Method.fit` and :meth:`Method.sample` are the one table adapter: encode with the
codec, fit on arrays, keep the released parameters with the public inputs; draw arrays,
decode.

What ``fit_arrays`` receives
----------------------------
* ``key`` -- a JAX PRNG key (typed ``jax.random.key`` or legacy ``PRNGKey``). numpy methods
  turn it into a generator with :func:`jdp.random.numpy_rng`.
* ``encoded`` -- ``codec.encode(data)``, where ``data`` is a :class:`jdp.data.schema.Table`:
  its frame's columns are exactly ``data.schema.names`` in schema order, already checked (no
  NaN/inf, no unseen category) and clipped to the public bounds. A codec is built from the
  schema and config alone -- e.g. on a :class:`jdp.data.transforms.TableEncoder` (min-max to
  bounds, one-hot categoricals, column spans, unit-norm rows) -- so no encoder state is read
  off the data.
* ``codec`` -- the same codec (its public layout: spans, heads, bounds).
* ``budget`` -- the :class:`accounting.PrivacyBudget` to meet; ``fit_model`` checks after the
  fit that the ledger does not exceed it.
* ``config`` -- an instance of the method's ``config_cls``.

The row count is private under add/remove neighbours: a method may use it inside a mechanism
whose analysis covers it, never copy it into the parameters. ``fit_arrays`` returns the
parameters -- a nested ``dict`` of numpy (or JAX) arrays, only values released by mechanisms
or computed from them and from public inputs -- and the ledger of every event spent.
``sample_arrays`` and ``codec.decode`` are post-processing: they read only the parameters,
the config and the public schema; the decoded table has the schema's columns and labels.

Saving and loading live in :mod:`jdp.synth.io` (``params.npz`` + ``model.json``, nothing
executable stored); the scikit-learn-style classes in :mod:`jdp.synth.estimator`.
"""

from __future__ import annotations

import dataclasses
import importlib
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting.validation import check_count, check_positive
from jdp.data.constraints import FunctionalDependency, admissible, describe, enforce
from jdp.data.dp_schema import SchemaRelease
from jdp.data.quantile_scale import (
    CDF_DRAWS,
    MIN_MAX,
    knotted,
    needs_knots,
    onto_knots,
    own_cdf,
    scale_table,
)
from jdp.data.schema import NONPRIVATE_SCHEMA_CLAIM, Schema, Table, UnaccountedSchemaWarning
from jdp.progress import fit_delta
from jdp.random import numpy_rng, split
from jdp.synth.feasibility import (
    PublicShape,
    check_public_noise,
    check_shape,
    class_domain,
    has_minimum,
    public_width,
    release_class_counts,
    release_row_count,
)
from jdp.synth.registry import METHODS
from jdp.synth.rejection import MAX_DRAWS_PER_ROW, accepted_chunks
from jdp.synth.signal import check_signal, knot_releases, warn_weak
from jdp.verbosity import warn_private

Params = Mapping[str, Any]  # nested dict of arrays


@runtime_checkable
class Codec(Protocol):
    """A method's public encoding of a table, built from the schema and config alone."""

    def encode(self, data: Table) -> Any:
        """The arrays ``fit_arrays`` reads (private: they are the records)."""
        ...

    def decode(self, key: jax.Array, rows: Any) -> pd.DataFrame:
        """Drawn arrays -> a table with the schema's columns (post-processing)."""
        ...


ArrayFit = Callable[[jax.Array, Any, Any, PrivacyBudget, Any], tuple[Params, PrivacyLedger]]
ArraySample = Callable[[jax.Array, Params, Any, Any, int], Any]


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
    """A registered synthesizer: its name, config class, codec and pure array functions.

    Attributes:
        codec: ``codec(schema, config)`` -> the method's :class:`Codec`.
        fit_arrays: ``fit_arrays(key, encoded, codec, budget, config) -> (params, ledger)``.
        sample_arrays: ``sample_arrays(key, params, codec, config, n)`` -> rows the codec
            decodes (post-processing).
        description: one line for ``jdp fit --help``.
        private: ``False`` for a non-private reference (e.g. ``pgm``): ``jdp fit`` refuses it
            up front.
        noisy_rows: the model's released noisy row count (post-processing of released
            values), when the method releases one: ``jdp sample``'s default ``-n``
            (:func:`noisy_row_count`).
        for_shape: ``for_shape(config, schema, budget, rows)`` -> ``config`` with its
            public-shape settings resolved (e.g. marginals' ``bins="auto"``), from ``rows``,
            the declared or released row count, and ``budget``, what the fit itself will
            spend; ``None`` when ``rows`` is ``None`` and a setting needs it (:meth:`fit`
            then releases a row count, unless one is declared).
        calibrates_prior: ``True`` when every noise scale of ``fit_arrays`` is calibrated
            against the budget's :attr:`~accounting.budget.PrivacyBudget.prior`: the fit then
            takes a composing budget (:meth:`~accounting.budget.PrivacyBudget.composing`), so
            a DP schema, a row count and quantile knots spent before it compose with its plan
            under the best accountant and the whole ledger lands at the budget; otherwise
            they are taken off by basic composition.
        defaults: ``(field, value)`` pairs where this method's default config departs from
            its config class's defaults (a class shared by several methods, as P3GM's
            variants share :class:`~jdp.synth.p3gm.config.P3GMConfig`); :meth:`make_config`
            applies them to the default config only, never to a config the caller passes.
    """

    name: str
    config_cls: type
    codec: Callable[[Schema, Any], Codec]
    fit_arrays: ArrayFit
    sample_arrays: ArraySample
    description: str = ""
    private: bool = True
    noisy_rows: Callable[[FittedModel], int] | None = None
    for_shape: Callable[[Any, Schema, PrivacyBudget, float | None], Any] | None = None
    calibrates_prior: bool = False
    defaults: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config_cls):
            raise TypeError(f"method {self.name!r}: config_cls must be a dataclass")
        names = {f.name for f in dataclasses.fields(self.config_cls)}
        unknown = sorted(name for name, _ in self.defaults if name not in names)
        if unknown:
            raise ValueError(f"method {self.name!r}: defaults for unknown fields {unknown}")

    def make_config(self, config: Any = None, **overrides: Any) -> Any:
        """``config`` (or the default config: the config class's defaults with
        :attr:`defaults` replaced) with ``overrides`` replaced; a nested config (``dpsgd``,
        ``performance``) takes a config or a dict of the fields to change
        (:func:`jdp.synth.configs.apply_overrides`)."""
        from jdp.synth.configs import apply_overrides

        if config is None:
            config = self.config_cls(**dict(self.defaults))
        if not isinstance(config, self.config_cls):
            raise TypeError(
                f"method {self.name!r} expects a {self.config_cls.__name__}, "
                f"got {type(config).__name__}"
            )
        return apply_overrides(config, overrides) if overrides else config

    def fit(
        self,
        key: jax.Array,
        data: Table,
        budget: PrivacyBudget,
        config: Any,
        rows: float | None = None,
    ) -> FittedModel:
        """The table adapter: for a method with a shape minimum
        (:mod:`jdp.synth.feasibility`), warn when the table's public shape is below it (the
        row count ``rows`` as declared, else released from its own key and share of
        ``budget``, as the target's class counts for a method with a minimum of the smallest
        class; released too when the config has public-shape settings to resolve,
        :attr:`for_shape`), and when a release whose noise is data-free cannot carry signal on
        any table (:func:`~jdp.synth.feasibility.check_public_noise`); put the numeric columns on the config's ``scale``
        (:func:`jdp.data.quantile_scale.scale_table`: public log knots, or released quantile
        knots from their own key and share of ``budget``), encode ``data`` with the public
        codec of the schema with knots, fit on the arrays, keep the released parameters with
        the public inputs and the resolved config (no checks: :func:`fit_model`). With
        released knots, the model's own distribution of each knotted column is read from
        :data:`~jdp.data.quantile_scale.CDF_DRAWS` of its rows (post-processing,
        ``params["value_cdf"]``) for :meth:`sample` to map onto them."""
        counted, rest, smallest = PrivacyLedger(), budget, None
        by_class = has_minimum(self.name, "smallest class")
        judged = has_minimum(self.name) or by_class
        classes = class_domain(data.schema) if by_class else None
        needs_rows = self.for_shape is not None and (
            self.for_shape(config, data.schema, rest, None) is None
        )
        if (judged or needs_rows) and rows is None:  # keys change only on a release
            count_key, key = split(key)
            if classes is not None:  # the class counts, in place of the row count
                target = data.frame[data.schema.target]
                rows, smallest, counted, rest = release_class_counts(
                    numpy_rng(count_key), target, classes, rest
                )
            else:
                rows, counted, rest = release_row_count(numpy_rng(count_key), len(data), rest)
        shape = PublicShape(rows or 0.0, public_width(data.schema), rest.left.epsilon, smallest)
        scale = getattr(config, "scale", MIN_MAX)  # a user's method may have none
        scale_key = None
        if scale.spends and any(needs_knots(c) for c in data.schema.columns):
            scale_key, key = split(key)  # keys change only when knots are released
        data, spent, rest, knots = scale_table(scale_key, data, rest, scale)
        if self.for_shape is not None:
            config = self.for_shape(config, data.schema, rest, rows)
        codec = self.codec(data.schema, config)  # a config the schema refuses fails first
        if judged:
            check_shape(self.name, shape)
        check_public_noise(self.name, config, codec, rest, shape)
        warn_weak(self.name, knot_releases(knots, scale.probs))  # before the fit
        params, ledger = self.fit_arrays(key, codec.encode(data), codec, rest, config)
        ledger = counted + spent + ledger
        model = FittedModel(self.name, params, data.schema, config, budget, ledger)
        if not knotted(data.schema, scale):
            return model
        drawn = self.sample(jax.random.fold_in(key, 1), model, CDF_DRAWS)  # post-processing
        params = {**params, "value_cdf": own_cdf(data.schema, scale, drawn)}
        return dataclasses.replace(model, params=params)

    def sample(self, key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
        """The table adapter's inverse: ``n`` rows drawn on arrays and decoded, from one key
        split into the draw's and the decoding's, the values of columns with released knots
        mapped onto them by the model's own CDF (:func:`jdp.data.quantile_scale.onto_knots`,
        with ``params["value_cdf"]``; a model without it is left as drawn). Post-processing."""
        codec = self.codec(model.schema, model.config)
        draw_key, decode_key = split(key)
        rows = self.sample_arrays(draw_key, model.params, codec, model.config, n)
        table = codec.decode(decode_key, rows)
        if "value_cdf" not in model.params:
            return table
        scale = getattr(model.config, "scale", MIN_MAX)
        return onto_knots(model.schema, scale, table, np.asarray(model.params["value_cdf"]))


_REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add ``method`` to the registry (re-registering the same name replaces it). A method
    the library ships is also listed in :data:`jdp.synth.registry.METHODS`, which a contract
    test checks."""
    _REGISTRY[method.name] = method
    return method


def get_method(name: str) -> Method:
    """The registered method ``name``, importing the module the table of shipped methods
    names (:data:`jdp.synth.registry.METHODS`) on first use. Errors raised while importing a
    method's module propagate."""
    if name not in _REGISTRY and name in METHODS:
        importlib.import_module(METHODS[name][0])
    if name not in _REGISTRY:
        raise ValueError(f"unknown synthesizer {name!r}; available: {available_methods()}")
    return _REGISTRY[name]


def available_methods() -> list[str]:
    """Names of every shipped method (:data:`jdp.synth.registry.METHODS`) and of any
    registered by the user."""
    return sorted({*METHODS, *_REGISTRY})


# -- the pure core, wrapped with checks ------------------------------------------------------


def fit_model(
    key: jax.Array,
    method: str,
    data: Table | pd.DataFrame,
    budget: PrivacyBudget,
    config: Any = None,
    *,
    schema: Schema | SchemaRelease | None = None,
    rows: float | None = None,
) -> FittedModel:
    """Fit ``method`` under ``budget``; check the ledger meets it.

    ``rows`` is a row count the data holder declares public (e.g. a published table size):
    a method with a shape minimum (:mod:`jdp.synth.feasibility`) then judges the table by it
    instead of releasing a noisy count with 1% of the epsilon. Warns
    (:class:`~jdp.synth.feasibility.CannotWorkWarning`) before the model is fitted when the
    method was measured below chance at this shape, naming a method that is expected to do
    better.

    ``data`` is a :class:`Table`, or a DataFrame together with ``schema``. When ``schema`` is a
    :class:`~jdp.data.dp_schema.SchemaRelease` (a schema released with DP from this same
    data), its cost is charged to ``budget`` (:meth:`~accounting.budget.PrivacyBudget.less`):
    a method that calibrates against what was spent (``Method.calibrates_prior``) meets
    ``budget`` with the release and its own plan composed by the best accountant; another is
    fitted on ``(epsilon - epsilon_s, delta - delta_s)`` (basic composition). The release's
    entries open the model's ledger (a ``Table`` must then be conformed to the release's
    schema).
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
    remaining = (budget.composing() if m.calibrates_prior else budget).less(spent)
    if rows is not None:
        rows = check_positive("rows", rows)
    with fit_delta(budget.delta):  # the progress lines' epsilon is at the budget's delta
        model = m.fit(key, data, remaining, m.make_config(config), rows)
    model = dataclasses.replace(model, ledger=spent + model.ledger, budget=budget)  # the user's
    spent_eps = model.epsilon()
    if spent_eps > budget.epsilon * (1 + 1e-9):
        raise RuntimeError(
            f"method {method!r} spent epsilon={spent_eps:.6g} at delta={budget.delta:g}, "
            f"over the budget epsilon={budget.epsilon:g}"
        )
    check_signal(model)
    return model


#: Rows drawn per chunk by :func:`sample_chunks` (bounds the memory of a large draw).
SAMPLE_CHUNK_ROWS = 50_000


def noisy_row_count(model: FittedModel) -> int | None:
    """The model's released noisy row count, or ``None`` when its method releases none.

    Post-processing of the released parameters: no privacy cost, and never the exact (private)
    number of training rows.
    """
    count = get_method(model.method).noisy_rows
    return None if count is None else max(1, int(count(model)))


def rows_to_sample(model: FittedModel, n: int | None, *, hint: str = "n=N") -> int:
    """The number of rows to draw: ``n``, or for ``None`` the model's released noisy row count
    (:func:`noisy_row_count`) -- the rule of ``jdp sample`` and of ``Synthesizer.sample``.

    Raises:
        TypeError: ``n`` is not an integer (a ``bool`` included).
        ValueError: ``n < 1``, or ``n`` is ``None`` and the method releases no noisy row
            count; the message says how to give one, ``hint`` (``"-n N"`` on the command
            line, ``"n=N"`` in Python).
    """
    if n is None:
        count = noisy_row_count(model)
        if count is None:
            raise ValueError(
                f"method {model.method!r} releases no noisy row count: give the number of "
                f"rows ({hint})"
            )
        return count
    if isinstance(n, bool):
        raise TypeError(f"expected n to be an integer, got {n!r}")
    return check_count("n", n, minimum=1)


def byte_size(nbytes: float) -> str:
    """``nbytes`` for people: ``"1.5 GB"`` (decimal units, one decimal)."""
    unit = "B"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if nbytes < 1000:
            break
        nbytes /= 1000
    return f"{nbytes:.1f} {unit}"


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

    The schema's declared constraints (:mod:`jdp.data.constraints`) hold in every row. Each
    draw of ``n`` rows has its functional dependencies enforced (each dependent column
    rewritten from its determinant), then the rows breaking a forbidden combination or an
    inequality are rejected and the shortfall is redrawn
    (:func:`~jdp.synth.rejection.accepted_chunks`): draw 0 uses ``key``, draw ``i > 0``
    uses ``fold_in(fold_in(key, crc32("constraints")), i)`` (a stream apart from
    :func:`sample_chunks`' ``fold_in(key, i)``), and the admissible rows are kept in order.
    The rows are thus draws from the model's distribution conditioned on meeting the
    constraints; a schema with nothing to reject returns draw 0.

    Raises:
        ValueError: when fewer than ``n`` rows are admissible within
            ``MAX_DRAWS_PER_ROW`` draws (the message gives the acceptance rate).
    """
    n = check_count("n", n, minimum=1)
    method = get_method(model.method)
    constraints = model.schema.constraints

    def draw(i: int) -> pd.DataFrame:
        if i > 0:  # a redraw
            redraws = jax.random.fold_in(key, zlib.crc32(b"constraints"))
            out = method.sample(jax.random.fold_in(redraws, i), model, n)
        else:
            out = method.sample(key, model, n)
        if list(out.columns) != model.schema.names or len(out) != n:
            raise RuntimeError(
                f"method {model.method!r} returned a table that does not match its schema"
            )
        return enforce(out, constraints)

    if all(isinstance(c, FunctionalDependency) for c in constraints):
        return draw(0)  # nothing to reject
    chunks = accepted_chunks(
        draw,
        lambda rows: admissible(rows, constraints),
        n,
        rounds=MAX_DRAWS_PER_ROW,
        what=f"the schema's constraints ({describe(constraints)})",
        hint="the model almost never meets them (check the declared constraints)",
    )
    return pd.concat(list(chunks), ignore_index=True)
