"""The output heads of a generator: one vocabulary for every decoder and generator.

A network emits one raw vector of width ``d``; a :data:`HeadLayout` -- a tuple of
``(kind, width)`` pairs -- says how consecutive segments of it are read. Four kinds:

========================  ===================  ===========================  ===================
kind                      data it models       activation (:func:`activate`)  log-likelihood
========================  ===================  ===========================  ===================
``"bernoulli"``           ``[0, 1]`` values    ``sigmoid``                  cross entropy
``"tanh"``                ``[-1, 1]`` values   ``tanh``                     none (GAN heads)
``"gaussian"``            real values          identity (linear)            ``N(x; raw, 1)``
``"categorical"``         one one-hot block    ``softmax`` over the block   ``log softmax``
========================  ===================  ===========================  ===================

Continuous columns reach their public bounds through a ``bernoulli`` (sigmoid) or ``tanh``
head after the encoder's min-max scaling to ``[0, 1]`` or ``[-1, 1]``, or a linear
``gaussian`` head; each categorical variable is one ``categorical`` head (softmax); a binary
column is a ``bernoulli`` head or a two-way ``categorical`` one. :func:`heads_for_spans`
reads the layout off a :class:`~jdp.data.transforms.TableEncoder`'s spans (P3GM Sec. IV-C:
"a Bernoulli or Gaussian MLP depending on the type of data"; dp-GAN, Frigerio et al. 2019,
Sec. 3.1: softmax per categorical, sigmoid/tanh per numeric column).

Everything here is a pure function of raw outputs, jit-able with the layout static, and
works on one example or any leading batch shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol

import jax
import jax.numpy as jnp

HeadKind = Literal["bernoulli", "tanh", "gaussian", "categorical"]
HeadLayout = tuple[tuple[HeadKind, int], ...]
KINDS: tuple[str, ...] = ("bernoulli", "tanh", "gaussian", "categorical")

#: The head kind of an encoder span's output activation (:attr:`Span.activation`).
SPAN_HEADS: dict[str, HeadKind] = {
    "sigmoid": "bernoulli",
    "tanh": "tanh",
    "identity": "gaussian",
    "softmax": "categorical",
}


class _Span(Protocol):
    activation: str

    @property
    def size(self) -> int: ...


def check_layout(layout: Sequence[tuple[str, int]]) -> HeadLayout:
    """Validate a head layout and return it as a tuple of ``(kind, width)`` pairs."""
    out = []
    for kind, width in layout:
        if kind not in KINDS:
            raise ValueError(f"expected head kind in {KINDS}, got {kind!r}")
        if int(width) < 1:
            raise ValueError(f"expected head width >= 1, got {width}")
        out.append((kind, int(width)))
    if not out:
        raise ValueError("expected a non-empty head layout, got ()")
    return tuple(out)


def layout_width(layout: HeadLayout) -> int:
    """Total width ``d`` of the raw (and of the decoded) vector."""
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


def _segments(raw: jax.Array, layout: HeadLayout) -> Iterable[tuple[HeadKind, int, jax.Array]]:
    start = 0
    for kind, width in layout:
        yield kind, width, raw[..., start : start + width]
        start += width


def _softmax(r: jax.Array) -> jax.Array:
    return jax.nn.softmax(r, axis=-1)


def _identity(r: jax.Array) -> jax.Array:
    return r


#: Each kind's activation: raw output -> the mean of the modelled value.
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "bernoulli": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    "gaussian": _identity,
    "categorical": _softmax,
}


def activate(raw: jax.Array, layout: HeadLayout) -> jax.Array:
    """Each head's activation on raw outputs of shape ``(..., d)`` (the deterministic output
    layer of a generator): sigmoid, tanh, identity, or softmax over a categorical block."""
    return jnp.concatenate([ACTIVATIONS[kind](r) for kind, _, r in _segments(raw, layout)], -1)


def log_likelihood(raw: jax.Array, x: jax.Array, layout: HeadLayout) -> jax.Array:
    """``log p(x | raw)`` of ONE example, summed over heads (see the module table).

    ``bernoulli``: ``x log p + (1 - x) log(1 - p)`` with ``p = sigmoid(raw)`` (``x`` in
    ``[0, 1]``); ``gaussian``: ``-(x - raw)^2 / 2 - log(2 pi) / 2`` per coordinate (unit
    variance); ``categorical``: ``sum_k x_k log softmax(raw)_k``. A ``tanh`` head has no
    likelihood here (``ValueError``).
    """
    total = jnp.zeros((), raw.dtype)
    for (kind, _, r), (_, _, v) in zip(_segments(raw, layout), _segments(x, layout)):
        if kind == "bernoulli":
            total += jnp.sum(v * jax.nn.log_sigmoid(r) + (1.0 - v) * jax.nn.log_sigmoid(-r))
        elif kind == "gaussian":
            total += jnp.sum(-0.5 * (v - r) ** 2 - 0.5 * math.log(2 * math.pi))
        elif kind == "categorical":
            total += jnp.sum(v * jax.nn.log_softmax(r))
        else:
            raise ValueError(f"expected a head kind with a likelihood, got {kind!r}")
    return total


def decode_sample(
    key: jax.Array, raw: jax.Array, layout: HeadLayout, *, stochastic: bool
) -> jax.Array:
    """Turn raw outputs (any leading batch shape) into data-space values.

    ``categorical`` heads are always a one-hot draw from the decoded softmax (so a label
    column's distribution is the model's, never a copied ratio). ``bernoulli`` heads give the
    mean ``sigmoid(raw)``, ``gaussian`` heads the mean ``raw`` and ``tanh`` heads
    ``tanh(raw)``; with ``stochastic`` the first two give a 0/1 draw and mean + N(0, 1).
    """
    parts = []
    for kind, width, r in _segments(raw, layout):
        key, sub = jax.random.split(key)
        if kind == "categorical":
            parts.append(jax.nn.one_hot(jax.random.categorical(sub, r), width, dtype=raw.dtype))
            continue
        mean = ACTIVATIONS[kind](r)
        if stochastic and kind == "bernoulli":
            mean = jax.random.bernoulli(sub, mean).astype(raw.dtype)
        elif stochastic and kind == "gaussian":
            mean = mean + jax.random.normal(sub, r.shape, raw.dtype)
        parts.append(mean)
    return jnp.concatenate(parts, axis=-1)
