"""DP marginals: one noisy histogram per column, optionally per class of the target.

The baseline every DP synthesizer should beat on joint structure and that is hard to beat on
per-column fidelity. It releases every column's histogram (categories as they are; numeric
columns in equal-width cells of their public bounds, plus a cell of its own for each declared
point mass and for missing values, :func:`jdp.data.cells.discretize`) with one
mechanism, and samples each column independently (a mass cell gives back the mass exactly).

With a target column and ``condition_on_target=True`` (the default) each feature's histogram
is taken per class of the target -- a contingency table ``target x feature`` -- and sampling
draws the label from its noisy marginal, then every feature independently given the label:
a DP naive-Bayes generative model. It keeps each feature's relation to the label (so a
classifier trained on its output beats chance) at the same privacy cost; correlations
between features are lost. With ``condition_on_target=False`` the columns are fully
independent and a classifier trained on the output scores at chance level.

Privacy:
  Neighbouring relation: add/remove one record. The released vector ``h`` concatenates ``d``
  histograms, one per column (the target's plain, each feature's per class when
  conditioned), and with ``refine`` one finer histogram, pooled over the classes, per
  numeric column whose cells it refines (:func:`refined`; its fine cells nest in the coarse
  ones, :func:`coarse_cells`). Every record falls in exactly one cell of each of them (values
  are clipped into the public bounds and categories checked against the public domain before
  counting; a point mass or a missing value goes to its own cell instead of a value cell, never
  to both; a record has exactly one class), so adding or removing a record changes ``h`` by one
  in exactly ``d`` cells: L1 sensitivity ``d``, L2 sensitivity ``sqrt(d)``.
  ``noise="laplace"``: Laplace noise of scale ``z d`` per cell, event ``LaplaceDpEvent(z)``;
  ``noise="gaussian"``: Gaussian noise of standard deviation ``z sqrt(d)``, event
  ``GaussianDpEvent(z)``. In both, ``z`` is the smallest noise multiplier (calibrated) whose
  ledger epsilon at ``delta`` is within the budget; Laplace at ``delta = 0`` is pure
  epsilon-DP with ``z = 1 / epsilon`` exactly.
  ``"auto"`` picks Gaussian when ``delta > 0`` and Laplace when ``delta = 0``.
  With ``bins="auto"`` and no declared row count, a noisy row count is released first from
  1% of epsilon (:func:`jdp.synth.feasibility.release_row_count`, its own ledger entry) to
  choose the public number of cells (:func:`auto_bins`); the histograms get the rest.
  The support rule, norm-sub and the lone-cell rule (:mod:`jdp.mechanisms.consistency`),
  normalising and sampling are post-processing. Beyond that count (a release of its own,
  kept only through the number of cells it chose), the model keeps the noisy cells and their
  public noise sd. See ``docs/privacy.md``, "DP marginals".
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Literal

import jax
import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate, prior_event, prior_key
from accounting.validation import check_count
from jdp.data.cells import CellCodec, cell_values, n_bins, resolved_bins
from jdp.data.quantile_scale import LOG, NumericScale
from jdp.data.schema import Column, Schema
from jdp.data.transforms import integer_runs, numeric_state, run_bounds, value_cells
from jdp.mechanisms.consistency import (
    AUTO_BINS,
    cells_for_noise,
    distribution,
    pooled_totals,
    support,
)
from jdp.mechanisms.noise import gaussian_event, gaussian_mechanism, laplace_mechanism
from jdp.random import numpy_rng
from jdp.synth.base import FittedModel, Method, Params, register
from jdp.synth.estimator import Synthesizer
from jdp.synth.signal import Release, mean_release, register_releases

LABEL = "marginals"
Noise = Literal["auto", "gaussian", "laplace"]


@dataclass(frozen=True, kw_only=True)
class MarginalsConfig:
    """Options of the marginals baseline.

    Attributes:
      bins: cells per continuous column (and at most this many per integer column), or
        ``"auto"`` (the default): the public rule :func:`auto_bins`, from the declared or
        released row count (measured against fixed counts: ``docs/results/numeric_columns.md``).
      noise: ``"gaussian"``, ``"laplace"`` or ``"auto"`` (Gaussian iff delta > 0).
      condition_on_target: histogram each feature per class of the schema's target (if any).
      secure_noise: Gaussian: a clamp-and-round mitigation without proof (see
        :mod:`jdp.mechanisms.noise`). Laplace noise is always Mironov's (2012) snapping
        mechanism (proved; its cost is absorbed in the noise scale).
      scale: how numeric columns are cut into cells
        (:class:`jdp.data.quantile_scale.NumericScale`); default the public log scale, each
        column measured from the point of its range nearest zero (free; chosen by
        ``scripts/numeric_columns.py``, ``docs/results/numeric_columns.md``: against min-max
        on signed columns it keeps a centred column's bulk out of one or two cells).
      refine: a numeric feature whose ``bins`` cells are coarser than :func:`fine_bins`'s
        also gets one histogram at those finer cells, pooled over the classes; a value drawn
        in a coarse cell falls in its fine cells by their pooled shares
        (:func:`fine_probabilities`). Without it a value is drawn uniformly on the coarse
        cell's part of the scale, which moves a long-tailed column's mean by up to the
        cell's width (german's credit amount: +60% at 5 cells with no noise at all).
    """

    bins: int | Literal["auto"] = "auto"
    noise: Noise = "auto"
    condition_on_target: bool = True
    secure_noise: bool = False
    scale: NumericScale = LOG
    refine: bool = True

    def __post_init__(self) -> None:
        if self.bins != "auto":
            check_count("bins", self.bins, minimum=2)
        if self.noise not in ("auto", "gaussian", "laplace"):
            raise ValueError(
                f"expected noise in ('auto', 'gaussian', 'laplace'), got {self.noise!r}"
            )
        for name in ("condition_on_target", "secure_noise", "refine"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"expected {name} to be a bool, got {getattr(self, name)!r}")


def noise_multiplier(noise: Literal["gaussian", "laplace"], budget: PrivacyBudget) -> float:
    """Smallest noise multiplier whose event, after what ``budget`` records as spent
    (:attr:`~accounting.budget.PrivacyBudget.prior`), is ``(epsilon, delta)``-DP by the
    ledger's default accountant (:func:`accounting.calibrate.calibrate`, never overshoots);
    for Laplace at ``delta = 0`` exactly ``1 / epsilon`` of what basic composition leaves
    (exact for pure spends)."""
    if noise == "laplace" and budget.delta == 0:
        return 1.0 / budget.left.epsilon
    return _calibrated(noise, budget.epsilon, budget.delta, prior_key(budget.prior))


@functools.lru_cache(maxsize=128)
def _calibrated(
    noise: Literal["gaussian", "laplace"], epsilon: float, delta: float, prior: str | None
) -> float:
    """:func:`noise_multiplier`'s search, cached by its public inputs (a fit asks twice: for
    its bins and for its noise; a notebook refitting asks again)."""
    event_fn = gaussian_event if noise == "gaussian" else ev.LaplaceDpEvent
    return calibrate(
        event_fn, target_epsilon=epsilon, target_delta=delta, lower=1e-3,
        prior=prior_event(prior),
    )  # fmt: skip


def noise_kind(config: MarginalsConfig, budget: PrivacyBudget) -> Literal["gaussian", "laplace"]:
    """The noise ``config.noise`` names; ``"auto"``: Gaussian iff ``budget.delta > 0``.
    Raises ``ValueError`` for Gaussian noise at ``delta = 0``."""
    noise = (
        config.noise if config.noise != "auto" else "gaussian" if budget.delta > 0 else "laplace"
    )
    if noise == "gaussian" and budget.delta == 0:
        raise ValueError("Gaussian noise needs delta > 0; use noise='laplace' for delta = 0")
    return noise


def cell_noise_sd(noise: Literal["gaussian", "laplace"], z: float, d: int) -> float:
    """Standard deviation of one cell's noise for ``d`` histograms at multiplier ``z``:
    ``z sqrt(d)`` (Gaussian, L2 sensitivity ``sqrt(d)``), ``sqrt(2) z d`` (Laplace of scale
    ``z d``)."""
    return z * np.sqrt(d) if noise == "gaussian" else np.sqrt(2.0) * z * d


def auto_bins(schema: Schema, config: MarginalsConfig, budget: PrivacyBudget, rows: float) -> int:
    """Value cells per numeric column for ``bins="auto"``:
    :func:`~jdp.mechanisms.consistency.cells_for_noise` of ``rows_per_class`` at the cell
    noise sd the fit will add. ``rows_per_class`` is ``rows`` over the target's classes when
    features are conditioned (else ``rows``); the sd is :func:`cell_noise_sd` at the
    multiplier :func:`noise_multiplier` gives ``budget``, for the histograms released at the
    rule's first answer (refined columns' included). Measured against fixed counts on crx and
    spambase (``docs/results/numeric_columns.md``). Public: the schema, the budget and a
    declared or released ``rows``."""
    noise = noise_kind(config, budget)
    z = noise_multiplier(noise, budget)
    target = conditioning(schema, config)
    per_class = rows / (len(target.categories) if target is not None else 1)
    first = cells_for_noise(per_class, cell_noise_sd(noise, z, len(schema)))
    histograms = len(histogram_shapes(schema, dataclasses.replace(config, bins=first)))
    return cells_for_noise(per_class, cell_noise_sd(noise, z, histograms))


def for_shape(
    config: MarginalsConfig, schema: Schema, budget: PrivacyBudget, rows: float | None
) -> MarginalsConfig | None:
    """``config`` with ``bins="auto"`` resolved by :func:`auto_bins` (``None`` while the
    row count is unknown); any other config unchanged."""
    if config.bins != "auto":
        return config
    if rows is None:
        return None
    return dataclasses.replace(config, bins=auto_bins(schema, config, budget, rows))


def conditioning(schema: Schema, config: MarginalsConfig) -> Column | None:
    """The target column when features are histogrammed per class, else ``None``."""
    return schema[schema.target] if config.condition_on_target and schema.target else None


def fine_bins(bins: int) -> int:
    """Cells of a refined column's fine histogram: the largest multiple of ``bins`` within
    ``AUTO_BINS[1]`` (``bins`` itself from half of that up), so that every coarse cell is a
    union of whole fine cells (:func:`coarse_cells`)."""
    return bins * max(1, AUTO_BINS[1] // bins)


def codec_bins(config: MarginalsConfig) -> int | Literal["auto"]:
    """Cells the codec cuts a numeric column into: :func:`fine_bins` with ``refine``, else
    ``bins`` (the histograms per class are at ``bins``: :func:`coarse_cells`); ``"auto"``
    while ``bins`` is."""
    if not config.refine or config.bins == "auto":
        return config.bins
    return fine_bins(config.bins)


def coarse_cells(column: Column, bins: int, fine: int) -> np.ndarray:
    """For each of ``column``'s cells at ``fine`` cells (:func:`jdp.data.cells.n_bins`), the
    cell at ``bins`` that holds it: a point mass's or "missing" cell maps to its own; a value
    cell to the coarse value cell of its values (``fine`` a multiple of ``bins``: equal parts
    of the unit scale, and integer runs, nest). Identity for a categorical column. Public."""
    n = n_bins(column, fine)
    if not column.is_numeric:
        return np.arange(n)
    bf, bc = value_cells(column, fine), value_cells(column, bins)
    if integer_runs(column, fine):
        first, _ = run_bounds(column, np.arange(bf), fine)
        plain = dataclasses.replace(column, point_masses=(), nullable=False)
        value = numeric_state(plain, first.astype(np.float64), bins)
    else:
        value = np.arange(bf) * bc // bf
    return np.concatenate([value, bc + np.arange(n - bf)])


def refined(schema: Schema, config: MarginalsConfig) -> tuple[Column, ...]:
    """The numeric columns with a fine histogram (``refine`` on): those with more value
    cells at :func:`codec_bins` than at ``bins``. Public."""
    fine = codec_bins(config)
    return tuple(
        c for c in schema.columns
        if c.is_numeric and value_cells(c, fine) > value_cells(c, config.bins)
    )  # fmt: skip


def histogram_shapes(schema: Schema, config: MarginalsConfig) -> list[tuple[int, ...]]:
    """Shape of each released histogram: per column in schema order, ``(classes, cells)``
    for a conditioned feature, ``(cells,)`` otherwise (``bins`` cells of a numeric column);
    then one ``(cells,)`` at :func:`codec_bins` per :func:`refined` column. Each record
    falls in one cell of each. Public: a function of the schema and config only."""
    target = conditioning(schema, config)
    shapes = []
    for col in schema.columns:
        cells = n_bins(col, config.bins)
        conditioned = target is not None and col.name != target.name
        shapes.append((len(target.categories), cells) if conditioned else (cells,))
    fine = codec_bins(config)
    return shapes + [(n_bins(col, fine),) for col in refined(schema, config)]


def cell_counts(cells: np.ndarray, schema: Schema, config: MarginalsConfig) -> list[np.ndarray]:
    """The exact (private) histograms, shaped as :func:`histogram_shapes`, from the records'
    cells at the codec's resolution (:func:`codec`): mapped to ``bins`` cells
    (:func:`coarse_cells`) for the per-column histograms, as they are for the fine ones."""
    target = conditioning(schema, config)
    fine = codec_bins(config)

    def coarse(j: int) -> np.ndarray:
        return coarse_cells(schema.columns[j], config.bins, fine)[cells[:, j]]

    def count(flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64).reshape(shape)

    classes = None if target is None else coarse(schema.names.index(target.name))
    shapes = histogram_shapes(schema, config)
    hists = [  # one column at a time: one column's temporaries alive, not all columns'
        count(coarse(j) if len(s) == 1 else classes * s[1] + coarse(j), s)
        for j, s in enumerate(shapes[: len(schema.columns)])
    ]
    fine_cols = [schema.names.index(col.name) for col in refined(schema, config)]
    return hists + [count(cells[:, j], s) for j, s in zip(fine_cols, shapes[len(hists) :])]


def codec(schema: Schema, config: MarginalsConfig) -> CellCodec:
    """The public encoding: one cell per column, a numeric column in :func:`codec_bins`
    cells (``bins="auto"`` is resolved by :func:`for_shape` first, as the fit does)."""
    return CellCodec(schema, resolved_bins(codec_bins(config)))


def fit_arrays(
    key: jax.Array,
    cells: np.ndarray,
    codec: CellCodec,
    budget: PrivacyBudget,
    config: MarginalsConfig,
) -> tuple[dict[str, np.ndarray], PrivacyLedger]:
    """Release all column histograms with one Laplace or Gaussian mechanism (see module)."""
    rng = numpy_rng(key)
    schema = codec.schema
    hists = cell_counts(cells, schema, config)
    counts = np.concatenate([c.ravel() for c in hists])
    d = len(hists)
    noise = noise_kind(config, budget)
    if noise == "gaussian":
        z = noise_multiplier("gaussian", budget)
        noisy, event = gaussian_mechanism(
            rng,
            counts,
            l2_sensitivity=float(np.sqrt(d)),
            noise_multiplier=z,
            secure_noise=config.secure_noise,
        )
    else:
        z = noise_multiplier("laplace", budget)
        noisy, event = laplace_mechanism(rng, counts, l1_sensitivity=float(d), epsilon=1.0 / z)
    sd = cell_noise_sd(noise, z, d)
    kind = "class-conditional " if conditioning(schema, config) else ""
    fine = d - len(schema)
    detail = f" and {fine} finer numeric histograms" if fine else ""
    ledger = PrivacyLedger().record(
        LABEL, event, note=f"{len(schema)} {kind}column histograms{detail}, {counts.size} cells"
    )
    return {"noisy_counts": noisy, "noise_sd": np.array([sd])}, ledger


def noisy_histograms(params: Params, schema: Schema, config: MarginalsConfig) -> list[np.ndarray]:
    """The released noisy counts split and shaped per column (:func:`histogram_shapes`)."""
    shapes = histogram_shapes(schema, config)
    sizes = [int(np.prod(s)) for s in shapes]
    noisy = np.asarray(params["noisy_counts"], dtype=np.float64)
    if noisy.shape != (sum(sizes),):
        raise ValueError(f"expected {sum(sizes)} noisy counts for this schema, got {noisy.shape}")
    return [p.reshape(s) for p, s in zip(np.split(noisy, np.cumsum(sizes)[:-1]), shapes)]


def noisy_totals(hists: list[np.ndarray], columns: int) -> np.ndarray:
    """The rows each histogram's distribution stands for, estimated from the released counts:
    per class of the target (a vector) when features are conditioned, else one total.
    ``hists[:columns]`` are the per-column histograms, the rest the fine ones.

    Every histogram sums, per class for a conditioned one, to the same true count plus noise,
    so the estimates of all histograms are pooled by inverse variance
    (:func:`jdp.mechanisms.consistency.pooled_totals`; the target's own cells count one cell
    each; a fine histogram, pooled over the classes, counts only towards a single total).
    Post-processing."""
    conditioned = [h for h in hists[:columns] if h.ndim == 2]
    if conditioned:
        (target,) = [h for h in hists[:columns] if h.ndim == 1]
        sums = [target, *(h.sum(axis=1) for h in conditioned)]
        return pooled_totals(sums, [1, *(h.shape[1] for h in conditioned)])
    return pooled_totals([h.sum(keepdims=True) for h in hists], [h.size for h in hists])


def released_noise_sd(params: Params) -> float | None:
    """The released cells' public noise sd (``None`` for a model saved without it)."""
    return float(np.ravel(params["noise_sd"])[0]) if "noise_sd" in params else None


