"""The output heads of a generator: one vocabulary for every decoder and generator.

A network emits one raw vector; a :data:`HeadLayout` -- a tuple of ``(kind, width)`` pairs --
says how consecutive segments of it are read. Five kinds:

========================  ===================  ===========================  ===================
kind                      data it models       activation (:func:`activate`)  log-likelihood
========================  ===================  ===========================  ===================
``"bernoulli"``           ``[0, 1]`` values    ``sigmoid``                  cross entropy
``"tanh"``                ``[-1, 1]`` values   ``tanh``                     none (GAN heads)
``"gaussian"``            real values          identity (linear)            ``N(x; raw, 1)``
``"categorical"``         one one-hot block    ``softmax`` over the block   ``log softmax``
``"binned"``              one ``[0, 1]`` value none (sampled only)          ``log softmax`` of
                                                                            its cell
``"state"``               one one-hot block    ``softmax`` over the block   ``log softmax``;
                                                                            gates the head
                                                                            before it
========================  ===================  ===========================  ===================

A ``"state"`` head is a categorical head over a numeric column's states (a
:class:`~jdp.data.transforms.TableEncoder` state indicator: "value", its point masses,
"missing"), placed right after the column's value head. The value exists only in the state
"value" (its first category): on a point mass or a missing value the value coordinate is a
placeholder, so the value head's log-likelihood counts only where ``x_state[0] = 1``,
``log p(x) = log p(state) + [state = value] log p(value)``, and is not taught the
placeholder (for Adult's capital-gain, 0 on 92% of rows).

For every kind but ``"binned"`` the width is both the raw width and the data width. A
``"binned"`` head of width ``B >= 2`` reads ``B`` raw logits for ONE data coordinate ``x`` in
``[0, 1]``: a histogram density on the grid ``c_k = k / (B - 1)``, cell ``k`` the interval
``[c_k - h, c_k + h] & [0, 1]`` with ``h = 1 / (2 (B - 1))`` (half cells at the ends), each
cell's mass ``softmax(raw)_k`` spread uniformly over it. Its log-likelihood is the log-mass of
the cell of ``x`` (``k = round(x (B - 1))``; the density's ``-log |cell|`` is a constant and is
left out), and a sample is a cell drawn from the softmax, then a uniform point in it. With
``B = R`` for an integer column of ``R`` values scaled to ``[0, 1]``, the cells are exactly
its integers (a point in cell ``k`` rounds back to the ``k``-th integer), so the head is a
categorical distribution over the column's values; a continuous column gets a ``B``-cell
histogram. Unlike a mean head it models the spread and the shape of a numeric column given
the network's input (a sigmoid or Gaussian head decoded at its mean collapses it). So
:func:`raw_width` (network output) and :func:`layout_width` (decoded data) differ when a
layout has binned heads.

Continuous columns reach their public bounds through a ``bernoulli`` (sigmoid) or ``tanh``
head after the encoder's min-max scaling to ``[0, 1]`` or ``[-1, 1]``, or a linear
``gaussian`` head; each categorical variable is one ``categorical`` head (softmax); a binary
column is a ``bernoulli`` head or a two-way ``categorical`` one. :func:`heads_for_spans`
reads the layout off a :class:`~jdp.data.transforms.TableEncoder`'s spans (P3GM Sec. IV-C:
"a Bernoulli or Gaussian MLP depending on the type of data"; dp-GAN, Frigerio et al. 2019,
Sec. 3.1: softmax per categorical, sigmoid/tanh per numeric column); :func:`heads_for_encoder`
is the policy that gives numeric columns histogram heads instead (``"binned"``, gated by their
``"state"`` heads) when the output layer allows, and :func:`into_heads` clips a data-space
vector into what each head models (a target for :func:`log_likelihood`).

Everything here is a pure function of raw outputs, jit-able with the layout static, and
works on one example or any leading batch shape.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jdp.random import normal

HeadKind = Literal["bernoulli", "tanh", "gaussian", "categorical", "binned", "state"]
HeadLayout = tuple[tuple[HeadKind, int], ...]
KINDS: tuple[str, ...] = ("bernoulli", "tanh", "gaussian", "categorical", "binned", "state")
#: Kinds read as a one-hot block: a softmax over the block, sampled as a one-hot draw.
BLOCK_KINDS: tuple[str, ...] = ("categorical", "state")

#: The head kind of an encoder span's output activation (:attr:`Span.activation`).
SPAN_HEADS: dict[str, HeadKind] = {
    "sigmoid": "bernoulli",
    "tanh": "tanh",
    "identity": "gaussian",
    "softmax": "categorical",
}


#: The likelihoods a numeric column's head may take (:func:`heads_for_encoder`).
NUMERIC_HEADS: tuple[str, ...] = ("auto", "binned", "bernoulli")


class _Span(Protocol):
    activation: str

    @property
    def size(self) -> int: ...


class _Column(Protocol):
    name: str
    kind: str
    lower: float | None
    upper: float | None

    @property
    def is_numeric(self) -> bool: ...

    @property
    def is_integer_valued(self) -> bool: ...


class _Encoder(Protocol):
    """What :func:`heads_for_encoder` reads of a :class:`~jdp.data.transforms.TableEncoder`."""

    @property
    def source_columns(self) -> Sequence[_Column]: ...

    @property
    def columns(self) -> Sequence[_Column]: ...

    @property
    def spans(self) -> Sequence[_Span]: ...


def check_layout(layout: Sequence[tuple[str, int]]) -> HeadLayout:
    """Validate a head layout and return it as a tuple of ``(kind, width)`` pairs."""
    out: list[tuple[HeadKind, int]] = []
    for kind, width in layout:
        if kind == "state" and (not out or out[-1][0] in BLOCK_KINDS):
            raise ValueError("expected a value head before a 'state' head")
        if kind not in KINDS:
            raise ValueError(f"expected head kind in {KINDS}, got {kind!r}")
        least = 2 if kind == "binned" else 1
        if int(width) < least:
            raise ValueError(f"expected head width >= {least}, got {width} ({kind})")
        out.append((kind, int(width)))
    if not out:
        raise ValueError("expected a non-empty head layout, got ()")
    return tuple(out)


def data_width(kind: str, width: int) -> int:
    """Data coordinates of one head: 1 for ``"binned"`` (``width`` cells, one value), else
    ``width``."""
    return 1 if kind == "binned" else width


def layout_width(layout: HeadLayout) -> int:
    """Total width ``d`` of the decoded (data-space) vector."""
    return sum(data_width(k, w) for k, w in layout)


def raw_width(layout: HeadLayout) -> int:
    """Total width of the raw vector a network emits (``layout_width`` plus ``B - 1`` per
    binned head of ``B`` cells)."""
    return sum(w for _, w in layout)


def heads_for_spans(spans: Iterable[_Span], *, merge: bool = False) -> HeadLayout:
    """The head layout of an encoder's spans: one head per span, its kind from
    :data:`SPAN_HEADS`. ``merge=True`` joins neighbouring element-wise heads of one kind
    (``bernoulli``, ``tanh``, ``gaussian``) into one wider head; categorical heads stay one
    per variable (their softmax is over the block)."""
    layout: list[tuple[HeadKind, int]] = []
    for span in spans:
        kind = SPAN_HEADS[span.activation]
        if merge and layout and kind != "categorical" and layout[-1][0] == kind:
            layout[-1] = (kind, layout[-1][1] + span.size)
        else:
            layout.append((kind, span.size))
    return tuple(layout)


def numeric_cells(column: _Column, max_cells: int) -> int:
    """Cells of a numeric column's ``"binned"`` head: one per value of an integer-valued
    column (integer, or date as day counts) with at most ``max_cells`` values (``upper -
    lower + 1``), else ``max_cells`` (the count of :func:`jdp.data.transforms.value_cells`,
    restated here: ``jdp.nn`` and ``jdp.data`` are one layer and do not import each other)."""
    if column.is_integer_valued and column.upper - column.lower + 1 <= max_cells:
        return int(column.upper - column.lower) + 1
    return max_cells


def heads_for_encoder(
    encoder: _Encoder,
    *,
    numeric_head: str = "auto",
    numeric_bins: int = 32,
    max_raw_width: int | None = None,
) -> HeadLayout:
    """The head layout of a :class:`~jdp.data.transforms.TableEncoder`, numeric columns by
    ``numeric_head`` (one of :data:`NUMERIC_HEADS`); public: a function of the schema.

    * ``"bernoulli"``: :func:`heads_for_spans` ``(spans, merge=True)`` -- one cross-entropy
      head over each run of ``[0, 1]`` coordinates, decoded at its mean (right for pixels);
    * ``"binned"``: one ``"binned"`` head per numeric column (:func:`numeric_cells` cells of
      ``numeric_bins`` at most: a histogram, sampled at generation, so a column keeps its
      spread and shape), a ``"state"`` head per state indicator (an encoded column that is not
      a source column: :attr:`TableEncoder.columns`), a ``"categorical"`` head per category
      block; the numeric coordinates must be scaled to ``[0, 1]``;
    * ``"auto"``: the binned layout when its :func:`raw_width` is at most ``max_raw_width``
      (e.g. the decoder's hidden width: a few numeric columns), the bernoulli one otherwise.
    """
    if numeric_head not in NUMERIC_HEADS:
        raise ValueError(f"expected numeric_head in {NUMERIC_HEADS}, got {numeric_head!r}")
    bernoulli = heads_for_spans(encoder.spans, merge=True)
    if numeric_head == "bernoulli":
        return bernoulli
    if numeric_head == "auto" and max_raw_width is None:
        raise ValueError("expected max_raw_width with numeric_head='auto'")
    sources = {c.name for c in encoder.source_columns}
    binned: list[tuple[HeadKind, int]] = []
    for col, span in zip(encoder.columns, encoder.spans, strict=True):
        if col.is_numeric and span.activation != "sigmoid":
            raise ValueError(
                f"expected numeric columns scaled to [0, 1] for binned heads, got "
                f"{span.activation!r} ({col.name})"
            )
        if col.is_numeric:
            binned.append(("binned", numeric_cells(col, numeric_bins)))
        else:
            binned.append(("categorical" if col.name in sources else "state", span.size))
    if numeric_head == "auto" and raw_width(tuple(binned)) > max_raw_width:
        return bernoulli
    return tuple(binned)


def _segments(
    v: jax.Array, layout: HeadLayout, *, data: bool = False
) -> Iterable[tuple[HeadKind, int, jax.Array]]:
    """``(kind, width, segment)`` per head of a raw vector (``data=True``: of a data-space
    vector, one coordinate per binned head)."""
    start = 0
    for kind, width in layout:
        size = data_width(kind, width) if data else width
        yield kind, width, v[..., start : start + size]
        start += size


def _identity(r: jax.Array) -> jax.Array:
    return r


#: Each coordinate-wise kind's activation: raw output -> the mean of the modelled value (a
#: ``categorical`` or ``state`` block's is its softmax, :func:`activate`).
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "bernoulli": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    "gaussian": _identity,
}


def activate(raw: jax.Array, layout: HeadLayout) -> jax.Array:
    """Each head's activation on raw outputs of shape ``(..., d)`` (the deterministic output
    layer of a generator): sigmoid, tanh, identity, or softmax over a categorical block. A
    ``"binned"`` head has none (``ValueError``): it is a distribution, read by
    :func:`log_likelihood` and :func:`decode_sample`.

    Computed for all heads at once, as :func:`log_likelihood`: each coordinate's softmax
    from its head's peak and sum (the membership matrix), then each kind's activation
    selected per coordinate."""
    if any(kind == "binned" for kind, _ in layout):
        raise ValueError("expected heads with an activation, got a 'binned' head")
    plan = _plan(layout)
    shifted = jnp.exp(raw - _head_peak(raw, plan)[..., plan.head])  # <= 1: no overflow
    softmax = shifted / (shifted @ jnp.asarray(plan.member, raw.dtype))[..., plan.head]
    out = softmax
    for kind, activation in ACTIVATIONS.items():
        out = jnp.where(plan.kind == kind, activation(raw), out)
    return out


def _head_peak(raw: jax.Array, plan: _Plan) -> jax.Array:
    """Each head's largest raw coordinate, ``(..., H)``, held constant under
    differentiation (the softmax and log-sum-exp it steadies do not depend on it)."""
    heads = jnp.where(plan.padded_ok, raw[..., plan.padded], -jnp.inf)  # (..., H, widest)
    return jax.lax.stop_gradient(jnp.max(heads, axis=-1))


def binned_cell(x: jax.Array, cells: int) -> jax.Array:
    """The cell ``round(x (B - 1))`` (clipped to ``[0, B - 1]``) of values ``x`` in ``[0, 1]``
    in a ``"binned"`` head of ``B = cells`` cells."""
    return jnp.clip(jnp.round(x * (cells - 1)), 0, cells - 1).astype(jnp.int32)


@dataclass(frozen=True)
class _Plan:
    """The static reading of a layout by :func:`log_likelihood`, :func:`activate` and
    :func:`into_heads`, one entry per raw coordinate (``W`` of them) or per head (``H``):
    ``kind`` its head's kind, ``member`` the ``(W, H)`` 0/1 matrix of which head holds each
    coordinate, ``data`` the data coordinate each raw one reads (a binned head's
    ``B`` logits all read its one value), ``offset`` its place in its head, ``cells`` its
    head's width, ``binned``/``block``/``bernoulli``/``gaussian`` its head's kind, ``gated``
    the heads followed by a ``state`` head and ``gate`` the data coordinate of that state's
    "value" indicator; ``data_member`` and ``data_kind`` the membership matrix and the
    kind of each data coordinate (:func:`into_heads`); ``padded`` each head's raw
    coordinates as a row of the widest head's width (its last one repeated) and
    ``padded_ok`` which of them are its own (the heads' maxima in one reduction)."""

    head: np.ndarray
    kind: np.ndarray
    member: np.ndarray
    data: np.ndarray
    offset: np.ndarray
    cells: np.ndarray
    binned: np.ndarray
    block: np.ndarray
    bernoulli: np.ndarray
    gaussian: np.ndarray
    gated: np.ndarray
    gate: np.ndarray
    data_member: np.ndarray
    data_kind: np.ndarray
    padded: np.ndarray
    padded_ok: np.ndarray


@functools.lru_cache(maxsize=64)
def _plan(layout: HeadLayout) -> _Plan:
    kinds = np.array([k for k, _ in layout])
    widths = np.array([w for _, w in layout])
    raw_starts = np.cumsum(widths) - widths
    data_widths = np.array([data_width(k, w) for k, w in layout])
    data_starts = np.cumsum(data_widths) - data_widths
    head = np.repeat(np.arange(len(layout)), widths)
    offset = np.arange(len(head)) - raw_starts[head]
    binned = kinds[head] == "binned"
    member = np.zeros((len(head), len(layout)), np.float32)
    member[np.arange(len(head)), head] = 1.0
    gated = np.append(kinds[1:] == "state", False)
    cols = np.arange(widths.max())[None, :]
    index = np.int32  # one integer type whether or not 64-bit mode is on
    return _Plan(
        head=head.astype(index),
        kind=kinds[head],
        member=member,
        data=np.where(binned, data_starts[head], data_starts[head] + offset).astype(index),
        offset=offset.astype(index),
        cells=widths[head].astype(index),
        binned=binned,
        block=np.isin(kinds[head], (*BLOCK_KINDS, "binned")),
        bernoulli=kinds[head] == "bernoulli",
        gaussian=kinds[head] == "gaussian",
        gated=gated,
        gate=np.where(gated, np.append(data_starts[1:], 0), 0).astype(index),
        data_member=member[np.repeat(raw_starts, data_widths)],
        data_kind=np.repeat(kinds, data_widths),
        padded=np.minimum(
            raw_starts[:, None] + cols, raw_starts[:, None] + widths[:, None] - 1
        ).astype(index),
        padded_ok=cols < widths[:, None],
    )


def log_likelihood(
    raw: jax.Array, x: jax.Array, layout: HeadLayout, *, skip: Collection[str] = ()
) -> jax.Array:
    """``log p(x | raw)`` summed over heads (see the module table), per example over the
    last axis (a scalar for one example).

    ``bernoulli``: ``x log p + (1 - x) log(1 - p)`` with ``p = sigmoid(raw)`` (``x`` in
    ``[0, 1]``); ``gaussian``: ``-(x - raw)^2 / 2 - log(2 pi) / 2`` per coordinate (unit
    variance); ``categorical`` and ``state``: ``sum_k x_k log softmax(raw)_k``, a ``state``
    head multiplying the term of the head before it by ``x_state[0]`` (the module
    docstring); ``binned``: ``log softmax(raw)_k`` of the cell ``k`` of ``x``
    (:func:`binned_cell`), i.e. ``sum_k t_k log softmax(raw)_k`` with ``t`` the cell's
    one-hot. A ``tanh`` head has no likelihood here (``ValueError``). Heads of a kind in
    ``skip`` add 0 (e.g. ``skip=("binned",)`` fits every head but the histograms). ``raw``
    has :func:`raw_width` coordinates, ``x`` :func:`layout_width`.

    Computed for all heads at once, not head by head: every coordinate's term in raw
    space, each softmax head's log-normaliser ``max + log sum exp(raw - max)`` and each
    head's total through the static head-membership matrix (a few array operations
    whatever the number of heads: a loop over Adult's 17 heads made the per-example
    gradient's program 3x slower to compile, at the same run time).
    """
    kinds = {kind for kind, _ in layout} - set(skip)
    if "tanh" in kinds:
        raise ValueError("expected a head kind with a likelihood, got 'tanh'")
    plan = _plan(layout)
    member = jnp.asarray(plan.member, raw.dtype)
    v = x[..., plan.data]
    target = jnp.where(plan.binned, binned_cell(v, plan.cells) == plan.offset, v)
    peak = _head_peak(raw, plan)
    normaliser = jnp.log(jnp.exp(raw - peak[..., plan.head]) @ member) + peak
    terms = jnp.where(plan.block, target * (raw - normaliser[..., plan.head]), 0.0)
    bernoulli = v * jax.nn.log_sigmoid(raw) + (1.0 - v) * jax.nn.log_sigmoid(-raw)
    terms += jnp.where(plan.bernoulli, bernoulli, 0.0)
    gaussian = -0.5 * (v - raw) ** 2 - 0.5 * math.log(2 * math.pi)
    terms += jnp.where(plan.gaussian, gaussian, 0.0)
    per_head = terms @ member * jnp.where(plan.gated, x[..., plan.gate], 1.0)
    kept = np.array([kind not in skip for kind, _ in layout])
    return jnp.sum(jnp.where(kept, per_head, 0.0), axis=-1)


def decode_sample(
    key: jax.Array, raw: jax.Array, layout: HeadLayout, *, stochastic: bool
) -> jax.Array:
    """Turn raw outputs (any leading batch shape) into data-space values.

    ``categorical`` and ``state`` heads are always a one-hot draw from the decoded softmax (so
    a label column's distribution is the model's, never a copied ratio), ``binned`` heads always a
    draw from their histogram: a cell ``k`` from the softmax, then ``(k + U) / (B - 1)`` with
    ``U ~ Uniform(-1/2, 1/2)`` (``|U|`` in the end cells, which are halves: a uniform point
    of the cell, the module docstring). ``bernoulli`` heads give the mean ``sigmoid(raw)``, ``gaussian`` heads
    the mean ``raw`` and ``tanh`` heads ``tanh(raw)``; with ``stochastic`` the first two give
    a 0/1 draw and mean + N(0, 1). Returns :func:`layout_width` coordinates.
    """
    parts = []
    for kind, width, r in _segments(raw, layout):
        key, sub = jax.random.split(key)
        if kind in BLOCK_KINDS:
            parts.append(jax.nn.one_hot(jax.random.categorical(sub, r), width, dtype=raw.dtype))
            continue
        if kind == "binned":
            k_cell, k_point = jax.random.split(sub)
            cell = jax.random.categorical(k_cell, r)[..., None].astype(raw.dtype)
            u = jax.random.uniform(k_point, cell.shape, raw.dtype, -0.5, 0.5)
            end = width - 1
            point = jnp.where(
                cell == 0, jnp.abs(u), jnp.where(cell == end, end - jnp.abs(u), cell + u)
            )
            parts.append(point / end)
            continue
        mean = ACTIVATIONS[kind](r)
        if stochastic and kind == "bernoulli":
            mean = jax.random.bernoulli(sub, mean).astype(raw.dtype)
        elif stochastic and kind == "gaussian":
            mean = mean + normal(sub, r.shape, raw.dtype)
        parts.append(mean)
    return jnp.concatenate(parts, axis=-1)


def into_heads(x: jax.Array, layout: HeadLayout) -> jax.Array:
    """Clip a data-space vector (any leading batch shape) to what each head models:
    ``[0, 1]`` (bernoulli, binned), ``[-1, 1]`` (tanh), a probability vector (categorical,
    state: clipped at 0, renormalised; uniform when nothing is left), unchanged (gaussian).
    The result is a valid ``x`` for :func:`log_likelihood`. All heads at once, as there."""
    plan = _plan(layout)
    kind, member = plan.data_kind, jnp.asarray(plan.data_member, x.dtype)
    block = np.isin(kind, BLOCK_KINDS)
    positive = jnp.where(block, jnp.maximum(x, 0.0), 0.0)
    total = (positive @ member) @ member.T  # each coordinate's block total
    width = plan.data_member.sum(axis=0) @ plan.data_member.T
    share = jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0), 1.0 / width)
    out = jnp.where(np.isin(kind, ("bernoulli", "binned")), jnp.clip(x, 0.0, 1.0), x)
    out = jnp.where(kind == "tanh", jnp.clip(x, -1.0, 1.0), out)
    return jnp.where(block, share, out)


def uniform_binned_heads(dense: Mapping[str, Any], layout: HeadLayout) -> dict[str, Any]:
    """An output layer's parameters ``{"kernel", "bias"}`` (raw width :func:`raw_width`)
    with zero weights and biases on its binned heads' logits, so each histogram starts
    uniform over its cells whatever the input (a random output layer would start it peaked
    at arbitrary cells)."""
    keep = jnp.asarray(np.concatenate([np.full(w, kind != "binned") for kind, w in layout]))
    return {**dense, "kernel": dense["kernel"] * keep, "bias": dense["bias"] * keep}
