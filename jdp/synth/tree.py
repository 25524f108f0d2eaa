"""DP tree of 2-way marginals: a spanning tree of column pairs chosen privately, sampled along it.

The DP naive-Bayes ``marginals`` keeps every feature's relation to the target and loses every
relation between features. This method keeps the strongest pairwise relations the budget can
find, in the manner of MST (McKenna, Miklau, Sheldon, "Winning the NIST Contest: A scalable
and general approach to differentially private synthetic data", JPC 2021, Sec. 3): the columns
are the nodes of a tree whose ``d - 1`` edges are column pairs; each edge's 2-way marginal is
released and the synthetic rows are drawn along the tree (Chow & Liu 1968: a tree-shaped
distribution is its root's marginal times each child's conditional on its parent).

Three releases, on the cells of :class:`jdp.data.cells.CellCodec` (as ``marginals``):

1. **One-way marginals** of all ``d`` columns: every record is in one cell of each, so the
   concatenated counts have L2 sensitivity ``sqrt(d)`` under add/remove; Gaussian noise of
   standard deviation ``z_1 sqrt(d)``, event ``GaussianDpEvent(z_1)``.
2. **Edge selection**, ``d - 1`` rounds of Kruskal's algorithm: among the pairs joining two
   different components, the exponential mechanism (:func:`jdp.mechanisms.selection.gumbel_max`)
   picks one with probability ``exp(epsilon_r u / 2)``, ``u(i, j) = || T_ij - n~ p~_i p~_j^T ||_1``
   the L1 distance between the pair's true 2-way counts and the independent estimate from the
   released one-way marginals (``p~`` their norm-sub distributions, ``n~`` the pooled noisy
   total). Adding or removing a record changes ``T_ij`` by 1 in one cell and nothing released,
   so ``u`` has sensitivity 1 and each round is ``epsilon_r``-DP (``PureDpEvent``,
   ``epsilon_r = 1 / z_2``). Which pairs are candidates depends only on earlier selections.
3. **Two-way marginals** of the ``d - 1`` selected edges: one cell of each per record, L2
   sensitivity ``sqrt(d - 1)``; Gaussian noise of standard deviation ``z_3 sqrt(d - 1)``.

``(z_1, z_2, z_3)`` are calibrated together (:func:`accounting.calibrate.calibrate_shares`,
``config.shares``, MST's equal thirds by default) so that the ledger meets the budget. Sampling
is post-processing: the root (the target when the schema has one, else the first column) from
its one-way distribution, then each child given its parent's cell from the edge's noisy table,
norm-sub'd (:mod:`jdp.mechanisms.consistency`) and raked to the parent's and the child's
one-way distributions (:func:`jdp.mechanisms.consistency.rake`): the two-way tables give the
dependence, the one-ways every column's own distribution (a one-way cell carries about the
noise of one two-way cell, and a two-way table's margin sums a whole row or column of them;
before raking, a child's drawn distribution was the table's noisier margin, and the no-signal
rule, which reads the one-ways, missed columns the tables had moved).
See ``docs/privacy.md``, "DP tree of marginals".
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import jax
import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate_shares, prior_event, prior_key
from accounting.validation import check_count
from jdp.data.cells import CellCodec, cell_values, n_bins, resolved_bins
from jdp.data.quantile_scale import LOG, NumericScale
from jdp.data.schema import Schema
from jdp.data.transforms import value_cells
from jdp.mechanisms.consistency import (
    RARE_SDS,
    cells_for_noise,
    distribution,
    norm_sub,
    pooled_totals,
    rake,
)
from jdp.mechanisms.noise import gaussian_event, gaussian_mechanism
from jdp.mechanisms.selection import gumbel_max
from jdp.random import numpy_rng
from jdp.synth.base import FittedModel, Method, Params, register
from jdp.synth.estimator import Synthesizer
from jdp.synth.feasibility import register_minimum
from jdp.synth.signal import Release, mean_release, register_releases

LABEL = "tree"
PHASES = ("one-way", "selection", "two-way")


@dataclass(frozen=True, kw_only=True)
class TreeConfig:
    """Options of the DP tree of marginals.

    Attributes:
      bins: cells per continuous column (and at most this many per integer column), or
        ``"auto"`` (the default): :func:`auto_bins`, from the declared or released row count.
      shares: the budget's split over the one-way marginals, the edge selection and the
        two-way marginals (MST's equal thirds).
      scale: how numeric columns are cut into cells (by default the public log scale,
        each column measured from the point of its range nearest zero, as ``marginals``:
        with the edges raked to the one-ways it beat the log scale on right-tailed columns
        only, most on the signed creditcard tables, docs/results/numeric_columns.md).
    """

    bins: int | Literal["auto"] = "auto"
    shares: tuple[float, float, float] = (1.0, 1.0, 1.0)
    scale: NumericScale = LOG

    def __post_init__(self) -> None:
        if self.bins != "auto":
            check_count("bins", self.bins, minimum=2)
        shares = tuple(float(s) for s in self.shares)
        if len(shares) != 3 or not all(s > 0 for s in shares):
            raise ValueError(f"expected three positive shares, got {self.shares!r}")
        object.__setattr__(self, "shares", shares)


def plan(d: int, z: Mapping[str, float]) -> ev.DpEvent:
    """The fit's event with phase ``p`` at multiplier ``z[p]`` (phases absent from ``z`` left
    out): the one-way Gaussian, ``d - 1`` exponential-mechanism rounds at ``1 / z`` each, the
    two-way Gaussian."""
    events: list[ev.DpEvent] = []
    if "one-way" in z:
        events.append(gaussian_event(z["one-way"]))
    if "selection" in z and d > 1:
        events.append(ev.SelfComposedDpEvent(ev.PureDpEvent(1.0 / z["selection"]), d - 1))
    if "two-way" in z and d > 1:
        events.append(gaussian_event(z["two-way"]))
    return ev.ComposedDpEvent(events)


def multipliers(d: int, budget: PrivacyBudget, config: TreeConfig) -> dict[str, float]:
    """``z`` per phase meeting ``budget`` after what it records as spent (a function of public
    values only)."""
    if budget.delta == 0:
        raise ValueError("the tree's marginals are Gaussian: it needs delta > 0")
    return dict(
        _multipliers(d, budget.epsilon, budget.delta, prior_key(budget.prior), config.shares)
    )


@functools.lru_cache(maxsize=128)
def _multipliers(
    d: int, epsilon: float, delta: float, prior: str | None, shares: tuple[float, ...]
) -> tuple[tuple[str, float], ...]:
    """:func:`multipliers`' search, cached by its public inputs (a fit asks twice: for its
    cells, :func:`auto_bins`, and for its noise; each search is seconds of PLD accounting)."""
    phases = PHASES if d > 1 else PHASES[:1]
    z = calibrate_shares(
        lambda z: plan(d, z), dict(zip(phases, shares)), target_epsilon=epsilon,
        target_delta=delta, prior=prior_event(prior),
    )  # fmt: skip
    return tuple(z.items())


def auto_bins(schema: Schema, budget: PrivacyBudget, config: TreeConfig, rows: float) -> int:
    """Value cells per numeric column: :func:`~jdp.mechanisms.consistency.cells_for_noise` of
    ``rows`` at the one-way release's cell noise sd ``z_1 sqrt(d)`` (:func:`multipliers`),
    the rule ``marginals`` takes for its unconditioned histograms. With fewer, fuller cells a
    column's real tail stays above the noise and :func:`one_way_model`'s support rule keeps
    it (at a fixed 32 cells, crx's long tails were cut). Public: the schema, the budget and a
    declared or released ``rows``."""
    d = len(schema.columns)
    return cells_for_noise(rows, multipliers(d, budget, config)["one-way"] * float(np.sqrt(d)))


def for_shape(
    config: TreeConfig, schema: Schema, budget: PrivacyBudget, rows: float | None
) -> TreeConfig | None:
    """``config`` with ``bins="auto"`` resolved by :func:`auto_bins` (``None`` while the row
    count is unknown); any other config unchanged."""
    if config.bins != "auto":
        return config
    if rows is None:
        return None
    return dataclasses.replace(config, bins=auto_bins(schema, budget, config, rows))


def counts(cells: np.ndarray, sizes: list[int], i: int, j: int | None = None) -> np.ndarray:
    """Exact (private) counts of column ``i``, or of the pair ``(i, j)`` as a table."""
    if j is None:
        return np.bincount(cells[:, i], minlength=sizes[i]).astype(np.float64)
    flat = cells[:, i] * sizes[j] + cells[:, j]
    return np.bincount(flat, minlength=sizes[i] * sizes[j]).reshape(sizes[i], sizes[j]) * 1.0


def one_way_model(
    one_way: list[np.ndarray], ordered: Sequence[int] | None = None, sd: float | None = None
) -> tuple[float, list[np.ndarray]]:
    """The pooled noisy total and each column's distribution, from the released one-ways
    (:func:`jdp.mechanisms.consistency.distribution`; with ``ordered``, each column's count of
    ordered value cells, and the noise ``sd``, a numeric column's value cells outside the run
    its noise can show are cleared first, as in ``marginals``). A compressed cell whose
    cells all came out empty gets no mass, and raking keeps every drawn column to these
    distributions, so it is never drawn."""
    total = float(
        pooled_totals([h.sum(keepdims=True) for h in one_way], [h.size for h in one_way])[0]
    )
    ordered = [0] * len(one_way) if ordered is None else ordered
    return total, [distribution(h, total, ordered=k, noise_sd=sd) for h, k in zip(one_way, ordered)]


def column_model(
    params: Params, schema: Schema, config: TreeConfig
) -> tuple[list[np.ndarray], float, float, list[np.ndarray]]:
    """A fitted tree's one-way releases, their noise sd, the pooled noisy total and each
    column's distribution (:func:`one_way_model` with the numeric value cells ordered)."""
    sizes = [n_bins(c, config.bins) for c in schema.columns]
    one_way = np.split(np.asarray(params["one_way"], np.float64), np.cumsum(sizes)[:-1])
    sd = float(np.asarray(params["sd"]).ravel()[0])
    ordered = [value_cells(c, config.bins) if c.is_numeric else 0 for c in schema.columns]
    total, probs = one_way_model(one_way, ordered, sd)
    return one_way, sd, total, probs


def compression(noisy: np.ndarray, sd: float) -> np.ndarray:
    """Each cell's index in the column's compressed domain: the cells whose noisy count is at
    least :data:`~jdp.mechanisms.consistency.RARE_SDS` noise sds keep one index each, in
    order; the others share the last index (MST's domain compression, McKenna et al. 2021,
    Sec. 3.2). Post-processing of a released one-way marginal."""
    kept = noisy >= RARE_SDS * sd
    index = np.cumsum(kept) - 1
    return np.where(kept, index, int(kept.sum())).astype(np.int64)


def compressed_size(mapping: np.ndarray) -> int:
    """Cells of the compressed domain."""
    return int(mapping.max()) + 1


def edge_scores(
    cells: np.ndarray, sizes: list[int], one_way: list[np.ndarray]
) -> dict[tuple[int, int], float]:
    """``u(i, j) = || T_ij - n~ p~_i p~_j^T ||_1`` for every pair (module docstring): the
    exact 2-way counts against the independent estimate from the released one-ways.
    Sensitivity 1 under add/remove (one cell of ``T_ij`` moves by 1)."""
    total, probs = one_way_model(one_way)
    return {
        (i, j): float(
            np.abs(counts(cells, sizes, i, j) - total * np.outer(probs[i], probs[j])).sum()
        )
        for i, j in itertools.combinations(range(len(sizes)), 2)
    }


def select_edges(
    rng: np.random.Generator,
    cells: np.ndarray,
    sizes: list[int],
    one_way: list[np.ndarray],
    epsilon_round: float,
) -> list[tuple[int, int]]:
    """Kruskal's spanning tree with each edge chosen by the exponential mechanism (module
    docstring, release 2)."""
    d = len(sizes)
    score = edge_scores(cells, sizes, one_way)
    component = list(range(d))
    edges: list[tuple[int, int]] = []
    for _ in range(d - 1):
        candidates = [p for p in score if component[p[0]] != component[p[1]]]
        utility = np.array([score[p] for p in candidates])
        i, j = candidates[gumbel_max(rng, epsilon_round * utility / 2.0)]
        old, new = component[j], component[i]
        component = [new if c == old else c for c in component]
        edges.append((i, j))
    return edges


def fit_arrays(
    key: jax.Array, cells: np.ndarray, codec: CellCodec, budget: PrivacyBudget, config: TreeConfig
) -> tuple[dict[str, np.ndarray], PrivacyLedger]:
    """The three releases of the module docstring, with one ledger entry each; the selection
    and the two-way marginals are on the compressed domains (:func:`compression`)."""
    rng = numpy_rng(key)
    sizes = [n_bins(c, config.bins) for c in codec.schema.columns]
    d = len(sizes)
    z = multipliers(d, budget, config)
    exact = np.concatenate([counts(cells, sizes, i) for i in range(d)])
    sd = z["one-way"] * float(np.sqrt(d))
    noisy, event = gaussian_mechanism(
        rng, exact, l2_sensitivity=float(np.sqrt(d)), noise_multiplier=z["one-way"]
    )
    ledger = PrivacyLedger().record(f"{LABEL}/one-way", event, note=f"{d} columns")
    params = {
        "one_way": noisy,
        "edges": np.zeros((0, 2), np.int64),
        "two_way": np.zeros(0),
        "sd": np.array([sd]),
    }
    if d == 1:
        return params, ledger
    one_way = np.split(noisy, np.cumsum(sizes)[:-1])
    maps = [compression(h, sd) for h in one_way]
    small = np.column_stack([m[cells[:, i]] for i, m in enumerate(maps)])
    small_sizes = [compressed_size(m) for m in maps]
    small_one_way = [
        np.bincount(m, weights=h, minlength=s) for m, h, s in zip(maps, one_way, small_sizes)
    ]
    edges = select_edges(rng, small, small_sizes, small_one_way, 1.0 / z["selection"])
    selection = plan(d, {"selection": z["selection"]}).events[0]
    ledger = ledger.record(f"{LABEL}/selection", selection, note=f"{d - 1} edges")
    exact2 = np.concatenate([counts(small, small_sizes, i, j).ravel() for i, j in edges])
    noisy2, event2 = gaussian_mechanism(
        rng, exact2, l2_sensitivity=float(np.sqrt(d - 1)), noise_multiplier=z["two-way"]
    )
    ledger = ledger.record(f"{LABEL}/two-way", event2, note=f"{d - 1} edges")
    params = {**params, "edges": np.asarray(edges, np.int64), "two_way": noisy2}
    return params, ledger


def order(d: int, edges: np.ndarray, root: int) -> list[tuple[int, int, int]]:
    """``(child, parent, edge index)`` in breadth-first order from ``root``."""
    out, seen, frontier = [], {root}, [root]
    while frontier:
        parent = frontier.pop(0)
        for e, (i, j) in enumerate(edges.tolist()):
            for a, b in ((i, j), (j, i)):
                if a == parent and b not in seen:
                    seen.add(b)
                    frontier.append(b)
                    out.append((b, a, e))
    return out


def sample_arrays(
    key: jax.Array, params: Params, codec: CellCodec, config: TreeConfig, n: int
) -> np.ndarray:
    """``n`` rows of cells drawn along the tree on the compressed domains, each compressed
    cell then expanded to one of its cells by the column's one-way distribution (module
    docstring; post-processing)."""
    rng = numpy_rng(key)
    schema = codec.schema
    one_way, sd, total, probs = column_model(params, schema, config)
    d = len(one_way)
    if d == 1:
        return rng.choice(probs[0].size, size=(n, 1), p=probs[0])
    maps = [compression(h, sd) for h in one_way]
    small_sizes = [compressed_size(m) for m in maps]
    small_probs = [
        np.bincount(m, weights=p, minlength=k) for m, p, k in zip(maps, probs, small_sizes)
    ]
    edges = np.asarray(params["edges"], np.int64).reshape(-1, 2)
    shapes = [(small_sizes[i], small_sizes[j]) for i, j in edges.tolist()]
    flat = np.split(
        np.asarray(params["two_way"], np.float64), np.cumsum([a * b for a, b in shapes])[:-1]
    )
    tables = [t.reshape(s) for t, s in zip(flat, shapes)]
    root = schema.names.index(schema.target) if schema.target else 0
    small = np.empty((n, d), dtype=np.int64)
    small[:, root] = rng.choice(small_sizes[root], size=n, p=small_probs[root])
    for child, parent, e in order(d, edges, root):
        table = tables[e] if edges[e, 0] == parent else tables[e].T
        noisy = norm_sub(table.ravel(), total).reshape(table.shape) if total > 0 else 0 * table
        joint = rake(noisy, small_probs[parent], small_probs[child])
        for a in range(small_sizes[parent]):
            rows = np.flatnonzero(small[:, parent] == a)
            if rows.size:  # drawn, so joint[a] (summing to the parent's share) is positive
                p = joint[a] / joint[a].sum()
                small[rows, child] = rng.choice(small_sizes[child], size=rows.size, p=p)
    out = np.empty_like(small)
    for i, (m, p) in enumerate(zip(maps, probs)):
        for c in range(small_sizes[i]):
            rows = np.flatnonzero(small[:, i] == c)
            members = np.flatnonzero(m == c)
            if rows.size:
                w = p[members]
                w = w / w.sum() if w.sum() > 0 else np.full(members.size, 1.0 / members.size)
                out[rows, i] = members[rng.choice(members.size, size=rows.size, p=w)]
    return out


def noisy_row_count(model: FittedModel) -> int:
    """The pooled noisy total of the one-way marginals (post-processing), at least 1."""
    return max(1, round(column_model(model.params, model.schema, model.config)[2]))


def released_statistics(model: FittedModel) -> list[Release]:
    """Each numeric column's mean as its released one-way marginal gives it, for the
    no-signal rule (:mod:`jdp.synth.signal`; the sampled column follows that marginal: its
    compressed cells come from the tree, each expanded by the one-way shares). The mean is
    ``sum_c p_c v_c`` (``p`` the norm-sub'd one-way distribution, ``v_c`` the mean value drawn
    in cell ``c``, :func:`jdp.data.cells.cell_values`; missing cells left out), moved by the
    one-way noise of sd ``s`` by ``s sqrt(sum_c v_c^2) / N`` (``N`` the pooled noisy total):
    ``marginals``' rule for one class. Post-processing of release 1."""
    schema, config = model.schema, model.config
    _, sd, total, probs = column_model(model.params, schema, config)
    out = []
    for col, p in zip(schema.columns, probs):
        if not col.is_numeric or col.name == schema.target:
            continue
        v = cell_values(col, config.bins)
        known = ~np.isnan(v)
        mean = float(p[known] @ v[known] / max(p[known].sum(), 1e-12))
        noise = sd * float(np.sqrt(np.sum(v[known] ** 2))) / max(total, 1.0)
        out.append(mean_release(col.name, mean, noise, col.lower))
    return out


def codec(schema: Schema, config: TreeConfig) -> CellCodec:
    """The public encoding: one cell per column (``config.bins`` cells of a numeric column;
    ``bins="auto"`` is resolved by :func:`for_shape` first, as the fit does)."""
    return CellCodec(schema, resolved_bins(config.bins))


register(
    Method(
        name=LABEL,
        config_cls=TreeConfig,
        codec=codec,
        fit_arrays=fit_arrays,
        sample_arrays=sample_arrays,
        description="DP tree of 2-way marginals: spanning tree chosen privately (MST-style)",
        noisy_rows=noisy_row_count,
        for_shape=for_shape,
        calibrates_prior=True,
    )
)


register_releases(LABEL, released_statistics)
# at chance on a seed of german (AUROC .505; .561 mean over 4), above on spambase (lowest
# .856; crx, below german in records per width, lowest .730: the rule errs towards warning);
# below chance on a seed of creditcard at P3GM's sampling (222 frauds: .233), above on
# spambase's 1,218 spam (numeric_columns.md): which pairs the private tree keeps decides
# whether it holds the label's relation
register_minimum(LABEL, failed="german", worked="spambase")
register_minimum(LABEL, failed="creditcard-paper-5k", worked="spambase", of="smallest class")


class TreeMarginals(Synthesizer):
    """``jdp.TreeMarginals(epsilon=1, delta=1e-5, schema=schema).fit(df).sample(1000)``."""

    method = LABEL
