"""A multilayer perceptron (flax.linen), the building block of the VAEs' encoders/decoders."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax


class MLP(nn.Module):
    """Dense layers of widths ``features``; ``activation`` between them, none after the last.

    Attributes:
        features: output width of each layer, e.g. ``(1000, 784)`` for P3GM's decoder
            ``[d', 1000, d]`` (P3GM, Sec. V "Implementations of Generative Models").
        activation: hidden activation (ReLU in P3GM).
        use_bias: whether the dense layers have a bias.
    """

    features: Sequence[int]
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    use_bias: bool = True

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, width in enumerate(self.features):
            x = nn.Dense(width, use_bias=self.use_bias)(x)
            if i + 1 < len(self.features):
                x = self.activation(x)
        return x
