"""PrivacyBudget validation, and ``PrivacyBudget.less``: one rule for what a release made
before a plan leaves of the budget (basic composition for a plain budget; recorded as spent
for a composing one)."""

import pytest

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev


def test_valid_budget():
    b = PrivacyBudget(epsilon=1, delta=1e-5)
    assert (b.epsilon, b.delta) == (1.0, 1e-5)
    assert PrivacyBudget(epsilon=0.5).delta == 0.0


@pytest.mark.parametrize(
    "eps, delta, exc, match",
    [
        (0.0, 1e-5, ValueError, "epsilon > 0"),
        (-1.0, 1e-5, ValueError, "epsilon > 0"),
        (float("inf"), 1e-5, ValueError, "epsilon to be finite"),
        (1.0, 1.0, ValueError, r"delta in \[0, 1\)"),
        (1.0, -1e-9, ValueError, "delta >= 0"),
        ("1", 1e-5, TypeError, "epsilon"),
    ],
)
def test_invalid_budget_raises(eps, delta, exc, match):
    with pytest.raises(exc, match=match):
        PrivacyBudget(epsilon=eps, delta=delta)


def test_delta_warning_against_one_over_n():
    b = PrivacyBudget(epsilon=1.0, delta=1e-3)
    assert b.delta_warning(100_000) is not None
    assert b.delta_warning(100) is None  # 1e-3 < 1/100
    assert b.delta_warning(1000) is not None  # boundary: delta == 1/n warns
    assert PrivacyBudget(epsilon=1.0, delta=1e-7).delta_warning(100_000) is None


def test_delta_warning_does_not_reveal_n_unless_asked():
    """The warning reaches stderr: by default it says that delta >= 1/n without n or 1/n
    (both private); ``show_n=True`` (the data holder's own terminal) adds 1/n."""
    message = PrivacyBudget(epsilon=1.0, delta=0.01).delta_warning(137)
    assert message is not None and "1/n" in message
    assert "137" not in message and "0.0073" not in message
    assert "0.0073" in PrivacyBudget(epsilon=1.0, delta=0.01).delta_warning(137, show_n=True)


SCHEMA = PrivacyLedger().record("schema", ev.LaplaceDpEvent(1 / 0.3))
CATEGORIES = PrivacyLedger().record("cats", ev.EpsilonDeltaDpEvent(epsilon=0.1, delta=1e-7))


def test_a_plain_budget_is_reduced_by_basic_composition():
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    rest = budget.less(SCHEMA + CATEGORIES)
    assert (rest.epsilon, rest.delta) == pytest.approx((0.6, 1e-5 - 1e-7))
    assert rest.spent is None and rest.prior is None
    assert budget.less(PrivacyLedger()) is budget


def test_a_composing_budget_keeps_its_total_and_records_what_was_spent():
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5).composing()
    rest = budget.less(SCHEMA).less(CATEGORIES)
    assert (rest.epsilon, rest.delta) == (1.0, 1e-5)
    assert rest.spent.labels == ["schema", "cats"]
    assert rest.prior == ev.ComposedDpEvent([SCHEMA.entries[0].event, CATEGORIES.entries[0].event])
    # the conservative figure: what basic composition would leave
    assert (rest.left.epsilon, rest.left.delta) == pytest.approx((0.6, 1e-5 - 1e-7))
    assert rest.left.spent is None
    assert budget.prior is None and budget.composing() is budget


def test_budgets_that_spent_differently_are_different_cache_keys():
    """Calibrations are cached on the budget: two budgets with the same total but different
    spends must not compare equal (they may share a hash)."""
    plain = PrivacyBudget(epsilon=1.0, delta=1e-5)
    spent = plain.composing().less(SCHEMA)
    assert plain != spent and plain.composing() != spent
    assert {plain: 1, spent: 2}[spent] == 2


@pytest.mark.parametrize("composing", [False, True])
def test_a_spend_that_leaves_nothing_is_refused_in_both_forms(composing):
    budget = PrivacyBudget(epsilon=0.3, delta=1e-5)
    budget = budget.composing() if composing else budget
    with pytest.raises(ValueError, match="leave part of the budget"):
        budget.less(SCHEMA)
    with pytest.raises(TypeError, match="PrivacyLedger"):
        PrivacyBudget(epsilon=1.0, spent=SCHEMA.event)
