"""DPGM's two generators as values: a VAE for any encoded table, an RBM for binary data.

Each cluster of DPGM trains one generator by DP-SGD with DPNorm's adaptive clipping on that
cluster's rows only (Acs et al., Alg. 1 line 6, Alg. 4). A generator is a small frozen
dataclass chosen once from ``DPGMConfig.generator`` (:func:`generator_for`) that knows its
public schema check, its data-free initialisation, its per-example loss and optimiser, the
public model state its loss reads and how that state moves between steps, and its sampler
(:class:`Generator`); every cluster's DP-SGD run is one slice of the batched program of
:mod:`jdp.synth.dpgm.training`:

* :class:`VAEGenerator` (Sec. 3.2): encoder ``q(z | x) = N(mu(x), diag sigma^2(x))``, decoder
  heads on ``z ~ N(0, I)``; the per-example loss is the negative ELBO
  ``KL(q(z | x) || N(0, I)) - log p(x | z)`` with one reparametrised draw
  ``z = mu + sigma * eps`` (Kingma & Welling 2014); no model state.
* :class:`RBMGenerator` (Sec. 3.1): a Bernoulli RBM (:mod:`jdp.nn.rbm`), per-example loss
  ``F(x) - mean_k F(v'_k)`` (persistent contrastive divergence, Tieleman 2008) against
  ``K`` persistent Gibbs chains ``v'`` (the model state), advanced by ``gibbs_steps``
  sweeps under each *released* iterate after every step (:meth:`RBMGenerator.advance`):
  the chains read a key and the released parameters only, never data, so they are
  post-processing and DP-SGD's analysis covers them.

Every record of the cluster's data is ``{"x": row, "w": 1}``; the extra row of weight 0 that
every cluster carries (so that an empty cluster trains on noise only) has gradient 0.

Privacy:
    None here: the runs and their events are :mod:`jdp.synth.dpgm.training`'s (DPNorm's
    histogram and the gradient on one Poisson batch per step). The schema and row checks are
    public (schema) or raise before any release (rows).

References:
    Acs, Melis, Castelluccia & De Cristofaro, "Differentially Private Mixture of Generative
    Neural Networks", IEEE TKDE 31(6), 2019: Sec. 3.1-3.2, 6.1, Alg. 4.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jdp.data.transforms import TableEncoder
from jdp.nn import rbm as rbm_lib
from jdp.nn.heads import HeadLayout, activate, layout_width, log_likelihood
from jdp.nn.vae import Decoder, Encoder, kl_to_standard_normal
from jdp.random import normal
from jdp.synth.dpgm.config import DPGMConfig

__all__ = ["GENERATORS", "Generator", "RBMGenerator", "VAEGenerator", "generator_for"]


class Generator(Protocol):
    """What DPGM asks of a cluster's generator (see the module docstring)."""

    name: ClassVar[str]

    def check_schema(self, encoder: TableEncoder) -> None:
        """Refuse a schema the generator cannot model (public: before any data is read)."""
        ...

    def check_rows(self, x: np.ndarray) -> None:
        """Refuse encoded rows the generator cannot model (one line, before any release)."""
        ...

    def init(self, key: jax.Array, width: int) -> Any:
        """Parameters for ``width`` encoded coordinates, drawn without data."""
        ...

    def example_loss(self, layout: HeadLayout) -> Callable[..., jax.Array]:
        """The loss of ONE record ``{"x": row, "w": weight}`` times its weight, as
        :mod:`jdp.dpsgd.clipping` takes it (with the model state as a fourth argument where
        the generator has one)."""
        ...

    def optimizer(self) -> optax.GradientTransformation:
        """The optimiser chained after DP-SGD's noisy aggregation."""
        ...

    def start(self, key: jax.Array, width: int) -> tuple[jax.Array, Any, Any]:
        """``(DP-SGD run key, initial public model state, key of the state's moves)`` from
        one cluster's training key (no data; ``None`` where there is no model state)."""
        ...

    def advance(self, key: Any, count: jax.Array, params: Any, model_state: Any) -> Any:
        """The public model state after step ``count`` (1-based) released ``params``
        (traceable; post-processing of the released iterate)."""
        ...

    def sample(self, key: jax.Array, params: Any, layout: HeadLayout, n: int) -> jax.Array:
        """``(n, width)`` means of the generator's distribution (post-processing)."""
        ...


