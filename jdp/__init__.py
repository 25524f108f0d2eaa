"""jdp: differentially private synthetic data and DP-trained generative models in JAX."""

__version__ = "0.1.0"
