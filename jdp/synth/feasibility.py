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
* the method's ``epsilon``.

The rule is one number, the **records per width** ``r = n epsilon / D`` (the DP noise a method
adds to what it learns from ``n`` records shrinks as ``n epsilon``, and what it must learn grows
with ``D``), against a minimum each method registers (:func:`register_minimum`) from
measurements on real tables (``scripts/numeric_columns.py``; the figures and their tables are
in ``docs/results/numeric_columns.md``): the geometric midpoint between the largest records
per width at which it was measured at or below chance (on at least one seed) and the next at
which it was above.
A method below its minimum warns (:class:`CannotWorkWarning`) and names a method whose
minimum the table meets. Methods that
register no minimum were not measured below chance anywhere and are never warned about.
The rule reads no data beyond the released or declared count.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.schema import Schema
from jdp.mechanisms.noise import (
    DEFAULT_MAX_RECORDS,
    laplace_mechanism,
    snapping_laplace_parameters,
)
from jdp.verbosity import private_detail

#: Share of the budget's epsilon spent on the row count when none is declared.
ROW_COUNT_SHARE = 0.01

#: Methods offered instead, first that passes (the DP naive-Bayes baseline held on every
#: table measured).
FALLBACKS = ("marginals", "clustmix")

_MINIMUM: dict[str, float] = {}


class CannotWorkWarning(UserWarning):
    """A method's records per width is below the least at which it was measured above
    chance."""


@dataclass(frozen=True)
class PublicShape:
    """What the rule reads: a declared or noisy ``rows`` count, the :func:`public_width`,
    and the method's ``epsilon``."""

    rows: float
    width: int
    epsilon: float

    @property
    def records_per_width(self) -> float:
        """``rows * epsilon / width``."""
        return self.rows * self.epsilon / max(self.width, 1) if self.rows > 0 else 0.0


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
#: splits of ``scripts/numeric_columns.py --quick``, and Adult's whole training split:
#: rows / public width).
MEASURED_AT = {
    "crx": 435 / 52,
    "german": 667 / 63,
    "spambase": 3065 / 111,
    "adult-5k": 5000 / 110,
    "adult": 32561 / 110,
}


def register_minimum(method: str, *, failed: str, worked: str) -> float:
    """Declare that ``method`` was measured at or below chance (TSTR AUROC under 0.55 on at
    least one seed) on the table ``failed`` and above it on ``worked``, the next larger of
    :data:`MEASURED_AT`; its minimum is their geometric midpoint. Returns the minimum."""
    low, high = MEASURED_AT[failed], MEASURED_AT[worked]
    if not low < high:
        raise ValueError(f"expected {failed!r} to be below {worked!r} in records per width")
    _MINIMUM[method] = math.sqrt(low * high)
    return _MINIMUM[method]


def has_minimum(method: str) -> bool:
    """Whether ``method`` registered a minimum (only then is a row count needed)."""
    return method in _MINIMUM


def release_row_count(
    rng: np.random.Generator, rows: int, budget: PrivacyBudget
) -> tuple[float, PrivacyLedger, PrivacyBudget]:
    """The noisy row count ``rows + Laplace(1 / epsilon_n)`` (snapped), ``epsilon_n =``
    :data:`ROW_COUNT_SHARE` of ``budget.left.epsilon``; returns it with its ledger and the budget
    left (:meth:`~accounting.budget.PrivacyBudget.less`).

    Where ``epsilon_n`` is too small for the snapping mechanism (its noise scale beyond the
    public clamp ``max_records``), nothing is released: the count returned is that public cap,
    an upper bound on any count the mechanism admits, so a verdict drawn from it errs towards
    silence, with an empty ledger and the whole budget.

    Privacy: adding or removing a record changes the count by 1 (L1 sensitivity 1), so the
    release is ``epsilon_n``-DP (:func:`jdp.mechanisms.noise.laplace_mechanism`)."""
    epsilon = ROW_COUNT_SHARE * budget.left.epsilon
    try:
        snapping_laplace_parameters(l1_sensitivity=1.0, epsilon=epsilon, size=1)
    except ValueError:  # a function of the public epsilon only
        return float(DEFAULT_MAX_RECORDS), PrivacyLedger(), budget
    noisy, event = laplace_mechanism(
        rng, np.array([float(rows)]), l1_sensitivity=1.0, epsilon=epsilon
    )
    ledger = PrivacyLedger().record("row count", event, note="for the method's shape rule")
    return float(noisy[0]), ledger, budget.less(ledger)


def alternative(shape: PublicShape) -> str | None:
    """The first of :data:`FALLBACKS` whose minimum ``shape`` meets (or that has none)."""
    r = shape.records_per_width
    return next((m for m in FALLBACKS if _MINIMUM.get(m, 0.0) <= r), None)


def check_shape(method: str, shape: PublicShape) -> str | None:
    """Warn (:class:`CannotWorkWarning`) when ``shape`` is below ``method``'s minimum.

    Returns:
      The warning's message, or ``None`` when the method has no minimum or meets it.
    """
    minimum = _MINIMUM.get(method)
    r = shape.records_per_width
    if minimum is None or r >= minimum:
        return None
    better = alternative(shape)
    message = (
        f"{method} cannot work here: {r:.3g} records per width (rows x epsilon "
        f"{shape.epsilon:.3g} / width {shape.width}), below the {minimum:.3g} under which "
        f"{method} was measured below chance (docs/results/numeric_columns.md)"
        + (f"; {better} is expected to do better" if better and better != method else "")
        + "; more rows, more epsilon or fewer columns help"
        + private_detail(f"rows {shape.rows:.0f}")
    )
    warnings.warn(message, CannotWorkWarning, stacklevel=4)
    return message