def column_probabilities(
    params: Params, schema: Schema, config: MarginalsConfig
) -> list[np.ndarray]:
    """Each column's sampling distribution over its ``bins`` cells (per class for a
    conditioned feature: one row per class): :func:`jdp.mechanisms.consistency.distribution`
    of its noisy counts, to the class's pooled total (:func:`noisy_totals`), a numeric
    column's value cells cut to the :func:`~jdp.mechanisms.consistency.support` of its counts
    summed over the classes (noise sd ``sqrt(K)`` times the cells') and freed of lone noise
    spikes (the released noise sd ``params["noise_sd"]``; a model saved without it skips
    both steps); the target's
    distribution is its pooled class totals clipped at 0. Post-processing."""
    hists = noisy_histograms(params, schema, config)
    totals = noisy_totals(hists, len(schema))
    sd = released_noise_sd(params)
    probs = []
    for col, h in zip(schema.columns, hists):
        ordered = value_cells(col, config.bins) if col.is_numeric else 0
        if h.ndim == 2:
            keep = None
            if ordered and sd is not None:  # one support per column, from the pooled classes
                keep = support(h[:, :ordered].sum(axis=0), sd * np.sqrt(len(h)))
            rows = [
                distribution(r, t, ordered=ordered, noise_sd=sd, keep=keep)
                for r, t in zip(h, totals)
            ]
            probs.append(np.stack(rows))
        elif len(totals) > 1:
            probs.append(distribution(totals, 0.0))
        else:
            probs.append(distribution(h, float(totals[0]), ordered=ordered, noise_sd=sd))
    return probs


