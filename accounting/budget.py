"""A privacy budget: the (epsilon, delta) a user is willing to spend."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from accounting import events as ev
from accounting.compose import pure_spend
from accounting.ledger import PrivacyLedger
from accounting.validation import check_nonnegative, check_positive


@dataclass(frozen=True, kw_only=True)
class PrivacyBudget:
    """Target (epsilon, delta). ``delta = 0`` asks for pure epsilon-DP.

    ``delta`` must be < 1; whether it is also small enough for the data (the usual rule is
    ``delta < 1/n``) is checked where n is known, by :meth:`check_delta_for`.

    **What was spent before.** Releases made from the same data ahead of a plan (a DP schema,
    a noisy row count, quantile knots) are taken off the budget by :meth:`less`, one rule
    for every caller:

    * a plain budget (``spent=None``) is reduced by basic composition,
      ``(epsilon - epsilon_s, delta - delta_s)`` (:func:`accounting.compose.pure_spend`):
      right for any plan, tight only for a pure plan;
    * a *composing* budget (:meth:`composing`: ``spent`` a ledger) keeps its total
      ``(epsilon, delta)`` and records the releases in ``spent``; whoever calibrates against
      it passes :attr:`prior` to :func:`accounting.calibrate.calibrate`, which then meets the
      total for the composition ``spent`` then plan under the best accountant. A Gaussian or
      DP-SGD plan gets more of the budget that way (the ledger of schema and model lands at
      ``epsilon`` instead of below it). Only a plan that calibrates against :attr:`prior`
      may take a composing budget (a method opts in: ``Method.calibrates_prior``).

    :attr:`left` is the budget basic composition leaves, the conservative figure for rules
    that judge a plan's signal before calibrating it.
    """

    epsilon: float
    delta: float = 0.0
    spent: PrivacyLedger | None = field(default=None, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        delta = check_nonnegative("delta", self.delta)
        if delta >= 1:
            raise ValueError(f"expected delta in [0, 1), got {self.delta}")
        object.__setattr__(self, "delta", delta)
        if self.spent is not None and not isinstance(self.spent, PrivacyLedger):
            raise TypeError(
                f"expected spent to be a PrivacyLedger, got {type(self.spent).__name__}"
            )

    def composing(self) -> PrivacyBudget:
        """This budget in the composing form (nothing spent yet, unless already composing)."""
        return self if self.spent is not None else dataclasses.replace(self, spent=PrivacyLedger())

    @property
    def prior(self) -> ev.DpEvent | None:
        """The event of what was spent (``None`` when nothing was): calibration's ``prior``."""
        return self.spent.event if self.spent is not None and self.spent.entries else None

    @property
    def left(self) -> PrivacyBudget:
        """The plain budget basic composition leaves after :attr:`spent` (itself when plain)."""
        if self.spent is None or not self.spent.entries:
            return PrivacyBudget(epsilon=self.epsilon, delta=self.delta)
        return _basic_rest(self.epsilon, self.delta, self.spent)

    def less(self, ledger: PrivacyLedger) -> PrivacyBudget:
        """The budget left for what follows ``ledger``'s releases (the class docstring's rule):
        basic composition for a plain budget, ``spent + ledger`` for a composing one.

        Raises:
          ValueError: the releases leave no epsilon (or delta) for what follows.
        """
        if not ledger.entries:
            return self
        if self.spent is None:
            return _basic_rest(self.epsilon, self.delta, ledger)
        spent = self.spent + ledger
        _basic_rest(self.epsilon, self.delta, spent)  # the same refusal for both forms
        return dataclasses.replace(self, spent=spent)

    def delta_warning(self, n_records: int, *, show_n: bool = False) -> str | None:
        """A message when ``delta >= 1/n`` (a mechanism could then release a whole record).

        ``n`` is private (add/remove neighbours) and the message goes to stderr, so it names
        neither ``n`` nor ``1/n`` unless ``show_n`` (the data holder's own terminal).
        """
        if n_records > 0 and self.delta >= 1.0 / n_records:
            value = f" = {1.0 / n_records:.3g}" if show_n else " of this dataset"
            return (
                f"delta={self.delta:g} >= 1/n{value}: such a delta permits releasing a record "
                "outright; choose delta well below 1/n"
            )
        return None


def _basic_rest(epsilon: float, delta: float, ledger: PrivacyLedger) -> PrivacyBudget:
    """``(epsilon, delta)`` less ``ledger``'s pure spend, by basic composition."""
    eps_s, delta_s = pure_spend(ledger.event)
    if eps_s >= epsilon or delta_s > delta:
        raise ValueError(
            f"expected the releases before the plan ({eps_s:.4g}, {delta_s:.3g}) to leave part "
            f"of the budget ({epsilon:g}, {delta:g}) for it"
        )
    return PrivacyBudget(epsilon=epsilon - eps_s, delta=delta - delta_s)
