"""Small mixed-type tables shared by the evaluation tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def make_table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Two numeric and two categorical features; the binary label depends on three of them."""
    x = rng.normal(size=n)
    z = rng.exponential(size=n)
    c = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    flag = rng.choice(["yes", "no"], size=n)
    logit = 1.5 * x + 1.2 * (c == "a") - 0.8 * (flag == "yes") + 0.3 * rng.normal(size=n)
    y = np.where(logit > 0.2, ">50K", "<=50K")
    return pd.DataFrame({"x": x, "z": z, "c": c, "flag": flag, "income": y})


@pytest.fixture
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) drawn from the same distribution with a fixed seed."""
    rng = np.random.default_rng(20240521)
    return make_table(rng, 1500), make_table(rng, 1000)


@pytest.fixture
def table_factory():
    """:func:`make_table`, for tests that draw further samples of the same law."""
    return make_table
