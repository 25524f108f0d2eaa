"""Ghost clipping: per-example gradient norms without per-example gradients.

For a layer whose output is linear in its weights, the per-example weight gradient is a sum
over the layer's "tokens" ``t`` (positions of a sequence, pixels of a convolution, the calls
of a shared layer): ``G_W = sum_t a_t g_t^T``, where ``a_t`` is the layer input (a dense
input, an image patch, the one-hot of an embedding index) and ``g_t = dL/dy_t`` the gradient
at the layer output. Hence (Goodfellow 2015; Li et al. 2022, "ghost norm")::

    ||G_W||_F^2 = sum_{t,s} <a_t, a_s> <g_t, g_s>        ||G_b||^2 = ||sum_t g_t||^2

with ``<a_t, a_s> = [id_t == id_s]`` for an embedding. When ``T^2`` exceeds the weight size
we instead form ``sum_t a_t g_t^T`` per example (cheaper then). The ``g_t`` come from ONE
backward pass of ``sum_i loss_i`` with respect to zero perturbations added to every layer
output (no weight gradients are formed); the layer inputs are captured in the same forward
pass with a flax method interceptor. The clipped sum ``sum_i w_i G_i`` is then
``sum_i w_i a_i^T g_i`` per layer, a weighted re-use of the captured tensors (the
"re-weighted backward" restricted to the weight-gradient products).

Exactness needs every parameter to enter the loss only through the outputs of supported layers
(``flax.linen`` ``Dense``, ``Embed``, ``Conv`` with ``feature_group_count=1`` and no mask). A
leaf may be used by several calls (a layer applied twice, one kernel shared by calls with
different biases): its per-example gradient is the sum over all those calls, and its norm is
computed jointly over all their tokens. A loss that also differentiates the network (WGAN-GP's
gradient penalty: :mod:`jdp.dpsgd.ghost_penalty` covers it for a piecewise-linear Dense critic,
re-using :func:`discover` and :func:`clipped_sum_from_tokens`), regularises parameters
directly, or uses other parameterised layers is not covered. Every ghost entry point
(:func:`clipped_sum_ghost`, hence ``clipped_grad_sum``, ``make_dp_step`` and
``make_clipped_sum_fn`` of :mod:`jdp.dpsgd.step`, with or without a mesh, and
``method="ghost"``) runs the structural check :func:`discover` when it is traced and raises
:class:`GhostUnsupported` for such a loss (as for a layer with its own ``dot_general``,
``conv_general_dilated`` or ``promote_dtype``: :data:`CUSTOM_OPS`); the path choice
(:func:`jdp.dpsgd.step.choose_method`, through :func:`ghost_support`) runs that check alone,
on abstract shapes, and sends anything that fails to the general ``vmap`` path.
:func:`compare_paths` compares both paths numerically on synthetic inputs: the tests run it on
every loss the library trains on the ghost path (the choice once ran it on every fit: 1.8 s
of compilation, 6-9% of a P3GM fit on Adult).
This module imports :mod:`jdp.dpsgd.clipping` only. Embedding ids outside
``[0, num_embeddings)`` raise at run time on the ghost path (a negative id reads row
``id + num_embeddings``, which the id-equality Gram would miss).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from flax.linen.dtypes import promote_dtype

from jdp.dpsgd.clipping import (
    ClippedSum,
    LossFn,
    StepInfo,
    clip_weights,
    clipped_sum_general,
    finite_examples,
    l2_sensitivity,
)

SUPPORTED = (nn.Dense, nn.Embed, nn.Conv)


class GhostUnsupported(ValueError):
    """The loss uses parameters in a way the ghost path cannot handle exactly."""


@dataclass(frozen=True)
class _Call:
    """One call of a supported layer inside the per-example loss."""

    kind: str  # "dense" | "embed" | "conv"
    leaves: dict[str, int]  # parameter name ("kernel", "bias", "embedding") -> leaf index
    conv: dict[str, Any] | None  # strides, padding, dilations for convolutions
    num_embeddings: int | None = None  # table size of an embedding
    nested: bool = False  # called inside a transformation of the loss (an inner grad, vmap, scan)


def _conv_padding(padding: Any, nd: int) -> Any:
    if isinstance(padding, str):
        if padding.upper() in ("SAME", "VALID"):
            return padding.upper()
        raise GhostUnsupported(f"convolution padding {padding!r}")
    if isinstance(padding, int):
        return [(padding, padding)] * nd
    pads = [(p, p) if isinstance(p, int) else tuple(p) for p in padding]
    return pads * nd if len(pads) == 1 else pads


def _tuple(value: Any, nd: int) -> tuple[int, ...]:
    if value is None:
        return (1,) * nd
    return (value,) * nd if isinstance(value, int) else tuple(value)


#: Layer attributes that replace the products the ghost identity assumes (``y = a W + b``,
#: a convolution of the patches, a row lookup): a layer that sets one is refused.
CUSTOM_OPS = ("dot_general", "dot_general_cls", "conv_general_dilated", "conv_general_dilated_cls")


def _describe(module: nn.Module, leaf_ids: dict[int, int]) -> _Call:
    custom = [name for name in CUSTOM_OPS if getattr(module, name, None) is not None]
    if custom or getattr(module, "promote_dtype", promote_dtype) is not promote_dtype:
        raise GhostUnsupported(
            f"layer {module.path} computes its output with its own "
            f"{', '.join(custom) or 'promote_dtype'} (the ghost identity assumes the default)"
        )
    variables = module.variables.get("params", {})
    leaves = {}
    for name, value in variables.items():
        if id(value) not in leaf_ids:
            raise GhostUnsupported(
                f"parameter {module.path}/{name} is not a leaf of params as passed"
            )
        leaves[name] = leaf_ids[id(value)]
    if isinstance(module, nn.Embed):
        return _Call("embed", leaves, None, module.num_embeddings)
    if isinstance(module, nn.Dense):
        return _Call("dense", leaves, None)
    if module.feature_group_count != 1 or module.mask is not None:
        raise GhostUnsupported("grouped or masked convolution")
    nd = len(module.kernel_size)
    return _Call(
        "conv",
        leaves,
        {
            "strides": _tuple(module.strides, nd),
            "padding": _conv_padding(module.padding, nd),
            "lhs_dilation": _tuple(module.input_dilation, nd),
            "rhs_dilation": _tuple(module.kernel_dilation, nd),
            "kernel_size": tuple(module.kernel_size),
        },
    )


def _parameter_free(x: jax.Array, y: jax.Array) -> jax.Array:
    """Zeros shaped like the layer output ``y`` that depend on the layer input ``x`` only."""
    return jnp.zeros(jnp.shape(y), jnp.result_type(y)) + (0 * jnp.sum(x)).astype(jnp.result_type(y))


def _traced_loss(
    loss_fn: LossFn, has_aux: bool, params: Any, example: Any, key: jax.Array, eps: list | None
):
    """Run the one-example loss, capturing layer inputs and adding ``eps[c]`` to call ``c``.

    With ``eps=None`` (the structural check) every supported layer's output is replaced by
    :func:`_parameter_free` of its input: the loss then depends on the parameters only
    through uses outside those layers.
    """
    leaves = jax.tree_util.tree_leaves(params)
    leaf_ids = {id(leaf): i for i, leaf in enumerate(leaves)}
    outer = getattr(leaves[0], "_trace", None) if leaves else None
    calls: list[_Call] = []
    inputs: list[jax.Array] = []
    outputs: list[jax.ShapeDtypeStruct] = []

    def interceptor(next_fun, args, kwargs, context):
        module = context.module
        if context.method_name != "__call__" or type(module) not in SUPPORTED:
            return next_fun(*args, **kwargs)
        y = next_fun(*args, **kwargs)
        nested = getattr(y, "_trace", None) is not outer
        calls.append(dataclasses.replace(_describe(module, leaf_ids), nested=nested))
        inputs.append(args[0])
        outputs.append(jax.ShapeDtypeStruct(jnp.shape(y), jnp.result_type(y)))
        return _parameter_free(args[0], y) if eps is None else y + eps[len(calls) - 1]

    with nn.intercept_methods(interceptor):
        out = loss_fn(params, example, key)
    loss, aux = out if has_aux else (out, None)
    return loss, aux, calls, inputs, outputs


def _depends_on(jaxpr: jax.extend.core.Jaxpr, sources: list) -> bool:
    """Whether an output of ``jaxpr`` depends on one of the variables ``sources``.

    Conservative: an equation's outputs are taken to depend on all of its inputs (an inner
    ``jit``, ``scan`` or custom derivative is not looked into), so ``False`` is certain.
    """
    reached = set(sources)
    literal = jax.extend.core.Literal
    for eqn in jaxpr.eqns:
        if any(not isinstance(v, literal) and v in reached for v in eqn.invars):
            reached.update(eqn.outvars)
    return any(not isinstance(v, literal) and v in reached for v in jaxpr.outvars)


def _leaf_uses(calls: list[_Call]) -> dict[int, tuple[str, str, list[int]]]:
    """``leaf -> (kind, parameter name, calls using it)``.

    Raises:
        GhostUnsupported: one leaf used by layers of different kinds or in different roles.
    """
    uses: dict[int, tuple[str, str, list[int]]] = {}
    for c, call in enumerate(calls):
        for name, leaf in call.leaves.items():
            kind, role, members = uses.setdefault(leaf, (call.kind, name, []))
            if (kind, role) != (call.kind, name):
                raise GhostUnsupported(
                    f"a parameter leaf is used as {kind} {role} and as {call.kind} {name}"
                )
            members.append(c)
    return uses


def discover(
    loss_fn: LossFn, params: Any, example: Any, key: jax.Array, has_aux: bool
) -> tuple[list[_Call], list]:
    """The structural check: trace the loss once (abstractly) and return the supported layer
    calls and their output shapes, or refuse.

    Refuses a layer called inside a transformation of the loss (its output traced at another
    level than the parameters: an inner ``jax.grad`` makes the loss depend on the layer's
    Jacobian, which replacing its output below would hide), and unless (1) every parameter
    leaf is used by a supported layer, (2) each leaf has
    one kind and role, and (3) the loss does not depend on the parameters once every
    supported layer's output is replaced by a parameter-free function of its input (so the
    parameters enter only through those outputs: no regulariser, no tied ``attend``, no
    direct use of a kernel).

    Raises:
        GhostUnsupported: one of the three conditions fails.
    """
    found: dict[str, Any] = {}

    def run(p):
        loss, _, calls, _, outputs = _traced_loss(loss_fn, has_aux, p, example, key, None)
        found["calls"], found["outputs"] = calls, outputs
        return loss

    closed = jax.make_jaxpr(run)(params)
    if any(call.nested for call in found["calls"]):
        raise GhostUnsupported(
            "a layer is called inside a transformation of the loss (an inner jax.grad, as a "
            "gradient penalty's, a vmap or a scan): its parameters reach the loss through more "
            "than its output"
        )
    covered = {i for call in found["calls"] for i in call.leaves.values()}
    missing = set(range(len(jax.tree_util.tree_leaves(params)))) - covered
    if missing:
        raise GhostUnsupported(
            f"{len(missing)} parameter leaves are not used by Dense/Embed/Conv layers"
        )
    _leaf_uses(found["calls"])
    if _depends_on(closed.jaxpr, closed.jaxpr.invars):
        raise GhostUnsupported(
            "parameters are used outside the outputs of Dense/Embed/Conv layers "
            "(a regulariser, tied weights, a direct use of a kernel)"
        )
    return found["calls"], found["outputs"]


# -- per-layer tokens, norms and weighted sums -----------------------------------------------
def _conv_patches(x: jax.Array, spec: dict[str, Any]) -> jax.Array:
    nd = len(spec["kernel_size"])
    spatial = "DHW"[-nd:] if nd <= 3 else None
    if spatial is None:
        raise GhostUnsupported("convolutions with more than 3 spatial dimensions")
    x = x.reshape((-1,) + x.shape[-(nd + 1) :])
    dims = ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C")
    return jax.lax.conv_general_dilated_patches(
        x,
        spec["kernel_size"],
        spec["strides"],
        spec["padding"],
        lhs_dilation=spec["lhs_dilation"],
        rhs_dilation=spec["rhs_dilation"],
        dimension_numbers=dims,
    )


def _tokens(call: _Call, x: jax.Array, g: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Tokens ``(a, g)``, shapes ``(B, T, F)`` and ``(B, T, O)``; ``a`` is ``(B, T)`` ids for
    an embedding."""
    b = g.shape[0]
    if call.kind == "embed":
        return x.reshape(b, -1), g.reshape(b, -1, g.shape[-1])
    if call.kind == "conv":
        patches = jax.vmap(lambda xi: _conv_patches(xi, call.conv))(x)
        return patches.reshape(b, -1, patches.shape[-1]), g.reshape(b, -1, g.shape[-1])
    return x.reshape(b, -1, x.shape[-1]), g.reshape(b, -1, g.shape[-1])


