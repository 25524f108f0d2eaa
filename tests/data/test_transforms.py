"""Encoders: exact round trips, clipping, spans, unit-norm scaling, discretisation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from jdp.data.cells import discretize, n_bins, undiscretize
from jdp.data.datasets import load_adult
from jdp.data.schema import ClipWarning, Column, Schema
from jdp.data.transforms import TableEncoder
from jdp.nn.heads import activate, heads_for_spans
from jdp.verbosity import show_private_details

SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=-3.5, upper=1e6),
        Column(name="k", kind="integer", lower=-5, upper=300),
        Column(name="c", kind="categorical", categories=("a", "b", "c", "d")),
        Column(name="flag", kind="categorical", categories=(False, True)),
        Column(name="y", kind="categorical", categories=(3, 7, 11)),
    ),
    target="y",
)
OPTIONS = [
    {},
    {"continuous_range": (-1.0, 1.0)},
    {"continuous_range": (-1.0, 1.0), "unit_norm": True},
    {"exclude_target": True},
    {"unit_norm": True, "exclude_target": True},
]


def random_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.uniform(-3.5, 1e6, size=n)
    x[:2] = [-3.5, 1e6]  # the bounds themselves are in bounds
    return pd.DataFrame(
        {
            "x": x,
            "k": rng.integers(-5, 301, size=n),
            "c": rng.choice(["a", "b", "c", "d"], size=n),
            "flag": rng.random(n) < 0.5,
            "y": rng.choice([3, 7, 11], size=n),
        }
    ).astype({"c": object, "flag": object})


def round_trip(encoder: TableEncoder, table) -> pd.DataFrame:
    codes = encoder.encode_target(table) if encoder.exclude_target else None
    return encoder.decode(encoder.encode(table), codes)


@pytest.mark.parametrize("options", OPTIONS)
def test_round_trip_is_exact_for_in_bound_data(options):
    table = SCHEMA.conform(random_frame(np.random.default_rng(1), 500))
    out = round_trip(TableEncoder(SCHEMA, **options), table)
    pd.testing.assert_frame_equal(out.drop(columns="x"), table.frame.drop(columns="x"))
    # continuous: exact up to floating-point rounding of the affine maps (a few ulps of 1e6)
    np.testing.assert_allclose(out["x"], table.frame["x"], rtol=0, atol=8 * np.spacing(1e6))
    assert out["x"].dtype == np.float64


def test_round_trip_on_adult():
    adult = load_adult()
    table = adult.schema.conform(adult.train.iloc[:2000])
    out = round_trip(TableEncoder(adult.schema), table)
    pd.testing.assert_frame_equal(out.drop(columns="fnlwgt"), table.frame.drop(columns="fnlwgt"))
    np.testing.assert_allclose(
        out["fnlwgt"], table.frame["fnlwgt"], rtol=0, atol=8 * np.spacing(2e6)
    )


def test_out_of_bound_values_clip_to_range_ends_and_are_counted():
    data = random_frame(np.random.default_rng(2), 10)
    data.loc[0, "x"], data.loc[1, "k"], data.loc[2, "k"] = 5e6, -100, 1000
    encoder = TableEncoder(SCHEMA, continuous_range=(-1.0, 1.0))
    with (
        show_private_details(),
        pytest.warns(  # the counts are shown only on request
            ClipWarning, match=r"1 value\(s\) of column 'x'.*2 value\(s\) of column 'k'"
        ),
    ):
        z = encoder.encode(data)
    x_col, k_col = encoder.spans[0].start, encoder.spans[1].start
    assert z[0, x_col] == 1.0 and z[1, k_col] == -1.0 and z[2, k_col] == 1.0
    assert np.all((z[:, [x_col, k_col]] >= -1) & (z[:, [x_col, k_col]] <= 1))


def test_layout_spans_and_activations():
    enc = TableEncoder(SCHEMA, continuous_range=(-1.0, 1.0))
    assert [(s.name, s.start, s.stop, s.activation) for s in enc.spans] == [
        ("x", 0, 1, "tanh"),
        ("k", 1, 2, "tanh"),
        ("c", 2, 6, "softmax"),
        ("flag", 6, 8, "softmax"),
        ("y", 8, 11, "softmax"),
    ]
    assert enc.width == 11
    assert TableEncoder(SCHEMA, exclude_target=True).width == 8
    z = jax.random.normal(jax.random.key(0), (64, enc.width)) * 5
    out = activate(z, heads_for_spans(enc.spans))
    for s in enc.spans:
        block = out[:, s.start : s.stop]
        if s.activation == "softmax":
            np.testing.assert_allclose(block.sum(axis=1), 1.0, rtol=1e-5)
        else:
            assert bool(jnp.all(jnp.abs(block) <= 1))
    jitted = jax.jit(lambda v: activate(v, heads_for_spans(enc.spans)))
    np.testing.assert_allclose(jitted(z), out, rtol=1e-6)
    decoded = enc.decode(out)  # a generator's soft output decodes by argmax
    assert set(decoded["c"]) <= {"a", "b", "c", "d"}


@pytest.mark.parametrize("options", OPTIONS)
def test_unit_norm_bound_holds_and_is_attained(options):
    enc = TableEncoder(SCHEMA, **options)
    table = SCHEMA.conform(random_frame(np.random.default_rng(3), 400))
    norms = np.linalg.norm(enc.encode(table), axis=1)
    limit = 1.0 if enc.unit_norm else enc.row_norm_bound
    assert norms.max() <= limit * (1 + 1e-12)
    # the adversarial row: every numeric column at its largest-magnitude end
    a, b = enc.continuous_range
    extreme = random_frame(np.random.default_rng(4), 2)
    extreme["x"] = 1e6 if abs(b) >= abs(a) else -3.5
    extreme["k"] = 300 if abs(b) >= abs(a) else -5
    np.testing.assert_allclose(np.linalg.norm(enc.encode(extreme), axis=1), limit, rtol=1e-12)


def test_encoder_depends_on_the_schema_only():
    assert TableEncoder(SCHEMA) == TableEncoder(SCHEMA)
    assert TableEncoder(SCHEMA).spans == TableEncoder(SCHEMA).spans


def test_decode_rejects_bad_input():
    enc = TableEncoder(SCHEMA)
    with pytest.raises(ValueError, match=r"shape \(n, 11\)"):
        enc.decode(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="non-finite"):
        enc.decode(np.full((2, 11), np.nan))
    with pytest.raises(ValueError, match="target_codes"):
        TableEncoder(SCHEMA, exclude_target=True).decode(np.zeros((2, 8)))
    with pytest.raises(ValueError, match="continuous_range"):
        TableEncoder(SCHEMA, continuous_range=(1.0, 1.0))


def test_integer_cells_partition_the_domain():
    col = Column(name="k", kind="integer", lower=-5, upper=300)  # 306 integers
    values = np.arange(-5, 301)
    for bins in (2, 7, 32, 306, 1000):
        cells = discretize(col, values, bins)
        b = n_bins(col, bins)
        assert b == min(bins, 306)
        assert np.all(np.diff(cells) >= 0) and set(cells) == set(range(b))  # contiguous runs
        back = undiscretize(np.random.default_rng(0), col, cells, bins)
        assert np.array_equal(discretize(col, back, bins), cells)  # draws stay in their cell
        if b == 306:
            assert np.array_equal(back, values)


def test_continuous_cells_round_trip_to_the_same_cell():
    col = Column(name="x", kind="continuous", lower=-3.5, upper=1e6)
    x = np.random.default_rng(5).uniform(-3.5, 1e6, 5000)
    x[:2] = [-3.5, 1e6]
    cells = discretize(col, x, 32)
    assert cells.min() == 0 and cells.max() == 31
    back = undiscretize(np.random.default_rng(6), col, cells, 32)
    assert np.array_equal(discretize(col, back, 32), cells)


# -- point masses and missing values --------------------------------------------------------

STATE_SCHEMA = Schema(
    columns=(
        Column(name="gain", kind="integer", lower=0, upper=99_999, point_masses=(0, 99_999)),
        Column(
            name="x", kind="continuous", lower=-2.0, upper=3.0, point_masses=(0.5,), nullable=True
        ),
        Column(name="k", kind="integer", lower=0, upper=9, nullable=True),
        Column(name="c", kind="categorical", categories=("NA", "b", "c"), nullable=True),
        Column(name="n", kind="categorical", categories=(1, 2), nullable=True),
        Column(name="y", kind="categorical", categories=(0, 1)),
    ),
    target="y",
)


def state_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Rows mixing masses, tails, missing values and the literal category "NA"."""
    gain = np.where(rng.random(n) < 0.6, 0, rng.integers(1, 100_000, size=n))
    gain[:2] = [99_999, 0]
    x = rng.uniform(-2.0, 3.0, size=n)
    x[rng.random(n) < 0.3] = 0.5
    x[rng.random(n) < 0.2] = np.nan
    k = pd.array(np.where(rng.random(n) < 0.25, -1, rng.integers(0, 10, size=n)), dtype="Int64")
    k[k == -1] = pd.NA
    c = rng.choice(np.array(["NA", "b", "c", None], dtype=object), size=n)
    nn = rng.choice(np.array([1, 2, None], dtype=object), size=n)
    return pd.DataFrame(
        {"gain": gain, "x": x, "k": k, "c": c, "n": nn, "y": rng.integers(0, 2, size=n)}
    )