def fine_probabilities(params: Params, schema: Schema, config: MarginalsConfig) -> list[np.ndarray]:
    """For each column, the distribution of its codec cells (:func:`codec_bins`) given its
    ``bins`` cell, as a ``(codec cells,)`` vector whose entries sum to 1 over each coarse
    cell's fine cells (:func:`coarse_cells`): a :func:`refined` column's fine histogram
    through :func:`~jdp.mechanisms.consistency.distribution` (pooled over the classes, to
    the pooled total), renormalised within each coarse cell (uniform over a coarse cell
    whose fine cells all went to zero); every other column, ones (one fine cell per coarse
    cell). Post-processing."""
    hists = noisy_histograms(params, schema, config)
    total = float(noisy_totals(hists, len(schema)).sum())
    sd = released_noise_sd(params)
    fine = codec_bins(config)
    detailed = dict(zip((c.name for c in refined(schema, config)), hists[len(schema) :]))
    out = []
    for col in schema.columns:
        n = n_bins(col, fine)
        if col.name not in detailed:
            out.append(np.ones(n))
            continue
        q = distribution(detailed[col.name], total, ordered=value_cells(col, fine), noise_sd=sd)
        group = coarse_cells(col, config.bins, fine)
        mass = np.bincount(group, weights=q, minlength=group.max() + 1)
        size = np.bincount(group, minlength=group.max() + 1)
        out.append(
            np.where(mass[group] > 0, q / np.maximum(mass[group], 1e-300), 1.0 / size[group])
        )
    return out


