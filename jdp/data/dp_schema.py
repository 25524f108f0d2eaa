"""A schema released with differential privacy: DP bounds by quantiles, DP category discovery.

When a user cannot declare bounds or domains, they can spend part of their budget on them:

* numeric column: the ``quantiles = (q_lo, q_hi)`` quantiles of the column, each released by
  the exponential mechanism (:func:`dp_quantile`), become its bounds. A coarse public range
  ``[a, b]`` per numeric column is still required -- no DP mechanism can find a quantile on
  an unbounded line -- but it may be very loose (e.g. ``[0, 10**9]`` for an income);
* categorical column: the categories whose Laplace-noised count exceeds a threshold
  (:func:`dp_categories`); a category held by few records is dropped.

The budget ``epsilon`` is split equally over the columns (and, within a numeric column,
equally over its two quantiles); each column's release is one ledger entry. The result is a
:class:`SchemaRelease` holding the schema and the ledger of its release. Category discovery
is (epsilon, delta)-DP (a category present in only one of two neighbouring datasets can be
released, with probability at most delta), recorded as an ``EpsilonDeltaDpEvent``; see
``docs/privacy.md``, "DP category discovery".

Pass the release itself wherever a schema is accepted (``schema=`` of
:func:`jdp.synth.base.fit_model` and of every ``Synthesizer``, ``jdp fit --schema``): the model
is fitted on what remains of the budget and its ledger opens with the release's entries.
:meth:`SchemaRelease.save` writes schema and ledger to one JSON file; :func:`load_schema`
reads it back as a release (or a plain schema file as a :class:`Schema`). The released schema
is marked ``from_release``: records holding a category the release suppressed are dropped by
``Schema.conform`` (their values are never shown), and using the schema without its release
warns that its cost is missing from the ledger.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accounting import PrivacyLedger
from accounting import events as ev
from accounting.compose import split_approximate
from accounting.validation import check_open_unit, check_positive
from jdp.data.schema import Column, ColumnKind, Schema, write_atomic
from jdp.mechanisms.noise import laplace_mechanism
from jdp.mechanisms.selection import gumbel_max

RELEASE_FORMAT = "jdp-schema-release"


def dp_quantile(
    rng: np.random.Generator,
    values: np.ndarray,
    q: float,
    *,
    lower: float,
    upper: float,
    epsilon: float,
) -> tuple[float, ev.PureDpEvent]:
    """The ``q``-quantile of ``values`` in ``[lower, upper]`` by the exponential mechanism.

    With ``x_(1) <= ... <= x_(n)`` the values clipped to ``[lower, upper]``, ``x_(0) = lower``
    and ``x_(n+1) = upper``, an output ``t`` in ``[x_(k), x_(k+1))`` has utility
    ``u(t) = -|k - q n|``; the mechanism picks interval ``k`` with probability proportional to
    ``(x_(k+1) - x_(k)) exp(epsilon u / 2)`` and returns a uniform point in it (Smith 2011,
    "Privacy-preserving statistical estimation with optimal convergence rates", Section 3).

    Privacy:
      Neighbouring relation: add/remove one record. Adding a record moves ``k`` by 0 or 1
      and ``q n`` by ``q``, so ``k - q n`` changes by ``-q`` or ``1 - q``: sensitivity of
      ``u`` at most 1. The exponential mechanism with ``exp(epsilon u / 2)`` is epsilon-DP;
      event ``PureDpEvent(epsilon)``.
    """
    check_positive("epsilon", epsilon)
    if not 0 <= q <= 1:
        raise ValueError(f"expected q in [0, 1], got {q}")
    if not lower < upper:
        raise ValueError(f"expected lower < upper, got [{lower}, {upper}]")
    x = np.sort(np.clip(np.asarray(values, dtype=np.float64), lower, upper))
    points = np.concatenate([[lower], x, [upper]])
    lengths = np.diff(points)
    k = np.arange(len(lengths))
    with np.errstate(divide="ignore"):
        logits = np.log(lengths) - epsilon * np.abs(k - q * len(x)) / 2.0
    chosen = gumbel_max(rng, logits)
    value = points[chosen] + rng.random() * lengths[chosen]
    return float(value), ev.PureDpEvent(epsilon=float(epsilon))


def threshold_for(epsilon: float, delta: float) -> float:
    """Threshold ``tau = 1 + ln(1 / (2 delta)) / epsilon``: a count of 1 plus Laplace(1/epsilon)
    noise exceeds it with probability exactly ``delta``."""
    return 1.0 + math.log(1.0 / (2.0 * delta)) / epsilon


def dp_categories(
    rng: np.random.Generator, values: pd.Series | np.ndarray, *, epsilon: float, delta: float
) -> tuple[tuple, ev.EpsilonDeltaDpEvent]:
    """The categories of ``values`` whose noisy count exceeds :func:`threshold_for`.

    Each distinct value's count gets independent Laplace(1/epsilon) noise; values above the
    threshold are released (sorted), counts are not.

    Returns:
      ``(categories, EpsilonDeltaDpEvent(epsilon, delta))``: epsilon covers the noisy counts
      of values present in both neighbours; delta is the probability of releasing a value
      present in only one (Korolova et al. 2009, "Releasing search queries and clicks
      privately"; the stability-based histogram).

    Privacy:
      Neighbouring relation: add/remove one record, which changes one count by 1 (L1
      sensitivity 1) or creates/removes a value with count 1, released with probability
      ``P(1 + Lap(1/epsilon) > tau) = exp(-epsilon (tau - 1)) / 2 = delta``.
      Overall (epsilon, delta)-DP.
    """
    check_positive("epsilon", epsilon)
    check_open_unit("delta", delta)
    counts = pd.Series(np.asarray(values, dtype=object)).value_counts(sort=False)
    noisy, _ = laplace_mechanism(  # its LaplaceDpEvent is part of the event returned below
        rng, counts.to_numpy(dtype=np.float64), l1_sensitivity=1.0, epsilon=epsilon
    )
    keep = [v for v, c in zip(counts.index, noisy) if c > threshold_for(epsilon, delta)]
    cats = tuple(sorted(keep, key=lambda v: (str(type(v)), v)))
    return cats, ev.EpsilonDeltaDpEvent(epsilon=float(epsilon), delta=float(delta))


@dataclass(frozen=True)
class SchemaRelease:
    """A DP schema and the ledger of its release.

    The ledger holds pure events (exponential-mechanism quantiles) and one
    ``EpsilonDeltaDpEvent`` per categorical column, so the release is
    ``(epsilon, delta)``-DP with ``delta`` the sum of the category thresholds' deltas and
    ``epsilon`` the ledger's epsilon at that delta (here: the sum of the column budgets).
    Its schema is marked ``from_release`` (see :mod:`jdp.data.schema`).

    JSON layout (:meth:`to_dict`)::

        {"format": "jdp-schema-release", "schema": {...}, "ledger": {...}}
    """

    schema: Schema
    ledger: PrivacyLedger

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise TypeError(f"expected a Schema, got {type(self.schema).__name__}")
        if not isinstance(self.ledger, PrivacyLedger):
            raise TypeError(f"expected a PrivacyLedger, got {type(self.ledger).__name__}")
        if not self.schema.from_release:
            object.__setattr__(self, "schema", dataclasses.replace(self.schema, from_release=True))

    @property
    def delta(self) -> float:
        return split_approximate(self.ledger.event)[1]

    @property
    def epsilon(self) -> float:
        return self.ledger.epsilon(self.delta)

    def privacy_statement(self) -> str:
        labels = ", ".join(self.ledger.labels)
        return (
            f"Schema release: ({self.epsilon:.4g}, {self.delta:.3g})-DP under add/remove-one "
            f"neighbours (basic composition of: {labels})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": RELEASE_FORMAT,
            "schema": self.schema.to_dict(),
            "ledger": self.ledger.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaRelease:
        if not isinstance(data, Mapping) or data.get("format") != RELEASE_FORMAT:
            raise ValueError(
                f"expected a saved SchemaRelease (format {RELEASE_FORMAT!r}) with its ledger; "
                "got a bare schema, without the ledger of its cost"
            )
        return cls(Schema.from_dict(data["schema"]), PrivacyLedger.from_dict(data["ledger"]))

    def save(self, path: str | Path) -> None:
        """Write schema and ledger to one JSON file (a temporary file, then ``os.replace``)."""
        write_atomic(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SchemaRelease:
        return cls.from_dict(_read_json(path))


def schema_from_dict(data: Mapping[str, Any]) -> Schema | SchemaRelease:
    """A saved release (with its ledger) as a :class:`SchemaRelease`, else a :class:`Schema`."""
    if isinstance(data, Mapping) and "ledger" in data:
        return SchemaRelease.from_dict(data)
    return Schema.from_dict(dict(data) if isinstance(data, Mapping) else data)


def load_schema(path: str | Path) -> Schema | SchemaRelease:
    """Read a schema JSON file: a saved :class:`SchemaRelease` keeps its ledger (and cost)."""
    return schema_from_dict(_read_json(path))


def _read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"schema file not found: {path}")
    return json.loads(path.read_text())


def infer_schema_dp(
    rng: np.random.Generator,
    data: pd.DataFrame,
    *,
    epsilon: float,
    kinds: Mapping[str, ColumnKind],
    ranges: Mapping[str, tuple[float, float]],
    target: str | None = None,
    quantiles: tuple[float, float] = (0.01, 0.99),
    category_delta: float = 1e-7,
) -> SchemaRelease:
    """Release a schema for ``data`` under ``epsilon``-DP (plus threshold deltas).

    Args:
      rng: the noise source.
      data: the private table.
      epsilon: total budget, split equally over the columns.
      kinds: each column's kind (public: it is a property of the data format).
      ranges: a coarse public ``(a, b)`` per numeric column (required for each).
      target: the target column (categorical).
      quantiles: the quantiles released as ``(lower, upper)`` bounds of numeric columns.
      category_delta: the additive delta of each categorical column's threshold.

    Integer values get independent uniform jitter in ``[-0.5, 0.5]`` before the quantile
    mechanism (a per-record randomisation, so neighbours stay neighbours): without it, ties
    leave zero-length gaps at the target rank and the mechanism drifts into the long empty
    tails of the coarse range. Numeric bounds are post-processed to ``lower < upper``
    (integer columns: rounded outwards); a categorical column with no category above its threshold raises (spend more
    epsilon, or declare its domain).
    """
    check_positive("epsilon", epsilon)
    if not isinstance(data, pd.DataFrame) or len(data) == 0:
        raise ValueError("expected a non-empty pandas DataFrame")
    missing = [c for c in data.columns if c not in kinds]
    if missing:
        raise ValueError(f"column {missing[0]!r} has no declared kind")
    q_lo, q_hi = quantiles
    if not 0 <= q_lo < q_hi <= 1:
        raise ValueError(f"expected 0 <= q_lo < q_hi <= 1, got {quantiles}")
    eps_col = epsilon / len(data.columns)
    ledger, columns = PrivacyLedger(), []
    for name in data.columns:
        kind = kinds[name]
        if kind == "categorical":
            cats, event = dp_categories(rng, data[name], epsilon=eps_col, delta=category_delta)
            if not cats:
                raise ValueError(
                    f"column {name!r}: no category passed the DP threshold; spend more epsilon "
                    "or declare its domain"
                )
            ledger = ledger.record(f"dp-categories:{name}", event)
            columns.append(Column(name=name, kind=kind, categories=cats))
            continue
        if name not in ranges:
            raise ValueError(f"column {name!r}: a coarse public range (a, b) is required")
        a, b = (float(v) for v in ranges[name])
        x = pd.to_numeric(data[name], errors="raise").to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"column {name!r} has NaN or infinite values")
        if kind == "integer":  # break ties: the mechanism samples inside gaps between values
            x = x + rng.uniform(-0.5, 0.5, size=len(x))
        lo, ev_lo = dp_quantile(rng, x, q_lo, lower=a, upper=b, epsilon=eps_col / 2)
        hi, ev_hi = dp_quantile(rng, x, q_hi, lower=a, upper=b, epsilon=eps_col / 2)
        ledger = ledger.record(f"dp-quantiles:{name}", ev.ComposedDpEvent([ev_lo, ev_hi]))
        lo, hi = min(lo, hi), max(lo, hi)
        if kind == "integer":
            lo, hi = math.floor(lo), math.ceil(hi)
        if hi <= lo:
            hi = lo + 1
        columns.append(Column(name=name, kind=kind, lower=lo, upper=hi))
    return SchemaRelease(Schema(columns=tuple(columns), target=target), ledger)
