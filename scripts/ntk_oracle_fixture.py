"""Write the neural-tangents reference kernels that tests/kip/test_ntk.py compares against.

neural-tangents 0.6.5 does not import on current JAX (DESIGN.md section 3), so this script runs
in its own pinned environment, e.g.::

    python3.11 -m venv /tmp/ntenv
    /tmp/ntenv/bin/pip install "jax==0.4.23" "jaxlib==0.4.23" "numpy<2" "scipy<1.13" \
        ml_dtypes opt_einsum frozendict typing_extensions absl-py
    /tmp/ntenv/bin/pip install --no-deps "neural-tangents==0.6.5"
    /tmp/ntenv/bin/python scripts/ntk_oracle_fixture.py --out tests/kip/fixtures/ntk_oracle.npz

TensorFlow is not installed: ``neural_tangents/__init__`` imports its ``experimental``
sub-package (the TF port of the empirical NTK), which imports TensorFlow; that sub-package
is replaced by an empty module before the import. ``stax`` itself never touches TensorFlow.

The fixture holds fixed inputs ``x1`` (8 x 12, with a duplicated row, a zero row and a large
row) and ``x2`` (5 x 12, whose first row equals ``x1[0]``), and for every depth 1-3 and
``(w_std, b_std)`` in ``SETTINGS`` the NNGP and NTK of
``stax.serial(*[Dense(512, w, b), Relu()] * depth, Dense(1, w, b))`` (NTK parameterisation)
for ``(x1, x1)`` and ``(x1, x2)``, in float64. Prints what it wrote (``--json``: one JSON
object); the results file is skipped where jdp does not import (the pinned environment).
"""

from __future__ import annotations

import argparse
import sys
import types

import _harness as H
import numpy as np

SETTINGS = ((2**0.5, 0.1), (1.3, 0.0), (0.9, 0.5))
DEPTHS = (1, 2, 3)


def inputs() -> tuple[np.ndarray, np.ndarray]:
    """The fixed inputs (also rebuilt from the fixture by the test, never regenerated)."""
    rng = np.random.default_rng(20260101)
    x1 = rng.normal(size=(8, 12))
    x1[3] = x1[1]  # a duplicated row: exact diagonal entries off the main diagonal
    x1[5] = 0.0  # a zero row: K^0(x, x) = b_std^2 only
    x1[6] *= 25.0  # a large row
    x2 = rng.uniform(0.0, 1.0, size=(5, 12))
    x2[0] = x1[0]
    return x1, x2


def compute(args: argparse.Namespace) -> dict:
    sys.modules["neural_tangents.experimental"] = types.ModuleType("neural_tangents.experimental")
    import jax

    jax.config.update("jax_enable_x64", True)
    from importlib.metadata import version

    from neural_tangents import stax

    x1, x2 = inputs()
    out = {"x1": x1, "x2": x2, "settings": np.array(SETTINGS), "depths": np.array(DEPTHS)}
    for depth in DEPTHS:
        for s, (w_std, b_std) in enumerate(SETTINGS):
            layers = [stax.Dense(512, W_std=w_std, b_std=b_std), stax.Relu()] * depth
            _, _, kernel_fn = stax.serial(*layers, stax.Dense(1, W_std=w_std, b_std=b_std))
            for name, other in (("11", x1), ("12", x2)):
                k = kernel_fn(x1, other, ("nngp", "ntk"))
                out[f"nngp_d{depth}_s{s}_{name}"] = np.asarray(k[0], dtype=np.float64)
                out[f"ntk_d{depth}_s{s}_{name}"] = np.asarray(k[1], dtype=np.float64)
    out["versions"] = np.array(
        [f"neural-tangents=={version('neural-tangents')}", f"jax=={jax.__version__}"]
    )
    np.savez_compressed(args.out, **out)
    return {"out": str(args.out), "arrays": len(out), "versions": out["versions"].tolist()}


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick=None, out="tests/kip/fixtures/ntk_oracle.npz")
    return H.run(p, compute, lambda r: f"wrote {r['out']}: {r['arrays']} arrays", argv)


if __name__ == "__main__":
    raise SystemExit(main())
