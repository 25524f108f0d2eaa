"""A schema released with differential privacy: DP bounds by range search and quantiles, DP
category discovery.

When a user cannot declare bounds or domains, they can spend part of their budget on them:

* numeric column (:func:`dp_bounds`): a coarse public range ``[a, b]`` per numeric column is
  still required -- no DP mechanism can find a quantile on an unbounded line -- but it may be
  very loose (e.g. ``[0, 10**9]`` for an age or an income). A DP range search
  (:func:`dp_range`: a Laplace histogram over signed geometric buckets ``2^k`` of the range)
  first finds the scale of the data; the ``quantiles = (q_lo, q_hi)`` quantiles, each
  released by the exponential mechanism (:func:`dp_quantile`) inside the range found, become
  the bounds. The column's share of the budget is split as ``range_fraction`` (default 1/3)
  for the search and the rest equally over the two quantiles;
* categorical column: the categories whose Laplace-noised count exceeds a threshold
  (:func:`dp_categories`); a category held by few records is suppressed.

The budget ``epsilon`` is split equally over the columns; each column's release is one
ledger entry (``dp-bounds:<name>`` or ``dp-categories:<name>``). The result is a
:class:`SchemaRelease` holding the schema and the ledger of its release. Category discovery
is (epsilon, delta)-DP (a category present in only one of two neighbouring datasets can be
released, with probability at most delta), recorded as an ``EpsilonDeltaDpEvent``; see
``docs/privacy.md``, "DP category discovery" and "DP range search".

Records holding a suppressed category are either mapped to an extra category ``other_label``
that the release adds to every string-valued categorical feature column (``suppressed="other"``,
the default; the target keeps its released labels, and a column of integer or boolean
categories drops such records) or dropped (``suppressed="drop"``). On Adult at epsilon 0.3
dropping lost 21% of the records, mapping none (``scripts/numeric_columns.py``). Either
is a fixed public function of each record given the released schema (no extra cost); the
"other" records are then counted by the method like any category.

Pass the release itself wherever a schema is accepted (``schema=`` of
:func:`jdp.synth.base.fit_model` and of every ``Synthesizer``, ``jdp fit --schema``): the model
is fitted on what remains of the budget and its ledger opens with the release's entries.
:meth:`SchemaRelease.save` writes schema and ledger to one JSON file (``jdp schema --dp``
writes one); :func:`load_schema` reads it back as a release (or a plain schema file as a
:class:`Schema`). The released schema is marked ``from_release``: records holding a category
the release suppressed are dropped by ``Schema.conform`` (their values are never shown) unless
:meth:`SchemaRelease.conform` maps them to ``other``, and using the schema without its
release warns that its cost is missing from the ledger.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd

from accounting import PrivacyLedger
from accounting import events as ev
from accounting.builders import with_noise_cut
from accounting.compose import pure_spend
from accounting.validation import check_open_unit, check_positive
from jdp.data.schema import (
    Column,
    ColumnKind,
    Schema,
    SuppressedCategoryWarning,
    Table,
    write_atomic,
)
from jdp.mechanisms.noise import LAPLACE_RELEASE_CUT, laplace_mechanism
from jdp.mechanisms.selection import gumbel_max
from jdp.mechanisms.tape import released
from jdp.verbosity import warn_private

RELEASE_FORMAT = "jdp-schema-release"
#: Powers of two below the coarse range's half-width that :func:`log_bucket_edges` resolves.
LEVELS = 40
#: Default probability that some empty bucket of the range search passes its threshold.
RANGE_FAILURE = 1e-3
SUPPRESSED = ("drop", "other")


@released(lambda rng, values, q, lower, upper, epsilon: (q, lower, upper, epsilon))
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


def log_bucket_edges(lower: float, upper: float, *, levels: int = LEVELS) -> np.ndarray:
    """Edges of signed geometric buckets over ``[lower, upper]``: a function of the range only.

    With anchor ``c = clip(0, lower, upper)`` and half-width ``s = max(upper - c, c - lower)``,
    the candidate edges are ``c +- s 2^-j`` for ``j = 0 .. levels``; those strictly inside
    ``(lower, upper)`` together with ``lower`` and ``upper`` are returned, sorted. The buckets
    are ``[e_i, e_{i+1})`` (the last one closed): one around the anchor of half-width
    ``s 2^-levels``, then buckets doubling in width outwards (``[c + s 2^-(j+1), c + s 2^-j)``),
    so a bucket's edges are within a factor 2 of each other on either side of the anchor.
    """
    check_positive("levels", levels)
    if not lower < upper:
        raise ValueError(f"expected lower < upper, got [{lower}, {upper}]")
    c = min(max(0.0, float(lower)), float(upper))
    s = max(float(upper) - c, c - float(lower))
    steps = s * 2.0 ** -np.arange(int(levels), -1, -1)
    candidates = np.concatenate([c - steps, c + steps])
    inside = candidates[(candidates > lower) & (candidates < upper)]
    return np.unique(np.concatenate([[float(lower), float(upper)], inside]))


def bucket_index(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The bucket of each value (clipped to ``[edges[0], edges[-1]]``): exactly one each."""
    x = np.clip(np.asarray(values, dtype=np.float64), edges[0], edges[-1])
    return np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)


