"""ClustMix on tables: the public encoding and the registry's fit/sample."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget
from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.random import numpy_rng
from jdp.synth.base import FittedModel
from jdp.synth.clustmix.config import ClustMixConfig
from jdp.synth.clustmix.model import fit_arrays, sample_rows


def table_encoder(schema: Schema) -> TableEncoder:
    """Features min-max scaled to ``[0, 1]`` by their declared bounds, categoricals one-hot
    (public: built from the schema alone), the target kept apart as class codes.

    Raises ``ValueError`` unless the schema declares a categorical target with >= 2 classes
    (ClustMix is class-conditional).
    """
    target = schema.target
    if target is None or schema[target].kind != "categorical":
        raise ValueError(
            "ClustMix needs a categorical target column (declare schema.target): its mixtures "
            "are formed per class"
        )
    if len(schema[target].categories) < 2:
        raise ValueError(f"expected target {target!r} with >= 2 categories")
    return TableEncoder(schema, continuous_range=(0.0, 1.0), exclude_target=True)


def fit_table(
    key: jax.Array, data: Table, budget: PrivacyBudget, config: ClustMixConfig
) -> FittedModel:
    """The registry ``fit`` (``"clustmix"``): public encoding, :func:`fit_arrays`, the release."""
    encoder = table_encoder(data.schema)
    release = fit_arrays(
        key,
        encoder.encode(data),
        encoder.encode_target(data),
        n_classes=len(data.schema[data.schema.target].categories),
        epsilon=budget.epsilon,
        delta=budget.delta,
        config=config,
        progress=None,
    )
    params = {"features": release.features, "labels": release.labels}
    return FittedModel("clustmix", params, data.schema, config, budget, release.ledger)


def sample_table(key: jax.Array, fitted: FittedModel, n: int) -> pd.DataFrame:
    """The registry ``sample``: rows of the released mixtures, decoded (post-processing)."""
    features, labels = sample_rows(
        numpy_rng(key),
        np.asarray(fitted.params["features"]),
        np.asarray(fitted.params["labels"], dtype=np.int64),
        n,
    )
    return table_encoder(fitted.schema).decode(features, labels)