@pytest.mark.parametrize("options", OPTIONS)
def test_round_trip_restores_point_masses_and_missing_values_exactly(options):
    table = STATE_SCHEMA.conform(state_frame(np.random.default_rng(7), 400))
    frame = table.frame
    assert frame["x"].isna().any() and frame["k"].isna().any() and (frame["c"] == "NA").any()
    out = round_trip(TableEncoder(STATE_SCHEMA, **options), table)
    pd.testing.assert_frame_equal(out.drop(columns="x"), frame.drop(columns="x"))
    assert out["k"].dtype == "Int64" and out["gain"].dtype == np.int64
    # masses and missing values come back exactly; the rest within a few ulps
    for mask in (frame["x"].isna(), frame["x"] == 0.5):
        pd.testing.assert_series_equal(out["x"][mask], frame["x"][mask])
    np.testing.assert_allclose(out["x"], frame["x"], rtol=0, atol=8 * np.spacing(3.0))


def test_state_indicator_is_a_categorical_span_after_the_value():
    enc = TableEncoder(STATE_SCHEMA)
    assert [(s.name, s.kind, s.size, s.activation) for s in enc.spans] == [
        ("gain", "integer", 1, "sigmoid"),
        ("gain#state", "categorical", 3, "softmax"),
        ("x", "continuous", 1, "sigmoid"),
        ("x#state", "categorical", 3, "softmax"),
        ("k", "integer", 1, "sigmoid"),
        ("k#state", "categorical", 2, "softmax"),
        ("c", "categorical", 4, "softmax"),  # 3 categories + missing
        ("n", "categorical", 3, "softmax"),
        ("y", "categorical", 2, "softmax"),
    ]
    assert [c.name for c in enc.columns] == [s.name for s in enc.spans]
    assert enc.columns[1].categories == ("value", "=0", "=99999")
    assert enc.columns[3].categories == ("value", "=0.5", "missing")
    # the state decides: a soft "mass" state puts the mass back whatever the value part says
    x = np.zeros((1, enc.width))
    x[0, 0] = 0.7  # gain's value part
    x[0, 1:4] = [0.2, 0.1, 0.7]  # gain#state: argmax "=99999"
    x[0, 9:11] = [0.4, 0.6]  # k#state: missing
    out = enc.decode(x)
    assert out["gain"].iloc[0] == 99_999 and out["k"].isna().iloc[0]
    x[0, 1:4] = [0.8, 0.1, 0.1]  # gain#state: "value" -> the value part decodes
    assert enc.decode(x)["gain"].iloc[0] == 69_999


