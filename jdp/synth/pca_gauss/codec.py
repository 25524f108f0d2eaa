"""PCA-Gauss's table codec: the public layout of an encoded row (box-scaled features and the
label), from the schema and config alone."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd

from jdp.data.schema import Schema, Table
from jdp.data.transforms import Span, TableEncoder
from jdp.random import numpy_rng
from jdp.synth.pca_gauss.config import Mode, PCAGaussConfig
from jdp.synth.pca_gauss.subspace import Blocks


@dataclass(frozen=True)
class PCAGaussCodec:
    """A table as ``(z, label)``: the features in the box ``[-1, 1]^d`` (numeric columns
    min-max scaled by their declared bounds, categoricals and state indicators one-hot) and
    the label kept out of them -- class codes (Algorithm 3), ``tau`` in ``[-1, 1]``
    (Algorithm 2: a numeric column, or a two-category one coded -1/+1) or ``None``
    (Algorithm 1).

    Attributes:
      encoder: the :class:`~jdp.data.transforms.TableEncoder` of every column (to ``[-1, 1]``).
      mode: the algorithm, resolved (``"auto"``: ``"mixture"`` when the schema names a
        target, else ``"unsupervised"``).
      label: the label's span in the encoded row (``None`` for ``"unsupervised"``).
    """

    encoder: TableEncoder
    mode: Mode
    label: Span | None

    @classmethod
    def of(cls, schema: Schema, config: PCAGaussConfig) -> PCAGaussCodec:
        """The codec of ``schema`` for ``config.mode`` and ``config.label_column`` (default
        the schema's target); one-line ``ValueError`` for a label the mode cannot use."""
        mode = config.mode
        if mode == "auto":
            mode = "mixture" if schema.target is not None else "unsupervised"
        encoder = TableEncoder(schema, continuous_range=(-1.0, 1.0))
        name = config.label_column if config.label_column is not None else schema.target
        if mode == "unsupervised":
            return cls(encoder, mode, None)
        if name is None:
            raise ValueError(f"mode={mode!r} needs a label: set label_column or a schema target")
        span = next((s for s in encoder.spans if s.name == name), None)
        if span is None:
            raise ValueError(f"label column {name!r} is not in the schema")
        if mode == "mixture" and span.kind != "categorical":
            raise ValueError(
                f"mode='mixture' needs a categorical label, got {name!r} ({span.kind})"
            )
        if mode == "supervised" and span.kind == "categorical" and span.size != 2:
            raise ValueError(
                f"mode='supervised' needs a numeric or two-category label, {name!r} has {span.size}"
            )
        if encoder.width - span.size < 1:
            raise ValueError("the schema has no feature column besides the label")
        return cls(encoder, mode, span)

    @property
    def n_classes(self) -> int | None:
        """Algorithm 3: the number of the label's categories; ``None`` otherwise."""
        if self.mode != "mixture":
            return None
        return len(self.encoder.schema[self.label.name].categories)

    @property
    def feature_index(self) -> np.ndarray:
        """Columns of the encoded row that are features (all but the label's)."""
        index = np.arange(self.encoder.width)
        if self.label is None:
            return index
        return index[(index < self.label.start) | (index >= self.label.stop)]

    @property
    def blocks(self) -> Blocks:
        """``(start, stop)`` of each one-hot block among the feature columns (public)."""
        position = {int(j): i for i, j in enumerate(self.feature_index)}
        return tuple(
            (position[s.start], position[s.start] + s.size)
            for s in self.encoder.spans
            if s.kind == "categorical" and s is not self.label
        )

    def encode(self, data: Table | pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        """Records -> ``(z, label)`` (box-scaled features; class codes, ``tau`` or ``None``)."""
        e = self.encoder.encode(data)
        z = np.clip(e[:, self.feature_index], -1.0, 1.0)
        if self.label is None:
            return z, None
        block = e[:, self.label.start : self.label.stop]
        if self.mode == "mixture":
            return z, np.argmax(block, axis=1)
        return z, block[:, 0] if self.label.size == 1 else block[:, 1] - block[:, 0]

    def join(self, z: np.ndarray, label: np.ndarray | None) -> np.ndarray:
        """Inverse of :meth:`encode` up to the encoder: ``(z, label)`` -> encoded rows."""
        e = np.zeros((z.shape[0], self.encoder.width))
        e[:, self.feature_index] = z
        if self.label is not None:
            if self.mode == "mixture":
                e[np.arange(len(z)), self.label.start + label] = 1.0
            elif self.label.size == 1:
                e[:, self.label.start] = label
            else:
                e[:, self.label.start : self.label.stop] = np.column_stack([-label, label])
        return e

    def decode(self, key: jax.Array, rows: tuple[np.ndarray, np.ndarray | None]) -> pd.DataFrame:
        """Drawn ``(z, label)`` -> a table (post-processing).

        A state indicator block (point mass / missing) is decoded by a draw with its
        reconstructed values as probabilities
        (:meth:`~jdp.data.transforms.TableEncoder.sample_blocks`), not by its argmax: ``c + R V
        u`` is the linear estimate of the one-hot block given the features, i.e. of its state
        probabilities, and the ``k`` components keep the block's mean but little of its
        variance, so its argmax gives nearly every row the majority state. Categorical
        columns keep the argmax (drawing them lowers TSTR utility). Measured by
        ``scripts/sweep_epsilon.py`` (shares at a point mass, docs/results/sweep_epsilon.md)
        and ``scripts/reproduce_pca_gauss.py --part adult-tstr`` (TSTR).
        """
        e = self.join(*rows)
        return self.encoder.decode(self.encoder.sample_blocks(numpy_rng(key), e))


def codec(schema: Schema, config: PCAGaussConfig) -> PCAGaussCodec:
    """The registry's codec (:meth:`PCAGaussCodec.of`)."""
    return PCAGaussCodec.of(schema, config)
