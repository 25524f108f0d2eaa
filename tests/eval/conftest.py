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
    return _tables()


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(20240521)
    return make_table(rng, 1500), make_table(rng, 1000)


COUNTRIES = [f"country-{i:02d}" for i in range(42)]


def with_report_columns(rng: np.random.Generator, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a zero-spike numeric column ``gain`` (70% at 0) and a categorical column
    ``country`` of 42 categories (more than a marginal plot draws)."""
    n = len(frame)
    gain = np.where(rng.uniform(size=n) < 0.7, 0.0, rng.exponential(1000.0, size=n))
    weights = 1.0 / np.arange(1, len(COUNTRIES) + 1)
    country = rng.choice(COUNTRIES, size=n, p=weights / weights.sum())
    return frame.assign(gain=gain, country=country)


@pytest.fixture(scope="module")
def report_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(real train, real test, synthetic) for reports: :func:`tables` with
    :func:`with_report_columns`; the synthetic table shuffles each column of the real test
    table independently (its marginals kept, every relation between columns lost)."""
    rng = np.random.default_rng(7)
    train, test = (with_report_columns(rng, frame) for frame in _tables())
    synthetic = test.apply(lambda column: rng.permutation(column.to_numpy()))
    return train, test, synthetic.astype(test.dtypes.to_dict())


@pytest.fixture
def table_factory():
    """:func:`make_table`, for tests that draw further samples of the same law."""
    return make_table