def noisy_row_count(model: FittedModel) -> int:
    """A DP estimate of the number of training rows, for choosing how many rows to sample:
    the pooled totals of :func:`noisy_totals`, summed. Post-processing of the released counts:
    no further privacy cost (and no exact ``n``, which is private under add/remove
    neighbours). At least 1.
    """
    hists = noisy_histograms(model.params, model.schema, model.config)
    return max(1, round(float(noisy_totals(hists, len(model.schema)).sum())))


def released_statistics(model: FittedModel) -> list[Release]:
    """Each numeric column's mean, as the released histograms give it, for the no-signal
    rule (:mod:`jdp.synth.signal`). The mean is ``sum_{k,c} h_kc m_c / N`` over the
    classes ``k`` and ``bins`` cells ``c``, ``m_c`` the mean value drawn in cell ``c``
    (``sum_{f in c} q_f v_f``: the fine cells' shares :func:`fine_probabilities` and mean
    values :func:`jdp.data.cells.cell_values`; missing cells left out), so the released
    noise of sd ``s`` per cell moves it by about ``s sqrt(K sum_c m_c^2 + sum_f (v_f -
    m_c(f))^2) / N`` (``K`` classes, 1 when not conditioned; ``N`` the noisy row count; the
    second term from the fine cells of a refined column, whose counts, about the coarse
    cell's own, move ``m_c``): its noise. Its signal (:func:`jdp.synth.signal.mean_release`)
    is a quarter of the mean's distance from the column's lower bound in the model's own
    distribution (post-processing). A column whose mean is not within half of that distance
    at two noise sds is reported: its synthetic mean says little about the real one. Models
    saved without ``noise_sd`` report nothing."""
    sd = released_noise_sd(model.params)
    if sd is None:
        return []
    schema, config = model.schema, model.config
    rows = float(noisy_row_count(model))
    probs = column_probabilities(model.params, schema, config)
    shares = fine_probabilities(model.params, schema, config)
    fine = codec_bins(config)
    target = conditioning(schema, config)
    weights = np.ones(1) if target is None else probs[schema.names.index(target.name)]
    out = []
    for col, p, q in zip(schema.columns, probs, shares):
        if not col.is_numeric or col is target:
            continue
        v, group = cell_values(col, fine), coarse_cells(col, config.bins, fine)
        known = ~np.isnan(v)
        m = np.bincount(group[known], weights=(q * v)[known], minlength=group.max() + 1)
        spread = np.sum((v[known] - m[group[known]]) ** 2) if len(m) < len(v) else 0.0
        coarse_known = np.unique(group[known])
        p = np.atleast_2d(p)[:, coarse_known]
        mean = float(weights @ (p @ m[coarse_known]) / np.maximum(weights @ p.sum(axis=1), 1e-12))
        noise = sd * np.sqrt(len(weights) * np.sum(m[coarse_known] ** 2) + spread) / rows
        out.append(mean_release(col.name, mean, noise, col.lower))
    return out


