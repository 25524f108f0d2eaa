"""Fixtures shared by every test directory.

* ``adult`` / ``small``: the embedded Adult dataset, loaded once per session, and its first
  400 training rows;
* ``tiny_options`` / ``tiny_config``: one tiny config per registered method (a few seconds a
  fit), the contract's (``tests/contracts/test_synthesizers.py``) and every test's that needs
  "some quick config of method m".

Tests that need a config tuned to their own check (steps, sizes) keep it beside the check.
"""

from __future__ import annotations

import getpass
import os
import tempfile

# The fits here are tiny and compile-bound (a tiny P3GM fit spends most of its time in XLA's
# compiler): JAX's "try not to do much optimization work" switch cuts the suite's CPU time by
# about a third. It changes how programs are compiled, not what they compute; set before jax
# is imported so that subprocesses (the CLI tests) inherit it. Benchmarks run without it.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
# Many tests build the same programs anew (a fresh closure per fit, the same shapes): a
# compilation cache on disk, shared by the pytest-xdist workers, compiles each once. Measured
# on tests/dpsgd, tests/contracts and test_p3gm.py with 2 workers, from an empty cache: 266 s
# without, 208 s with. Entries are keyed by the program and the jax version, so a stale one is
# never used for another program.
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR",
    os.path.join(tempfile.gettempdir(), f"jdp-tests-jax-cache-{getpass.getuser()}"),
)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from jdp.data.datasets import Dataset, load_adult
from jdp.synth.base import get_method

_P3GM_FAMILY = {
    "latent_dim": 2,
    "n_components": 2,
    "em_iterations": 2,
    "hidden": 4,
    # q N = 6 for the declared N = 60
    "dpsgd": {"epochs": 0.1, "sampling_prob": 0.1, "expected_batch_size": 6.0},
    "performance": {"clipping": "general"},
}
#: The tiny config of every registered method (overrides of its config class's defaults,
#: nested for ``dpsgd``/``performance``), for the contract's 60-row table.
TINY_OPTIONS: dict[str, dict[str, Any]] = {
    "marginals": {"bins": 4},
    "tree": {"bins": 4},
    "pca-gauss": {"n_components": 2},
    "p3gm": _P3GM_FAMILY,
    "p3gm-ae": _P3GM_FAMILY,
    "dp-vae": _P3GM_FAMILY,
    "pgm": _P3GM_FAMILY,
    "dp-gan": {
        "latent_dim": 2,
        "generator_hidden": (4,),
        "critic_hidden": (4,),
        "n_critic": 2,
        "generator_batch_size": 4,
        "dpsgd": {"sampling_prob": 0.1, "expected_batch_size": 6.0, "steps": 3, "epochs": None},
        "performance": {"clipping": "general"},
    },
    "clustmix": {"n_clusters": 1, "mixture_size": 10, "cluster_steps": 2, "adapt": False},
    "dpgm": {
        "n_clusters": 1,
        "kmeans_iterations": 2,
        "kmeans_share": 0.5,
        "rff_dim": 8,
        "hidden": 4,
        "latent_dim": 2,
        "dpsgd": {"sampling_prob": 0.1, "steps": 3, "epochs": None},
        "performance": {"clipping": "general"},
        "clip_bins": 10,
    },
    "mwem": {"iterations": 3, "n_queries": 20, "bins": 4},
}


@pytest.fixture(scope="session")
def adult() -> Dataset:
    """The embedded Adult dataset (train/test split, public schema)."""
    return load_adult()


@pytest.fixture(scope="session")
def small(adult: Dataset) -> pd.DataFrame:
    """The first 400 Adult training rows."""
    return adult.train.iloc[:400].reset_index(drop=True)


@pytest.fixture(scope="session")
def tiny_options() -> dict[str, dict[str, Any]]:
    """:data:`TINY_OPTIONS`: method name -> overrides."""
    return TINY_OPTIONS


@pytest.fixture(scope="session")
def tiny_config() -> Callable[[str], Any]:
    """``tiny_config(method)``: the method's config with its tiny overrides."""

    def make(method: str) -> Any:
        return get_method(method).make_config(None, **TINY_OPTIONS[method])

    return make
