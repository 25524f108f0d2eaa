"""Data handling: public schemas, reversible encodings and dataset loaders."""
