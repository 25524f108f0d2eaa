"""DP marginals with point masses and missing values: a cell of their own, exact values back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from accounting import PrivacyBudget
from jdp.data.quantile_scale import MIN_MAX
from jdp.data.schema import Column, Schema
from jdp.random import key_from_seed
from jdp.synth import base
from jdp.synth.marginals import MarginalsConfig, cell_counts, codec

HIGH = PrivacyBudget(epsilon=1e4, delta=1e-5)  # negligible noise: sampling error dominates
#: A declared public row count: the method alone (bins="auto" then gives its most cells).
DECLARED_ROWS = 10**6


def zero_share_bound(p: float, n_real: int, n_synth: int) -> float:
    """A 5-sigma bound on |share_synth - share_real| for two binomial proportions."""
    return 5 * np.sqrt(p * (1 - p) * (1 / n_real + 1 / n_synth))


def test_zero_masses_survive_only_when_declared(adult):
    """capital-gain is 0 in ~92% of Adult rows. With the declared point mass the sampled zero
    share matches the real one (binomial 5-sigma bound); without it, under min-max cells, the
    zeros are spread over the first of 32 equal-width cells [0, 3125) and almost none is
    exactly 0 (the default log scale resolves small integers; the claim is min-max's)."""
    real = adult.train.iloc[:5000].reset_index(drop=True)
    n = 20_000
    model = base.fit_model(
        key_from_seed(1),
        "marginals",
        real,
        HIGH,
        MarginalsConfig(),
        schema=adult.schema,
        rows=DECLARED_ROWS,
    )
    synth = base.sample_model(key_from_seed(2), model, n)
    for name in ("capital-gain", "capital-loss"):
        p = float((real[name] == 0).mean())
        assert p > 0.85
        assert abs((synth[name] == 0).mean() - p) < zero_share_bound(p, len(real), n)
        assert synth[name].dtype == np.int64
    plain = Schema(
        columns=tuple(dataclasses.replace(c, point_masses=()) for c in adult.schema.columns),
        target=adult.schema.target,
    )
    min_max = MarginalsConfig(scale=MIN_MAX)
    model = base.fit_model(
        key_from_seed(1), "marginals", real, HIGH, min_max, schema=plain, rows=DECLARED_ROWS
    )
    synth = base.sample_model(key_from_seed(2), model, n)
    assert (synth["capital-gain"] == 0).mean() < 0.01


def test_missing_values_are_a_cell_and_come_back_missing():
    """A nullable column's missing values get a cell of their own; each record still adds
    exactly one count per column (sensitivity unchanged: the total moves by d per record)."""
    rng = np.random.default_rng(3)
    n = 4000
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0, upper=1, nullable=True),
            Column(name="c", kind="categorical", categories=("NA", "b"), nullable=True),
            Column(name="y", kind="categorical", categories=(0, 1)),
        ),
        target="y",
    )
    x = rng.random(n)
    x[rng.random(n) < 0.3] = np.nan
    c = rng.choice(np.array(["NA", "b", None], dtype=object), size=n, p=[0.5, 0.3, 0.2])
    data = pd.DataFrame({"x": x, "c": c, "y": rng.integers(0, 2, size=n)})
    config = MarginalsConfig(bins=32)
    counts = cell_counts(codec(schema, config).encode(schema.conform(data)), schema, config)
    assert [h.sum() for h in counts] == [n] * 3
    model = base.fit_model(
        key_from_seed(4), "marginals", data, HIGH, schema=schema, rows=DECLARED_ROWS
    )
    synth = base.sample_model(key_from_seed(5), model, 20_000)
    for name, p in (("x", np.isnan(x).mean()), ("c", pd.isna(c).mean())):
        assert abs(synth[name].isna().mean() - p) < zero_share_bound(p, n, len(synth))
    assert abs((synth["c"] == "NA").mean() - 0.5) < zero_share_bound(0.5, n, len(synth))