def dp_range(
    rng: np.random.Generator,
    values: np.ndarray,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    failure: float = RANGE_FAILURE,
    levels: int = LEVELS,
) -> tuple[tuple[float, float], ev.DpEvent]:
    """The scale of ``values`` inside a coarse public range, from a Laplace log-histogram.

    The values (clipped to ``[lower, upper]``) are counted in the ``M`` buckets of
    :func:`log_bucket_edges`; each count gets ``Lap(1/epsilon)`` noise. A bucket *passes* when
    its noisy count exceeds ``tau = ln(M / (2 failure)) / epsilon``: an empty bucket passes
    with probability ``exp(-epsilon tau) / 2 = failure / M``, so some empty bucket passes with
    probability at most ``failure``. The range returned runs from the lower edge of the
    lowest passing bucket to the upper edge of the highest one, and always covers the bucket
    of largest noisy count (report noisy max, also post-processing): a column too sparse for
    the threshold gets the scale of its mode, never the whole coarse range (whose empty tails
    would swamp the quantiles). No margin is added: a margin bucket
    doubles the empty tail the quantile mechanism must overcome (on Adult at epsilon = 1,
    age's upper bound exceeded 1.5 times its 99% quantile in 37% of 60 seeds with one bucket
    of margin, 5% without), and records in a bucket that missed its threshold are only
    clipped to the range, which the quantiles clip anyway.

    Privacy:
      Neighbouring relation: add/remove one record, which lands in exactly one bucket: the
      count vector changes by 1 in one entry, L1 sensitivity 1. The Laplace histogram is
      epsilon-DP (event :func:`jdp.mechanisms.noise.laplace_event` of the textbook sampler:
      ``LaplaceDpEvent(1/epsilon)`` and its cut); thresholding and choosing the range are
      post-processing.

    References:
      The log-scale bucket search of practical DP libraries (Google's differential-privacy
      library, "ApproxBounds", used by Wilson et al. 2020, "Differentially private SQL with
      bounded user contribution"); the Laplace histogram: Dwork et al. 2006, "Calibrating
      noise to sensitivity in private data analysis"; report noisy max: Dwork & Roth 2014,
      Sec. 3.3.
    """
    check_positive("epsilon", epsilon)
    check_open_unit("failure", failure)
    edges = log_bucket_edges(lower, upper, levels=levels)
    m = len(edges) - 1
    counts = np.bincount(bucket_index(edges, values), minlength=m).astype(np.float64)
    # the textbook sampler, as in dp_categories: the counts are compared, never released, and
    # snapping's grid would move the thresholds' probabilities away from failure / M
    noisy, event = laplace_mechanism(
        rng, counts, l1_sensitivity=1.0, epsilon=epsilon, secure_noise=False
    )
    passed = np.flatnonzero(noisy > math.log(m / (2.0 * failure)) / epsilon)
    top = int(np.argmax(noisy))
    first, last = min((top, *passed[:1])), max((top, *passed[-1:]))
    return (float(edges[first]), float(edges[last + 1])), event


class DpBounds(NamedTuple):
    """Bounds released by :func:`dp_bounds`, and the range searched for them (also released)."""

    lower: float
    upper: float
    search_range: tuple[float, float]


