"""PNG figures: written, non-empty, real PNGs of the expected size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from jdp.eval.plots import image_grid, marginal_plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path) -> np.ndarray:
    assert path.is_file()
    assert path.read_bytes()[:8] == PNG_MAGIC
    pixels = imread(path)
    assert pixels.std() > 0  # something was drawn
    return pixels


def test_image_grid_from_flat_rows(tmp_path):
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 256, size=(12, 784))
    path = image_grid(
        rows,
        tmp_path / "grid.png",
        n_cols=5,
        image_shape=(28, 28),
        labels=list(range(12)),
        title="t",
    )
    pixels = assert_png(path)
    assert pixels.shape[1] == 600  # 5 columns x 1.2 inch x 100 dpi


def test_image_grid_colour(tmp_path):
    images = np.random.default_rng(1).uniform(size=(4, 8, 8, 3))
    assert_png(image_grid(images, tmp_path / "sub" / "colour.png"))


@pytest.mark.parametrize(
    "images, kwargs, match",
    [
        (np.zeros((3, 5)), {}, "shape"),
        (np.full((2, 4, 4), np.nan), {}, "finite"),
        (np.zeros((2, 4, 4)), {"labels": [1]}, "expected 2 labels"),
    ],
)
def test_image_grid_bad_input(tmp_path, images, kwargs, match):
    with pytest.raises(ValueError, match=match):
        image_grid(images, tmp_path / "x.png", **kwargs)


def test_marginal_plots_one_png_per_column(tmp_path, tables):
    train, test = tables
    renamed = {"flag": "flag / yes?"}  # an unsafe file-name character
    paths = marginal_plots(train.rename(columns=renamed), test.rename(columns=renamed), tmp_path)
    assert [p.name for p in paths] == [
        "marginal_00_x.png",
        "marginal_01_z.png",
        "marginal_02_c.png",
        "marginal_03_flag_yes.png",
        "marginal_04_income.png",
    ]
    for path in paths:
        assert_png(path)


def test_marginal_plots_check_columns(tmp_path, tables):
    train, _ = tables
    with pytest.raises(ValueError, match="column 'c' of real is missing from synthetic"):
        marginal_plots(train, train.drop(columns="c"), tmp_path)
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="contains NaN"):
        marginal_plots(train, pd.DataFrame(train).assign(x=np.nan), tmp_path)
