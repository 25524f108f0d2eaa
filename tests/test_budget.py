"""PrivacyBudget validation."""

import pytest

from accounting import PrivacyBudget


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
