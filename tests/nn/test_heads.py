"""The one output-head vocabulary (jdp.nn.heads): activations, likelihoods, samples, spans."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jdp.data.schema import Column, Schema
from jdp.data.transforms import TableEncoder
from jdp.nn.heads import (
    ACTIVATIONS,
    activate,
    binned_cell,
    check_layout,
    decode_sample,
    heads_for_encoder,
    heads_for_spans,
    into_heads,
    layout_width,
    log_likelihood,
    numeric_cells,
    raw_width,
    uniform_binned_heads,
)

LAYOUT = (("bernoulli", 2), ("tanh", 1), ("gaussian", 2), ("categorical", 3))
RAW = jnp.array([0.0, 2.0, -1.0, 0.5, -0.5, 1.0, 2.0, 3.0])


def test_activate_maps_each_head_to_its_range():
    out = np.asarray(activate(RAW, LAYOUT))
    np.testing.assert_allclose(out[:2], 1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-6)
    np.testing.assert_allclose(out[2], np.tanh(-1.0), rtol=1e-6)
    np.testing.assert_allclose(out[3:5], [0.5, -0.5])
    soft = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(out[5:], soft, rtol=1e-6)
    batch = activate(jnp.stack([RAW, -RAW]), LAYOUT)  # any leading batch shape
    assert batch.shape == (2, layout_width(LAYOUT)) == (2, 8)


def test_log_likelihood_per_kind_and_tanh_has_none():
    x = jnp.array([1.0, 0.0, 0.3, 0.1, 0.0, 0.0, 1.0, 0.0, 0.0])
    raw = jnp.array([0.0, 0.0, 0.5, 0.1, 0.0, 1.0, 2.0, 3.0, 0.0])
    layout = (("bernoulli", 2), ("gaussian", 3), ("categorical", 3), ("bernoulli", 1))
    expected = (
        3 * math.log(0.5)
        + (-0.5 * 0.2**2 - 1.5 * math.log(2 * math.pi))
        + (2.0 - math.log(math.exp(1) + math.exp(2) + math.exp(3)))
    )
    assert float(log_likelihood(raw, x, layout)) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="with a likelihood, got 'tanh'"):
        log_likelihood(RAW, RAW, LAYOUT)


def test_decode_sample_means_and_one_hot_categories():
    key = jax.random.key(0)
    out = np.asarray(decode_sample(key, jnp.tile(RAW, (500, 1)), LAYOUT, stochastic=False))
    np.testing.assert_allclose(
        out[:, :5], np.tile(np.asarray(activate(RAW, LAYOUT))[:5], (500, 1)), rtol=1e-6
    )
    cat = out[:, 5:]
    assert set(np.unique(cat)) == {0.0, 1.0} and np.all(cat.sum(axis=1) == 1.0)
    drawn = decode_sample(key, jnp.tile(RAW, (500, 1)), LAYOUT, stochastic=True)
    assert set(np.unique(np.asarray(drawn[:, :2]))) <= {0.0, 1.0}
    np.testing.assert_array_equal(drawn[:, 2], out[:, 2])  # tanh heads are deterministic


def test_heads_for_spans_and_layout_checks():
    schema = Schema(
        columns=(
            Column(name="a", kind="continuous", lower=0, upper=1),
            Column(name="b", kind="integer", lower=0, upper=9),
            Column(name="c", kind="categorical", categories=("x", "y", "z")),
            Column(name="d", kind="categorical", categories=("p", "q")),
        )
    )
    unit = TableEncoder(schema, continuous_range=(0.0, 1.0)).spans
    assert heads_for_spans(unit) == (
        ("bernoulli", 1),
        ("bernoulli", 1),
        ("categorical", 3),
        ("categorical", 2),
    )
    assert heads_for_spans(unit, merge=True) == (
        ("bernoulli", 2),
        ("categorical", 3),
        ("categorical", 2),
    )
    signed = TableEncoder(schema, continuous_range=(-1.0, 1.0)).spans
    assert heads_for_spans(signed, merge=True)[0] == ("tanh", 2)
    wide = TableEncoder(schema, continuous_range=(0.0, 2.0)).spans
    assert heads_for_spans(wide)[0] == ("gaussian", 1)
    assert check_layout([("bernoulli", 2)]) == (("bernoulli", 2),)
    with pytest.raises(ValueError, match="expected head kind"):
        check_layout([("beta", 2)])
    with pytest.raises(ValueError, match="expected head width >= 1, got 0"):
        check_layout([("bernoulli", 0)])


def test_heads_for_encoder_bins_numeric_columns_when_the_output_layer_allows():
    """The table -> layout policy: a binned head per numeric column (one cell per integer up
    to ``numeric_bins``), a state head after a column with point masses, a categorical head
    per category block; ``"auto"`` falls back to the merged bernoulli layout when the binned
    output layer is wider than ``max_raw_width``."""
    schema = Schema(
        columns=(
            Column(name="a", kind="continuous", lower=0, upper=1),
            Column(name="b", kind="integer", lower=0, upper=5, point_masses=(0,)),
            Column(name="c", kind="categorical", categories=("x", "y", "z")),
            Column(name="k", kind="integer", lower=0, upper=99),
        )
    )
    encoder = TableEncoder(schema, continuous_range=(0.0, 1.0))
    binned = (("binned", 8), ("binned", 6), ("state", 2), ("categorical", 3), ("binned", 8))
    assert heads_for_encoder(encoder, numeric_head="binned", numeric_bins=8) == binned
    assert [numeric_cells(c, 8) for c in schema.columns if c.is_numeric] == [8, 6, 8]
    bernoulli = heads_for_spans(encoder.spans, merge=True)
    assert heads_for_encoder(encoder, numeric_head="bernoulli") == bernoulli
    wide = raw_width(binned)
    auto = {"numeric_head": "auto", "numeric_bins": 8}
    assert heads_for_encoder(encoder, **auto, max_raw_width=wide) == binned
    assert heads_for_encoder(encoder, **auto, max_raw_width=wide - 1) == bernoulli
    with pytest.raises(ValueError, match="expected max_raw_width with numeric_head='auto'"):
        heads_for_encoder(encoder)
    with pytest.raises(ValueError, match="expected numeric_head in"):
        heads_for_encoder(encoder, numeric_head="gaussian")
    signed = TableEncoder(schema, continuous_range=(-1.0, 1.0))
    with pytest.raises(ValueError, match=r"expected numeric columns scaled to \[0, 1\]"):
        heads_for_encoder(signed, numeric_head="binned")


def test_into_heads_gives_each_head_a_valid_target():
    layout = (("bernoulli", 3), ("categorical", 3), ("gaussian", 1), ("categorical", 2))
    x = jnp.array([[-0.5, 0.4, 1.7, 0.6, -0.2, 0.2, 5.0, -1.0, -3.0]])
    t = np.asarray(into_heads(x, layout))[0]
    np.testing.assert_allclose(t[:3], [0.0, 0.4, 1.0])
    np.testing.assert_allclose(t[3:6], [0.75, 0.0, 0.25])  # clipped at 0, renormalised
    assert t[6] == 5.0
    np.testing.assert_allclose(t[7:], [0.5, 0.5])  # nothing left: uniform


def test_uniform_binned_heads_zero_only_the_histogram_logits():
    layout = (("bernoulli", 2), ("binned", 3), ("categorical", 2))
    dense = {"kernel": jnp.ones((4, raw_width(layout))), "bias": jnp.ones(raw_width(layout))}
    out = uniform_binned_heads(dense, layout)
    keep = np.array([1, 1, 0, 0, 0, 1, 1], dtype=float)
    np.testing.assert_array_equal(out["bias"], keep)
    np.testing.assert_array_equal(out["kernel"], np.tile(keep, (4, 1)))
    # whatever the input, the binned head's softmax is uniform over its cells
    raw = jnp.ones(4) @ out["kernel"] + out["bias"]
    np.testing.assert_allclose(jax.nn.softmax(raw[2:5]), np.full(3, 1 / 3), rtol=1e-6)


# -- binned and state heads: draws from the model, not its mean --------------------------------

#: 5-sigma-ish tail probability for the chi-square bounds below
TAIL = 1e-6


def _chi_square_bound(counts: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    """Pearson's statistic of observed ``counts`` against ``probs`` and its 1 - TAIL quantile."""
    from scipy import stats

    expected = counts.sum() * probs
    stat = float(np.sum((counts - expected) ** 2 / expected))
    return stat, float(stats.chi2.ppf(1 - TAIL, len(probs) - 1))