def _weight_sq_norm(kind: str, a: jax.Array, g: jax.Array) -> jax.Array:
    """Per-example ``||sum_t a_t g_t^T||_F^2`` for tokens ``a``, ``g``."""
    t = g.shape[1]
    if kind == "embed":
        same = (a[:, :, None] == a[:, None, :]).astype(g.dtype)
        return jnp.einsum("bts,bts->b", same, jnp.einsum("bto,bso->bts", g, g))
    if t == 1:
        return jnp.sum(jnp.square(a[:, 0]), -1) * jnp.sum(jnp.square(g[:, 0]), -1)
    if t * t <= a.shape[-1] * g.shape[-1]:
        return jnp.einsum(
            "bts,bts->b", jnp.einsum("btf,bsf->bts", a, a), jnp.einsum("bto,bso->bts", g, g)
        )
    return jnp.sum(jnp.square(jnp.einsum("btf,bto->bfo", a, g)), axis=(1, 2))


def _weighted_weight_grad(
    call: _Call, x: jax.Array, g: jax.Array, w: jax.Array, shape: tuple
) -> jax.Array:
    """``sum_i w_i G_{W,i}`` for one call, in the parameter's own layout."""
    wg = g * w.reshape((-1,) + (1,) * (g.ndim - 1))
    if call.kind == "embed":
        flat = wg.reshape(-1, wg.shape[-1])
        return jnp.zeros(shape, wg.dtype).at[x.reshape(-1)].add(flat)
    if call.kind == "dense":
        return jnp.einsum(
            "nf,no->fo", x.reshape(-1, x.shape[-1]), wg.reshape(-1, wg.shape[-1])
        ).reshape(shape)
    spec = call.conv
    nd = len(spec["kernel_size"])
    xs = x.reshape((-1,) + x.shape[-(nd + 1) :])
    gs = wg.reshape((-1,) + wg.shape[-(nd + 1) :])
    spatial = "DHW"[-nd:]

    def conv(kernel: jax.Array) -> jax.Array:
        return jax.lax.conv_general_dilated(
            xs,
            kernel,
            spec["strides"],
            spec["padding"],
            lhs_dilation=spec["lhs_dilation"],
            rhs_dilation=spec["rhs_dilation"],
            dimension_numbers=("N" + spatial + "C", spatial + "IO", "N" + spatial + "C"),
        )

    _, vjp = jax.vjp(conv, jnp.zeros(shape, gs.dtype))
    return vjp(gs)[0]


