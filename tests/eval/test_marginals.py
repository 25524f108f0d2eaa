"""2-way marginal TVD and per-column distances."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from jdp.eval.marginals import column_distances, discretize, quantile_edges, two_way_tvd


def shuffle_columns(rng: np.random.Generator, frame: pd.DataFrame) -> pd.DataFrame:
    """Each column permuted independently: same 1-way marginals, independent columns."""
    return pd.DataFrame({c: rng.permutation(frame[c].to_numpy()) for c in frame.columns})


def test_identical_tables_score_zero(tables):
    train, _ = tables
    assert two_way_tvd(train, train.copy()) == 0.0
    assert all(row["tvd"] == 0.0 for row in column_distances(train, train))


def test_row_order_and_row_count_do_not_matter(tables):
    train, _ = tables
    doubled = pd.concat([train, train.iloc[::-1]], ignore_index=True)
    assert two_way_tvd(train, doubled) == pytest.approx(0.0, abs=1e-12)


def test_hand_computed_two_way_tvd():
    real = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["u", "v", "u", "v"]})
    synthetic = pd.DataFrame({"a": ["x", "x", "x", "y"], "b": ["u", "u", "v", "v"]})
    # real joint: (x,u) (x,v) (y,u) (y,v) each 1/4; synthetic: 1/2, 1/4, 0, 1/4
    assert two_way_tvd(real, synthetic) == pytest.approx(0.5 * (0.25 + 0 + 0.25 + 0))


def test_perfectly_dependent_columns_shuffled_score_near_the_analytic_value():
    """b = a (deciles of a continuous a): the real joint puts 1/10 on each diagonal cell.

    After independent shuffles the joint is the product of the marginals, 1/100 per cell,
    so TVD = 1/2 * (10 * 0.09 + 90 * 0.01) = 0.9, up to sampling error of order
    sqrt(cells / n) = sqrt(100 / 20000) ~ 0.07 on the L1 distance.
    """
    rng = np.random.default_rng(0)
    a = rng.normal(size=20_000)
    real = pd.DataFrame({"a": a, "b": a.copy()})
    shuffled = shuffle_columns(rng, real)
    assert two_way_tvd(real, shuffled) == pytest.approx(0.9, abs=0.07)
    assert two_way_tvd(real, real.copy()) == 0.0


def test_shuffling_correlated_columns_exceeds_the_sampling_floor(tables, table_factory):
    """Shuffling breaks the dependence; an independent sample of the same law only adds
    sampling noise. Every 1-way marginal is unchanged by the shuffle, so the whole gap
    comes from the 2-way structure. The floor's spread is measured on 20 fresh samples and
    the shuffled score must clear it by 6 standard deviations."""
    train, _ = tables
    rng = np.random.default_rng(1)
    floors = [two_way_tvd(train, table_factory(rng, len(train))) for _ in range(20)]
    shuffled = shuffle_columns(rng, train)
    assert all(row["tvd"] == 0.0 for row in column_distances(train, shuffled))
    assert two_way_tvd(train, shuffled) > np.mean(floors) + 6 * np.std(floors, ddof=1)


def test_quantile_edges_keep_a_point_mass_in_its_own_bin():
    values = np.r_[np.zeros(900), np.arange(1, 101)]  # 90% zeros, like capital-gain
    edges = quantile_edges(values, 10)
    real = pd.DataFrame({"g": values, "h": values})
    codes, _, levels = discretize(real, real, n_bins=10)
    assert edges[0] == 0.0
    assert set(codes["g"][:900]) == {0}
    assert 0 not in set(codes["g"][900:])
    assert levels["g"] == len(edges) + 1


def test_numeric_distances_match_scipy_and_a_pure_shift():
    rng = np.random.default_rng(2)
    r = rng.normal(size=3000)
    real = pd.DataFrame({"v": r})
    shifted = pd.DataFrame({"v": r + 0.5})
    (row,) = column_distances(real, shifted)
    assert row["kind"] == "numeric"
    assert row["wasserstein"] == pytest.approx(0.5)  # W1 of a translate is the shift
    assert row["wasserstein_scaled"] == pytest.approx(0.5 / np.std(r))
    ks = stats.ks_2samp(r, r + 0.5)
    assert (row["ks"], row["ks_pvalue"]) == (pytest.approx(ks.statistic), pytest.approx(ks.pvalue))


def test_categorical_rows_have_no_numeric_distances():
    real = pd.DataFrame({"c": ["a", "b", "b", "b"]})
    synthetic = pd.DataFrame({"c": ["a", "a", "b", "z"]})
    (row,) = column_distances(real, synthetic)
    assert row["kind"] == "categorical"
    # real a 1/4, b 3/4, z 0; synthetic 1/2, 1/4, 1/4
    assert row["tvd"] == pytest.approx(0.5 * (0.25 + 0.5 + 0.25))
    assert row["wasserstein"] is None and row["ks"] is None


def test_bad_input(tables):
    train, _ = tables
    with pytest.raises(ValueError, match="column 'z' of real is missing from synthetic"):
        two_way_tvd(train, train.drop(columns="z"))
    with pytest.raises(ValueError, match="column 'x' of synthetic contains NaN"):
        two_way_tvd(train, train.assign(x=np.nan))
    with pytest.raises(ValueError, match="at least two columns"):
        two_way_tvd(train[["x"]], train[["x"]])
    with pytest.raises(ValueError, match="n_bins >= 2"):
        two_way_tvd(train, train, n_bins=1)