@pytest.mark.parametrize("options", OPTIONS)
def test_row_norm_bound_holds_with_state_indicators(options):
    """Privacy: the indicators are one-hot blocks counted in the public row-norm bound, which
    still holds (and is attained) on adversarial rows: every numeric value at its
    largest-magnitude end, a missing value (encoded at the public midpoint)."""
    enc = TableEncoder(STATE_SCHEMA, **options)
    frame = state_frame(np.random.default_rng(8), 300)
    limit = 1.0 if enc.unit_norm else enc.row_norm_bound
    assert np.linalg.norm(enc.encode(frame), axis=1).max() <= limit * (1 + 1e-12)
    a, b = enc.continuous_range
    top = abs(b) >= abs(a)
    extreme = frame.iloc[:2].copy()
    extreme["gain"] = 99_999 if top else 0
    extreme["x"] = 3.0 if top else -2.0
    extreme["k"] = pd.array([9 if top else 0] * 2, dtype="Int64")
    np.testing.assert_allclose(np.linalg.norm(enc.encode(extreme), axis=1), limit, rtol=1e-12)
    n_blocks = sum(not c.is_numeric for c in enc.columns)
    n_numeric = sum(c.is_numeric for c in enc.columns)
    assert enc.row_norm_bound == pytest.approx(np.sqrt(n_numeric * max(a * a, b * b) + n_blocks))