def sample_arrays(
    key: jax.Array, params: Params, codec: CellCodec, config: MarginalsConfig, n: int
) -> np.ndarray:
    """``n`` rows of cells at the codec's resolution: the label (if conditioned) from its
    noisy marginal, then each column's ``bins`` cell independently from its noisy
    (class-conditional) marginal, and within it a codec cell by
    :func:`fine_probabilities`."""
    rng = numpy_rng(key)
    schema = codec.schema
    probs = column_probabilities(params, schema, config)
    shares = fine_probabilities(params, schema, config)
    target = conditioning(schema, config)
    classes = None
    if target is not None:
        classes = rng.choice(
            len(target.categories), size=n, p=probs[schema.names.index(target.name)]
        )
    cells = np.empty((n, len(schema)), dtype=np.int64)
    for j, (col, p, q) in enumerate(zip(schema.columns, probs, shares)):
        if p.ndim == 1:
            coarse = classes if col is target else rng.choice(len(p), size=n, p=p)
        else:
            coarse = np.empty(n, dtype=np.int64)
            for k in range(p.shape[0]):
                rows = np.flatnonzero(classes == k)
                coarse[rows] = rng.choice(p.shape[1], size=len(rows), p=p[k])
        cells[:, j] = refine_cells(rng, coarse, coarse_cells(col, config.bins, codec.bins), q)
    return cells