def _ghost_forward_backward(loss_fn, params, batch, mask, keys, has_aux, calls, outputs):
    b = mask.shape[0]
    eps = [jnp.zeros((b,) + o.shape, o.dtype) for o in outputs]

    def one(x, k, e):
        loss, aux, _, inputs, _ = _traced_loss(loss_fn, has_aux, params, x, k, e)
        return loss, (inputs, aux)

    def total(eps_list):
        losses, (inputs, aux) = jax.vmap(one)(batch, keys, eps_list)
        return jnp.sum(jnp.where(mask, losses, 0.0)), (inputs, aux)

    grads, (inputs, aux) = jax.grad(total, has_aux=True)(eps)
    return inputs, grads, aux


def ghost_sq_norms(calls, inputs, grads, num_leaves: int, batch_size: int) -> list[jax.Array]:
    """Per-example squared norm of every parameter leaf (a list aligned with the leaves).

    Leaf ``l``'s per-example gradient is the sum over ALL calls that use it, so its norm is
    taken over the tokens of all of them at once: ``||sum_c sum_t a_{c,t} g_{c,t}^T||^2`` for
    a weight, ``||sum_c sum_t g_{c,t}||^2`` for a bias (a kernel shared by calls with
    different biases gets its joint norm, each bias its own).
    """
    sq = [jnp.zeros((batch_size,), jnp.float32) for _ in range(num_leaves)]
    tokens = [_tokens(call, x, g) for call, x, g in zip(calls, inputs, grads, strict=True)]
    for leaf, (kind, name, members) in _leaf_uses(calls).items():
        g = jnp.concatenate([tokens[c][1] for c in members], axis=1)
        if name == "bias":
            sq[leaf] = jnp.sum(jnp.square(jnp.sum(g, axis=1)), -1)
        else:
            a = jnp.concatenate([tokens[c][0] for c in members], axis=1)
            sq[leaf] = _weight_sq_norm(kind, a, g)
    return sq


