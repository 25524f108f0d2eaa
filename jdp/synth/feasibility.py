"""Before a fit: can this method work on a table of this shape at this budget?

Some methods fall below chance on small tables (issue 26: P3GM, DPGM, dp-GAN and PCA-Gauss
at ``epsilon = 1`` on german's 667 and crx's 435 training rows) while the DP naive-Bayes
``marginals`` holds everywhere. Whether a method has a chance is decided here from public
inputs only, before any budget is spent on the model:

* the **public width** ``D`` of the table (:func:`public_width`): one per numeric column,
  plus one per point mass and per missing-value state, and one per category of a
  categorical column, the target left out -- the one-hot width every method's encoding grows
  with;
* a **row count** ``n``: declared by the data holder (public), or released with
  :data:`ROW_COUNT_SHARE` of the budget's epsilon (:func:`release_row_count`: a snapped
  Laplace count, sensitivity 1 under add/remove, in the ledger);
* the method's ``epsilon``;
* for a method that registered a minimum of the smallest class, and a schema with a
  categorical target: the target's **class counts**, released in place of the row count with
  :data:`CLASS_COUNT_SHARE` of the budget's epsilon (:func:`release_class_counts`; the row
  count is then their sum) when no row count is declared.

The rule is one number, the **records per width** ``r = n epsilon / D`` (the DP noise a method
adds to what it learns from ``n`` records shrinks as ``n epsilon``, and what it must learn grows
with ``D``), against a minimum each method registers (:func:`register_minimum`) from
measurements on real tables (``scripts/numeric_columns.py``; the figures and their tables are
in ``docs/results/numeric_columns.md``): the geometric midpoint between the largest records
per width at which it was measured at or below chance (on at least one seed) and the next at
which it was above. The same rule reads the **smallest class's records per width** ``n_min
epsilon / D`` where a method registered a minimum of it (``of="smallest class"``): a model
that cannot learn what sets a rare class apart generates rows without the label's relation
(P3GM on creditcard at 5,000 rows, 222 frauds: a TSTR AUROC of 0.40-0.63 while the whole
table is well above its row minimum).
A method below a minimum warns (:class:`CannotWorkWarning`) and names a method whose
minimums the table meets. Methods that
register no minimum were not measured below chance anywhere and are never warned about.
The rule reads no data beyond the released or declared counts.

A second rule reads no count at all: where a method adds noise of a **data-free size** to
what it releases of the numeric columns, it registers those releases
(:func:`register_public_noise`), each with its noise against the largest signal it could
carry on *any* table (:class:`jdp.synth.signal.Release`, the public bound). A release whose
noise reaches that bound (ratio ``>= 1``) is noise on every table: the fit warns before it
starts (:func:`check_public_noise`), under the same :class:`CannotWorkWarning`, that the
columns it describes cannot be placed. ClustMix's mixtures are the case: noise sd 0.3-0.6 per
feature at ``epsilon = 1`` against at most 1/2 for a column's spread on ``[0, 1]``, so the
post-fit no-signal rule (:func:`jdp.synth.signal.check_signal`) named every numeric column of
every table measured (``docs/results/numeric_columns.md``); now the fit says so first.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.schema import Schema
from jdp.mechanisms.noise import laplace_counts
from jdp.synth.signal import Release, weak_releases
from jdp.verbosity import private_detail

#: Share of the budget's epsilon spent on the row count when none is declared.
ROW_COUNT_SHARE = 0.01
#: Share spent on the target's class counts instead, for a method with a minimum of the
#: smallest class: its records per width then has noise sd ``sqrt(2) / (share D)`` (0.98 on
#: a 29-wide table), small beside the gap between the tables its minimums come from.
CLASS_COUNT_SHARE = 0.05
#: What a minimum is of (:func:`register_minimum`).
MEASURES = ("rows", "smallest class")

#: Methods offered instead, first that passes (the DP naive-Bayes baseline held on every
#: table measured).
FALLBACKS = ("marginals", "clustmix")

_MINIMUM: dict[tuple[str, str], float] = {}

#: ``releases(config, codec, budget)``: a method's releases whose noise is data-free, each
#: against the largest signal it could carry on any table (:func:`register_public_noise`).
PublicNoise = Callable[[Any, Any, PrivacyBudget], list[Release]]
_PUBLIC_NOISE: dict[str, PublicNoise] = {}


class CannotWorkWarning(UserWarning):
    """A method's records per width is below the least at which it was measured above
    chance."""


@dataclass(frozen=True)
class PublicShape:
    """What the rule reads: a declared or noisy ``rows`` count, the :func:`public_width`,
    the method's ``epsilon``, and the noisy count of the target's smallest class
    (``smallest_class``; ``None`` when not released)."""

    rows: float
    width: int
    epsilon: float
    smallest_class: float | None = None

    def per_width(self, of: str = "rows") -> float | None:
        """Records per width ``count * epsilon / width`` of the row count (``of="rows"``)
        or of the smallest class; ``None`` for a count not released, 0 for one at most 0."""
        count = self.rows if of == "rows" else self.smallest_class
        if count is None:
            return None
        return count * self.epsilon / max(self.width, 1) if count > 0 else 0.0

    @property
    def records_per_width(self) -> float:
        """``rows * epsilon / width``."""
        return self.per_width("rows")


def public_width(schema: Schema) -> int:
    """The schema's one-hot width, its target left out: a categorical column counts its
    categories (plus one if nullable), a numeric column one plus its point masses (plus one
    if nullable). A function of the schema only."""
    width = 0
    for col in schema.columns:
        if col.name == schema.target:
            continue
        states = len(col.categories) if not col.is_numeric else 1 + len(col.point_masses)
        width += states + col.nullable
    return width


#: Records per width at epsilon 1 of the tables the minimums were measured on (training
#: splits of ``scripts/numeric_columns.py --quick``, and the whole training splits of Adult
#: and of creditcard at P3GM's sampling): rows / public width, and the smallest target
#: class's records / public width.
MEASURED_AT = {
    "rows": {
        "crx": 435 / 52,
        "german": 667 / 63,
        "spambase": 3065 / 111,
        "adult-5k": 5000 / 110,
        "adult": 32561 / 110,
    },
    "smallest class": {
        "creditcard-5k": 7 / 30,
        "creditcard-paper-5k": 222 / 29,
        "spambase": 1218 / 111,
        "adult-5k": 1221 / 110,
        "creditcard-paper": 436 / 29,
        "adult": 7841 / 110,
    },
}


def register_minimum(method: str, *, failed: str, worked: str, of: str = "rows") -> float:
    """Declare that ``method`` was measured at or below chance (TSTR AUROC under 0.55 on at
    least one seed) on the table ``failed`` and above it on ``worked``, a larger one of
    :data:`MEASURED_AT` ``[of]`` (``of`` in :data:`MEASURES`); its minimum of that measure is
    their geometric midpoint. Returns the minimum."""
    if of not in MEASURES:
        raise ValueError(f"expected of in {MEASURES}, got {of!r}")
    low, high = MEASURED_AT[of][failed], MEASURED_AT[of][worked]
    if not low < high:
        raise ValueError(f"expected {failed!r} to be below {worked!r} in records per width")
    _MINIMUM[method, of] = math.sqrt(low * high)
    return _MINIMUM[method, of]


def has_minimum(method: str, of: str = "rows") -> bool:
    """Whether ``method`` registered a minimum of ``of`` (only then is that count needed)."""
    return (method, of) in _MINIMUM


def class_domain(schema: Schema) -> tuple | None:
    """The target's classes when the schema has a categorical target with at least two
    (public: the schema's), else ``None``."""
    if schema.target is None:
        return None
    column = schema[schema.target]
    return None if column.is_numeric or len(column.categories) < 2 else column.categories


def release_counts(
    rng: np.random.Generator, counts: np.ndarray, budget: PrivacyBudget, *, share: float, label: str
) -> tuple[np.ndarray, PrivacyLedger, PrivacyBudget]:
    """Counts of disjoint cells (each record in at most one) plus ``Laplace(1 / epsilon_n)``
    (snapped), ``epsilon_n = share * budget.left.epsilon``; returns them with their ledger
    (one entry, ``label``) and the budget left (:meth:`~accounting.budget.PrivacyBudget.less`).

    Where ``epsilon_n`` is too small for the snapping mechanism, nothing is released
    (:func:`jdp.mechanisms.noise.laplace_counts`: the public cap on every count, so a verdict
    drawn from it errs towards silence), with an empty ledger and the whole budget.

    Privacy: adding or removing a record changes one count by 1 (L1 sensitivity 1), so the
    release is ``epsilon_n``-DP (:func:`jdp.mechanisms.noise.laplace_mechanism`)."""
    noisy, event = laplace_counts(
        rng, counts, l1_sensitivity=1.0, epsilon=share * budget.left.epsilon
    )
    if event is None:
        return noisy, PrivacyLedger(), budget
    ledger = PrivacyLedger().record(label, event, note="for the method's shape rule")
    return noisy, ledger, budget.less(ledger)


def release_row_count(
    rng: np.random.Generator, rows: int, budget: PrivacyBudget
) -> tuple[float, PrivacyLedger, PrivacyBudget]:
    """The noisy row count (:func:`release_counts` of one cell, :data:`ROW_COUNT_SHARE`,
    entry "row count")."""
    noisy, ledger, rest = release_counts(
        rng, np.array([float(rows)]), budget, share=ROW_COUNT_SHARE, label="row count"
    )
    return float(noisy[0]), ledger, rest


def release_class_counts(
    rng: np.random.Generator, target: pd.Series, classes: tuple, budget: PrivacyBudget
) -> tuple[float, float, PrivacyLedger, PrivacyBudget]:
    """The noisy count of each of the target's ``classes`` (public, the schema's;
    :func:`release_counts`, :data:`CLASS_COUNT_SHARE`, entry "class counts"); returns their
    sum (the row count) and their least (the smallest class: post-processing), the ledger and
    the budget left."""
    noisy, ledger, rest = release_counts(
        rng, class_counts(target, classes), budget, share=CLASS_COUNT_SHARE, label="class counts"
    )
    return float(noisy.sum()), float(noisy.min()), ledger, rest


def class_counts(target: pd.Series, classes: tuple) -> np.ndarray:
    """The number of records of each class, in the order of ``classes``; a missing value or
    one outside ``classes`` counts in none (one record changes at most one count, by 1)."""
    return target.value_counts().reindex(list(classes), fill_value=0).to_numpy(np.float64)


def shortfall(method: str, shape: PublicShape) -> tuple[str, float, float] | None:
    """The first measure whose registered minimum ``shape`` is below, as ``(of, records per
    width, minimum)``; ``None`` when it meets them all (a count not released is not judged)."""
    for of in MEASURES:
        minimum, r = _MINIMUM.get((method, of)), shape.per_width(of)
        if minimum is not None and r is not None and r < minimum:
            return of, r, minimum
    return None


def alternative(shape: PublicShape) -> str | None:
    """The first of :data:`FALLBACKS` whose minimums ``shape`` meets (or that has none)."""
    return next((m for m in FALLBACKS if shortfall(m, shape) is None), None)


def check_shape(method: str, shape: PublicShape) -> str | None:
    """Warn (:class:`CannotWorkWarning`) when ``shape`` is below one of ``method``'s minimums.

    Returns:
      The warning's message, or ``None`` when the method has no minimum or meets them.
    """
    short = shortfall(method, shape)
    if short is None:
        return None
    of, r, minimum = short
    better = alternative(shape)
    count = "rows" if of == "rows" else "the smallest target class's records"
    message = (
        f"{method} cannot work here: {r:.3g} records per width ({count} x epsilon "
        f"{shape.epsilon:.3g} / width {shape.width}), below the {minimum:.3g} under which "
        f"{method} was measured below chance (docs/results/numeric_columns.md)"
        + (f"; {better} is expected to do better" if better and better != method else "")
        + "; more rows, more epsilon or fewer columns help"
        + private_detail(
            f"rows {shape.rows:.0f}"
            + (
                ""
                if shape.smallest_class is None
                else f", smallest class {shape.smallest_class:.0f}"
            )
        )
    )
    warnings.warn(message, CannotWorkWarning, stacklevel=4)
    return message


def register_public_noise(method: str, releases: PublicNoise) -> None:
    """Let :func:`check_public_noise` judge ``method`` before its fit by ``releases(config,
    codec, budget)``: its releases whose noise is a function of the config, the public
    codec and the budget only, each with the largest signal the release could carry on any
    table as its ``signal`` (e.g. half the box for a spread on ``[0, 1]``)."""
    _PUBLIC_NOISE[method] = releases


def check_public_noise(
    method: str, config: Any, codec: Any, budget: PrivacyBudget, shape: PublicShape
) -> str | None:
    """Warn (:class:`CannotWorkWarning`) when a release ``method`` registered
    (:func:`register_public_noise`) has noise at least the largest signal it could carry:
    what it describes is noise on every table. Names a method of :data:`FALLBACKS` whose
    minimums ``shape`` meets. Reads no data.

    Returns:
      The warning's message, or ``None`` when the method registered nothing or every
      release can carry signal.
    """
    releases = _PUBLIC_NOISE.get(method)
    weak = weak_releases(releases(config, codec, budget)) if releases else []
    if not weak:
        return None
    better = alternative(shape)
    message = (
        f"{method} cannot place "
        + "; ".join(f"{r.name} (noise/signal at least {r.ratio:.2g})" for r in weak)
        + " here, on any table at this budget: they will be drawn from noise"
        + (f"; {better} is expected to do better" if better and better != method else "")
        + "; more epsilon or fewer columns help"
    )
    warnings.warn(message, CannotWorkWarning, stacklevel=4)
    return message