def dp_bounds(
    rng: np.random.Generator,
    values: np.ndarray,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    quantiles: tuple[float, float] = (0.01, 0.99),
    range_fraction: float = 1 / 3,
    integer: bool = False,
) -> tuple[DpBounds, ev.ComposedDpEvent]:
    """Bounds of one numeric column: a DP range search, then two DP quantiles inside it.

    Budget split: ``epsilon_r = range_fraction * epsilon`` for :func:`dp_range` over the
    coarse public range ``[lower, upper]``, then ``(1 - range_fraction) epsilon / 2`` for each
    of the ``q_lo`` and ``q_hi`` quantiles (:func:`dp_quantile`), computed on the values
    clipped to the range found. ``range_fraction = 0`` skips the search (the quantiles run on
    ``[lower, upper]``: right when that range is already tight). Integer values get
    independent uniform jitter in ``[-0.5, 0.5]`` before the quantiles (a per-record
    randomisation, so neighbours stay neighbours): without it, ties leave zero-length gaps at
    the target rank and the mechanism drifts into empty tails. The bounds are
    post-processed to ``lower < upper`` (integer columns: rounded outwards).

    Why the search: the quantile mechanism weighs each gap between values by its length, so
    on ``[0, 10^9]`` the empty tail above an age outweighs the data unless
    ``epsilon (1 - q) n / 2 > ln(10^9 / 90)``; at ``epsilon = 1/30`` and ``n = 32,561`` it is not,
    and the "upper bound of age" lands in the hundreds of millions. Inside the searched range
    the empty tails are shorter than the widest bucket holding data (a factor 2 in scale).

    Privacy:
      Neighbouring relation: add/remove one record. Adaptive composition of three pure
      mechanisms: ``LaplaceDpEvent(1/epsilon_r)`` and two ``PureDpEvent`` of
      ``(1 - range_fraction) epsilon / 2``; in total epsilon-DP, event
      ``ComposedDpEvent`` of the three (two without the search).

    References:
      Smith 2011, "Privacy-preserving statistical estimation with optimal convergence
      rates", Sec. 3 (quantiles); see :func:`dp_range` for the search.
    """
    check_positive("epsilon", epsilon)
    if not 0 <= range_fraction < 1:
        raise ValueError(f"expected 0 <= range_fraction < 1, got {range_fraction}")
    q_lo, q_hi = quantiles
    if not 0 <= q_lo < q_hi <= 1:
        raise ValueError(f"expected 0 <= q_lo < q_hi <= 1, got {quantiles}")
    x = np.asarray(values, dtype=np.float64)
    events: list[ev.DpEvent] = []
    search = (float(lower), float(upper))
    if range_fraction > 0:
        search, event = dp_range(rng, x, lower=lower, upper=upper, epsilon=range_fraction * epsilon)
        events.append(event)
    if integer:  # break ties: the mechanism samples inside gaps between values
        x = x + rng.uniform(-0.5, 0.5, size=len(x))
    eps_q = (1 - range_fraction) * epsilon / 2
    lo, ev_lo = dp_quantile(rng, x, q_lo, lower=search[0], upper=search[1], epsilon=eps_q)
    hi, ev_hi = dp_quantile(rng, x, q_hi, lower=search[0], upper=search[1], epsilon=eps_q)
    lo, hi = min(lo, hi), max(lo, hi)
    if integer:
        lo, hi = math.floor(lo), math.ceil(hi)
    if hi <= lo:
        hi = lo + 1
    return DpBounds(lo, hi, search), ev.ComposedDpEvent([*events, ev_lo, ev_hi])


def threshold_for(epsilon: float, delta: float) -> float:
    """Threshold ``tau = 1 + ln(1 / (2 delta)) / epsilon``: a count of 1 plus Laplace(1/epsilon)
    noise exceeds it with probability exactly ``delta``."""
    return 1.0 + math.log(1.0 / (2.0 * delta)) / epsilon


