"""Additive-noise mechanisms and clipping on numpy arrays (the encoding-phase building blocks).

Every mechanism returns ``(noisy_value, event)``; the caller records the event in its
:class:`accounting.ledger.PrivacyLedger`. The noise generator is always passed in
(``rng: np.random.Generator``); nothing here has a default seed.

Floating-point caveat (Mironov 2012, "On significance of the least significant bits for
differential privacy"): a textbook floating-point sampler ``x + lambda * ln(U)`` leaks ``x``
through the low-order bits of its output (the set of doubles it can return depends on
``x``), which breaks the DP guarantee outright. The default follows the papers we
reimplement for the Gaussian (plain floating-point noise, its cut charged) and the proved
construction for the Laplace. ``secure_noise`` selects:

* Laplace (default ``True``): Mironov's **snapping mechanism** (Sec. 5.2), with a proof; see
  :func:`snapping_laplace_parameters` for the theorem and the small epsilon it adds, which
  we absorb by calibrating ``lambda`` (the ledger event keeps the requested epsilon).
* Gaussian (default ``False``): the same clamp-and-round construction (grid: the smallest
  power of two ``>= sigma``) as a **mitigation only**: it removes the low-bit channel Mironov's attack
  reads, but no theorem covers a snapped Gaussian; the event is the ideal Gaussian one.
  A proven alternative would be the discrete Gaussian (Canonne, Kamath & Steinke 2020),
  not implemented here.

Every sampler here states its cut (DESIGN section 2, rule 8): a finite-precision sampler
cannot return noise beyond some multiple of its scale, so an output beyond ``f(D)`` plus that
multiple is impossible without a record and possible with it. :func:`standard_normal` (the
Gaussian noise) is cut at :data:`NORMAL_CUT` = 37.6 standard deviations per pair and the
textbook Laplace sampler (``secure_noise=False``) at about 708 scales; every release is at
most :data:`MAX_RELEASE_SIZE` coordinates, so each Gaussian release carries the fixed
``NoiseCutDpEvent(GAUSSIAN_RELEASE_CUT)`` (about ``1e-295``: :func:`gaussian_event`) and each
textbook Laplace release ``NoiseCutDpEvent(LAPLACE_RELEASE_CUT)`` (:func:`laplace_event`).
The snapping mechanism is exact (its theorem covers its finite-precision sampler and its
clamp makes both neighbours' supports equal), so it is the Laplace default and adds no cut.

The clamp bound ``B`` is public: ``B = max_records * sensitivity`` with a declared public
bound on the number of records (default :data:`DEFAULT_MAX_RECORDS`). Every statistic
released here is a sum of per-record contributions with ``f(empty) = 0``, so each coordinate
satisfies ``|f(D)_j| <= |D| * sensitivity`` and the clamp never binds when
``|D| <= max_records``; if it binds, only accuracy suffers (clamping is part of the
mechanism, so privacy is unaffected).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from accounting import events as ev
from accounting.builders import with_noise_cut
from accounting.validation import check_count, check_nonnegative, check_positive
from jdp.mechanisms.tape import public, released

#: ``eta``: the unit roundoff of IEEE binary64 (half its machine epsilon), Mironov's ``2**-53``.
FLOAT64_UNIT_ROUNDOFF = 2.0**-53
#: Public default bound on the number of records, for the snapping clamp ``B``.
DEFAULT_MAX_RECORDS = 2**24
#: Mironov's Thm. 1 holds for ``lambda < B < 2**46 lambda`` (binary64).
_SNAPPING_MAX_RATIO = 2.0**46
#: Bits of the mpmath logarithm before rounding to binary64 (the hardest-to-round binary64
#: logarithms need about 118; OpenDP's snapping uses 118 for the same purpose).
_LN_BITS = 160
#: The most noise coordinates one host release may draw (a public cap, checked): what makes
#: each release's cut charge a constant (:data:`GAUSSIAN_RELEASE_CUT`).
MAX_RELEASE_SIZE = 2**40
#: The radius (standard deviations) within which :func:`standard_normal` draws every pair,
#: rounded down: its uniform (:func:`full_precision_uniform`) is floored at ``2^-1022``, so
#: ``r = sqrt(-2 ln u) <= sqrt(2044 ln 2) = 37.64``.
NORMAL_CUT = 37.6
#: Total variation between one Gaussian release (at most :data:`MAX_RELEASE_SIZE` coordinates,
#: so at most ``2^39`` pairs, each beyond the cut with ideal probability
#: ``exp(-NORMAL_CUT^2 / 2)``) and the ideal Gaussian: about ``1e-295``.
GAUSSIAN_RELEASE_CUT = (MAX_RELEASE_SIZE // 2) * math.exp(-0.5 * NORMAL_CUT**2)
#: ``-ln`` of the smallest uniform :func:`full_precision_uniform` returns (``2^-1022``), less
#: a margin: the textbook Laplace sampler never exceeds this many scales.
LAPLACE_CUT = 708.0
#: Total variation between one textbook Laplace release and the ideal one (``P(|L| > 708
#: lambda) = e^-708`` per coordinate, :data:`MAX_RELEASE_SIZE` coordinates).
LAPLACE_RELEASE_CUT = MAX_RELEASE_SIZE * math.exp(-LAPLACE_CUT)


@dataclass(frozen=True)
class Snapping:
    """Public parameters of one snapped Laplace release: noise scale ``lambda``, output grid
    ``Lambda`` (smallest power of two ``>= lambda``) and clamp bound ``B``."""

    scale: float
    grid: float
    bound: float


def power_of_two_at_least(x: float) -> float:
    """The smallest power of two ``>= x`` (exact: read off the binary exponent), ``x > 0``."""
    x = check_positive("x", x)
    mantissa, exponent = math.frexp(x)  # x = mantissa * 2**exponent, mantissa in [0.5, 1)
    return math.ldexp(1.0, exponent - 1 if mantissa == 0.5 else exponent)


def snapping_epsilon(*, l1_sensitivity: float, scale: float, bound: float, size: int) -> float:
    """Epsilon of the snapping mechanism on ``size`` coordinates (Mironov 2012, Thm. 1).

    ``(Delta + 12 m B eta) / lambda + 2 m eta`` with ``eta = 2**-53``, ``m = size``,
    ``Delta`` the L1 sensitivity: per coordinate the proof of Thm. 1 bounds the ratio of
    output probabilities at ``x`` and ``x'`` by ``exp(|x - x'| / lambda + 12 B eta / lambda
    + 2 eta)``; summing over the coordinates gives the above (``sum_j |x_j - x'_j| <= Delta``).
    """
    check_positive("l1_sensitivity", l1_sensitivity)
    check_positive("scale", scale)
    check_positive("bound", bound)
    m = check_count("size", size, minimum=1)
    eta = FLOAT64_UNIT_ROUNDOFF
    return (l1_sensitivity + 12.0 * m * bound * eta) / scale + 2.0 * m * eta


def snapping_laplace_parameters(
    *, l1_sensitivity: float, epsilon: float, size: int, max_records: int = DEFAULT_MAX_RECORDS
) -> Snapping:
    """The snapping mechanism's ``(lambda, Lambda, B)`` for an ``epsilon``-DP release.

    Theorem 1 (Mironov 2012, Sec. 5.2, binary64): let ``f`` have sensitivity 1 and
    ``lambda < B < 2**46 lambda``; with ``S`` a uniform sign, ``U*`` uniform over the doubles
    in ``(0, 1)`` (each with probability equal to its spacing, :func:`full_precision_uniform`),
    ``LN`` a correctly rounded natural logarithm and ``round_Lambda`` rounding to the nearest
    multiple of ``Lambda``, the smallest power of two ``>= lambda``, the mechanism

        ``clamp_B(round_Lambda(clamp_B(f(D)) (+) S (x) lambda (x) LN(U*)))``

    (``(+)``, ``(x)``: floating-point operations) is ``(1/lambda + 2**-49 B/lambda)``-DP; its
    proof gives the sharper ``(1 + 12 B eta) / lambda + 2 eta`` (``eta = 2**-53``), i.e. the
    cost of floating point is ``12 B eta / lambda + 2 eta`` on top of the ideal
    ``1 / lambda``. Power-of-two scaling is exact in floating point, so it holds for any
    sensitivity with ``Delta / lambda`` in place of ``1 / lambda`` (:func:`snapping_epsilon`
    adds the per-coordinate cost over ``size`` coordinates).

    Calibration: ``B = max_records * Delta`` (public) and
    ``lambda = (Delta + 12 m B eta) / (epsilon - 2 m eta)`` (rounded up), the inverse of
    :func:`snapping_epsilon`, so the release is ``epsilon``-DP and its ledger event is
    ``LaplaceDpEvent(1 / epsilon)``. The noise is larger than ``Delta / epsilon`` by the
    factor ``(1 + 12 m B eta) / (1 - 2 m eta / epsilon)``: ``1 + 1.1e-4`` for a 100x100
    symmetric matrix (``m = 5050``) at the default ``max_records = 2**24``. The output
    rounding adds at most ``Lambda / 2 <= lambda`` to each coordinate.

    Raises:
      ValueError: when the theorem's range ``lambda < B < 2**46 lambda`` does not hold
        (epsilon extremely small or large for ``max_records``).
    """
    delta_1 = check_positive("l1_sensitivity", l1_sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    m = check_count("size", size, minimum=1)
    max_records = check_count("max_records", max_records, minimum=1)
    eta = FLOAT64_UNIT_ROUNDOFF
    if not epsilon > 2.0 * m * eta:
        raise ValueError(f"expected epsilon > 2 * size * 2**-53 for snapping, got {epsilon}")
    bound = float(max_records) * delta_1
    scale = math.nextafter((delta_1 + 12.0 * m * bound * eta) / (epsilon - 2.0 * m * eta), math.inf)
    if not scale < bound < _SNAPPING_MAX_RATIO * scale:
        raise ValueError(
            "expected lambda < B < 2**46 lambda for the snapping mechanism (Mironov 2012, Thm. 1), "
            f"got lambda={scale:g}, B={bound:g}; change max_records or epsilon"
        )
    return Snapping(scale=scale, grid=power_of_two_at_least(scale), bound=bound)


def full_precision_uniform(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Mironov's ``U*``: doubles in ``(0, 1)``, each drawn with probability equal to its spacing.

    ``U = (1 + k 2**-52) 2**-e`` with ``P(e) = 2**-e`` (one plus the number of leading zero
    bits of a stream of random bits) and ``k`` uniform on 52 bits: the binary64 rounding-down
    of a real uniform, including the fine spacing near 0 that the 53-bit ``rng.random()``
    lacks. ``e`` is capped at 1022 (normal doubles; the cap moves probability ``2**-1022``).
    """
    n = math.prod(shape)
    exponent = np.ones(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        words = rng.integers(0, 2**32, size=pending.size, dtype=np.uint64)
        bit_length = np.frexp(words.astype(np.float64))[1]  # exact: 32-bit ints are doubles
        exponent[pending] += 32 - bit_length
        pending = pending[words == 0]
    mantissa = rng.integers(0, 2**52, size=n, dtype=np.int64)
    return np.ldexp(1.0 + mantissa * 2.0**-52, -np.minimum(exponent, 1022)).reshape(shape)


def _ln_correctly_rounded(u: np.ndarray) -> np.ndarray:
    """``ln(u)`` rounded to the nearest double (Thm. 1 assumes it; ``np.log`` is only
    faithful): mpmath at :data:`_LN_BITS` bits, then one rounding to nearest."""
    from mpmath import libmp

    def ln(v: float) -> float:
        exact = libmp.mpf_log(libmp.from_float(v), _LN_BITS, libmp.round_nearest)
        return libmp.to_float(exact, rnd=libmp.round_nearest)

    return np.array([ln(v) for v in u.ravel().tolist()], dtype=np.float64).reshape(u.shape)


def _clamp_and_round(value: np.ndarray, grid: float, bound: float) -> np.ndarray:
    """``clamp_B(round_Lambda(value))``; division and product by a power of two are exact."""
    return np.clip(np.round(value / grid) * grid, -bound, bound)


def snapping_laplace(rng: np.random.Generator, value: np.ndarray, params: Snapping) -> np.ndarray:
    """The snapping mechanism (:func:`snapping_laplace_parameters`) on every entry of ``value``."""
    x = np.clip(np.asarray(value, dtype=np.float64), -params.bound, params.bound)
    sign = rng.integers(0, 2, size=x.shape) * 2.0 - 1.0
    noise = (sign * params.scale) * _ln_correctly_rounded(full_precision_uniform(rng, x.shape))
    return _clamp_and_round(x + noise, params.grid, params.bound)


def standard_normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``N(0, I)`` of ``shape`` (float64) whose cut lies at :data:`NORMAL_CUT` per pair.

    Box-Muller with Mironov's full-precision uniform: per pair of outputs ``u`` from
    :func:`full_precision_uniform` (every double in ``(0, 1)`` down to ``2^-1022``, each with
    its spacing's probability), ``r = sqrt(-2 ln u) <= 37.64`` and ``theta = 2 pi (c +
    2^-54)`` with ``c = rng.random()``; the outputs are ``r cos theta, r sin theta``. With a
    continuous ``u`` this is the ideal pair conditioned on ``r <= sqrt(2044 ln 2)``, within
    total variation ``2^-1022`` of it. numpy's own ``normal`` (a ziggurat) has a cut too, near
    13.7, but one read off its C source; this one is ours and deep enough that
    ``(1 + e^eps)`` times its charge stays negligible at any epsilon below 600.
    """
    size = math.prod(shape)
    pairs = (size + 1) // 2
    u = full_precision_uniform(rng, (pairs,))
    return box_muller(u, rng.random(pairs))[:size].reshape(shape)


def box_muller(u: np.ndarray, c: np.ndarray) -> np.ndarray:
    """:func:`standard_normal`'s transform of uniforms ``u`` in ``(0, 1]`` (the radius) and
    ``c`` in ``[0, 1)`` (the angle) to ``r cos theta`` then ``r sin theta``; the largest
    radius, at ``u = 2^-1022``, is ``sqrt(2044 ln 2) = 37.64``."""
    r = np.sqrt(-2.0 * np.log(u))
    theta = (2.0 * math.pi) * (c + 2.0**-54)
    return np.concatenate([r * np.cos(theta), r * np.sin(theta)])


def laplace_noise(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """``Laplace(0, scale)`` of ``shape`` by the textbook ``S scale ln(U)``, with ``U`` from
    :func:`full_precision_uniform` (so the cut lies at :data:`LAPLACE_CUT` scales) and ``np.log``
    (faithful, not correctly rounded: Mironov's floating-point caveat applies)."""
    sign = rng.integers(0, 2, size=shape) * 2.0 - 1.0
    return (sign * scale) * np.log(full_precision_uniform(rng, shape))


def gaussian_event(noise_multiplier: float) -> ev.DpEvent:
    """The event of one Gaussian release (:func:`gaussian_mechanism`): ``GaussianDpEvent(z)``
    with its sampler's cut (``NoiseCutDpEvent(GAUSSIAN_RELEASE_CUT)``; none at ``z = 0``,
    where nothing is drawn). Every plan of a Gaussian release builds its event here."""
    gaussian = ev.GaussianDpEvent(noise_multiplier=float(noise_multiplier))
    return with_noise_cut(gaussian, GAUSSIAN_RELEASE_CUT if noise_multiplier > 0 else 0.0)


def laplace_event(epsilon: float, *, secure_noise: bool = True) -> ev.DpEvent:
    """The event of one Laplace release (:func:`laplace_mechanism`): ``LaplaceDpEvent(1 /
    epsilon)``, exact under snapping (``secure_noise``), with the textbook sampler's cut
    (``NoiseCutDpEvent(LAPLACE_RELEASE_CUT)``) otherwise."""
    laplace = ev.LaplaceDpEvent(noise_multiplier=1.0 / float(epsilon))
    return laplace if secure_noise else with_noise_cut(laplace, LAPLACE_RELEASE_CUT)


def _check_release_size(value: np.ndarray) -> None:
    if value.size > MAX_RELEASE_SIZE:
        raise ValueError(
            f"expected at most {MAX_RELEASE_SIZE} coordinates in one release, got {value.size}"
        )


def _symmetrize(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle (diagonal included) is ``upper``'s."""
    return upper + np.triu(upper, 1).T


def _as_statistic(value: object, symmetric: bool) -> np.ndarray:
    """``value`` as float64; with ``symmetric``, checked to be a square matrix."""
    value = np.asarray(value, dtype=np.float64)
    if symmetric and (value.ndim != 2 or value.shape[0] != value.shape[1]):
        raise ValueError(f"expected a square matrix for symmetric noise, got shape {value.shape}")
    return value


def _iid_noise(
    draw: Callable[[tuple[int, ...]], np.ndarray], shape: tuple[int, ...], symmetric: bool
) -> np.ndarray:
    """``draw(shape)`` (i.i.d. noise, the ``size`` argument of a numpy sampler); with ``symmetric``, its upper triangle (diagonal included) mirrored,
    so each free entry of a symmetric statistic gets exactly one draw (Dwork et al. 2014)."""
    noise = draw(shape)
    return _symmetrize(np.triu(noise)) if symmetric else noise


def _statistic_fingerprint(value: object, **public_arguments: object) -> tuple:
    """A host release's public fingerprint (:mod:`jdp.mechanisms.tape`): the statistic's
    shape and every other argument but the generator (the tape fingerprints its state)."""
    del public_arguments["rng"]
    return np.shape(value), public(public_arguments)


@released(_statistic_fingerprint)
def gaussian_mechanism(
    rng: np.random.Generator,
    value: np.ndarray,
    *,
    l2_sensitivity: float,
    noise_multiplier: float,
    symmetric: bool = False,
    secure_noise: bool = False,
    max_records: int = DEFAULT_MAX_RECORDS,
) -> tuple[np.ndarray, ev.GaussianDpEvent]:
    """Release ``value + N(0, (noise_multiplier * l2_sensitivity)^2 I)``.

    Args:
      rng: the noise source.
      value: the statistic (any shape) computed on the private data.
      l2_sensitivity: max L2 change of ``value`` between neighbouring datasets. For a
        symmetric matrix with ``symmetric=True`` this is the L2 norm of the change of the
        upper triangle (diagonal included), since only that triangle carries fresh noise.
      noise_multiplier: sigma / sensitivity; 0 is the non-private limit (infinite epsilon).
      symmetric: for a square ``value``: draw i.i.d. noise on the upper triangle and mirror it
        (Dwork et al. 2014 "Analyze Gauss"), so the release is symmetric.
      secure_noise: a mitigation of the floating-point channel, NOT a proof: ``value`` is
        clamped to ``+-B`` (``B = max_records * l2_sensitivity``, public), noised, rounded to
        the smallest power of two ``>= sigma`` and clamped again (Mironov's snapping
        construction applied to Gaussian noise; see the module docstring). Rounding adds at
        most half a grid step (``<= sigma``) per entry. No effect at ``noise_multiplier=0``.
      max_records: public bound on the number of records, for ``B``.

    Returns:
      ``(noisy_value, gaussian_event(noise_multiplier))``.

    Privacy:
      Neighbouring relation: whatever relation ``l2_sensitivity`` was derived for.
      Gaussian mechanism: RDP(alpha) = alpha / (2 * noise_multiplier**2) (Mironov 2017);
      the event is that of the ideal real-valued mechanism, with or without ``secure_noise``,
      plus the cut of :func:`standard_normal` (:func:`gaussian_event`).
    """
    check_positive("l2_sensitivity", l2_sensitivity)
    check_nonnegative("noise_multiplier", noise_multiplier)
    value = _as_statistic(value, symmetric)
    scale = noise_multiplier * l2_sensitivity
    secure = secure_noise and scale > 0
    if secure:
        bound = float(check_count("max_records", max_records, minimum=1)) * l2_sensitivity
        value = np.clip(value, -bound, bound)
    _check_release_size(value)
    noise = scale * _iid_noise(partial(standard_normal, rng), value.shape, symmetric)
    out = value + noise
    if secure:
        out = _clamp_and_round(out, power_of_two_at_least(scale), bound)
    return out, gaussian_event(noise_multiplier)


@released(_statistic_fingerprint)
def laplace_mechanism(
    rng: np.random.Generator,
    value: np.ndarray,
    *,
    l1_sensitivity: float,
    epsilon: float,
    symmetric: bool = False,
    secure_noise: bool = True,
    max_records: int = DEFAULT_MAX_RECORDS,
) -> tuple[np.ndarray, ev.DpEvent]:
    """Release ``value + Laplace(0, l1_sensitivity / epsilon)`` entrywise (pure epsilon-DP).

    With ``symmetric=True`` the noise is drawn on the upper triangle and mirrored; then
    ``l1_sensitivity`` must bound the L1 change of the upper triangle only.

    ``secure_noise=True`` (the default) releases through Mironov's snapping mechanism
    (:func:`snapping_laplace_parameters`: clamp to the public ``B = max_records *
    l1_sensitivity``, Laplace noise from full-precision randomness with a correctly rounded
    logarithm, round to the power-of-two grid ``Lambda >= lambda``, clamp), with ``lambda``
    calibrated so that the floating-point cost is included in ``epsilon``. ``False`` draws
    the textbook sampler (:func:`laplace_noise`): Mironov's attack applies to it, and its cut
    is charged, so it is not pure DP.

    Privacy:
      epsilon-DP for the relation ``l1_sensitivity`` was derived under (with
      ``secure_noise``: by Mironov 2012, Thm. 1, in binary64 arithmetic). The event is
      :func:`laplace_event` (``LaplaceDpEvent(1 / epsilon)``, with the textbook sampler's
      cut when ``secure_noise=False``).
    """
    check_positive("l1_sensitivity", l1_sensitivity)
    check_positive("epsilon", epsilon)
    value = _as_statistic(value, symmetric)
    _check_release_size(value)
    event = laplace_event(epsilon, secure_noise=secure_noise)
    if not secure_noise:
        draw = partial(laplace_noise, rng, scale=l1_sensitivity / epsilon)
        return value + _iid_noise(draw, value.shape, symmetric), event
    iu = np.triu_indices(value.shape[0]) if symmetric else None
    flat = value if iu is None else value[iu]
    params = snapping_laplace_parameters(
        l1_sensitivity=l1_sensitivity,
        epsilon=epsilon,
        size=max(flat.size, 1),
        max_records=max_records,
    )
    noisy = snapping_laplace(rng, flat, params)
    if iu is None:
        return noisy, event
    upper = np.zeros(value.shape)
    upper[iu] = noisy
    return _symmetrize(upper), event


def laplace_counts(
    rng: np.random.Generator, counts: np.ndarray, *, l1_sensitivity: float, epsilon: float
) -> tuple[np.ndarray, ev.DpEvent | None]:
    """Record counts released by :func:`laplace_mechanism` (the snapping mechanism), or, where
    ``epsilon`` is too small for it (its noise scale beyond the public clamp: a function of
    the public epsilon, sensitivity and cell count only), nothing: every count returned is
    the clamp's record bound :data:`DEFAULT_MAX_RECORDS`, an upper bound on any count the
    mechanism admits, and the event is ``None``. A verdict drawn from such counts errs
    towards "enough records"."""
    counts = np.asarray(counts, dtype=np.float64)
    try:
        snapping_laplace_parameters(
            l1_sensitivity=l1_sensitivity, epsilon=epsilon, size=max(counts.size, 1)
        )
    except ValueError:
        return np.full(counts.shape, float(DEFAULT_MAX_RECORDS)), None
    return laplace_mechanism(rng, counts, l1_sensitivity=l1_sensitivity, epsilon=epsilon)


def gaussian_releases(
    rng: np.random.Generator,
    values: Sequence[np.ndarray],
    l2_sensitivities: Sequence[float],
    *,
    noise_multiplier: float,
    secure_noise: bool = False,
) -> tuple[tuple[np.ndarray, ...], ev.ComposedDpEvent]:
    """Release several statistics, each by :func:`gaussian_mechanism` with its own
    sensitivity and the common ``noise_multiplier``, in order.

    Returns:
      ``(noisy_values, ComposedDpEvent([gaussian_event(noise_multiplier)] * len(values)))``.

    Privacy:
      Sequential composition of the Gaussian mechanisms (each with its own L2 sensitivity,
      so each has the same RDP curve ``alpha / (2 z^2)``): together RDP
      ``len(values) * alpha / (2 z^2)``, a Gaussian with multiplier ``z / sqrt(len(values))``.
    """
    released = [
        gaussian_mechanism(
            rng,
            value,
            l2_sensitivity=sensitivity,
            noise_multiplier=noise_multiplier,
            secure_noise=secure_noise,
        )
        for value, sensitivity in zip(values, l2_sensitivities, strict=True)
    ]
    return tuple(v for v, _ in released), ev.ComposedDpEvent([e for _, e in released])


def clip_rows(x: np.ndarray, l2_clip_norm: float) -> np.ndarray:
    """Scale each row of ``x`` so that its L2 norm is at most ``l2_clip_norm``.

    ``x_i <- x_i * min(1, C / ||x_i||)``; rows already inside the ball are unchanged.
    """
    check_positive("l2_clip_norm", l2_clip_norm, allow_inf=True)
    x = np.asarray(x)
    if math.isinf(l2_clip_norm):
        return x
    norms = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]  # faster than linalg.norm
    if norms.max(initial=0.0) <= l2_clip_norm:
        return x
    factor = np.minimum(1.0, l2_clip_norm / np.maximum(norms, np.finfo(np.float64).tiny))
    return x * factor
