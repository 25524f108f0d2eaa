"""Differentially private PCA: Analyze Gauss, Lap-PCA, and PCA from a public sample.

Three ways to obtain a principal subspace for the encoding phase of P3GM and PCA-Gauss:

* :func:`dp_pca_gaussian` -- "Analyze Gauss" (Dwork, Talwar, Thakurta & Zhang 2014; the
  DP-PCA of P3GM, Sec. II-D): rows (after centring) clipped to L2 norm ``<= l2_clip_norm``,
  symmetric Gaussian noise on the scatter matrix ``sum_i x_i x_i^T``, ``eigh``, top-k.
* :func:`dp_pca_laplace` -- Lap-PCA of PCA-Gauss (Chanyaswad et al., Sec. VII): data inside
  declared public per-feature bounds, symmetric Laplace noise on the centred scatter matrix,
  pure epsilon-DP.
* :func:`public_pca` -- components from a declared public sample, at zero privacy cost.

Centring never uses the raw data mean: it is either a declared public centre, the origin
(no centring: the second-moment matrix), or a DP mean released as its own ledger entry
(:func:`dp_mean_gaussian`, :func:`dp_mean_laplace`). Every function returns
``(result, ledger)`` where ``ledger`` is a :class:`accounting.ledger.PrivacyLedger` holding
what was spent (empty for :func:`public_pca`).

The released matrix is the *sum* ``sum_i (x_i - c)(x_i - c)^T`` plus noise, not the
covariance: under add/remove-one neighbours the number of records is private, and the
eigenvectors do not depend on the normalisation. ``PcaResult.eigenvalues`` are those of
the released sum (clipped below at 0); divide by a public or DP count for covariance scale.

The DP functions are defined for every number of records, 0 included (the released sums are
then zero plus noise): ``k`` is checked against the public number of features only, never
against the private row count, and records with a NaN or infinite entry are dropped from the
released sums, as if absent (DESIGN rule 7). :func:`public_pca` (public data, no privacy)
keeps its row checks.

The Gaussian releases (:func:`dp_mean_gaussian`, :func:`dp_pca_gaussian`) also read a
:class:`~jdp.mechanisms.suffstats.ScaledRows` (rows rescaled by a public number a block at a
time): the same statistic of the same rows, bit for bit, without a rescaled copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np

from accounting import events as ev
from accounting.compose import BEST
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count, check_positive
from jdp.mechanisms.noise import (
    clip_rows,
    gaussian_event,
    gaussian_mechanism,
    laplace_mechanism,
)
from jdp.mechanisms.release import record_release, run_calibrated
from jdp.mechanisms.suffstats import Rows, check_data_matrix, chunked_sum, iter_chunks
from jdp.verbosity import private_detail, private_details_shown, warn_private

Centre = np.ndarray | Literal["dp"] | None


@dataclass(frozen=True, kw_only=True)
class PcaResult:
    """A principal subspace.

    Attributes:
      components: ``(d, k)`` orthonormal columns, sorted by decreasing eigenvalue; each
        column's largest-magnitude entry is positive (a deterministic sign).
      eigenvalues: ``(k,)`` non-increasing eigenvalues of the released (noisy) scatter
        matrix ``sum_i (x_i - c)(x_i - c)^T + E``, clipped below at 0.
      centre: ``(d,)`` the centre ``c`` subtracted before projecting (public or DP).
    """

    components: np.ndarray
    eigenvalues: np.ndarray
    centre: np.ndarray

    def __post_init__(self) -> None:
        d, k = self.components.shape
        if self.eigenvalues.shape != (k,) or self.centre.shape != (d,):
            raise ValueError(
                f"expected eigenvalues of shape ({k},) and centre of shape ({d},), got "
                f"{self.eigenvalues.shape} and {self.centre.shape}"
            )
        for a in (self.components, self.eigenvalues, self.centre):
            a.setflags(write=False)

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Project rows of ``x`` onto the subspace: ``(x - centre) @ components``.

        A per-row map, also of private rows: any number of rows (0 included), and a row
        with a non-finite entry maps to a non-finite row (not refused: that would depend on
        the private data; the DP sums downstream drop it)."""
        d, k = self.components.shape
        x = check_data_matrix(x, n_cols=d, private=True)
        parts = [(c - self.centre) @ self.components for c in iter_chunks(x)]
        return np.concatenate(parts) if parts else np.zeros((0, k))

    def inverse_transform(self, y: np.ndarray) -> np.ndarray:
        """Map projected rows back to the data space: ``y @ components^T + centre``."""
        y = check_data_matrix(y, name="y", n_cols=self.components.shape[1])
        return y @ self.components.T + self.centre


