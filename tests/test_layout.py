"""The import rules of DESIGN section 1, read off the source with ``ast``.

Every ``import`` statement counts, including those inside functions and under
``TYPE_CHECKING`` (a deferred import is still a dependency). One layer order
(:data:`LAYERS`: nothing imports its own layer's other units or a higher layer), and the few
rules a layer cannot say.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accounting", "jdp", "kip")


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "jdp.encoding.pca"
    path: str  # relative to the repository root, e.g. "jdp/encoding/pca.py"
    tree: ast.Module


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Module]:
    """Every module of the three packages, by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = _module_name(path)
            rel = path.relative_to(ROOT).as_posix()
            found[name] = Module(name, rel, ast.parse(path.read_text(), filename=rel))
    return found


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module name of a (possibly relative) ``from ... import``."""
    if not node.level:
        return node.module or ""
    is_package = module.path.endswith("__init__.py")
    base = module.name.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_names(module: Module) -> Iterator[str]:
    """Every dotted name ``module`` imports: ``import a.b`` gives ``a.b``; ``from a import b``
    gives ``a.b`` when that is a module of the repository, else ``a``."""
    known = modules()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield full if full in known else base


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(
    importer: str, forbidden: tuple[str, ...], *, allowed: tuple[str, ...] = ()
) -> list[str]:
    """``"module -> imported"`` for every module under ``importer`` (minus ``allowed``) that
    imports something under one of ``forbidden``."""
    out = []
    for module in modules().values():
        if not _within(module.name, importer) or any(_within(module.name, a) for a in allowed):
            continue
        for name in imported_names(module):
            if any(_within(name, f) for f in forbidden):
                out.append(f"{module.path} -> {name}")
    return sorted(set(out))


#: The layers, lowest first. A module imports only its own unit and units of LOWER layers:
#: units of one layer never import each other, nothing imports upwards.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("accounting", "kip"),  # no data, no JAX (accounting); own kernels (kip)
    ("jdp.random", "jdp.verbosity"),
    ("jdp.progress",),  # the one progress rule (reads verbosity; every long loop uses it)
    ("jdp.mechanisms",),  # every draw of privacy noise, with its event
    ("jdp.data", "jdp.encoding", "jdp.dpsgd", "jdp.nn"),  # tables; host algorithms; DP-SGD; flax
    ("jdp.synth",),  # methods on arrays + the one table adapter
    ("jdp",),  # the lazy public face (``jdp/__init__.py``)
    ("jdp.eval", "jdp.audit"),  # read real data: nothing below may import them
    ("jdp.cli",),
)


def unit(name: str) -> str | None:
    """The layer unit of a repository module name (``jdp.synth.p3gm.model`` -> ``jdp.synth``),
    ``None`` for a name outside the three packages."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    return parts[0] if parts[0] != "jdp" or len(parts) == 1 else ".".join(parts[:2])


def layer_violations(layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """``"module -> imported"`` for every import of a unit in the same or a higher layer."""
    rank = {u: i for i, layer in enumerate(layers) for u in layer}
    out = []
    for module in modules().values():
        own = unit(module.name)
        for name in imported_names(module):
            other = unit(name)
            if other is not None and other != own and rank[other] >= rank[own]:
                out.append(f"{module.path} -> {name}")
    return sorted(set(out))


def test_every_unit_has_a_layer():
    found = {unit(name) for name in modules()}
    assert found == {u for layer in LAYERS for u in layer}


def test_no_module_imports_its_own_layer_or_a_higher_one():
    assert layer_violations() == []


def test_a_layer_inversion_is_reported():
    """With synth moved below dpsgd, synth's imports of dpsgd are violations."""
    swapped = (*LAYERS[:4], ("jdp.synth",), LAYERS[4], *LAYERS[6:])
    found = layer_violations(swapped)
    assert found and all(v.startswith("jdp/synth/") for v in found)
    assert any("-> jdp.dpsgd" in v for v in found)


def test_accounting_imports_no_jax():
    assert violations("accounting", ("jax", "flax", "optax")) == []


def test_nn_imports_no_accounting():
    """Networks are flax only: privacy is added around them, never inside."""
    assert violations("jdp.nn", ("accounting",)) == []


def test_only_synth_clustmix_imports_kip():
    assert violations("jdp", ("kip",), allowed=("jdp.synth.clustmix",)) == []


# -- import cycles ----------------------------------------------------------------------------


def import_graph() -> dict[str, set[str]]:
    """Module -> the repository modules it imports (a package's ``__init__`` is its own node;
    importing ``a.b.c`` is an edge to ``a.b.c`` only, not to the parents Python also runs)."""
    known = modules()
    return {
        name: {n for n in imported_names(module) if n in known and n != name}
        for name, module in known.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through every strongly connected component with more than one module
    (Tarjan 1972), each written ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, set(c)) for c in components]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module of a strongly connected component (BFS)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle in component {sorted(component)}")


def test_cycle_finder_reports_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


# -- where privacy noise is drawn ------------------------------------------------------------

