"""Kernel Inducing Points with the Neural Tangent Kernel (3A / ClustMix)."""