def test_mass_and_missing_cells_hold_one_record_each():
    """Discretisation: a mass value and a missing value each get a cell of their own; every
    record is in exactly one cell of each column (the histogram sensitivity is unchanged),
    and sampling a cell gives back the mass exactly or a missing value."""
    rng = np.random.default_rng(9)
    frame = STATE_SCHEMA.conform(state_frame(rng, 500)).frame
    for col in STATE_SCHEMA.columns:
        for bins in (4, 32):
            cells = discretize(col, frame[col.name], bins)
            b = n_bins(col, bins)
            assert cells.min() >= 0 and cells.max() < b
            counts = np.bincount(cells, minlength=b)
            assert counts.sum() == len(frame)
            back = undiscretize(rng, col, cells, bins)
            assert np.array_equal(discretize(col, back, bins), cells)
    gain = STATE_SCHEMA["gain"]
    cells = discretize(gain, frame["gain"], 32)
    assert n_bins(gain, 32) == 34
    assert np.array_equal(cells == 32, frame["gain"].to_numpy() == 0)
    assert np.array_equal(cells == 33, frame["gain"].to_numpy() == 99_999)
    x = STATE_SCHEMA["x"]
    back = undiscretize(rng, x, discretize(x, frame["x"], 8), 8)
    np.testing.assert_array_equal(np.isnan(back), frame["x"].isna())
    np.testing.assert_array_equal(back == 0.5, frame["x"] == 0.5)


