"""MWEM: multiplicative weights with the exponential mechanism (Hardt, Ligett & McSherry,
NIPS 2012), the counting-query baseline of DPGM Sec. 6.3.

The data is a histogram ``B`` over a finite domain of ``N`` cells (every combination of the
columns' cells: categories, integer values, or equal-width bins of the public bounds,
:func:`jdp.data.cells.discretize`); a counting query is a 0/1 vector ``q`` over the cells,
its answer ``q . B``. MWEM keeps a distribution ``p`` over the cells (uniform at first) scaled
by a noisy row count ``n~`` and, for ``t = 1..T``:

1. selects the query worst answered by ``A = n~ p`` with the exponential mechanism, utility
   ``|q . B - q . A|`` (``epsilon_t / 2``);
2. measures it with the Laplace mechanism, ``m = q . B + Lap(2 / epsilon_t)``;
3. multiplicative weights: ``p <- p exp(q (m - q . A) / (2 n~))``, normalised, replayed over
   every query measured so far (``replays`` passes; the paper's practical improvement,
   Sec. 4);

and outputs the average of ``p_1..p_T`` (Algorithm 1). Sampling draws cells from it.

Privacy:
    Add/remove-one. ``n~ = n + Lap(1 / epsilon_0)`` (sensitivity 1, ``size_share * epsilon``).
    Each round: the utility has sensitivity 1 (``q . B`` moves by at most 1; ``q . A`` is a
    function of earlier releases), so the exponential mechanism
    (:func:`jdp.mechanisms.selection.gumbel_max` on ``epsilon_t u / 4``) is
    ``epsilon_t / 2``-DP (``PureDpEvent``); the measurement is a Laplace mechanism of L1
    sensitivity 1 (``LaplaceDpEvent(2 / epsilon_t)``). ``epsilon_t = (1 - size_share)
    epsilon / T``; the ledger is ``epsilon``-DP (basic composition). Under a budget with
    ``delta > 0`` the registered method runs at the largest pure epsilon whose ledger is
    ``(epsilon, delta)``-DP by the ledger's figure, the best rigorous accountant's
    (:func:`pure_epsilon_for`).
    The workload of the registered method is drawn from the public schema and the key
    (no data); a caller may pass its own.

References:
    Hardt, Ligett & McSherry, "A simple and practical algorithm for differentially private data
    release", NIPS 2012, Algorithm 1 and Sec. 4; Acs et al., TKDE 2018, Sec. 6.3 (baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate
from accounting.validation import check_count, check_open_unit, check_positive
from jdp.data.cells import CellCodec, n_bins
from jdp.data.quantile_scale import MIN_MAX, NumericScale
from jdp.data.schema import Schema
from jdp.mechanisms.noise import laplace_mechanism
from jdp.mechanisms.selection import gumbel_max
from jdp.random import numpy_rng
from jdp.synth.base import Method, Params, register
from jdp.synth.estimator import Synthesizer

__all__ = [
    "MWEM",
    "MWEMConfig",
    "cell_index",
    "codec",
    "domain_cells",
    "domain_shape",
    "fit_arrays",
    "mwem",
    "mwem_event",
    "pure_epsilon_for",
    "random_workload",
    "sample_arrays",
]

LABEL = "mwem"


@dataclass(frozen=True, kw_only=True)
class MWEMConfig:
    """Options of MWEM (all public).

    Attributes:
      iterations: rounds ``T`` (DPGM's footnote 8: 50).
      n_queries: size of the workload drawn from the schema (the registered method).
      max_atoms: columns per workload query (conjunctions of "cell in a random subset").
      bins: cells per continuous column (at most this many per integer column).
      size_share: the share of epsilon spent on the noisy row count.
      replays: multiplicative-weights passes over the measured queries per round.
      max_domain: the largest number of domain cells accepted (memory: workload x cells).
      scale: numeric columns on released quantile knots, or min-max by the declared
        bounds (:class:`jdp.data.quantile_scale.NumericScale`; default: min-max).
    """

    iterations: int = 30
    n_queries: int = 500
    max_atoms: int = 3
    bins: int = 8
    size_share: float = 0.05
    replays: int = 10
    max_domain: int = 1 << 16
    scale: NumericScale = MIN_MAX

    def __post_init__(self) -> None:
        check_count("iterations", self.iterations, minimum=1)
        check_count("n_queries", self.n_queries, minimum=1)
        check_count("max_atoms", self.max_atoms, minimum=1)
        check_count("bins", self.bins, minimum=2)
        check_open_unit("size_share", self.size_share)
        check_count("replays", self.replays, minimum=1)
        check_count("max_domain", self.max_domain, minimum=2)


def domain_shape(schema: Schema, bins: int) -> tuple[int, ...]:
    """Cells per column (:func:`jdp.data.cells.n_bins`), in schema order (public)."""
    return tuple(n_bins(col, bins) for col in schema.columns)


def _check_domain(shape: tuple[int, ...], max_domain: int) -> int:
    size = int(np.prod(shape, dtype=np.float64))
    if size > max_domain:
        raise ValueError(
            f"MWEM needs a domain of at most max_domain={max_domain} cells, got {size} "
            f"({' x '.join(map(str, shape))}); use fewer columns or bins"
        )
    return size


def domain_cells(shape: tuple[int, ...]) -> np.ndarray:
    """``(N, columns)`` cell index of every domain cell (row-major mixed radix)."""
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def random_workload(
    rng: np.random.Generator, shape: tuple[int, ...], n_queries: int, max_atoms: int
) -> np.ndarray:
    """``(n_queries, N)`` 0/1 queries: conjunctions of ``1..max_atoms`` atoms "column's cell
    in a random non-empty subset" on distinct columns (drawn from the shape alone)."""
    cells = domain_cells(shape)
    out = np.ones((n_queries, cells.shape[0]), dtype=bool)
    for i in range(n_queries):
        k = int(rng.integers(1, min(max_atoms, len(shape)) + 1))
        for c in rng.choice(len(shape), size=k, replace=False):
            size = int(rng.integers(1, max(shape[c] - 1, 1) + 1))
            keep = rng.choice(shape[c], size=size, replace=False)
            out[i] &= np.isin(cells[:, c], keep)
    return out


def mwem_event(epsilon: float, iterations: int, size_share: float = 0.05) -> ev.DpEvent:
    """What :func:`mwem` spends at pure budget ``epsilon`` (data-free plan, same events)."""
    eps_t = (1 - size_share) * epsilon / iterations
    round_event = ev.ComposedDpEvent([ev.PureDpEvent(eps_t / 2), ev.LaplaceDpEvent(2 / eps_t)])
    return ev.ComposedDpEvent(
        [
            ev.LaplaceDpEvent(1 / (size_share * epsilon)),
            ev.SelfComposedDpEvent(round_event, iterations),
        ]
    )


def pure_epsilon_for(budget: PrivacyBudget, iterations: int, size_share: float = 0.05) -> float:
    """The pure epsilon to run :func:`mwem` at so that its ledger meets ``budget``.

    ``delta = 0``: what basic composition leaves of ``budget.epsilon`` after what it records as
    spent (exact for pure ledgers). With ``delta > 0`` the composition of the ``2T + 1`` pure
    releases (RDP or PLD, whichever the ledger finds tighter), after the budget's
    :attr:`~accounting.budget.PrivacyBudget.prior`, is tighter than their sum, so the largest
    pure epsilon whose :func:`mwem_event` meets it is found by
    :func:`accounting.calibrate.calibrate` (never above the target).
    """
    if budget.delta == 0:
        return float(budget.left.epsilon)
    scale = calibrate(
        lambda s: mwem_event(1.0 / s, iterations, size_share),
        target_epsilon=budget.epsilon,
        target_delta=budget.delta,
        lower=1e-4,
        upper=1.0 / budget.epsilon,
        prior=budget.prior,
    )
    return 1.0 / scale


def mwem(
    rng: np.random.Generator,
    histogram: np.ndarray,
    queries: np.ndarray,
    *,
    epsilon: float,
    iterations: int,
    size_share: float = 0.05,
    replays: int = 10,
) -> tuple[np.ndarray, float, PrivacyLedger]:
    """MWEM (Algorithm 1) on a private ``histogram`` over ``N`` cells for 0/1 ``queries``.

    Args:
      rng: noise source.
      histogram: ``(N,)`` exact cell counts of the private records.
      queries: ``(Q, N)`` 0/1 matrix, the workload (public).
      epsilon: total budget (pure DP).
      iterations: rounds ``T``.
      size_share: share of ``epsilon`` for the noisy row count.
      replays: multiplicative-weights passes over the measured queries per round.

    Returns:
      ``(distribution, noisy_size, ledger)``: the average of the round distributions
      ``(N,)``, the released row count and the ledger (``"mwem-size"``, ``"mwem-round"`` x T).
    """
    eps = check_positive("epsilon", epsilon)
    t_max = check_count("iterations", iterations, minimum=1)
    share = check_open_unit("size_share", size_share)
    hist = np.asarray(histogram, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    if hist.ndim != 1 or q.ndim != 2 or q.shape[1] != hist.shape[0]:
        raise ValueError(
            f"expected a (N,) histogram and (Q, N) queries, got {hist.shape} and {q.shape}"
        )
    noisy, event = laplace_mechanism(
        rng, np.array([hist.sum()]), l1_sensitivity=1.0, epsilon=share * eps
    )
    ledger = PrivacyLedger().record("mwem-size", event, note="noisy row count")
    n = max(float(noisy[0]), 1.0)
    eps_t = (1 - share) * eps / t_max
    true = q @ hist
    p = np.full(hist.shape[0], 1.0 / hist.shape[0])
    average = np.zeros_like(p)
    measured: list[tuple[int, float]] = []
    for _ in range(t_max):
        utility = np.abs(true - n * (q @ p))
        i = gumbel_max(rng, (eps_t / 2) * utility / 2.0)  # sensitivity 1: exp(eps' u / (2 * 1))
        m, lap = laplace_mechanism(rng, true[i : i + 1], l1_sensitivity=1.0, epsilon=eps_t / 2)
        ledger = ledger.record(
            "mwem-round",
            ev.ComposedDpEvent([ev.PureDpEvent(eps_t / 2), lap]),
            note="select + measure",
        )
        measured.append((i, float(m[0])))
        for _ in range(replays):
            for j, value in measured:
                log_p = np.log(np.maximum(p, 1e-300)) + q[j] * (value - n * (q[j] @ p)) / (2 * n)
                p = np.exp(log_p - log_p.max())
                p /= p.sum()
        average += p / t_max
    return average, n, ledger


def cell_index(cells: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Each record's domain cell index from its per-column cells
    (:class:`~jdp.data.cells.CellCodec`; row-major as :func:`domain_cells`; private)."""
    idx = np.zeros(len(cells), dtype=np.int64)
    for j, size in enumerate(shape):
        idx = idx * size + cells[:, j]
    return idx


def codec(schema: Schema, config: MWEMConfig) -> CellCodec:
    """The public encoding: one cell per column, ``config.bins`` cells of a numeric column."""
    return CellCodec(schema, config.bins)


def fit_arrays(
    key: jax.Array, cells: np.ndarray, codec: CellCodec, budget: PrivacyBudget, config: MWEMConfig
) -> tuple[dict[str, np.ndarray], PrivacyLedger]:
    """Histogram over the schema's domain, a workload drawn from the schema and the key,
    :func:`mwem` with the budget's epsilon."""
    shape = domain_shape(codec.schema, config.bins)
    size = _check_domain(shape, config.max_domain)
    rng = numpy_rng(key)
    workload = random_workload(rng, shape, config.n_queries, config.max_atoms)
    histogram = np.bincount(cell_index(cells, shape), minlength=size).astype(np.float64)
    dist, n, ledger = mwem(
        rng,
        histogram,
        workload,
        epsilon=pure_epsilon_for(budget, config.iterations, config.size_share),
        iterations=config.iterations,
        size_share=config.size_share,
        replays=config.replays,
    )
    return {"distribution": dist, "noisy_size": np.array([n])}, ledger


def sample_arrays(
    key: jax.Array, params: Params, codec: CellCodec, config: MWEMConfig, n: int
) -> np.ndarray:
    """``n`` rows of cells drawn from the released distribution (post-processing)."""
    shape = domain_shape(codec.schema, config.bins)
    p = np.asarray(params["distribution"], dtype=np.float64)
    return domain_cells(shape)[numpy_rng(key).choice(p.shape[0], size=n, p=p / p.sum())]


register(
    Method(
        name=LABEL,
        config_cls=MWEMConfig,
        codec=codec,
        fit_arrays=fit_arrays,
        sample_arrays=sample_arrays,
        description="MWEM: multiplicative weights + exponential mechanism (Hardt et al. 2012)",
        noisy_rows=lambda model: round(float(model.params["noisy_size"][0])),
        calibrates_prior=True,
    )
)


class MWEM(Synthesizer):
    """``jdp.MWEM(epsilon=1, schema=schema).fit(df).sample(1000)`` (small domains only)."""

    method = LABEL
