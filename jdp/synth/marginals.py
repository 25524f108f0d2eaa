"""DP independent marginals: one noisy histogram per column, sampled column by column.

The baseline every DP synthesizer should beat on joint structure and that is hard to beat on
per-column fidelity: release every column's histogram (categories as they are; numeric
columns in equal-width cells of their public bounds, :func:`jdp.data.transforms.discretize`)
with one mechanism, then sample each column independently from its normalised, non-negative
noisy histogram (numeric values uniformly inside the drawn cell). Correlations between
columns, including the one between features and target, are lost: a classifier trained on
the output predicts close to the base rate, which is what "between random and real" means
for this baseline.

Privacy:
  Neighbouring relation: add/remove one record. The released vector ``h`` concatenates the
  ``d`` column histograms. Every record falls in exactly one cell of each column's histogram
  (values are clipped into the public bounds and categories are checked against the public
  domain before counting), so adding or removing a record changes ``h`` by one in exactly
  ``d`` cells: L1 sensitivity ``d``, L2 sensitivity ``sqrt(d)``.
  ``noise="laplace"``: Laplace noise of scale ``z d`` per cell, event ``LaplaceDpEvent(z)``;
  ``noise="gaussian"``: Gaussian noise of standard deviation ``z sqrt(d)``, event
  ``GaussianDpEvent(z)``. In both, ``z`` is the smallest noise multiplier (calibrated) whose
  ledger epsilon at ``delta`` is within the budget; Laplace at ``delta = 0`` is pure
  epsilon-DP with ``z = 1 / epsilon`` exactly.
  ``"auto"`` picks Gaussian when ``delta > 0`` and Laplace when ``delta = 0``.
  Normalising and sampling are post-processing. The row count is never released on its own:
  the model keeps only the noisy cells. See ``docs/privacy.md``, "Independent marginals".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting._validate import check_count
from accounting.calibrate import calibrate
from jdp.data.schema import Table
from jdp.data.transforms import discretize, n_bins, undiscretize
from jdp.mechanisms import gaussian_mechanism, laplace_mechanism
from jdp.synth.base import FittedModel, Method, Synthesizer, numpy_rng, register

LABEL = "marginals"
Noise = Literal["auto", "gaussian", "laplace"]


@dataclass(frozen=True, kw_only=True)
class MarginalsConfig:
    """Options of the marginals baseline.

    Attributes:
      bins: cells per continuous column (and at most this many per integer column).
      noise: ``"gaussian"``, ``"laplace"`` or ``"auto"`` (Gaussian iff delta > 0).
      secure_noise: snap the noisy counts to a grid (Mironov 2012), see :mod:`jdp.mechanisms`.
    """

    bins: int = 32
    noise: Noise = "auto"
    secure_noise: bool = False

    def __post_init__(self) -> None:
        check_count("bins", self.bins, minimum=2)
        if self.noise not in ("auto", "gaussian", "laplace"):
            raise ValueError(f"expected noise in ('auto', 'gaussian', 'laplace'), got {self.noise!r}")
        if not isinstance(self.secure_noise, bool):
            raise TypeError(f"expected secure_noise to be a bool, got {self.secure_noise!r}")


def noise_multiplier(noise: Literal["gaussian", "laplace"], epsilon: float, delta: float) -> float:
    """Smallest noise multiplier whose event is (epsilon, delta)-DP by the ledger's default
    accountant (:func:`accounting.calibrate.calibrate`, never overshoots); for Laplace at
    ``delta = 0`` exactly ``1 / epsilon``."""
    if noise == "laplace" and delta == 0:
        return 1.0 / epsilon
    event_cls = ev.GaussianDpEvent if noise == "gaussian" else ev.LaplaceDpEvent
    return calibrate(event_cls, target_epsilon=epsilon, target_delta=delta, lower=1e-3)


def cell_counts(data: Table, bins: int) -> list[np.ndarray]:
    """The exact (private) histogram of each column, in schema order."""
    return [
        np.bincount(discretize(col, data.frame[col.name], bins), minlength=n_bins(col, bins)).astype(
            np.float64
        )
        for col in data.schema.columns
    ]


def fit(key: jax.Array, data: Table, budget: PrivacyBudget, config: MarginalsConfig) -> FittedModel:
    """Release all column histograms with one Laplace or Gaussian mechanism (see module)."""
    rng = numpy_rng(key)
    counts = np.concatenate(cell_counts(data, config.bins))
    d = len(data.schema)
    noise = config.noise if config.noise != "auto" else ("gaussian" if budget.delta > 0 else "laplace")
    if noise == "gaussian":
        if budget.delta == 0:
            raise ValueError("Gaussian noise needs delta > 0; use noise='laplace' for delta = 0")
        z = noise_multiplier("gaussian", budget.epsilon, budget.delta)
        noisy, event = gaussian_mechanism(
            rng, counts, l2_sensitivity=float(np.sqrt(d)), noise_multiplier=z, secure_noise=config.secure_noise
        )
    else:
        z = noise_multiplier("laplace", budget.epsilon, budget.delta)
        noisy, event = laplace_mechanism(
            rng, counts, l1_sensitivity=float(d), epsilon=1.0 / z, secure_noise=config.secure_noise
        )
    ledger = PrivacyLedger().record(LABEL, event, note=f"{d} column histograms, {counts.size} cells")
    return FittedModel(
        method=LABEL,
        params={"noisy_counts": noisy},
        schema=data.schema,
        config=config,
        budget=budget,
        ledger=ledger,
    )


def column_probabilities(model: FittedModel) -> list[np.ndarray]:
    """Each column's sampling distribution: noisy counts clipped at 0 and normalised
    (uniform when every noisy count of a column is <= 0). Post-processing."""
    bins = model.config.bins
    sizes = [n_bins(col, bins) for col in model.schema.columns]
    noisy = np.asarray(model.params["noisy_counts"], dtype=np.float64)
    if noisy.shape != (sum(sizes),):
        raise ValueError(f"expected {sum(sizes)} noisy counts for this schema, got {noisy.shape}")
    probs = []
    for part in np.split(noisy, np.cumsum(sizes)[:-1]):
        p = np.maximum(part, 0.0)
        probs.append(p / p.sum() if p.sum() > 0 else np.full(len(p), 1.0 / len(p)))
    return probs


def sample(key: jax.Array, model: FittedModel, n: int) -> pd.DataFrame:
    """``n`` rows, each column drawn independently from its noisy marginal."""
    rng = numpy_rng(key)
    bins = model.config.bins
    out = {}
    for col, p in zip(model.schema.columns, column_probabilities(model)):
        cells = rng.choice(len(p), size=n, p=p)
        out[col.name] = undiscretize(rng, col, cells, bins)
    return pd.DataFrame(out)


register(
    Method(
        name=LABEL,
        config_cls=MarginalsConfig,
        fit=fit,
        sample=sample,
        description="DP independent marginals: one noisy histogram per column (baseline)",
    )
)


class Marginals(Synthesizer):
    """``jdp.Marginals(epsilon=1, delta=1e-5, schema=schema).fit(df).sample(1000)``."""

    method = LABEL