@released(lambda rng, values, epsilon, delta: (epsilon, delta))
def dp_categories(
    rng: np.random.Generator, values: pd.Series | np.ndarray, *, epsilon: float, delta: float
) -> tuple[tuple, ev.DpEvent]:
    """The categories of ``values`` whose noisy count exceeds :func:`threshold_for`.

    Each distinct value's count gets independent Laplace(1/epsilon) noise; values above the
    threshold are released (sorted), counts are not.

    Returns:
      ``(categories, EpsilonDeltaDpEvent(epsilon, delta))`` with the textbook Laplace
      sampler's cut beside it (:func:`jdp.mechanisms.noise.laplace_event`): epsilon covers the noisy counts
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
    # the textbook sampler: the counts are never released (only which pass the threshold),
    # so its low bits carry nothing; snapping's grid would move the threshold's probability
    # and its calibration would read the private number of distinct values
    noisy, _ = laplace_mechanism(
        rng, counts.to_numpy(dtype=np.float64), l1_sensitivity=1.0, epsilon=epsilon,
        secure_noise=False,
    )  # fmt: skip
    keep = [v for v, c in zip(counts.index, noisy) if c > threshold_for(epsilon, delta)]
    cats = tuple(sorted(keep, key=lambda v: (str(type(v)), v)))
    event = ev.EpsilonDeltaDpEvent(epsilon=float(epsilon), delta=float(delta))
    return cats, with_noise_cut(event, LAPLACE_RELEASE_CUT)


@dataclass(frozen=True)
class SchemaRelease:
    """A DP schema and the ledger of its release.

    The ledger holds pure events (range searches and exponential-mechanism quantiles) and one
    ``EpsilonDeltaDpEvent`` per categorical column, so the release is
    ``(epsilon, delta)``-DP with ``delta`` the sum of the category thresholds' deltas and
    ``epsilon`` the ledger's epsilon at that delta (here: the sum of the column budgets).
    Its schema is marked ``from_release`` (see :mod:`jdp.data.schema`). ``other`` is the
    label of the category that holds suppressed values (``infer_schema_dp(...,
    suppressed="other")``), ``None`` when their records are dropped.

    JSON layout (:meth:`to_dict`)::

        {"format": "jdp-schema-release", "schema": {...}, "ledger": {...}}

    plus ``"other": "<label>"`` when suppressed values are mapped.
    """

    schema: Schema
    ledger: PrivacyLedger
    other: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise TypeError(f"expected a Schema, got {type(self.schema).__name__}")
        if not isinstance(self.ledger, PrivacyLedger):
            raise TypeError(f"expected a PrivacyLedger, got {type(self.ledger).__name__}")
        if self.other is not None and (not isinstance(self.other, str) or not self.other):
            raise TypeError(f"expected other to be a non-empty str or None, got {self.other!r}")
        if not self.schema.from_release:
            object.__setattr__(self, "schema", dataclasses.replace(self.schema, from_release=True))

    @property
    def delta(self) -> float:
        """The release's delta: its (epsilon, delta) parts', plus its samplers' cut
        (:func:`accounting.compose.pure_spend`)."""
        return pure_spend(self.ledger.event)[1]

    @property
    def epsilon(self) -> float:
        return pure_spend(self.ledger.event)[0]

    def privacy_statement(self) -> str:
        labels = ", ".join(self.ledger.labels)
        return (
            f"Schema release: ({self.epsilon:.4g}, {self.delta:.3g})-DP under add/remove-one "
            f"neighbours (basic composition of: {labels})"
        )

    def other_columns(self) -> list[str]:
        """The columns whose suppressed values are mapped to :attr:`other`."""
        if self.other is None:
            return []
        return [
            c.name for c in self.schema.columns if not c.is_numeric and self.other in c.categories
        ]

    def conform(self, data: pd.DataFrame) -> Table:
        """:meth:`Schema.conform` of the released schema, after mapping each string value
        outside the released categories of an :meth:`other_columns` column to :attr:`other`
        (one :class:`~jdp.data.schema.SuppressedCategoryWarning` naming the columns, never the
        values, and only under :func:`jdp.verbosity.show_private_details`). Other values
        (missing, wrong type) are left for ``Schema.conform`` to judge.

        Privacy: a fixed public function of each record given the released schema, so
        neighbouring tables stay neighbours (``docs/privacy.md``, "Records holding a
        suppressed category").
        """
        mapped = []
        if isinstance(data, pd.DataFrame):
            for name in self.other_columns():
                if name not in data.columns:
                    continue  # Schema.conform names the missing column
                domain = frozenset(self.schema[name].categories)
                unseen = data[name].map(lambda v, d=domain: isinstance(v, str) and v not in d)
                if unseen.any():
                    if not mapped:
                        data = data.copy()
                    data[name] = data[name].where(~unseen.astype(bool), self.other)
                    mapped.append(name)
        if mapped:
            names = ", ".join(repr(n) for n in mapped)
            warn_private(  # that such a value exists is private: only the data holder sees it
                f"mapped the values of column(s) {names} that are not among the DP-released "
                f"categories to {self.other!r} (values not shown)",
                SuppressedCategoryWarning,
                stacklevel=2,
            )
        return self.schema.conform(data)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "format": RELEASE_FORMAT,
            "schema": self.schema.to_dict(),
            "ledger": self.ledger.to_dict(),
        }
        if self.other is not None:
            out["other"] = self.other
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaRelease:
        if not isinstance(data, Mapping) or data.get("format") != RELEASE_FORMAT:
            raise ValueError(
                f"expected a saved SchemaRelease (format {RELEASE_FORMAT!r}) with its ledger; "
                "got a bare schema, without the ledger of its cost"
            )
        return cls(
            Schema.from_dict(data["schema"]),
            PrivacyLedger.from_dict(data["ledger"]),
            data.get("other"),
        )

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
    range_fraction: float = 1 / 3,
    suppressed: Literal["drop", "other"] = "other",
    other_label: str = "other",
    point_masses: Mapping[str, Sequence[float]] | None = None,
    nullable: Collection[str] = (),
) -> SchemaRelease:
    """Release a schema for ``data`` under ``epsilon``-DP (plus threshold deltas).

    Args:
      rng: the noise source.
      data: the private table.
      epsilon: total budget, split equally over the columns.
      kinds: each column's kind (public: it is a property of the data format).
      ranges: a coarse public ``(a, b)`` per numeric column (required for each; may be very
        loose: a DP range search finds the scale first).
      target: the target column (categorical).
      quantiles: the quantiles released as ``(lower, upper)`` bounds of numeric columns.
      category_delta: the additive delta of each categorical column's threshold.
      range_fraction: the share of a numeric column's budget spent on the range search
        (:func:`dp_bounds`; 0 skips it).
      suppressed: what happens to records holding a category the release suppressed: map
        them to ``other_label`` (``"other"``, default), which is then added to the categories
        of every string-valued categorical column except the target, or ``"drop"`` them.
      other_label: the label of that category; it must not be a released category.
      point_masses: public point-mass values of numeric columns (e.g. ``{"capital-gain":
        [0]}``, see :class:`~jdp.data.schema.Column`): copied into the schema; the bounds are
        released from the other values and widened to include the masses.
      nullable: the columns declared nullable (public): their missing values are left out of
        the release and the column is marked nullable; a missing value elsewhere raises.

    Leaving out missing values and point-mass values is a fixed public filter applied record
    by record (neighbours stay neighbours), so it costs nothing.

    Numeric columns: :func:`dp_bounds` (entry ``dp-bounds:<name>``). Categorical columns:
    :func:`dp_categories` (entry ``dp-categories:<name>``); a categorical column with no
    category above its threshold raises (spend more epsilon, or declare its domain).
    """
    check_positive("epsilon", epsilon)
    if suppressed not in SUPPRESSED:
        raise ValueError(f"expected suppressed in {SUPPRESSED}, got {suppressed!r}")
    if not isinstance(other_label, str) or not other_label:
        raise ValueError(f"expected a non-empty other_label, got {other_label!r}")
    if not isinstance(data, pd.DataFrame) or len(data) == 0:
        raise ValueError("expected a non-empty pandas DataFrame")
    missing = [c for c in data.columns if c not in kinds]
    if missing:
        raise ValueError(f"column {missing[0]!r} has no declared kind")
    q_lo, q_hi = quantiles
    if not 0 <= q_lo < q_hi <= 1:
        raise ValueError(f"expected 0 <= q_lo < q_hi <= 1, got {quantiles}")
    point_masses = dict(point_masses or {})
    unknown = sorted((set(point_masses) | set(nullable)) - set(data.columns))
    if unknown:
        raise ValueError(f"column {unknown[0]!r} of point_masses/nullable is not in the data")
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
            if suppressed == "other" and name != target and isinstance(cats[0], str):
                if other_label in cats:
                    raise ValueError(
                        f"column {name!r}: {other_label!r} is a released category; choose "
                        "another other_label"
                    )
                cats = (*cats, other_label)
            ledger = ledger.record(f"dp-categories:{name}", event)
            columns.append(Column(name=name, kind=kind, categories=cats, nullable=name in nullable))
            continue
        if name not in ranges:
            raise ValueError(f"column {name!r}: a coarse public range (a, b) is required")
        a, b = (float(v) for v in ranges[name])
        x = pd.to_numeric(data[name], errors="raise").to_numpy(dtype=np.float64)
        missing = np.isnan(x)
        if np.isinf(x).any() or (missing.any() and name not in nullable):
            raise ValueError(f"column {name!r} has NaN or infinite values (and is not nullable)")
        masses = tuple(float(m) for m in point_masses.get(name, ()))
        bounds, event = dp_bounds(
            rng, x[~missing & ~np.isin(x, masses)], lower=a, upper=b, epsilon=eps_col,
            quantiles=quantiles, range_fraction=range_fraction, integer=kind == "integer",
        )  # fmt: skip
        ledger = ledger.record(f"dp-bounds:{name}", event)
        lo, hi = min((bounds.lower, *masses)), max((bounds.upper, *masses))  # lo < hi already
        columns.append(
            Column(name=name, kind=kind, lower=lo, upper=hi, point_masses=masses,
                   nullable=name in nullable)
        )  # fmt: skip
    schema = Schema(columns=tuple(columns), target=target)
    return SchemaRelease(schema, ledger, other_label if suppressed == "other" else None)