def test_categorical_and_binned_heads_draw_with_the_softmax_probabilities():
    """Cells and categories are draws from the softmax: Pearson's chi-square of 20,000 draws
    against softmax(raw) stays below its 1 - 1e-6 quantile. (Argmax decoding puts every draw
    in one cell and fails it by orders of magnitude.)"""
    n, cells = 20_000, 7
    logits = jnp.array([0.0, 1.0, -1.0, 2.0, 0.5, -2.0, 1.5])
    layout = (("binned", cells), ("categorical", 3))
    raw = jnp.tile(jnp.concatenate([logits, jnp.array([0.2, -0.4, 1.0])]), (n, 1))
    out = np.asarray(decode_sample(jax.random.key(5), raw, layout, stochastic=False))
    assert out.shape == (n, layout_width(layout)) == (n, 4)
    k = np.asarray(binned_cell(jnp.asarray(out[:, 0]), cells))
    stat, bound = _chi_square_bound(np.bincount(k, minlength=cells), np.asarray(_softmax(logits)))
    assert stat < bound
    cat = out[:, 1:]
    assert np.all(cat.sum(axis=1) == 1.0)
    p = np.asarray(_softmax(jnp.array([0.2, -0.4, 1.0])))
    stat, bound = _chi_square_bound(cat.sum(axis=0), p)
    assert stat < bound