def top_k_eigh(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of a symmetric matrix, eigenvalues non-increasing.

    ``numpy.linalg.eigh`` returns ascending eigenvalues; taking its first columns (or using
    the unsorted ``eig``, as the P3GM reference code does) selects the wrong subspace.
    Signs are fixed so that each column's largest-magnitude entry is positive.
    """
    sym = (matrix + matrix.T) / 2.0
    values, vectors = np.linalg.eigh(sym)
    order = np.argsort(values)[::-1][:k]
    values, vectors = values[order], vectors[:, order]
    pivot = vectors[np.argmax(np.abs(vectors), axis=0), np.arange(k)]
    vectors = vectors * np.where(pivot < 0, -1.0, 1.0)
    return values, vectors


def _check_k(k: int, x: Rows) -> int:
    """``1 <= k <= d``: the number of features ``d`` is public. Never compared with the row
    count, which is private on the DP paths (rule 7: Analyze Gauss and Lap-PCA release a
    ``d x d`` matrix whatever ``n``, and its top-k eigenvectors exist for any ``k <= d``)."""
    k = check_count("k", k, minimum=1)
    d = x.shape[1]
    if k > d:
        raise ValueError(f"expected k <= number of features {d}, got k={k}")
    return k


def scatter_sum(
    x: Rows,
    centre: np.ndarray,
    *,
    l2_clip_norm: float = np.inf,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
) -> np.ndarray:
    """The pre-noise statistic ``sum_i y_i y_i^T`` in chunks (the exact, private value).

    ``y_i = clip(x_i - centre, l2_clip_norm)`` (Analyze Gauss), or, with declared bounds,
    ``y_i = clip_box(x_i, lower, upper) - centre`` (Lap-PCA). Zero for no records; a record
    with a non-finite entry counts nowhere.
    """

    def part(chunk: np.ndarray) -> np.ndarray:
        y = chunk if lower is None else np.clip(chunk, lower, upper)
        y = clip_rows(y - centre, l2_clip_norm)
        return y.T @ y

    return chunked_sum(part, x, drop_nonfinite=True)


def _result(noisy_scatter: np.ndarray, k: int, centre: np.ndarray) -> PcaResult:
    values, vectors = top_k_eigh(noisy_scatter, k)
    return PcaResult(components=vectors, eigenvalues=np.maximum(values, 0.0), centre=centre)


def _subspace(
    ledger: PrivacyLedger,
    label: str,
    release: tuple[np.ndarray, ev.DpEvent],
    k: int,
    centre: np.ndarray,
) -> tuple[PcaResult, PrivacyLedger]:
    """The top-k subspace of a released scatter matrix, its event recorded as ``label``."""
    noisy, ledger = record_release(ledger, label, release)
    return _result(noisy, k, centre), ledger


# -- DP means --------------------------------------------------------------------------------


def dp_mean_gaussian(
    rng: np.random.Generator,
    x: Rows,
    *,
    noise_multiplier: float,
    l2_clip_norm: float = 1.0,
    secure_noise: bool = False,
) -> tuple[np.ndarray, ev.DpEvent]:
    """DP mean of rows clipped to L2 norm ``l2_clip_norm`` (Gaussian mechanism).

    Releases ``v = (sum_i clip(x_i), C * n) + N(0, (z * sqrt(2) * C)^2 I)`` in one Gaussian
    mechanism and returns ``v[:d] / max(v[d] / C, 1)`` projected into the ball of radius
    ``C`` (where every clipped row and hence their mean lies).

    Privacy:
      Add/remove-one: one record moves ``v`` by ``(clip(x), C)``, L2 norm
      ``<= sqrt(C^2 + C^2) = sqrt(2) C`` (docs/privacy.md, "DP mean"). Event:
      ``GaussianDpEvent(noise_multiplier)``. ``secure_noise`` (on every release here): see
      :mod:`jdp.mechanisms.noise` -- Mironov's snapping (proved) for the Laplace releases, a
      clamp-and-round mitigation (no proof) for the Gaussian ones.
    """
    x = check_data_matrix(x, private=True)
    l2_clip_norm = check_positive("l2_clip_norm", l2_clip_norm)
    d = x.shape[1]
    noisy, event = gaussian_mechanism(
        rng,
        clipped_sum_count(x, l2_clip_norm),
        l2_sensitivity=np.sqrt(2.0) * l2_clip_norm,
        noise_multiplier=noise_multiplier,
        secure_noise=secure_noise,
    )
    count = max(noisy[d] / l2_clip_norm, 1.0)
    return clip_rows(noisy[:d] / count, l2_clip_norm), event


def dp_mean_laplace(
    rng: np.random.Generator,
    x: np.ndarray,
    *,
    epsilon: float,
    lower: np.ndarray,
    upper: np.ndarray,
    secure_noise: bool = True,
) -> tuple[np.ndarray, ev.DpEvent]:
    """Pure epsilon-DP mean of data inside the public box ``[lower, upper]`` (Laplace).

    With the public midpoint ``m = (lower + upper) / 2`` and half-widths ``h``, releases
    ``v = (sum_i (x_i - m), n) + Lap(Delta_1 / epsilon)`` and returns
    ``m + v[:d] / max(v[d], 1)`` clipped into the box. Values outside the box are clipped
    to it first (with a warning).

    Privacy:
      Add/remove-one: one record moves ``v`` by ``(x - m, 1)``, L1 norm
      ``<= ||h||_1 + 1 = Delta_1`` (docs/privacy.md, "DP mean"). Event:
      ``LaplaceDpEvent(1 / epsilon)`` (pure epsilon-DP).
    """
    x = check_data_matrix(x, private=True)
    lower, upper = _check_bounds(lower, upper, x.shape[1])
    mid, half = (lower + upper) / 2.0, (upper - lower) / 2.0
    _warn_out_of_bounds(x, lower, upper)
    noisy, event = laplace_mechanism(
        rng,
        bounded_sum_count(x, lower, upper),
        l1_sensitivity=float(half.sum()) + 1.0,
        epsilon=epsilon,
        secure_noise=secure_noise,
    )
    d = x.shape[1]
    return np.clip(mid + noisy[:d] / max(noisy[d], 1.0), lower, upper), event


def clipped_sum_count(x: Rows, l2_clip_norm: float) -> np.ndarray:
    """Pre-noise statistic of :func:`dp_mean_gaussian`: ``(sum_i clip(x_i, C), C * n)``
    over the finite records (zeros for none)."""
    return chunked_sum(
        lambda c: np.append(clip_rows(c, l2_clip_norm).sum(axis=0), l2_clip_norm * c.shape[0]),
        x,
        drop_nonfinite=True,
    )


def bounded_sum_count(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Pre-noise statistic of :func:`dp_mean_laplace`: ``(sum_i (clip_box(x_i) - m), n)``
    over the finite records (zeros for none)."""
    mid = (lower + upper) / 2.0
    return chunked_sum(
        lambda c: np.append((np.clip(c, lower, upper) - mid).sum(axis=0), c.shape[0]),
        x,
        drop_nonfinite=True,
    )


def _check_bounds(lower: object, upper: object, d: int) -> tuple[np.ndarray, np.ndarray]:
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,)).copy()
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,)).copy()
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError("expected finite declared bounds, got NaN/inf")
    if np.any(upper <= lower):
        j = int(np.argmax(upper <= lower))
        raise ValueError(
            f"expected upper > lower for every feature, got [{lower[j]}, {upper[j]}] for feature {j} "
            "(a zero-variance feature: drop it or declare a non-degenerate range)"
        )
    return lower, upper


