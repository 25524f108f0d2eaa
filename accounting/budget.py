"""A privacy budget: the (epsilon, delta) a user is willing to spend."""

from __future__ import annotations

from dataclasses import dataclass

from accounting.validation import check_nonnegative, check_positive


@dataclass(frozen=True, kw_only=True)
class PrivacyBudget:
    """Target (epsilon, delta). ``delta = 0`` asks for pure epsilon-DP.

    ``delta`` must be < 1; whether it is also small enough for the data (the usual rule is
    ``delta < 1/n``) is checked where n is known, by :meth:`check_delta_for`.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        delta = check_nonnegative("delta", self.delta)
        if delta >= 1:
            raise ValueError(f"expected delta in [0, 1), got {self.delta}")
        object.__setattr__(self, "delta", delta)

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
