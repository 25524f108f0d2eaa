"""Series as records: time-major flattening, one (T, F) for all, no NaN, public bounds."""

from __future__ import annotations

import numpy as np
import pytest

from jdp.data import datasets
from jdp.data.series import series_columns, series_frame, series_schema
from jdp.verbosity import show_private_details


def test_series_are_flattened_time_major():
    schema = series_schema(3, 2, lower=-1.0, upper=1.0)
    assert series_columns(3, 2) == tuple(schema.names)
    a = np.arange(6.0).reshape(3, 2) / 10
    frame = series_frame([a, -a], schema)
    assert frame.shape == (2, 6)
    assert frame.loc[0, "t001_f0"] == a[1, 0] and frame.loc[0, "t002_f1"] == a[2, 1]
    assert series_columns(2) == ("t000", "t001")


def test_series_of_different_lengths_raise_without_echoing_them():
    schema = series_schema(4, lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="some series differ$"):
        series_frame([np.zeros(4), np.zeros(3)], schema)
    with show_private_details(), pytest.raises(ValueError, match=r"shape \(3,\)"):
        series_frame([np.zeros(4), np.zeros(3)], schema)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_value_inside_a_series_raises(bad):
    schema = series_schema(4, lower=0.0, upper=1.0)
    x = np.array([0.1, bad, 0.2, 0.3])
    with pytest.raises(ValueError, match="expected finite values inside every series"):
        series_frame([np.zeros(4), x], schema)


def test_italy_power_is_inside_its_format_bound():
    try:
        data = datasets.load_italy_power()
    except datasets.DatasetNotInstalledError as err:
        assert "pip install --no-deps sktime==0.30.0" in str(err)
        pytest.skip("italypower not installed (scripts/install_datasets.sh italypower)")
    assert data.train.shape == (67, 24) and data.test.shape == (1029, 24)
    both = np.concatenate([data.train.to_numpy(), data.test.to_numpy()])
    assert np.abs(both).max() <= datasets.ITALY_POWER_BOUND
    # z-normalised per series, which is what the bound rests on
    np.testing.assert_allclose(both.mean(axis=1), 0.0, atol=1e-6)
    np.testing.assert_allclose(both.std(axis=1, ddof=1), 1.0, atol=1e-6)