def _pearson(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(np.sum((counts - expected) ** 2 / expected))


@pytest.mark.parametrize("options", [{}, {"continuous_range": (-1.0, 1.0), "unit_norm": True}])
def test_sample_blocks_draws_each_state_with_its_block_probabilities(options):
    """A state block is drawn with probabilities ``max(b, 0) / sum max(b, 0)`` of its own row
    (rows differ; some coordinates negative), not its argmax: the counts of each state pass a
    chi-square test against the summed probabilities (Pearson's statistic with the Poisson-
    binomial counts is at most chi-square(K - 1) in the limit, bound at 1e-6). With argmax
    decoding (checked by substituting it) the statistic is 1112 against the bound 27.6. Categorical
    columns keep their argmax unless ``which="all"``, and the other coordinates are kept."""
    from scipy.stats import chi2

    enc = TableEncoder(STATE_SCHEMA, **options)
    rng = np.random.default_rng(11)
    n = 6000
    x = enc.encode(state_frame(rng, n))
    span = next(s for s in enc.spans if s.name == "gain#state")
    cat = next(s for s in enc.spans if s.name == "c")
    for s in (span, cat):
        alpha = np.geomspace(0.5, 4.0, s.size)  # unequal shares: argmax would favour the last
        block = rng.dirichlet(alpha, size=n) + rng.normal(0.0, 0.1, (n, s.size))
        x[:, s.start : s.stop] = block / enc.scale
    out = enc.sample_blocks(np.random.default_rng(12), x)
    for s, drawn in ((span, True), (cat, False)):
        block = x[:, s.start : s.stop] * enc.scale
        got = out[:, s.start : s.stop] * enc.scale
        if not drawn:
            np.testing.assert_array_equal(got, block)
            continue
        np.testing.assert_allclose(got.sum(axis=1), 1.0)
        assert set(np.unique(np.round(got, 12))) == {0.0, 1.0}
        weight = np.maximum(block, 0.0)
        assert (weight.sum(axis=1) == 0).sum() == 0 and (block < 0).any()
        expected = (weight / weight.sum(axis=1, keepdims=True)).sum(axis=0)
        assert _pearson(got.sum(axis=0), expected) < chi2.ppf(1 - 1e-6, s.size - 1)
    others = np.ones(enc.width, bool)
    others[span.start : span.stop] = False
    np.testing.assert_array_equal(out[:, others], x[:, others])  # the categorical block too
    # decode reads the drawn state: the masses come back exactly where drawn
    gain = enc.decode(out)["gain"].to_numpy()
    assert np.all(gain[out[:, span.start + 1] > 0] == 0)
    assert np.all(gain[out[:, span.start + 2] > 0] == 99_999)
    # which="all" draws the categorical block the same way
    both = enc.sample_blocks(np.random.default_rng(13), x, "all")
    block = np.maximum(x[:, cat.start : cat.stop], 0.0)
    expected = (block / block.sum(axis=1, keepdims=True)).sum(axis=0)
    counts = both[:, cat.start : cat.stop].sum(axis=0) * enc.scale
    assert _pearson(counts, expected) < chi2.ppf(1 - 1e-6, cat.size - 1)


def test_sample_blocks_keeps_the_argmax_of_a_block_without_positive_values():
    enc = TableEncoder(STATE_SCHEMA)
    span = next(s for s in enc.spans if s.name == "gain#state")
    x = np.zeros((3, enc.width))
    x[:, span.start : span.stop] = [[-0.3, -0.1, -0.2], [0.0, 0.0, 0.0], [-1.0, 0.0, 2.0]]
    out = enc.sample_blocks(np.random.default_rng(0), x)
    assert out[:, span.start : span.stop].argmax(axis=1).tolist() == [1, 0, 2]
    with pytest.raises(ValueError, match="expected which in"):
        enc.sample_blocks(np.random.default_rng(0), x, "some")
    with pytest.raises(ValueError, match=r"expected an array of shape \(n, "):
        enc.sample_blocks(np.random.default_rng(0), x[:, :-1])
    x[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        enc.sample_blocks(np.random.default_rng(0), x)


def test_a_value_state_never_decodes_to_a_point_mass():
    """The "value" state with a value coordinate on a point mass (gain's at its lower bound 0
    or upper bound 99999; x's at 0.5) decodes to the nearest value inwards that is no mass:
    1, 99998, the next float above 0.5 (no record of a value state is a mass: it would be in
    the mass's cell); the mass states still give the masses exactly. Checked to fail without
    the move (gain 0 and 99999 come back)."""
    enc = TableEncoder(STATE_SCHEMA)
    frame = pd.DataFrame(
        {
            "gain": [1, 99_998, 0, 99_999],
            "x": [0.5000001, 1.0, 0.5, np.nan],
            "k": pd.array([1, 2, 3, 4], dtype="Int64"),
            "c": ["b"] * 4,
            "n": [1] * 4,
            "y": [0] * 4,
        }
    ).astype({"c": object, "n": object})
    e = enc.encode(frame)
    gain, x = enc.spans[0].start, enc.spans[2].start
    e[0, gain], e[1, gain] = 0.0, 1.0  # value state, value coordinate on a mass
    e[0, x] = 2.5 / 5.0  # x in [-2, 3]: 0.5
    out = enc.decode(e)
    assert out["gain"].tolist() == [1, 99_998, 0, 99_999]
    assert out["x"].iloc[0] == np.nextafter(0.5, 3.0) and out["x"].iloc[2] == 0.5
    assert np.isnan(out["x"].iloc[3])
