"""ClustMix on tables: the public encodings (one-hot, or one feature per column as the paper
counts them) and the registry's fit/sample."""

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


def ordinal_columns(encoder: TableEncoder, e: np.ndarray) -> np.ndarray:
    """One-hot rows of ``encoder`` -> one feature per column in ``[0, 1]``: a numeric column
    as is, a categorical column's category index over ``K - 1`` (public, from the schema)."""
    cols = []
    for span in encoder.spans:
        block = e[:, span.start : span.stop]
        if span.kind == "categorical":
            cols.append(np.argmax(block, axis=1) / max(span.size - 1, 1))
        else:
            cols.append(block[:, 0])
    return np.column_stack(cols)


def one_hot_columns(encoder: TableEncoder, o: np.ndarray) -> np.ndarray:
    """Inverse of :func:`ordinal_columns` (a categorical value rounds to the nearest index)."""
    e = np.zeros((o.shape[0], encoder.width))
    for j, span in enumerate(encoder.spans):
        if span.kind == "categorical":
            index = np.clip(np.round(o[:, j] * (span.size - 1)), 0, span.size - 1).astype(int)
            e[np.arange(o.shape[0]), span.start + index] = 1.0
        else:
            e[:, span.start] = o[:, j]
    return e


def encode_features(schema: Schema, data: Table | pd.DataFrame, encoding: str) -> np.ndarray:
    """The records' features in ``[0, 1]^D``: ``"one-hot"`` (:func:`table_encoder`) or
    ``"ordinal"`` (one feature per column, :func:`ordinal_columns`)."""
    encoder = table_encoder(schema)
    e = encoder.encode(data)
    return ordinal_columns(encoder, e) if encoding == "ordinal" else e


def fit_table(
    key: jax.Array, data: Table, budget: PrivacyBudget, config: ClustMixConfig
) -> FittedModel:
    """The registry ``fit`` (``"clustmix"``): public encoding, :func:`fit_arrays`, the release."""
    release = fit_arrays(
        key,
        encode_features(data.schema, data, config.categorical_encoding),
        table_encoder(data.schema).encode_target(data),
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
    encoder = table_encoder(fitted.schema)
    if fitted.config.categorical_encoding == "ordinal":
        features = one_hot_columns(encoder, features)
    return encoder.decode(features, labels)