def _softmax(v):
    return jax.nn.softmax(v)


def test_binned_draws_are_uniform_within_their_cell_and_decode_to_its_integer():
    """A draw is a uniform point of its cell (half cells at the ends): the offset from the
    cell's grid point is Uniform(-1/2, 1/2) inside, Uniform(0, 1/2) at the ends (KS test),
    and on an integer column with one cell per value it decodes to exactly that value."""
    from scipy import stats

    cells, n = 5, 30_000
    raw = jnp.zeros((n, cells))  # uniform over the cells
    u = np.asarray(decode_sample(jax.random.key(1), raw, (("binned", cells),), stochastic=False))
    assert u.min() >= 0.0 and u.max() <= 1.0
    k = np.asarray(binned_cell(jnp.asarray(u[:, 0]), cells))
    offset = u[:, 0] * (cells - 1) - k
    inner = (k > 0) & (k < cells - 1)
    assert stats.kstest(offset[inner], stats.uniform(-0.5, 1.0).cdf).pvalue > TAIL
    assert stats.kstest(np.abs(offset[~inner]), stats.uniform(0.0, 0.5).cdf).pvalue > TAIL
    # an integer column of R values scaled to [0, 1]: cell k IS the k-th integer
    schema = Schema(columns=(Column(name="a", kind="integer", lower=10, upper=10 + cells - 1),))
    decoded = TableEncoder(schema).decode(u)["a"].to_numpy()
    np.testing.assert_array_equal(decoded, 10 + k)