def _check_embedding_ids(calls: list[_Call], inputs: list[jax.Array], mask: jax.Array) -> None:
    """Raise at run time if an unmasked example has an embedding id outside the table.

    ``jnp.take`` reads row ``id + n`` for ``-n <= id < 0`` while the Gram of
    :func:`_weight_sq_norm` compares raw ids, so a negative id would be under-normed.
    """
    for call, ids in zip(calls, inputs, strict=True):
        if call.kind != "embed":
            continue
        n = call.num_embeddings
        bad = (ids < 0) | (ids >= n)
        found = jnp.any(bad & mask.reshape((-1,) + (1,) * (bad.ndim - 1)))

        def refuse(found: Any, n: int = n) -> None:
            if found:
                raise ValueError(f"expected embedding ids in [0, {n}) on the ghost path")

        jax.debug.callback(refuse, found)


def clipped_sum_ghost(
    loss_fn: LossFn,
    params: Any,
    batch: Any,
    mask: jax.Array,
    keys: jax.Array,
    *,
    l2_clip_norm: Any,
    has_aux: bool = False,
) -> tuple[ClippedSum, StepInfo]:
    """Fast path: the same clipped sum as :func:`jdp.dpsgd.clipping.clipped_sum_general`.

    Cost: one forward and one backward pass to the layer outputs, the per-layer norm
    contractions above, and one weighted weight-gradient product per layer.

    Raises:
        GhostUnsupported: when traced, if the structural check :func:`discover` fails.
        ValueError: at run time, for embedding ids outside the table.
    """
    example = jax.tree_util.tree_map(lambda x: x[0], batch)
    calls, outputs = discover(loss_fn, params, example, keys[0], has_aux)
    inputs, grads, aux = _ghost_forward_backward(
        loss_fn, params, batch, mask, keys, has_aux, calls, outputs
    )
    _check_embedding_ids(calls, inputs, mask)
    return clipped_sum_from_tokens(
        calls, inputs, grads, params, mask, l2_clip_norm=l2_clip_norm, aux=aux
    )


