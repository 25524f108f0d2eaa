"""A numeric column's unit scale: min-max without knots, its CDF through quantile knots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jdp.data.cells import discretize, undiscretize
from jdp.data.scales import from_unit, knots, to_unit
from jdp.data.schema import Column, Schema
from jdp.data.transforms import TableEncoder

PROBS = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


def income(n: int = 50_000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(8.0, 1.2, size=n)


def with_true_knots(x: np.ndarray, **kw) -> Column:
    values = np.quantile(x, PROBS)
    return Column(name="v", kind="continuous", lower=0.0, upper=1e9,
                  quantiles=tuple(zip(PROBS, values)), **kw)  # fmt: skip


def test_without_knots_the_scale_is_min_max():
    col = Column(name="v", kind="continuous", lower=-2.0, upper=6.0)
    x = np.array([-2.0, 0.0, 6.0, 3.0])
    np.testing.assert_allclose(to_unit(col, x), (x + 2) / 8)
    np.testing.assert_allclose(from_unit(col, [0.0, 0.25, 1.0, 1.5]), [-2.0, 0.0, 6.0, 6.0])


def test_knots_extend_by_the_outer_slopes_and_stop_at_the_bounds():
    col = Column(name="a", kind="continuous", lower=0.0, upper=10.0,
                 quantiles=((0.25, 2.0), (0.5, 3.0), (0.9, 6.0)))  # fmt: skip
    xp, fp = knots(col)
    # below: slope 1 / 0.25 per unit p -> 2 - 0.25 * 4 = 1; above: 3 / 0.4 -> 6 + 0.75
    np.testing.assert_allclose(xp, [1.0, 2.0, 3.0, 6.0, 6.75])
    np.testing.assert_allclose(fp, [0.0, 0.25, 0.5, 0.9, 1.0])
    cut = Column(name="a", kind="continuous", lower=1.5, upper=6.5, quantiles=col.quantiles)
    assert knots(cut)[0][[0, -1]].tolist() == [1.5, 6.5]


def test_the_maps_are_inverse_and_monotone_on_the_span():
    col = with_true_knots(income())
    u = np.linspace(0, 1, 1001)
    x = from_unit(col, u)
    assert np.all(np.diff(x) > 0)
    np.testing.assert_allclose(to_unit(col, x), u, atol=1e-12)
    assert to_unit(col, np.array([0.0]))[0] == 0.0 and to_unit(col, np.array([1e9]))[0] == 1.0


def test_decoding_uniform_draws_follows_the_data_not_the_public_range():
    """A long-tailed column declared in [0, 1e9]: values decoded from uniform draws on its
    quantile scale have the data's median and a mean within 15% of the data's (the linear
    piece between the 0.9 and 0.99 knots overstates the convex tail by 11% here; Monte-Carlo
    error of 200k draws is under 1%); min-max decoding spreads them over the range."""
    x = income()
    col = with_true_knots(x)
    draws = from_unit(col, np.random.default_rng(1).random(200_000))
    assert abs(np.median(draws) / np.median(x) - 1) < 0.02
    assert abs(draws.mean() / x.mean() - 1) < 0.15
    plain = Column(name="v", kind="continuous", lower=0.0, upper=1e9)
    assert from_unit(plain, np.random.default_rng(1).random(1000)).mean() > 1e8


def test_cells_on_the_quantile_scale_hold_equal_shares():
    """Discretised on its scale, each of 8 cells holds about 1/8 of the records (z bound on a
    binomial share, 5 sigma), and undiscretize draws inside each cell's own values."""
    x = income()
    col = with_true_knots(x)
    cells = discretize(col, x, 8)
    shares = np.bincount(cells, minlength=8) / len(x)
    # the knots are the data's own quantiles: the only error is the piecewise-linear CDF
    # between knots, at most the knots' gaps in p (0.15 around the tails' 0.1 / 0.25 knots)
    assert np.all(np.abs(shares - 1 / 8) < 0.06)
    back = undiscretize(np.random.default_rng(2), col, cells, 8)
    np.testing.assert_array_equal(discretize(col, back, 8), cells)


def test_integer_columns_with_many_values_use_the_scale_and_stay_integer():
    rng = np.random.default_rng(3)
    x = np.round(rng.lognormal(3.0, 1.0, size=20_000)).clip(0, 10_000)
    probs = (0.1, 0.5, 0.9, 0.99)
    col = Column(name="k", kind="integer", lower=0, upper=10_000,
                 quantiles=tuple(zip(probs, np.quantile(x, probs) + np.arange(4) * 1e-6)))  # fmt: skip
    cells = discretize(col, x, 16)
    out = undiscretize(rng, col, cells, 16)
    assert out.dtype == np.int64 and out.min() >= 0 and out.max() <= 10_000
    assert abs(np.median(out) - np.median(x)) <= 2


def test_the_encoder_reads_the_scale_both_ways():
    x = income(2000)
    col = with_true_knots(x)
    schema = Schema(columns=(col,))
    enc = TableEncoder(schema, continuous_range=(-1.0, 1.0))
    e = enc.encode(pd.DataFrame({"v": x}))
    np.testing.assert_allclose(e[:, 0], 2 * to_unit(col, x) - 1)
    back = enc.decode(e)["v"].to_numpy()
    inside = (x >= knots(col)[0][0]) & (x <= knots(col)[0][-1])
    np.testing.assert_allclose(back[inside], x[inside], rtol=1e-9)


@pytest.mark.parametrize(
    "quantiles, match",
    [
        (((0.5, 3.0), (0.5, 4.0)), "strictly increasing"),
        (((0.5, 3.0), (0.6, 3.0)), "values strictly increasing"),
        (((0.0, 3.0),), "strictly increasing"),
        (((0.5, 11.0),), "values strictly increasing"),
    ],
)
def test_bad_knots_raise(quantiles, match):
    with pytest.raises(ValueError, match=match):
        Column(name="a", kind="continuous", lower=0.0, upper=10.0, quantiles=quantiles)
    with pytest.raises(ValueError, match="categorical column takes no quantiles"):
        Column(name="c", kind="categorical", categories=("a",), quantiles=((0.5, 1.0),))


def test_knots_survive_json():
    col = with_true_knots(income(100))
    assert Column.from_dict(col.to_dict()) == col