def test_a_binned_head_with_learned_spread_s_gives_samples_of_spread_s():
    """A head whose logits are a discretised N(0.5, s^2) yields draws whose std is s (up to
    the cells' width): within 5 standard errors of the histogram's exact std. Decoding at the
    mean (what a sigmoid head does) gives std 0 and fails."""
    cells, s, n = 101, 0.12, 20_000
    grid = np.linspace(0.0, 1.0, cells)
    logits = jnp.asarray(-0.5 * ((grid - 0.5) / s) ** 2)
    out = np.asarray(
        decode_sample(
            jax.random.key(2), jnp.tile(logits, (n, 1)), (("binned", cells),), stochastic=False
        )
    )[:, 0]
    # exact moments of the histogram density: cell probability times a uniform cell
    p = np.asarray(_softmax(logits))
    h = 0.5 / (cells - 1)
    lo, hi = np.clip(grid - h, 0, 1), np.clip(grid + h, 0, 1)
    m1 = np.sum(p * (lo + hi) / 2)
    m2 = np.sum(p * (lo**2 + lo * hi + hi**2) / 3)
    m4 = np.sum(p * (hi**5 - lo**5) / (5 * (hi - lo)))
    m3 = np.sum(p * (hi**4 - lo**4) / (4 * (hi - lo)))
    var = m2 - m1**2
    mu4 = m4 - 4 * m1 * m3 + 6 * m1**2 * m2 - 3 * m1**4
    se_var = np.sqrt((mu4 - var**2) / n)  # standard error of the sample variance
    assert abs(np.sqrt(var) - s) < 0.01  # the histogram is the discretised normal
    assert abs(out.var() - var) < 5 * se_var
    assert abs(out.mean() - m1) < 5 * np.sqrt(var / n)


def test_binned_and_state_log_likelihood():
    """Binned: log softmax at the cell of x. State: its own categorical term, and the value
    head before it counts only in the state "value" (a point mass's placeholder is not a
    datum)."""
    logits = jnp.array([0.3, -1.0, 2.0, 0.0])
    log_p = np.asarray(jax.nn.log_softmax(logits))
    state_raw = jnp.array([0.5, -0.5])
    log_s = np.asarray(jax.nn.log_softmax(state_raw))
    layout = (("binned", 4), ("state", 2))
    raw = jnp.concatenate([logits, state_raw])
    # x = 0.62 is in cell round(0.62 * 3) = 2; state "value"
    ll = float(log_likelihood(raw, jnp.array([0.62, 1.0, 0.0]), layout))
    assert ll == pytest.approx(log_p[2] + log_s[0], rel=1e-6)
    # a point mass (state 1): only the state's term; the value logits get no gradient
    x_mass = jnp.array([0.0, 0.0, 1.0])
    assert float(log_likelihood(raw, x_mass, layout)) == pytest.approx(log_s[1], rel=1e-6)
    grad = jax.grad(log_likelihood)(raw, x_mass, layout)
    np.testing.assert_array_equal(np.asarray(grad[:4]), 0.0)
    assert np.any(np.asarray(grad[4:]) != 0.0)
    # skip: the binned term adds nothing
    skipped = float(log_likelihood(raw, jnp.array([0.62, 1.0, 0.0]), layout, skip=("binned",)))
    assert skipped == pytest.approx(log_s[0], rel=1e-6)
    # widths: raw 4 + 2, data 1 + 2; no activation for a distribution head
    assert raw_width(layout) == 6 and layout_width(layout) == 3
    with pytest.raises(ValueError, match="got a 'binned' head"):
        activate(raw, layout)
    with pytest.raises(ValueError, match="expected head width >= 2, got 1"):
        check_layout([("binned", 1)])
    with pytest.raises(ValueError, match="expected a value head before a 'state' head"):
        check_layout([("categorical", 2), ("state", 2)])


