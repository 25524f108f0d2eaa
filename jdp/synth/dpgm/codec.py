"""DPGM's codec: the public encoding of a table for DPGM's generators and its decoding.

Encoding (from the schema alone, :class:`~jdp.data.transforms.TableEncoder`): numeric columns
min-max to ``[0, 1]``, one-hot categoricals and state indicators; the generators' heads merge
neighbouring ``[0, 1]`` coordinates into one Bernoulli head (a categorical head per one-hot
block), and the state blocks are those whose per-cluster counts DPGM releases. Decoding
(post-processing) draws each binary column 0/1 with its mean and each one-hot block's category
in proportion to its values (Acs et al. 2019, Sec. 3: the RBM's visible probabilities and the
VAE's Bernoulli/softmax outputs are the means of the data's distribution).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import jax
import numpy as np
import pandas as pd

from jdp.data.schema import Schema, Table
from jdp.data.transforms import TableEncoder
from jdp.nn.heads import HeadLayout, heads_for_spans
from jdp.random import numpy_rng
from jdp.synth import states
from jdp.synth.dpgm.config import DPGMConfig
from jdp.synth.dpgm.generators import generator_for

__all__ = ["DPGMCodec", "codec"]


@dataclass(frozen=True)
class DPGMCodec:
    """DPGM's public encoding of a table (:class:`jdp.synth.base.Codec`), from the schema
    alone: numeric columns min-max to ``[0, 1]``, one-hot categoricals and state indicators
    (:class:`~jdp.data.transforms.TableEncoder`); a binary (0/1) column is an integer column
    with bounds ``[0, 1]`` and encodes to itself.

    Attributes:
      encoder: the table encoder.
    """

    encoder: TableEncoder

    @property
    def width(self) -> int:
        return self.encoder.width

    @cached_property
    def layout(self) -> HeadLayout:
        """The generators' output heads: neighbouring ``[0, 1]`` coordinates merged into one
        Bernoulli head, one categorical head per one-hot block."""
        return heads_for_spans(self.encoder.spans, merge=True)

    @cached_property
    def state_blocks(self) -> states.Blocks:
        """``(start, stop)`` of the state indicators whose per-cluster counts are released."""
        return states.state_blocks(self.encoder)

    @cached_property
    def binary_columns(self) -> np.ndarray:
        """Coordinates of the integer columns with bounds [0, 1] (drawn 0/1 when decoding)."""
        return np.array(
            [
                span.start
                for col, span in zip(self.encoder.columns, self.encoder.spans)
                if col.is_integer_valued and (col.lower, col.upper) == (0, 1)
            ],
            dtype=np.int64,
        )

    def encode(self, data: Table) -> np.ndarray:
        """The ``(n, width)`` encoded records (private)."""
        return self.encoder.encode(data)

    def decode(self, key: jax.Array, rows: np.ndarray) -> pd.DataFrame:
        """A table from generator means (post-processing): binary columns drawn 0/1 with
        their means, each one-hot block's category drawn in proportion to its values (the
        RBM's visible probabilities, the VAE's softmax;
        :meth:`~jdp.data.transforms.TableEncoder.sample_blocks`), then decoded."""
        rng = numpy_rng(key)
        x = np.array(rows, dtype=np.float64)
        cols = self.binary_columns
        x[:, cols] = rng.random((len(x), len(cols))) < x[:, cols]
        return self.encoder.decode(self.encoder.sample_blocks(rng, x, "all"))


def codec(schema: Schema, config: DPGMConfig) -> DPGMCodec:
    """The codec of ``schema``, checked against the generator (the RBM refuses a schema that
    is not binary: public, before any data is read)."""
    out = DPGMCodec(TableEncoder(schema, continuous_range=(0.0, 1.0)))
    generator_for(config).check_schema(out.encoder)
    return out
