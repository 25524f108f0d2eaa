"""PCA-Gauss, Lemma 1: bounded records in the unit box and their PCA features.

Records ``z`` lie in the box ``[-1, 1]^d`` (the declared bounds, affinely rescaled:
:func:`to_unit_box`). ``V`` (``d x k``, orthonormal columns: :class:`Subspace` refuses any
other) and a centre ``c`` in the box are independent of the private data. Lemma 1's rescaling
gives the PCA features ``u = V^T (z - c) / R`` with ``R = max_z ||z - c||_2`` (``sqrt(d)`` at
the midpoint); since ``V^T`` is a contraction, ``||u||_2 <= 1`` (so every ``|u_j| <= 1``,
Lemma 1) and ``||u||_1 <= sqrt(k)`` (Chanyaswad, Liu & Mittal, Sec. V).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# -- Lemma 1: PCA features of bounded data -----------------------------------------------------
Blocks = tuple[tuple[int, int], ...]  # (start, stop) of each one-hot block among the d columns


def one_hot_centre(d: int, blocks: Blocks = ()) -> np.ndarray:
    """The public centre of encoded rows: 0 (the box midpoint) on numeric coordinates and
    ``1/K`` on each coordinate of a one-hot block of ``K`` categories (the centre of the
    simplex the block lives on)."""
    centre = np.zeros(d)
    for start, stop in blocks:
        centre[start:stop] = 1.0 / (stop - start)
    return centre


def row_radius(centre: np.ndarray, blocks: Blocks = ()) -> float:
    """``R = max ||z - c||_2`` over the rows the public schema allows: ``z`` in ``[-1, 1]^d``
    whose ``blocks`` are one-hot vectors.

    A numeric coordinate contributes ``(1 + |c_i|)^2``; a one-hot block ``B`` contributes
    ``max_j ||e_j - c_B||^2 = ||c_B||^2 + 1 - 2 min_j c_Bj``. With no blocks this is the
    box's ``||1 + |c| ||_2`` (``sqrt(d)`` at the midpoint); at :func:`one_hot_centre` a
    block of ``K`` categories contributes ``1 - 1/K`` instead of ``K`` (Adult's 108 encoded
    columns: ``R = 3.6`` instead of ``10.4``). Only utility rests on ``R``: the features are
    projected onto the unit ball (:meth:`Subspace.features`), so no record can exceed the
    sensitivities even if ``R`` were too small.
    """
    c = np.asarray(centre, float)
    numeric = np.ones(c.shape[0], bool)
    total = 0.0
    for start, stop in blocks:
        numeric[start:stop] = False
        cb = c[start:stop]
        total += float(cb @ cb + 1.0 - 2.0 * cb.min())
    total += float(np.sum((1.0 + np.abs(c[numeric])) ** 2))
    return math.sqrt(total)


def to_unit_box(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Affine map of the declared box ``[lower, upper]`` onto ``[-1, 1]^d`` (then clipped)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    if np.any(upper <= lower):
        raise ValueError("expected upper > lower for every column of the declared bounds")
    z = (2.0 * np.asarray(x, float) - lower - upper) / (upper - lower)
    return np.clip(z, -1.0, 1.0)


def from_unit_box(z: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Inverse of :func:`to_unit_box`, clipped to the declared bounds."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    x = lower + (np.asarray(z, float) + 1.0) * (upper - lower) / 2.0
    return np.clip(x, lower, upper)


ORTHONORMAL_TOLERANCE = 1e-8  # per dimension: max |V^T V - I| <= ORTHONORMAL_TOLERANCE * d


@dataclass(frozen=True)
class Subspace:
    """A public subspace: orthonormal columns ``V`` (``d x k``) and a centre ``c`` in the box.

    Lemma 1's rescaled PCA features are ``u = V^T (z - c) / R`` with ``R`` the public
    :func:`row_radius` (default: the whole box, ``R = ||1 + |c| ||_2``, ``sqrt(d)`` for the
    midpoint ``c = 0``); since ``V^T`` is a contraction, ``||u||_2 <= 1`` for every record.

    Every sensitivity of :func:`moment_sensitivity` rests on ``||V^T x||_2 <= ||x||_2``, so
    ``V`` must have orthonormal columns: ``max_jl |(V^T V - I)_jl| <= 1e-8 d`` (float
    round-off of an ``eigh`` or QR basis), else ``ValueError``. A raw random projection
    (Gaussian entries) is refused: orthonormalise it first (``np.linalg.qr``). The features
    are also projected onto the unit ball, so the round-off allowed by the tolerance cannot
    push ``||u||_2`` past 1.
    """

    components: np.ndarray
    centre: np.ndarray
    radius: float | None = None  # None: the box radius ||1 + |c| ||_2

    def __post_init__(self) -> None:
        if self.radius is None:
            object.__setattr__(self, "radius", row_radius(self.centre))
        if not (math.isfinite(self.radius) and self.radius > 0):
            raise ValueError(f"expected radius > 0, got {self.radius}")
        v = np.asarray(self.components)
        if v.ndim != 2 or not 1 <= v.shape[1] <= v.shape[0]:
            raise ValueError(f"expected components of shape (d, k) with 1 <= k <= d, got {v.shape}")
        d, k = v.shape
        if self.centre.shape != (d,) or np.any(np.abs(self.centre) > 1.0):
            raise ValueError(f"expected a centre of shape ({d},) inside [-1, 1]^d")
        error = float(np.max(np.abs(v.T @ v - np.eye(k)))) if np.all(np.isfinite(v)) else math.inf
        if error > ORTHONORMAL_TOLERANCE * d:
            raise ValueError(
                "expected orthonormal columns in components (V^T V = I within "
                f"{ORTHONORMAL_TOLERANCE:g} * d), got max |V^T V - I| = {error:.3g}"
            )

    @classmethod
    def at_midpoint(cls, components: np.ndarray) -> Subspace:
        return cls(np.asarray(components, float), np.zeros(components.shape[0]))

    def features(self, z: np.ndarray) -> np.ndarray:
        """``u = V^T (z - c) / R`` for rows ``z`` in the box, projected onto ``||u||_2 <= 1``
        (a no-op up to round-off: ``V`` is orthonormal)."""
        u = (np.asarray(z, float) - self.centre) @ self.components / self.radius
        return u / np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), 1.0)

    def to_box(self, u: np.ndarray) -> np.ndarray:
        """Map features back: ``z = c + R V u``, clipped to ``[-1, 1]^d``."""
        return np.clip(
            self.centre + self.radius * np.asarray(u, float) @ self.components.T, -1.0, 1.0
        )