def _warn_out_of_bounds(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    """Whether any value is outside the bounds is private: the data holder's only."""
    if not private_details_shown():
        return
    outside = chunked_sum(lambda c: np.array(float(np.count_nonzero((c < lower) | (c > upper)))), x)
    if outside:
        warn_private(
            "values outside the declared bounds were clipped to them"
            + private_detail(f"{int(outside)} values"),
            stacklevel=3,
        )


# -- DP PCA ----------------------------------------------------------------------------------


def dp_pca_gaussian(
    rng: np.random.Generator,
    x: Rows,
    k: int,
    *,
    noise_multiplier: float,
    centre: Centre = None,
    mean_noise_multiplier: float | None = None,
    l2_clip_norm: float = 1.0,
    secure_noise: bool = False,
) -> tuple[PcaResult, PrivacyLedger]:
    """Analyze Gauss: DP principal subspace from a symmetric-Gaussian-noised scatter matrix.

    ``A = sum_i y_i y_i^T`` with ``y_i = clip(x_i - c, C)``; releases ``A + E`` where ``E``
    is symmetric with upper triangle (diagonal included) i.i.d. ``N(0, (z C^2)^2)``; returns
    the top-k eigenvectors of the release (``eigh``, sorted descending).

    Args:
      rng: noise source.
      x: ``(n, d)`` private data, any ``n >= 0`` (a record with a NaN or infinite entry is
        dropped); scale it (with public knowledge) so norms are about ``C``, e.g. as a
        :class:`~jdp.mechanisms.suffstats.ScaledRows` (no rescaled copy; the same release).
      k: number of components, ``1 <= k <= d`` (never compared with the private ``n``).
      noise_multiplier: ``z``; noise std on each upper-triangle entry is ``z * C^2``.
      centre: ``None`` (origin: the second-moment matrix, as in Dwork et al.), a declared
        public ``(d,)`` centre, or ``"dp"`` for a DP mean (:func:`dp_mean_gaussian`, its
        own ledger entry "dp-mean").
      mean_noise_multiplier: noise multiplier of the DP mean (default: ``noise_multiplier``).
      l2_clip_norm: ``C``.
      secure_noise: round the Gaussian releases to a power-of-two grid, clamped to a public
        bound: a mitigation of Mironov's (2012) floating-point channel, not a proof
        (:mod:`jdp.mechanisms.noise`); the events are unchanged.

    Returns:
      ``(PcaResult, ledger)`` with entries ``["dp-mean",] "dp-pca"``.

    Privacy:
      Add/remove-one. Adding ``y`` changes the upper triangle of ``A`` by that of ``y y^T``,
      whose Frobenius norm is ``sqrt((||y||^4 + sum_j y_j^4) / 2) <= ||y||^2 <= C^2``
      (docs/privacy.md, "Analyze Gauss"). Event ``GaussianDpEvent(z)``; with
      ``centre="dp"`` also ``GaussianDpEvent(mean_noise_multiplier)`` (the centre is then
      public for the second release: adaptive composition).

    References:
      Dwork et al. 2014, "Analyze Gauss", Alg. 1; P3GM Sec. II-D (Eq. A + E).
    """
    x = check_data_matrix(x, private=True)  # any row count: no check reads the rows
    k = _check_k(k, x)
    l2_clip_norm = check_positive("l2_clip_norm", l2_clip_norm)
    c, ledger = _gaussian_centre(
        rng, x, centre, mean_noise_multiplier, noise_multiplier, l2_clip_norm, secure_noise
    )
    release = noisy_scatter_gaussian(
        rng,
        x,
        c,
        noise_multiplier=noise_multiplier,
        l2_clip_norm=l2_clip_norm,
        secure_noise=secure_noise,
    )
    return _subspace(ledger, "dp-pca", release, k, c)


def noisy_scatter_gaussian(
    rng: np.random.Generator,
    x: Rows,
    centre: np.ndarray,
    *,
    noise_multiplier: float,
    l2_clip_norm: float = 1.0,
    secure_noise: bool = False,
) -> tuple[np.ndarray, ev.DpEvent]:
    """The Analyze-Gauss release itself: :func:`scatter_sum` plus symmetric Gaussian noise.

    ``centre`` must be public (declared, or released by a DP mechanism). Upper-triangle
    noise std ``noise_multiplier * l2_clip_norm**2``; see :func:`dp_pca_gaussian` for the
    privacy statement. Useful on its own where the noisy second moment is the output.
    """
    l2_clip_norm = check_positive("l2_clip_norm", l2_clip_norm)
    return gaussian_mechanism(
        rng,
        scatter_sum(x, centre, l2_clip_norm=l2_clip_norm),
        l2_sensitivity=l2_clip_norm**2,
        noise_multiplier=noise_multiplier,
        symmetric=True,
        secure_noise=secure_noise,
    )


def dp_pca_gaussian_event(noise_multiplier: float, *, dp_centre: bool = False) -> ev.DpEvent:
    """What :func:`dp_pca_gaussian` spends (data-free, for planning and calibration), with
    one noise multiplier for the DP mean (``dp_centre=True``) and the scatter release."""
    pca = gaussian_event(noise_multiplier)
    return ev.ComposedDpEvent([gaussian_event(noise_multiplier), pca]) if dp_centre else pca


def dp_pca_gaussian_calibrated(
    rng: np.random.Generator,
    x: np.ndarray,
    k: int,
    *,
    target_epsilon: float,
    target_delta: float,
    centre: Centre = None,
    l2_clip_norm: float = 1.0,
    accountant: str = BEST,
    secure_noise: bool = False,
) -> tuple[PcaResult, PrivacyLedger]:
    """:func:`dp_pca_gaussian` with the smallest noise multiplier meeting
    ``(target_epsilon, target_delta)`` (DP mean and scatter share it when ``centre="dp"``),
    via :func:`jdp.mechanisms.release.run_calibrated`. The ledger's epsilon never exceeds the
    target."""
    dp_centre = isinstance(centre, str) and centre == "dp"
    run = partial(
        dp_pca_gaussian,
        rng,
        x,
        k,
        centre=centre,
        l2_clip_norm=l2_clip_norm,
        secure_noise=secure_noise,
    )
    plan = partial(dp_pca_gaussian_event, dp_centre=dp_centre)
    return run_calibrated(run, plan, target_epsilon, target_delta, accountant=accountant)


def _gaussian_centre(
    rng: np.random.Generator,
    x: Rows,
    centre: Centre,
    mean_noise_multiplier: float | None,
    noise_multiplier: float,
    l2_clip_norm: float,
    secure_noise: bool,
) -> tuple[np.ndarray, PrivacyLedger]:
    """The centre of Analyze Gauss (public, or a DP mean) and the ledger of its release."""
    if not isinstance(centre, str):
        return _public_centre(centre, x.shape[1]), PrivacyLedger()
    if centre != "dp":
        raise ValueError(f"expected centre to be None, an array or 'dp', got {centre!r}")
    z = noise_multiplier if mean_noise_multiplier is None else mean_noise_multiplier
    release = dp_mean_gaussian(
        rng, x, noise_multiplier=z, l2_clip_norm=l2_clip_norm, secure_noise=secure_noise
    )
    return record_release(PrivacyLedger(), "dp-mean", release)


def _public_centre(centre: object, d: int) -> np.ndarray:
    if centre is None:
        return np.zeros(d)
    c = np.asarray(centre, dtype=np.float64)
    if c.shape != (d,):
        raise ValueError(f"expected centre of shape ({d},), got {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("expected a finite centre, got NaN/inf")
    return c


def dp_pca_laplace(
    rng: np.random.Generator,
    x: np.ndarray,
    k: int,
    *,
    epsilon: float,
    lower: np.ndarray | float,
    upper: np.ndarray | float,
    centre: np.ndarray | Literal["dp", "midpoint"] = "midpoint",
    mean_epsilon: float | None = None,
    secure_noise: bool = True,
) -> tuple[PcaResult, PrivacyLedger]:
    """Lap-PCA (PCA-Gauss Sec. VII): pure epsilon-DP PCA of data in declared public bounds.

    With centre ``c`` and ``r_j = max(upper_j - c_j, c_j - lower_j)`` (the largest possible
    ``|x_j - c_j|``), releases ``S + L`` where ``S = sum_i (x_i - c)(x_i - c)^T`` and ``L``
    is symmetric with upper triangle i.i.d. ``Laplace(Delta_1 / epsilon)``,
    ``Delta_1 = (||r||_1^2 + ||r||_2^2) / 2``; returns the top-k eigenvectors.

    Args:
      rng: noise source.
      x: ``(n, d)`` private data, any ``n >= 0``; values outside ``[lower, upper]`` are
        clipped; a record with a NaN or infinite entry is dropped.
      k: number of components, ``1 <= k <= d`` (never compared with the private ``n``).
      epsilon: budget of the covariance release.
      lower, upper: declared public per-feature bounds (scalars broadcast); ``upper > lower``.
      centre: ``"midpoint"`` (public, the default, free), a declared public ``(d,)`` centre,
        or ``"dp"`` for a DP mean (:func:`dp_mean_laplace`, entry "dp-mean").
      mean_epsilon: budget of the DP mean (default ``epsilon``, so the total is ``2 epsilon``).
      secure_noise: release through Mironov's (2012) snapping mechanism (the default),
        which is proved epsilon-DP in floating point; the noise scale absorbs its small extra
        cost (:func:`jdp.mechanisms.noise.snapping_laplace_parameters`). ``False``: the
        textbook sampler, which an audit breaks (docs/privacy.md, "Floating-point noise")
        and whose cut the events then charge (:func:`jdp.mechanisms.noise.laplace_event`).

    Returns:
      ``(PcaResult, ledger)`` with entries ``["dp-mean",] "lap-pca"``, all Laplace.

    Privacy:
      Add/remove-one: adding ``x`` changes the upper triangle of ``S`` by that of
      ``(x - c)(x - c)^T``, L1 norm ``sum_{j<=l} |x_j - c_j||x_l - c_l| <= Delta_1``
      (docs/privacy.md, "Lap-PCA"). Event ``LaplaceDpEvent(1 / epsilon)``: pure epsilon-DP
      (plus ``mean_epsilon`` for a DP centre). The paper adds i.i.d. noise to all ``d^2``
      entries and normalises by ``n`` under replace-one (docs/errata.md).

    References:
      Chanyaswad, Liu & Mittal, PCA-Gauss, Sec. V-B1 (Prop. 3) and Sec. VII (Thm. 7).
    """
    x = check_data_matrix(x, private=True)  # any row count: no check reads the rows
    k = _check_k(k, x)
    epsilon = check_positive("epsilon", epsilon)
    lower, upper = _check_bounds(lower, upper, x.shape[1])
    ledger = PrivacyLedger()
    if isinstance(centre, str) and centre == "dp":
        mean_eps = epsilon if mean_epsilon is None else mean_epsilon
        release = dp_mean_laplace(
            rng, x, epsilon=mean_eps, lower=lower, upper=upper, secure_noise=secure_noise
        )
        c, ledger = record_release(ledger, "dp-mean", release)
    elif isinstance(centre, str):
        if centre != "midpoint":
            raise ValueError(f"expected centre to be an array, 'midpoint' or 'dp', got {centre!r}")
        c = (lower + upper) / 2.0
    else:
        c = _public_centre(centre, x.shape[1])
    _warn_out_of_bounds(x, lower, upper)
    release = noisy_scatter_laplace(
        rng, x, c, epsilon=epsilon, lower=lower, upper=upper, secure_noise=secure_noise
    )
    return _subspace(ledger, "lap-pca", release, k, c)


def noisy_scatter_laplace(
    rng: np.random.Generator,
    x: np.ndarray,
    centre: np.ndarray,
    *,
    epsilon: float,
    lower: np.ndarray,
    upper: np.ndarray,
    secure_noise: bool = True,
) -> tuple[np.ndarray, ev.DpEvent]:
    """The Lap-PCA release itself: bounded :func:`scatter_sum` plus symmetric Laplace noise.

    ``centre`` must be public. Upper-triangle noise scale ``Delta_1 / epsilon`` with
    ``Delta_1 = lap_pca_l1_sensitivity(max(upper - centre, centre - lower))``; see
    :func:`dp_pca_laplace`.
    """
    r = np.maximum(upper - centre, centre - lower)
    return laplace_mechanism(
        rng,
        scatter_sum(x, centre, lower=lower, upper=upper),
        l1_sensitivity=lap_pca_l1_sensitivity(r),
        epsilon=epsilon,
        symmetric=True,
        secure_noise=secure_noise,
    )


def lap_pca_l1_sensitivity(radius: np.ndarray) -> float:
    """``(||r||_1^2 + ||r||_2^2) / 2``: the L1 norm of the upper triangle of ``r r^T``."""
    r = np.asarray(radius, dtype=np.float64)
    return float((r.sum() ** 2 + (r**2).sum()) / 2.0)


def public_pca(
    x_public: np.ndarray, k: int, *, centre: np.ndarray | None = None
) -> tuple[PcaResult, PrivacyLedger]:
    """PCA of a declared *public* sample: zero privacy cost (empty ledger).

    Only pass data that is genuinely public (e.g. a released reference set): nothing here
    is noised. ``centre`` defaults to the public sample's own mean.
    """
    x_public = check_data_matrix(x_public, name="x_public")
    k = _check_k(k, x_public)
    if k > x_public.shape[0]:  # public data: its size may be checked and shown
        raise ValueError(f"too few rows for k={k}: the public sample has {x_public.shape[0]}")
    c = x_public.mean(axis=0) if centre is None else _public_centre(centre, x_public.shape[1])
    return _result(scatter_sum(x_public, c), k, c), PrivacyLedger()