def refine_cells(
    rng: np.random.Generator, coarse: np.ndarray, group: np.ndarray, shares: np.ndarray
) -> np.ndarray:
    """A fine cell for each ``coarse`` cell: among the fine cells ``f`` with ``group[f]``
    equal to it, drawn with probability ``shares[f]`` (which sum to 1 within a group)."""
    if len(group) == len(np.unique(group)):  # one fine cell per coarse cell
        return np.argsort(group)[coarse]
    order = np.argsort(group, kind="stable")
    cdf = np.cumsum(shares[order])
    starts = np.searchsorted(group[order], coarse)
    base = np.where(starts > 0, cdf[np.maximum(starts - 1, 0)], 0.0)
    ends = np.searchsorted(group[order], coarse, side="right") - 1
    picks = np.searchsorted(cdf, base + rng.random(len(coarse)) * (cdf[ends] - base), side="right")
    return order[np.clip(picks, starts, ends)]


register(
    Method(
        name=LABEL,
        config_cls=MarginalsConfig,
        codec=codec,
        fit_arrays=fit_arrays,
        sample_arrays=sample_arrays,
        description="DP marginals: noisy histogram per column, per class of the target (baseline)",
        noisy_rows=noisy_row_count,
        for_shape=for_shape,
        calibrates_prior=True,
    )
)


register_releases(LABEL, released_statistics)


class Marginals(Synthesizer):
    """``jdp.Marginals(epsilon=1, delta=1e-5, schema=schema).fit(df).sample(1000)``."""

    method = LABEL