def test_a_layouts_likelihood_is_the_sum_of_its_heads_with_state_gates_and_batches():
    """All heads at once equal head by head: each head's own single-head likelihood, a
    ``state`` head's "value" indicator gating the head before it, one row of a batch at a
    time, and the same gradient (float64, so sums in another order agree to rounding)."""
    layout = (
        ("bernoulli", 2), ("state", 2), ("gaussian", 3), ("binned", 5), ("state", 3),
        ("categorical", 4), ("binned", 3), ("state", 2), ("bernoulli", 1),
    )  # fmt: skip
    rng = np.random.default_rng(0)
    n = 6
    raw = jnp.asarray(3.0 * rng.standard_normal((n, raw_width(layout))))
    x = into_heads(jnp.asarray(rng.uniform(size=(n, layout_width(layout)))), layout)

    def by_head(r: jax.Array, v: jax.Array) -> jax.Array:
        total, terms, at_raw, at_data = 0.0, [], 0, 0
        for kind, width in layout:
            size = 1 if kind == "binned" else width
            rh, vh = r[at_raw : at_raw + width], v[at_data : at_data + size]
            term = log_likelihood(rh, vh, ((kind, width),))
            if kind == "state":
                terms[-1] = vh[0] * terms[-1]
            terms.append(term)
            at_raw, at_data = at_raw + width, at_data + size
        for term in terms:
            total = total + term
        return total

    with jax.enable_x64(True):
        raw64, x64 = raw.astype(jnp.float64), x.astype(jnp.float64)
        want = jax.jit(jax.vmap(by_head))(raw64, x64)  # one row at a time
        ll = jax.jit(log_likelihood, static_argnums=2)
        np.testing.assert_allclose(ll(raw64, x64, layout), want, rtol=1e-12)
        got_grad = jax.jit(jax.grad(ll), static_argnums=2)(raw64[0], x64[0], layout)
        want_grad = jax.jit(jax.grad(by_head))(raw64[0], x64[0])
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, atol=1e-15)
    # gated value heads get no gradient where their state is not "value"
    off = jnp.asarray(np.asarray(x[0]).copy())
    off = off.at[2].set(0.0).at[3].set(1.0)  # the first state head: not "value"
    grad = jax.jit(jax.grad(log_likelihood), static_argnums=2)(raw[0], off, layout)
    np.testing.assert_array_equal(np.asarray(grad[:2]), 0.0)


def test_all_heads_at_once_activate_as_each_head_alone():
    """activate computes every head at once: each head's own activation (softmax for a
    block, sigmoid, tanh, identity), for a batch, with the same Jacobian, in float64; large
    logits neither overflow nor leak a NaN into the gradient."""
    layout = (
        ("tanh", 1), ("categorical", 4), ("state", 2), ("bernoulli", 2), ("gaussian", 3),
        ("categorical", 1), ("state", 3),
    )  # fmt: skip
    rng = np.random.default_rng(1)
    raw = 3.0 * rng.standard_normal((5, raw_width(layout)))
    raw[0, 1] = 800.0  # exp would overflow without each head's peak taken off

    def by_head(r: jax.Array) -> jax.Array:
        parts, at = [], 0
        for kind, width in layout:
            piece = r[..., at : at + width]
            parts.append(
                jax.nn.softmax(piece, axis=-1)
                if kind in ("categorical", "state")
                else ACTIVATIONS[kind](piece)
            )
            at += width
        return jnp.concatenate(parts, axis=-1)

    with jax.enable_x64(True):
        raw64 = jnp.asarray(raw, jnp.float64)
        got = jax.jit(activate, static_argnums=1)(raw64, layout)
        np.testing.assert_allclose(got, jax.jit(by_head)(raw64), rtol=1e-12, atol=1e-300)
        jac = jax.jit(jax.jacrev(activate), static_argnums=1)(raw64[0], layout)
        assert np.all(np.isfinite(jac))
        want = jax.jit(jax.jacrev(by_head))(raw64[0])
        np.testing.assert_allclose(jac, want, rtol=1e-12, atol=1e-15)
