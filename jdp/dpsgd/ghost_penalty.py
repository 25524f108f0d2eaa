"""Exact per-example norms and clipped sums for the WGAN-GP critic loss (ghost clipping of a
gradient penalty), without per-example gradients or a per-example double backward.

**The loss.** :class:`GradientPenaltyLoss` is WGAN-GP's critic loss of ONE record, written as
its parts (Gulrajani et al. 2017, Alg. 1)::

    l(theta) = D(f) - D(x) + lambda (n - 1)^2,   v = grad_x D(x^),   n = sqrt(||v||^2 + eps)

with ``(x, f, x^) = points_fn(example, key, model_state)`` (the real record, a fake and their
interpolate; no parameters) and ``D = score_fn(theta, .)`` the critic. Called like any loss of
:mod:`jdp.dpsgd.clipping` it computes exactly that (the general ``vmap`` path differentiates
it twice); the path here reads its parts.

**The gradient.** Let the critic's Dense calls be ``z_l = a_l W_l + b_l`` (flax layout,
``a_l`` the layer input), ``d_l(p) = dD/dz_l`` at a point ``p`` (one backward pass), and
``u = d[lambda (n - 1)^2]/dv = 2 lambda (1 - 1/n) v``. The value terms give the usual outer
products at ``f`` and ``x``. The penalty depends on ``theta`` through ``v`` only, so its
gradient is ``u . dv/dtheta = dT/dtheta`` for ``T(theta) = u . v = D'(x^)[u]`` with ``u`` held
fixed: the forward-mode derivative of ``D`` at ``x^`` in direction ``u``. In that JVP program
a Dense call maps the tangent ``a'_l -> z'_l = a'_l W_l`` (no bias) and every other operation
by its Jacobian at the primal point. ``theta`` enters ``T`` in two ways: through ``W_l`` in
``z'_l``, which gives ``a'_l (dT/dz'_l)^T = a'_l d_l(x^)^T`` (``T`` is linear in the tangents,
the coefficient of ``z'_l`` is ``dD/dz_l``), and through the primal outputs ``z_l`` the
Jacobians are evaluated at, which gives ``a_l (dT/dz_l)^T``: second derivatives of ``D``.
For a critic that is piecewise linear in its layer outputs (leaky ReLU, ReLU, identity,
max/abs/select) every Jacobian depends on the ``z_l`` only through comparisons, which autodiff
differentiates as constants, so ``dT/dz_l = 0`` exactly (not only almost everywhere: the
general path's reverse-over-reverse uses the same masks). Hence, per example and layer::

    G_W = a_l(f) d_l(f)^T - a_l(x) d_l(x)^T + a'_l d_l(x^)^T        G_b = d_l(f) - d_l(x)

with ``a'_l`` the tangent of the layer input at ``x^`` in direction ``u`` (one JVP for all
layers at once, from the linearisation that also gives ``v`` and ``d_l(x^)``): three outer
products on the kernel, two vectors on the bias (the penalty has no bias gradient). The
ghost-norm identity of :mod:`jdp.dpsgd.ghost_clipping`,
``||sum_k a_k b_k^T||^2 = sum_{k,m} (a_k . a_m)(b_k . b_m)``, gives each per-example norm from
3x3 Gram matrices, and the clipped sum ``sum_i w_i G_i`` is one weighted product per layer
over the ``3B`` tokens (:func:`jdp.dpsgd.ghost_clipping.clipped_sum_from_tokens`: the value
terms are one call of the layer with kernel and bias, the penalty term a second call of its
kernel only, normed jointly).
Checked against ``vmap(grad)`` in float64 to ~1e-15 relative, asserted to 1e-10
(``tests/dpsgd/test_ghost_penalty.py``).

Cost of a step: a forward and a backward pass (to the layer outputs, no weight gradients) at
the ``2B`` fakes and records, one linearisation at the ``B`` interpolates (its forward pass,
its transpose for ``v`` and ``d_l(x^)``, one tangent pass for ``a'_l``), the Gram products and
one weight-gradient product per layer, against the general path's per-example double backward
and ``B`` per-example gradient pytrees.

**The structural check** (:func:`check_penalty_loss`, run when the path is traced and by
:func:`penalty_support`, which :func:`jdp.dpsgd.step.choose_method` asks for
``method="auto"``): on abstract shapes, never on data, it refuses (:class:`GhostUnsupported`)
unless (1) the loss is a :class:`GradientPenaltyLoss` without auxiliary output, (2) the
critic's parameters enter ``D`` only through Dense layers
(:func:`jdp.dpsgd.ghost_clipping.discover`, and no Embed or Conv), and (3) the critic is
piecewise linear in its layer outputs: in the jaxpr of ``D``'s JVP, with a zero added to
every Dense output, the tangent output does not depend on those zeros except through
operations whose derivative is zero (comparisons, integer casts, ``select``'s predicate,
``sign``/``floor``/``round``). A conservative walk: anything it does not know (``scan``,
``while``, a custom derivative rule) counts as a dependence. Smooth activations (tanh,
sigmoid, softplus, GELU, ELU), a product of two layer outputs and an LSTM critic fail (3);
``method="auto"`` then takes the general path.

Privacy:
    None of its own: the same clipped sum ``sum_i m_i clip(g_i)`` as the general path (the
    sensitivity ``C`` and the event are unchanged, see :mod:`jdp.dpsgd.clipping`). A wrong
    norm would void the bound, hence the check; a non-finite gradient is dropped (weight 0)
    as on the other paths.

References:
    Gulrajani et al., "Improved Training of Wasserstein GANs", NeurIPS 2017 (the loss);
    Goodfellow 2015, "Efficient per-example gradient computations"; Li et al., ICLR 2022
    (ghost norms); Frigerio et al. 2019, Alg. 1 (dp-GAN's critic).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.extend
import jax.numpy as jnp

from jdp.dpsgd.clipping import ClippedSum, StepInfo
from jdp.dpsgd.ghost_clipping import (
    GhostUnsupported,
    _Call,
    _traced_loss,
    clipped_sum_from_tokens,
    discover,
)

__all__ = [
    "GradientPenaltyLoss",
    "check_penalty_loss",
    "clipped_sum_penalty",
    "penalty_support",
]


@dataclass(frozen=True, eq=False)
class GradientPenaltyLoss:
    """WGAN-GP's critic loss of ONE record, as its parts (see the module docstring)::

        loss(params, example, key[, model_state])
            = D(fake) - D(real) + gp_weight (sqrt(||grad_x D(interp)||^2 + gp_eps) - 1)^2

    Attributes:
        score_fn: ``score_fn(params, x) -> scalar``, the critic ``D``.
        points_fn: ``points_fn(example, key, *model_state) -> (real, fake, interp)``, arrays
            of one shape; no parameters (the generator is held fixed).
        gp_weight: ``lambda`` (>= 0).
        gp_eps: the constant under the penalty's square root (keeps it differentiable at 0).
        bound_state: the model state bound by :meth:`bind_model_state` (``()``: none).
    """

    score_fn: Callable[[Any, jax.Array], jax.Array]
    points_fn: Callable[..., tuple[jax.Array, jax.Array, jax.Array]]
    gp_weight: float
    gp_eps: float = 1e-12
    bound_state: tuple = ()

    def points(self, example: Any, key: jax.Array, *model_state: Any) -> tuple:
        """``(real, fake, interp)`` of one record (the bound model state unless one is given)."""
        return self.points_fn(example, key, *(model_state or self.bound_state))

    def __call__(self, params: Any, example: Any, key: jax.Array, *model_state: Any) -> jax.Array:
        real, fake, interp = self.points(example, key, *model_state)

        def score(x: jax.Array) -> jax.Array:
            return self.score_fn(params, x)

        g = jax.grad(score)(interp)
        norm = jnp.sqrt(jnp.sum(g**2) + self.gp_eps)
        return score(fake) - score(real) + self.gp_weight * (norm - 1.0) ** 2

    def bind_model_state(self, model_state: Any) -> GradientPenaltyLoss:
        """The three-argument loss with ``model_state`` bound (the structure kept, so the path
        choice still sees a :class:`GradientPenaltyLoss`)."""
        return dataclasses.replace(self, bound_state=(model_state,))


# -- the structural check --------------------------------------------------------------------

#: Primitives whose derivative is zero (their outputs carry no dependence a derivative sees).
_NO_DERIVATIVE = frozenset({"sign", "floor", "ceil", "round", "stop_gradient", "is_finite"})
#: Call primitives whose inner jaxpr is their meaning (derivatives included): walked into.
_CALLS = frozenset({"jit", "pjit", "closed_call", "core_call", "remat", "checkpoint"})
#: Primitives linear or piecewise linear in each operand (for the refusal message only).
_PIECEWISE_LINEAR = frozenset(
    {
        "add", "add_any", "sub", "neg", "mul", "div", "dot_general", "select_n", "max", "min",
        "abs", "clamp", "reshape", "broadcast_in_dim", "squeeze", "expand_dims", "slice",
        "dynamic_slice", "gather", "concatenate", "transpose", "reduce_sum", "reduce_max",
        "reduce_min", "convert_element_type", "copy", "copy_p", "pad", "rev", "cumsum",
        "custom_jvp_call", "eq", "ne", "lt", "le", "gt", "ge",
    }
)  # fmt: skip


def _inner_jaxpr(eqn: Any) -> Any:
    """The inner jaxpr of a call primitive (same arity as the call), else ``None``."""
    if eqn.primitive.name not in _CALLS:
        return None
    for value in eqn.params.values():
        inner = value.jaxpr if isinstance(value, jax.extend.core.ClosedJaxpr) else value
        if isinstance(inner, jax.extend.core.Jaxpr) and len(inner.invars) == len(eqn.invars):
            return inner
    return None


def _live_outputs(jaxpr: Any, live_in: list[bool], seen: set[str]) -> list[bool]:
    """Which outputs of ``jaxpr`` may have a nonzero derivative w.r.t. the ``live_in`` inputs.

    Conservative: an operation's inexact outputs depend on all its live operands, except
    ``select_n``'s predicate, the :data:`_NO_DERIVATIVE` primitives and non-float outputs
    (comparisons, integer casts), whose derivative is zero; a ``jit`` is walked into, any
    other higher-order primitive (``scan``, ``while``, a custom derivative) counts as
    dependent on all its live operands. ``seen`` collects the primitives met on live paths.
    """
    literal = jax.extend.core.Literal
    live = {v for v, flag in zip(jaxpr.invars, live_in, strict=True) if flag}

    def is_live(v: Any) -> bool:
        return not isinstance(v, literal) and v in live

    for eqn in jaxpr.eqns:
        ins = [is_live(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name == "select_n":
            ins[0] = False  # the predicate: a comparison's outcome, no derivative
        if not any(ins) or name in _NO_DERIVATIVE:
            continue
        inner = _inner_jaxpr(eqn)
        if inner is not None:
            outs = _live_outputs(inner, ins, seen)
        else:
            seen.add(name)
            outs = [True] * len(eqn.outvars)
        for v, flag in zip(eqn.outvars, outs, strict=True):
            if flag and jnp.issubdtype(v.aval.dtype, jnp.inexact):
                live.add(v)
    return [is_live(v) for v in jaxpr.outvars]


def _score_loss(loss: GradientPenaltyLoss) -> Callable:
    """The critic as a one-example "loss" ``(params, x, key) -> D(x)`` for the ghost tracer."""
    return lambda params, x, key: loss.score_fn(params, x)


def check_penalty_loss(
    loss_fn: Any, params: Any, example: Any, key: jax.Array, *, has_aux: bool = False
) -> tuple[list[_Call], list, jax.ShapeDtypeStruct]:
    """The structural check (module docstring): the critic's Dense calls, their output shapes
    and the shape of one point, or a refusal. Traces on abstract shapes only.

    Raises:
        GhostUnsupported: the loss is not a :class:`GradientPenaltyLoss`, has auxiliary
            output, uses parameters outside Dense layers, or is not piecewise linear in its
            layer outputs.
    """
    if not isinstance(loss_fn, GradientPenaltyLoss):
        raise GhostUnsupported(
            f"expected a GradientPenaltyLoss (WGAN-GP's critic loss in parts), got "
            f"{type(loss_fn).__name__}"
        )
    if has_aux:
        raise GhostUnsupported("a GradientPenaltyLoss has no auxiliary output")
    shapes = jax.eval_shape(loss_fn.points, example, key)
    point = shapes[0]
    if any((s.shape, s.dtype) != (point.shape, point.dtype) for s in shapes):
        raise GhostUnsupported(f"expected real, fake and interp of one shape, got {shapes}")
    if not jnp.issubdtype(point.dtype, jnp.floating):
        raise GhostUnsupported(f"expected floating points, got {point.dtype}")
    x0 = jnp.zeros(point.shape, point.dtype)
    score = _score_loss(loss_fn)
    try:
        calls, outputs = discover(score, params, x0, key, False)
    except GhostUnsupported as err:
        raise GhostUnsupported(
            "the critic's parameters must enter only through Dense layers (an MLP critic; an "
            f"LSTM or other layers take the general path): {err}"
        ) from err
    other = sorted({c.kind for c in calls} - {"dense"})
    if other:
        raise GhostUnsupported(
            f"the critic uses {', '.join(other)} layers; the gradient-penalty path handles "
            "Dense layers only"
        )
    out = jax.eval_shape(lambda x: loss_fn.score_fn(params, x), x0)
    if out.shape != ():
        raise GhostUnsupported(f"expected the critic to return a scalar, got shape {out.shape}")
    eps = [jnp.zeros(o.shape, o.dtype) for o in outputs]

    def tangent(x, x_dot, eps):
        f = lambda y: _traced_loss(score, False, params, y, key, eps)[0]
        return jax.jvp(f, (x,), (x_dot,))[1]

    def primal(x, eps):
        return _traced_loss(score, False, params, x, key, eps)[0]

    try:
        closed = jax.make_jaxpr(tangent)(x0, x0, eps)
    except Exception as err:  # e.g. a custom_vjp critic: no forward mode
        raise GhostUnsupported(
            f"the critic has no forward-mode derivative ({type(err).__name__})"
        ) from err
    live_in = [False, False] + [True] * len(eps)
    if _live_outputs(closed.jaxpr, live_in, set())[0]:
        seen: set[str] = set()
        _live_outputs(jax.make_jaxpr(primal)(x0, eps).jaxpr, [False] + [True] * len(eps), seen)
        ops = sorted(seen - _PIECEWISE_LINEAR)
        what = ", ".join(ops) if ops else "a product of layer outputs or another curvature"
        raise GhostUnsupported(
            f"the critic is not piecewise linear in its layer outputs ({what}): the gradient "
            "penalty's gradient then has second-derivative terms the exact-norm path omits "
            "(use leaky ReLU, ReLU or identity activations, or the general path)"
        )
    return calls, outputs, point


def penalty_support(
    loss_fn: Any, params: Any, example: Any, *, has_aux: bool = False
) -> str | None:
    """``None`` if :func:`clipped_sum_penalty` is exact for this loss, else the reason.

    ``example`` is one record (no batch axis); only its shapes are read, so the answer
    reveals nothing about the data."""
    try:
        check_penalty_loss(loss_fn, params, example, jax.random.key(0), has_aux=has_aux)
    except GhostUnsupported as err:
        return str(err)
    return None


# -- the clipped sum ---------------------------------------------------------------------------


def clipped_sum_penalty(
    loss_fn: GradientPenaltyLoss,
    params: Any,
    batch: Any,
    mask: jax.Array,
    keys: jax.Array,
    *,
    l2_clip_norm: Any,
    has_aux: bool = False,
) -> tuple[ClippedSum, StepInfo]:
    """The clipped sum of :func:`jdp.dpsgd.clipping.clipped_sum_general` for a
    :class:`GradientPenaltyLoss`, from exact per-example norms (module docstring).

    Raises:
        GhostUnsupported: when traced, if :func:`check_penalty_loss` refuses the loss.
    """
    example = jax.tree_util.tree_map(lambda x: x[0], batch)
    calls, outputs, _ = check_penalty_loss(loss_fn, params, example, keys[0], has_aux=has_aux)
    score = _score_loss(loss_fn)
    key0 = keys[0]  # unused by the critic; the tracer's signature wants one
    real, fake, interp = jax.vmap(loss_fn.points)(batch, keys)
    b = mask.shape[0]

    def one(x: jax.Array, e: list) -> tuple[jax.Array, list]:
        d, _, _, inputs, _ = _traced_loss(score, False, params, x, key0, e)
        return d, inputs

    # Fake and real: layer inputs a_l and layer-output gradients d_l, one forward and one
    # backward pass over the 2B points (no weight gradients).
    def values(eps: list) -> tuple[jax.Array, list]:
        d, inputs = jax.vmap(jax.vmap(one))(jnp.stack([fake, real], axis=1), eps)
        return jnp.sum(d), inputs

    eps = [jnp.zeros((b, 2) + o.shape, o.dtype) for o in outputs]
    d_val, a_val = jax.grad(values, has_aux=True)(eps)

    # The interpolate: one linearisation of D (and its layer inputs) at x^; its transpose gives
    # v = grad_x D and d_l(x^), then u = 2 lambda (1 - 1/n) v and, applied to u, the tangents
    # a'_l = J_{<l} u of every layer input (no second forward pass).
    def penalty(x_hat: jax.Array) -> tuple[list, list]:
        e0 = [jnp.zeros(o.shape, o.dtype) for o in outputs]
        (d, inputs), lin = jax.linearize(one, x_hat, e0)
        cotangent = (jnp.ones_like(d), [jnp.zeros_like(a) for a in inputs])
        v, d_hat = jax.linear_transpose(lin, x_hat, e0)(cotangent)
        n = jnp.sqrt(jnp.sum(v**2) + loss_fn.gp_eps)
        u = 2.0 * loss_fn.gp_weight * (n - 1.0) / n * v
        return lin(u, e0)[1], d_hat

    tangents, d_hat = jax.vmap(penalty)(interp)

    # Tokens: the value terms as one call of each layer (kernel and bias; fake +, real -),
    # the penalty as a second call of its kernel alone (the penalty has no bias gradient).
    token_calls, token_inputs, token_grads = [], [], []
    for c, call in enumerate(calls):
        g = d_val[c]
        sign = jnp.asarray([1.0, -1.0], g.dtype).reshape((1, 2) + (1,) * (g.ndim - 2))
        token_calls.append(call)
        token_inputs.append(a_val[c])
        token_grads.append(g * sign)
        token_calls.append(_Call("dense", {"kernel": call.leaves["kernel"]}, None))
        token_inputs.append(tangents[c][:, None])
        token_grads.append(d_hat[c][:, None])
    return clipped_sum_from_tokens(
        token_calls, token_inputs, token_grads, params, mask, l2_clip_norm=l2_clip_norm
    )