def clipped_sum_from_tokens(
    calls: list[_Call],
    inputs: list[jax.Array],
    grads: list[jax.Array],
    params: Any,
    mask: jax.Array,
    *,
    l2_clip_norm: Any,
    aux: Any = None,
) -> tuple[ClippedSum, StepInfo]:
    """The clipped sum from every call's per-example tokens: layer inputs ``inputs[c]`` and
    output gradients ``grads[c]`` (leading axis: the batch), for layer calls ``calls`` that
    cover every leaf of ``params``. The per-example norms are :func:`ghost_sq_norms`; the
    sum is ``sum_i w_i a_i^T g_i`` per call (the weighted re-use of the captured tensors).
    Shared by :func:`clipped_sum_ghost` and :mod:`jdp.dpsgd.ghost_penalty` (whose penalty
    tokens are extra calls of a kernel without its bias)."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    sq = ghost_sq_norms(calls, inputs, grads, len(leaves), mask.shape[0])
    finite = finite_examples(sq)
    keep = mask & finite
    # Rows not kept (padded, or with a non-finite gradient) must contribute exactly zero:
    # their tokens are replaced by 0 before the weighted products (0 * NaN = NaN).
    drop = lambda x: jnp.where(keep.reshape((-1,) + (1,) * (x.ndim - 1)), x, jnp.zeros((), x.dtype))
    inputs, grads = [drop(x) for x in inputs], [drop(g) for g in grads]
    weights = clip_weights(sq, l2_clip_norm, treedef)
    weights = [jnp.where(keep, w, 0.0) for w in weights]
    out = [jnp.zeros_like(p) for p in leaves]
    for c, call in enumerate(calls):
        for name, leaf in call.leaves.items():
            w = weights[leaf]
            g = grads[c]
            if name == "bias":
                wg = g * w.reshape((-1,) + (1,) * (g.ndim - 1))
                contrib = jnp.sum(wg.reshape(-1, g.shape[-1]), axis=0)
            else:
                contrib = _weighted_weight_grad(call, inputs[c], g, w, leaves[leaf].shape)
            out[leaf] = out[leaf] + contrib.astype(out[leaf].dtype)
    norms = jnp.where(mask, jnp.sqrt(sum(sq)), 0.0)
    return ClippedSum(treedef.unflatten(out), l2_sensitivity(l2_clip_norm)), StepInfo(
        norms, aux, mask & ~finite
    )


def ghost_support(
    loss_fn: LossFn, params: Any, example: Any, *, has_aux: bool = False
) -> str | None:
    """``None`` if the ghost path is exact for this loss, else the reason it is not: the
    structural check :func:`discover` on the first example of the batch ``example``, traced
    abstractly (its shapes only: the choice reveals nothing about the data, and nothing is
    compiled). Where it passes, the ghost norms are the per-example gradient norms by the
    identity of the module docstring, whatever the parameters' values; :func:`compare_paths`
    checks that numerically (the test suite runs it on every loss the library trains)."""
    one = jax.tree_util.tree_map(lambda x: x[0], example)
    try:
        discover(loss_fn, params, one, jax.random.key(0), has_aux)
    except GhostUnsupported as err:
        return str(err)
    except jax.errors.JAXTypeError as err:  # e.g. layers called inside an inner jax.grad (WGAN-GP)
        return f"ghost path cannot trace this loss ({type(err).__name__})"
    return None


def _synthetic_batch(example: Any, size: int) -> Any:
    """Data-independent inputs with the example's shapes: N(0,1) floats, {0,1} ints/bools."""
    rng = np.random.default_rng(0)  # a verification probe, not a privacy mechanism

    def fake(x: Any) -> np.ndarray:
        x = np.asarray(x)
        shape = (size,) + x.shape[1:]
        if np.issubdtype(x.dtype, np.floating):
            return rng.standard_normal(shape).astype(x.dtype)
        return rng.integers(0, 2, shape).astype(x.dtype)

    return jax.tree_util.tree_map(fake, example)