@dataclass(frozen=True, kw_only=True)
class VAEGenerator:
    """DPGM's VAE: ``[d, hidden, latent_dim]`` encoder, ``[latent_dim, hidden, d]`` decoder
    with the layout's Bernoulli/categorical heads, prior ``N(0, I)``, Adam."""

    hidden: int
    latent_dim: int
    learning_rate: float
    name: ClassVar[str] = "vae"

    @classmethod
    def from_config(cls, config: DPGMConfig) -> VAEGenerator:
        return cls(
            hidden=config.hidden, latent_dim=config.latent_dim, learning_rate=config.learning_rate
        )

    def modules(self, width: int) -> tuple[Encoder, Decoder]:
        return Encoder(self.hidden, self.latent_dim, learn_mean=True), Decoder(self.hidden, width)

    def check_schema(self, encoder: TableEncoder) -> None:
        """Any schema: the heads model every encoded column."""

    def check_rows(self, x: np.ndarray) -> None:
        """Any encoded rows."""

    def init(self, key: jax.Array, width: int) -> Any:
        encoder, decoder = self.modules(width)
        k_enc, k_dec = jax.random.split(key)
        return {
            "encoder": encoder.init(k_enc, jnp.zeros((width,))),
            "decoder": decoder.init(k_dec, jnp.zeros((self.latent_dim,))),
        }

    def example_loss(self, layout: HeadLayout) -> Callable[..., jax.Array]:
        """The negative ELBO of ONE record ``{"x": row, "w": weight}``, times its weight."""
        encoder, decoder = self.modules(layout_width(layout))

        def loss(params: Any, example: dict[str, jax.Array], key: jax.Array) -> jax.Array:
            x = example["x"]
            mean, logvar = encoder.apply(params["encoder"], x)
            z = mean + jnp.exp(0.5 * logvar) * normal(key, mean.shape)
            ll = log_likelihood(decoder.apply(params["decoder"], z), x, layout)
            return example["w"] * (kl_to_standard_normal(mean, logvar) - ll)

        return loss

    def optimizer(self) -> optax.GradientTransformation:
        return optax.adam(self.learning_rate)

    def start(self, key: jax.Array, width: int) -> tuple[jax.Array, None, None]:
        """The whole key runs DP-SGD; the VAE has no model state."""
        return key, None, None

    def advance(self, key: None, count: jax.Array, params: Any, model_state: None) -> None:
        """No model state to move."""

    @functools.partial(jax.jit, static_argnames=("self", "layout", "n"))
    def sample(self, key: jax.Array, params: Any, layout: HeadLayout, n: int) -> jax.Array:
        """The decoder's activated heads (Bernoulli means, softmax blocks) at ``z ~ N(0, I)``."""
        _, decoder = self.modules(layout_width(layout))
        z = normal(key, (n, self.latent_dim))
        return activate(decoder.apply(params["decoder"], z), layout)


@dataclass(frozen=True, kw_only=True)
class RBMGenerator:
    """DPGM's Bernoulli RBM: ``hidden`` hidden units, ``n_chains`` persistent chains advanced
    ``gibbs_steps`` sweeps per DP-SGD step, samples after ``sample_burn_in`` sweeps, Adam."""

    hidden: int
    n_chains: int
    gibbs_steps: int
    sample_burn_in: int
    learning_rate: float
    name: ClassVar[str] = "rbm"

    @classmethod
    def from_config(cls, config: DPGMConfig) -> RBMGenerator:
        return cls(
            hidden=config.hidden,
            n_chains=config.n_chains,
            gibbs_steps=config.gibbs_steps,
            sample_burn_in=config.sample_burn_in,
            learning_rate=config.learning_rate,
        )

    def module(self, width: int) -> rbm_lib.RBM:
        return rbm_lib.RBM(n_visible=width, n_hidden=self.hidden)

    def check_schema(self, encoder: TableEncoder) -> None:
        """Every encoded coordinate must be 0/1: integer [0, 1] columns and one-hot
        categoricals."""
        for col in encoder.columns:
            if col.is_numeric and not (col.is_integer_valued and (col.lower, col.upper) == (0, 1)):
                raise ValueError(
                    f"the RBM needs binary data: column {col.name!r} is {col.kind} in "
                    f"[{col.lower:g}, {col.upper:g}]; declare 0/1 integer columns or use "
                    "generator='vae'"
                )

    def check_rows(self, x: np.ndarray) -> None:
        if not np.all((x == 0.0) | (x == 1.0)):
            raise ValueError("the RBM needs binary (0/1) data; use generator='vae' for other data")

    def init(self, key: jax.Array, width: int) -> Any:
        return self.module(width).init(key, jnp.zeros((width,)))

    def example_loss(self, layout: HeadLayout) -> Callable[..., jax.Array]:
        """Persistent CD's loss of ONE record against the chains (the model state)."""
        rbm = self.module(layout_width(layout))

        def loss(
            params: Any, example: dict[str, jax.Array], key: jax.Array, chains: Any
        ) -> jax.Array:
            del key
            return example["w"] * rbm_lib.cd_loss(rbm, params, example["x"], chains)

        return loss

    def optimizer(self) -> optax.GradientTransformation:
        return optax.adam(self.learning_rate)

    def start(self, key: jax.Array, width: int) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``key`` split into the chains' start, the DP-SGD run and the Gibbs sweeps; the
        chains start at uniform random binary vectors (no data)."""
        k_chains, k_run, k_gibbs = jax.random.split(key, 3)
        return k_run, rbm_lib.init_chains(k_chains, self.n_chains, width), k_gibbs

    def advance(
        self, key: jax.Array, count: jax.Array, params: Any, model_state: jax.Array
    ) -> jax.Array:
        """The persistent chains after ``gibbs_steps`` sweeps under the released ``params``,
        with the key ``fold_in(key, count)`` (no data)."""
        update = rbm_lib.make_chain_update(self.module(model_state.shape[-1]), self.gibbs_steps)
        return update(jax.random.fold_in(key, count), params, model_state)

    @functools.partial(jax.jit, static_argnames=("self", "layout", "n"))
    def sample(self, key: jax.Array, params: Any, layout: HeadLayout, n: int) -> jax.Array:
        """The visible means ``p(v = 1 | h)`` of ``n`` chains after ``sample_burn_in`` sweeps
        from uniform random starts."""
        rbm = self.module(layout_width(layout))
        return rbm_lib.sample(key, rbm, params, n, burn_in=self.sample_burn_in)[1]


#: The generators by their ``DPGMConfig.generator`` name (:data:`jdp.synth.dpgm.config.GENERATORS`).
GENERATORS: dict[str, type[VAEGenerator | RBMGenerator]] = {
    g.name: g for g in (VAEGenerator, RBMGenerator)
}


def generator_for(config: DPGMConfig) -> Generator:
    """The generator ``config.generator`` names, with the config's sizes."""
    return GENERATORS[config.generator].from_config(config)
