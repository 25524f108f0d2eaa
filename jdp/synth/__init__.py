"""Synthesizers: the protocol and registry (base), and one module per method."""
