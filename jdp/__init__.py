"""jdp: differentially private synthetic data and DP-trained generative models in JAX.

The public names below are imported lazily (``import jdp`` stays fast and does not load JAX
until a synthesizer is used)::

    import jdp
    adult = jdp.datasets.load_adult()
    model = jdp.Marginals(epsilon=1, delta=1e-5, schema=adult.schema).fit(adult.train)
    synthetic = model.sample(1000)
    print(model.ledger_.report(1e-5))

Every synthesizer class is exported from the one table of methods,
:data:`jdp.synth.registry.METHODS`.
"""

from __future__ import annotations

import importlib
from typing import Any

from jdp.synth.registry import METHODS

__version__ = "0.1.0"

# public name -> module that defines it (a module name maps to the module itself)
_EXPORTS: dict[str, str] = {
    "PrivacyBudget": "accounting",
    "PrivacyLedger": "accounting",
    "Column": "jdp.data.schema",
    "Schema": "jdp.data.schema",
    "Table": "jdp.data.schema",
    "infer_schema_nonprivate": "jdp.data.schema",
    "infer_schema_dp": "jdp.data.dp_schema",
    "SchemaRelease": "jdp.data.dp_schema",
    "TableEncoder": "jdp.data.transforms",
    "datasets": "jdp.data.datasets",
    "FittedModel": "jdp.synth.base",
    "Synthesizer": "jdp.synth.estimator",
    "available_methods": "jdp.synth.base",
    "fit_model": "jdp.synth.base",
    "sample_model": "jdp.synth.base",
    "key_from_seed": "jdp.random",
    "numpy_rng": "jdp.random",
    "save": "jdp.synth.io",
    "load": "jdp.synth.io",
    # the synthesizer classes, from the one table of methods
    **{cls: module for module, cls in METHODS.values()},
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jdp' has no attribute {name!r}")
    module = importlib.import_module(_EXPORTS[name])
    value = module if module.__name__.endswith(f".{name}") else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