#: Draws of normal / Laplace / Gumbel variates (Gumbel: the exponential mechanism's noise).
#: Privacy noise may only be drawn in these places.
NOISE_CALLS = frozenset({"normal", "laplace", "standard_normal", "gumbel"})
NOISE_HOMES = ("jdp/mechanisms/", "jdp/dpsgd/noise.py")

#: Draws outside the noise homes that are NOT privacy noise, by (file or package prefix,
#: enclosing function). Each touches no private data, or samples a released model.
NON_PRIVACY_DRAWS: dict[tuple[str, str], str] = {
    # initialisations and random features: data-independent, drawn before any data is read
    ("jdp/encoding/em.py", "initial_mixture"): "data-independent initial mixture",
    ("jdp/encoding/kmeans.py", "random_centres"): "data-independent initial centres",
    ("jdp/encoding/rff.py", "draw_rff"): "RFF frequencies (data-independent)",
    ("jdp/dpsgd/ghost_clipping.py", "_synthetic_batch.fake"): "structural probe on fake inputs",
    ("jdp/nn/rbm.py", "RBM.setup"): "RBM weight initialisation (data-independent)",
    ("jdp/random.py", "normal"): "the latent normal draw; its callers are listed here",
    # sampling from a fitted (released) model: post-processing
    ("jdp/encoding/em.py", "sample"): "sampling a released mixture",
    ("jdp/synth/pca_gauss", "sample_gaussian"): "sampling a released Gaussian",
    ("jdp/synth/p3gm", "sample_latent"): "sampling the released latent prior",
    ("jdp/synth/p3gm", "initial_decoder.run.loss"): "draws from the released latent mixture "
    "to fit the decoder's initial map (post-processing)",
    ("jdp/synth/dp_gan", "draw_latent"): "GAN latent noise (generator input, not privacy noise)",
    ("jdp/nn/heads.py", "decode_sample"): "stochastic output heads of a decoder (sampling)",
    ("jdp/synth/dpgm", "VAEGenerator.sample"): "latent draw when sampling a released DPGM "
    "generator",
    # the VAE reparameterisation trick: the gradient's noise is added by DP-SGD, not here
    ("jdp/synth/p3gm", "example_terms"): "VAE reparameterisation inside the per-example loss",
    ("jdp/synth/dpgm", "VAEGenerator.example_loss.loss"): "VAE reparameterisation "
    "(per-example loss)",
    # evaluation (not a release): random directions of a distance between two samples
    ("jdp/eval/distances.py", "sliced_wasserstein"): "projection directions of a metric",
}


def _function_draws(tree: ast.Module) -> Iterator[tuple[str, int, str]]:
    """``(enclosing qualified function name, line, name)`` of every ``x.normal(...)``,
    ``x.laplace(...)``, ``x.standard_normal(...)``, ``x.gumbel(...)`` call, and of the same
    names called bare (``normal(...)`` of :func:`jdp.random.normal`) (``"<module>"`` at top
    level)."""

    def walk(node: ast.AST, scope: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from walk(child, (*scope, child.name))
                continue
            name = (
                child.func.attr if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                else child.func.id if isinstance(child, ast.Call) and isinstance(child.func, ast.Name)
                else None
            )  # fmt: skip
            if name in NOISE_CALLS:
                yield ".".join(scope) or "<module>", child.lineno, name
            yield from walk(child, scope)

    return walk(tree, ())


def _in(path: str, where: str) -> bool:
    """``path`` is the file ``where``, or a file of the package ``where`` (``.py`` or not)."""
    return path in (where, where + ".py") or path.startswith(where + "/")


def _allowed(path: str, function: str) -> bool:
    return any(_in(path, where) and function == fn for where, fn in NON_PRIVACY_DRAWS)


def stray_noise_draws() -> list[str]:
    out = []
    for module in modules().values():
        if module.path.startswith(NOISE_HOMES[0]) or module.path == NOISE_HOMES[1]:
            continue
        for function, line, attr in _function_draws(module.tree):
            if not _allowed(module.path, function):
                out.append(f"{module.path}:{line} {function}: .{attr}(")
    return out


def test_non_privacy_allowlist_names_existing_draws():
    """Every allowlist entry still names a draw (a stale entry would hide a moved one)."""
    present = {
        (module.path, function)
        for module in modules().values()
        for function, _, _ in _function_draws(module.tree)
    }
    stale = [
        (where, fn)
        for where, fn in NON_PRIVACY_DRAWS
        if not any(_in(path, where) and function == fn for path, function in present)
    ]
    assert stale == []


def test_privacy_noise_is_drawn_only_in_mechanisms_or_dpsgd_noise():
    assert stray_noise_draws() == []


def test_the_draw_finder_sees_attribute_and_bare_calls():
    source = (
        "from jdp.random import normal\n"
        "def f(key):\n"
        "    a = jax.random.normal(key, (3,))\n"
        "    def g():\n"
        "        return normal(key, (3,)) + rng.laplace(size=2)\n"
        "    return a, g, normal\n"
    )
    found = [(fn, name) for fn, _, name in _function_draws(ast.parse(source))]
    assert found == [("f", "normal"), ("f.g", "normal"), ("f.g", "laplace")]