def compare_paths(
    loss_fn: LossFn, params: Any, example: Any, *, has_aux: bool = False
) -> str | None:
    """``None`` if the ghost and the general path give the same per-example norms and
    clipped sum on 4 synthetic examples shaped like ``example`` (relative 1e-3), else how
    they differ. The numerical check behind :func:`ghost_support`'s structural one: a test of
    the ghost path on a given loss (and a user's own check of a new network); it compiles
    both paths, so the path choice does not run it. A loss that is not finite on those
    examples leaves the comparison inconclusive: reported.

    Raises:
        GhostUnsupported: the loss fails :func:`discover`."""
    key = jax.random.key(0)
    batch = _synthetic_batch(example, 4)
    mask = jnp.ones(4, bool)
    keys = jax.random.split(key, 4)
    clip = 1e-3  # small, so that every example is clipped and the weights matter
    options = {"l2_clip_norm": clip, "has_aux": has_aux}
    fast, fast_info = clipped_sum_ghost(loss_fn, params, batch, mask, keys, **options)
    slow, slow_info = clipped_sum_general(loss_fn, params, batch, mask, keys, **options)
    if np.any(slow_info.nonfinite):
        return "the loss is not finite on the synthetic probe inputs (ghost exactness unverified)"
    if not np.allclose(fast_info.norms, slow_info.norms, rtol=1e-3, atol=1e-6):
        return "ghost norms differ from per-example gradient norms"
    for a, b in zip(
        jax.tree_util.tree_leaves(fast.grads), jax.tree_util.tree_leaves(slow.grads), strict=True
    ):
        if not np.allclose(a, b, rtol=1e-3, atol=1e-3 * clip):
            return "ghost clipped sum differs from the general path"
    return None
