"""ClustMix on arrays and its table codec: Approximate (clusters per class), Adapt (KIP,
Eq. 6), Anonymise (mixing), in one of two modes (:data:`MODES`, :mod:`.phases`).

The codec (:class:`ClustMixCodec`) encodes a table as features in ``[0, 1]^D`` (public min-max
to the declared bounds; categoricals one-hot or ordinal) and the target as class codes;
:func:`fit_arrays` runs the configured mode on them, :func:`sample_arrays` draws released
mixtures and the codec decodes them (post-processing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting.validation import check_count, check_open_unit, check_positive
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.mechanisms.mixing import check_unit_box
from jdp.random import numpy_rng
from jdp.synth.base import FittedModel, Params
from jdp.synth.clustmix.config import ClustMixConfig, Mode, Records
from jdp.synth.clustmix.phases import ClustMixRelease, fit_paper, fit_strict, mixing_noise_std
from jdp.synth.signal import MEAN_PRECISION, Release

ModeFit = Callable[[jax.Array, Records, PrivacyBudget, ClustMixConfig], ClustMixRelease]
#: Each mode's fit function, ``fit(key, records, budget, config)``.
MODES: dict[Mode, ModeFit] = {"strict": fit_strict, "paper": fit_paper}


# -- the codec ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClustMixCodec:
    """ClustMix's public encoding of a table (built from the schema and config alone).

    Features in ``[0, 1]``, the target left out and kept as class codes: ``"one-hot"``
    encoding is the :class:`~jdp.data.transforms.TableEncoder`'s (numeric columns min-max
    scaled by their declared bounds, categoricals and state indicators one-hot); ``"ordinal"``
    (``ordinal=True``) is one feature per encoder span, a numeric value as is and a
    categorical's category index over ``K - 1`` (the paper counts Adult's 14 columns as 14
    features).
    """

    encoder: TableEncoder
    ordinal: bool = False

    @classmethod
    def of(cls, schema: Schema, encoding: str = "one-hot") -> ClustMixCodec:
        """The codec of ``schema``. Raises ``ValueError`` unless the schema declares a
        categorical target with >= 2 classes (ClustMix is class-conditional)."""
        target = schema.target
        if target is None or schema[target].kind != "categorical":
            raise ValueError(
                "ClustMix needs a categorical target column (declare schema.target): its "
                "mixtures are formed per class"
            )
        if len(schema[target].categories) < 2:
            raise ValueError(f"expected target {target!r} with >= 2 categories")
        encoder = TableEncoder(schema, continuous_range=(0.0, 1.0), exclude_target=True)
        return cls(encoder, encoding == "ordinal")

    @property
    def n_classes(self) -> int:
        """``C``: the target's categories."""
        schema = self.encoder.schema
        return len(schema[schema.target].categories)

    @property
    def width(self) -> int:
        """``D``: the features of a record (one per encoder span in ordinal encoding)."""
        return len(self.encoder.spans) if self.ordinal else self.encoder.width

    @property
    def state_columns(self) -> np.ndarray:
        """Feature indices of the state indicator blocks (point masses, missing values)."""
        spans = self.encoder.spans
        states = self.encoder.one_hot_spans("states")
        if self.ordinal:
            return np.array([spans.index(s) for s in states], dtype=np.int64)
        return np.array([j for s in states for j in range(s.start, s.stop)], dtype=np.int64)

    def encode(self, data: Table | pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)``: the records' features in ``[0, 1]^D`` and their class codes."""
        e = self.encoder.encode(data)
        return (self._to_ordinal(e) if self.ordinal else e), self.encoder.encode_target(data)

    def decode(self, key: jax.Array, rows: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
        """Feature rows and class codes -> a table: ordinal features back to one-hot (a
        categorical value rounds to the nearest index), each state block's category drawn
        with its values as probabilities
        (:meth:`~jdp.data.transforms.TableEncoder.sample_blocks`), then decoded."""
        features, labels = rows
        e = self.to_one_hot(features) if self.ordinal else np.asarray(features, np.float64)
        return self.encoder.decode(self.encoder.sample_blocks(numpy_rng(key), e), labels)

    def _to_ordinal(self, e: np.ndarray) -> np.ndarray:
        cols = []
        for span in self.encoder.spans:
            block = e[:, span.start : span.stop]
            if span.kind == "categorical":
                cols.append(np.argmax(block, axis=1) / max(span.size - 1, 1))
            else:
                cols.append(block[:, 0])
        return np.column_stack(cols)

    def to_one_hot(self, o: np.ndarray) -> np.ndarray:
        """Ordinal features -> the encoder's one-hot rows (a categorical value rounds to the
        nearest index)."""
        e = np.zeros((o.shape[0], self.encoder.width))
        for j, span in enumerate(self.encoder.spans):
            if span.kind == "categorical":
                index = np.clip(np.round(o[:, j] * (span.size - 1)), 0, span.size - 1).astype(int)
                e[np.arange(o.shape[0]), span.start + index] = 1.0
            else:
                e[:, span.start] = o[:, j]
        return e


def codec(schema: Schema, config: ClustMixConfig) -> ClustMixCodec:
    """The registry's codec: :meth:`ClustMixCodec.of` with ``config.categorical_encoding``."""
    return ClustMixCodec.of(schema, config.categorical_encoding)


# -- fit ----------------------------------------------------------------------------------------
def check_inputs(x: object, y: object, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` in ``[0, 1]^D`` (numeric) and integer ``y`` in ``0..C-1``; one-line errors."""
    x = check_unit_box(x)
    c = check_count("n_classes", n_classes, minimum=2)
    y = np.asarray(y)
    if y.shape != (x.shape[0],) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"expected integer class codes of shape ({x.shape[0]},), got {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= c):
        raise ValueError(f"expected class codes in 0..{c - 1}")
    return x, y  # any number of records (0 included): the count is private (rule 7)


def fit(
    key: jax.Array,
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    epsilon: float,
    delta: float,
    config: ClustMixConfig,
    spent: PrivacyLedger | None = None,
) -> ClustMixRelease:
    """Fit ClustMix (``MODES[config.mode]``) on records ``x`` in ``[0, 1]^D`` with class
    codes ``y``.

    Args:
      key: every random choice (clustering seeds, noise, salts, KIP batches) comes from it.
      x, y: private records and their class codes.
      n_classes: ``C``, the size of the public label domain (>= 2).
      epsilon, delta: the budget (``delta`` in (0, 1): both modes use Gaussian noise).
      config: see :class:`ClustMixConfig`.
      spent: releases made from the same records before this fit (a DP schema, a row
        count): strict mode calibrates its plan after them to meet ``(epsilon, delta)``
        as a whole (:attr:`accounting.PrivacyBudget.prior`); paper mode takes what basic
        composition leaves.
    """
    x, y = check_inputs(x, y, n_classes)
    check_positive("epsilon", epsilon)
    check_open_unit("delta", delta)
    budget = PrivacyBudget(epsilon=epsilon, delta=delta, spent=spent)
    return MODES[config.mode](key, Records(x, y, n_classes), budget, config)


def fit_arrays(
    key: jax.Array,
    encoded: tuple[np.ndarray, np.ndarray],
    codec: ClustMixCodec,
    budget: PrivacyBudget,
    config: ClustMixConfig,
) -> tuple[dict[str, np.ndarray], PrivacyLedger]:
    """The registry's fit: :func:`fit` on the codec's ``(x, y)`` under ``budget``; the
    released mixtures, their Adapt shifts and labels, and the data-free noise level."""
    x, y = encoded
    release = fit(
        key, x, y, n_classes=codec.n_classes, epsilon=budget.epsilon, delta=budget.delta,
        config=config, spent=budget.spent,
    )  # fmt: skip
    return release.params, release.ledger


# -- sample (post-processing) -------------------------------------------------------------------
def denoise_mixtures(mixtures: np.ndarray, labels: np.ndarray, noise_std: float) -> np.ndarray:
    """Empirical-Bayes shrinkage of released mixtures towards their class means
    (post-processing of the release and its public noise level; no privacy cost).

    Per class ``c`` and coordinate ``j``, with ``m`` and ``v`` the mean and variance of the
    class's ``M_c`` mixtures and ``s = noise_std`` (the noise std of one coordinate):
    ``x -> m + max(0, 1 - s^2 / v) (x - m)``, the posterior mean of the group mean ``x``
    estimates when group means are spread as ``N(m, v - s^2)`` around ``m`` (James-Stein,
    positive part). The class means are kept; a coordinate whose spread is all noise
    collapses to its class mean, one with real spread keeps the part the noise leaves.
    A class with a single mixture is returned as it is.

    References:
      Efron & Morris, "Stein's estimation rule and its competitors -- an empirical Bayes
      approach", JASA 68 (1973), Eq. (1.4)-(1.6).
    """
    check_positive("noise_std", noise_std)
    out = np.array(mixtures, dtype=np.float64)
    for c in np.unique(labels):
        rows = labels == c
        if rows.sum() < 2:
            continue
        x = out[rows]
        mean, var = x.mean(axis=0), x.var(axis=0, ddof=1)
        keep = np.maximum(0.0, 1.0 - noise_std**2 / np.maximum(var, np.finfo(float).tiny))
        out[rows] = mean + keep * (x - mean)
    return out


def draw_indices(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    """``n`` indices into ``m`` released rows: whole random permutations, then part of one."""
    n = check_count("n", n, minimum=1)
    return np.concatenate([rng.permutation(m) for _ in range(-(-n // m))])[:n]


def sample_arrays(
    key: jax.Array, params: Params, codec: ClustMixCodec, config: ClustMixConfig, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of released mixtures and their labels, for the codec to decode.

    A row is a released mixture with its Adapt shift, clipped to the box; its state indicator
    columns come instead from the same mixture without the shift, denoised
    (:func:`denoise_mixtures`), and the codec draws each state from them: a mixture's state
    block is the share of its group's records in each state plus noise (its argmax is close
    to a coin flip), and the shift, tuned for classification, moves the blocks' class means.
    The shares of rows at a point mass are measured by ``scripts/sweep_epsilon.py --methods
    clustmix`` (docs/results/sweep_epsilon.md).
    """
    del config
    labels = np.asarray(params["labels"], dtype=np.int64)
    mixtures, shift = np.asarray(params["mixtures"]), np.asarray(params["shift"])
    rows = draw_indices(numpy_rng(key), len(labels), n)
    features = np.clip(mixtures[rows] + shift[rows], 0.0, 1.0)
    states = codec.state_columns
    denoised = denoise_mixtures(mixtures, labels, float(params["noise_std"]))
    features[:, states] = denoised[rows][:, states]
    return features, labels[rows]


def value_coordinate(codec: ClustMixCodec, name: str) -> int:
    """The feature index of numeric column ``name``'s value (its span's first coordinate in
    one-hot encoding, the span's index in ordinal)."""
    spans = codec.encoder.spans
    (j,) = [i for i, s in enumerate(spans) if s.name == name]
    return j if codec.ordinal else spans[j].start


#: The largest spread (standard deviation) of any variable on ``[0, 1]`` (Popoviciu): half
#: the box.
MAX_SPREAD = 0.5


def public_releases(
    config: ClustMixConfig, codec: ClustMixCodec, budget: PrivacyBudget
) -> list[Release]:
    """Before the fit (:func:`jdp.synth.feasibility.check_public_noise`): the numeric
    columns' value coordinates of the mixtures, their noise std per feature
    (:func:`~jdp.synth.clustmix.phases.mixing_noise_std`, data-free) against the signal
    :func:`released_statistics` would give the largest spread any column can have,
    :data:`MAX_SPREAD`. At noise/signal >= 1 (noise std >= 1/8) that rule names every numeric
    column after the fit, whatever the data; none when the schema has no numeric column."""
    schema = codec.encoder.schema
    numeric = [c.name for c in schema.columns if c.is_numeric and c.name != schema.target]
    if not numeric:
        return []
    s = mixing_noise_std(config, codec.n_classes, codec.width, budget)
    return [Release("the values of every numeric column", s, MEAN_PRECISION * MAX_SPREAD)]


def released_statistics(model: FittedModel) -> list[Release]:
    """Each numeric column's spread among the released mixtures against their noise, for
    the no-signal rule (:mod:`jdp.synth.signal`). Within a class, the variance ``v`` of the
    column's value coordinate over the class's mixtures is its groups' spread plus the
    noise's ``s^2`` (``s = params["noise_std"]``, public and data-free); the signal is the
    pooled ``sqrt(max(v - s^2, 0))`` (within-class variances weighted by their mixtures
    less one) times :data:`~jdp.synth.signal.MEAN_PRECISION`, as for a mean; the noise
    ``s``. A column whose mixtures spread less than four times their noise (ratio >= 1:
    ``v <= 17 s^2``) is drawn mostly from noise, clipped to its bounds: its
    synthetic mean and median say little about the real ones (german, crx, spambase, adult:
    ``docs/results/numeric_columns.md``). The same variance decides
    :func:`denoise_mixtures`' shrinkage. Post-processing of the release."""
    params = model.params
    codec = ClustMixCodec.of(model.schema, model.config.categorical_encoding)
    labels = np.asarray(params["labels"], dtype=np.int64)
    mixtures = np.asarray(params["mixtures"], dtype=np.float64)
    s = float(params["noise_std"])
    out = []
    for col in model.schema.columns:
        if not col.is_numeric or col.name == model.schema.target:
            continue
        x = mixtures[:, value_coordinate(codec, col.name)]
        squares = dof = 0.0
        for c in np.unique(labels):
            xc = x[labels == c]
            squares += float(np.sum((xc - xc.mean()) ** 2))
            dof += len(xc) - 1
        v = squares / dof if dof > 0 else 0.0
        spread = float(np.sqrt(max(v - s**2, 0.0)))
        out.append(Release(f"spread of {col.name} (to within half)", s, MEAN_PRECISION * spread))
    return out
