"""Calibration: the smallest noise scale that meets a target (epsilon, delta), by default as
the ledger reports it (the minimum over the rigorous accountants, :data:`BEST`).

Epsilon is non-increasing in every noise multiplier (more noise is a post-processing of less
noise: ``N(0, s'^2) = N(0, s^2) + N(0, s'^2 - s^2)``), so the set of scales meeting the target
is an interval ``[s*, inf)`` and a bracketing search finds ``s*`` (regula falsi, bisection as
its safeguard: :func:`_bisect`). We return the upper end of the final bracket, so the
returned scale always meets the target (never overshoots ``target_epsilon``) and its epsilon
lies within ``rtol`` (default 0.1%) below the target.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import threading
from collections.abc import Callable, Iterator, Mapping

from accounting import events as ev
from accounting.accountants.base import UnsupportedEventError
from accounting.builders import dpsgd_event
from accounting.compose import BEST, EXACT, RIGOROUS, best_epsilon, compute_epsilon, pure_split
from accounting.ledger import event_from_dict, event_to_dict
from accounting.relations import ADD_OR_REMOVE_ONE, check_relation, dpsgd_neighboring_relation
from accounting.validation import check_count, check_open_unit, check_positive, check_probability

_MAX_UPPER = 1e6

#: Who is told about the searches (``None``: nobody); see :func:`set_search_observer`.
_observer: Callable[[str], None] | None = None
_searching = threading.local()


def set_search_observer(
    observer: Callable[[str], None] | None,
) -> Callable[[str], None] | None:
    """Tell ``observer`` about every calibration search; returns the one it replaces.

    ``observer("start")`` before a search (the searches nested in it, as
    :func:`calibrate_shares` runs several, are part of it), ``observer("step")`` after each
    accountant evaluation and ``observer("end")`` after the search, also when it raises. It
    sees no value at all (a search reads public numbers only anyway); ``jdp.progress`` installs
    one that shows the search on a terminal, so that this package imports nothing of ``jdp``.
    """
    global _observer
    previous, _observer = _observer, observer
    return previous


def _tell(event: str) -> None:
    if _observer is not None:
        _observer(event)


@contextlib.contextmanager
def _search() -> Iterator[None]:
    """One search for the observer: ``start`` and ``end`` around the outermost one."""
    depth = getattr(_searching, "depth", 0)
    _searching.depth = depth + 1
    if depth == 0:
        _tell("start")
    try:
        yield
    finally:
        _searching.depth = depth
        if depth == 0:
            _tell("end")


def _remembered(eps: Callable[[float], float]) -> Callable[[float], float]:
    """``eps`` evaluated once per scale (one search asks again for a scale it has: the top
    of a narrowed bracket; a PLD answer costs 0.2-0.5 s), each new evaluation a step for the
    observer. The same values."""
    seen: dict[float, float] = {}

    def once(s: float) -> float:
        if s not in seen:
            seen[s] = eps(s)
            _tell("step")
        return seen[s]

    return once


class BudgetTooSmallError(ValueError):
    """No noise scale up to the calibration's cap (1e6) meets the target: the plan needs a
    scale above ``minimum_scale``."""

    def __init__(self, message: str, *, minimum_scale: float) -> None:
        super().__init__(message)
        self.minimum_scale = minimum_scale


def calibrate(
    event_fn: Callable[[float], ev.DpEvent],
    *,
    target_epsilon: float,
    target_delta: float,
    accountant: str = BEST,
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE,
    lower: float = 1e-2,
    upper: float = 100.0,
    rtol: float = 1e-3,
    prior: ev.DpEvent | None = None,
) -> float:
    """The smallest scale ``s`` (up to ``rtol``) such that ``event_fn(s)`` meets the target.

    With ``prior`` (what was already spent from the same budget, e.g. a DP schema release:
    :attr:`accounting.budget.PrivacyBudget.prior`), the target is met by the sequential
    composition ``prior`` then ``event_fn(s)``, so the plan gets what the best accountant
    leaves rather than what basic composition would (a prior that alone meets the target
    leaves no scale: :class:`BudgetTooSmallError`).

    ``event_fn`` maps a scale to an event whose epsilon is non-increasing in the scale (e.g.
    every noise multiplier of the plan multiplied by ``s``). If ``upper`` does not meet the
    target it is doubled (up to 1e6); then the bracket is halved down towards ``lower``; if
    ``lower`` already meets the target, ``lower`` is returned.

    **The default, ``accountant="best"``, calibrates with the ledger's own rule**
    (:func:`accounting.compose.best_epsilon`: the minimum over the rigorous accountants), so
    a fit spends its whole budget as the ledger reports it. Since each accountant's epsilon
    is non-increasing in ``s``, the scales meeting ``min_a eps_a(s) <= target`` are the union
    of the intervals ``[s_a, inf)``: the answer is ``min_a s_a``. Accountants are tried
    cheapest first (:data:`accounting.compose.RIGOROUS`), stopping after an exact one
    (:data:`accounting.compose.EXACT`, as the ledger does); one is searched only below the
    best scale so far and only if it meets the target there, so the slow PLD accountant
    runs about four times per calibration, never at tiny noise scales.

    Multi-phase plans scale every phase together. P3GM (PCA + EM + SGD) with noise ratios
    fixed by the user and one scale for all:

    >>> from accounting import events as ev
    >>> from accounting.builders import dpsgd_event
    >>> from accounting.compose import best_epsilon
    >>> def p3gm_plan(s):
    ...     return ev.ComposedDpEvent([
    ...         ev.GaussianDpEvent(4.0 * s),  # DP-PCA
    ...         ev.SelfComposedDpEvent(ev.GaussianDpEvent(8.0 * s), 20 * 3),  # 20 DP-EM steps
    ...         dpsgd_event(1.0 * s, sampling_prob=0.01, steps=2000),  # DP-SGD
    ...     ])
    >>> s = calibrate(p3gm_plan, target_epsilon=1.0, target_delta=1e-5)
    >>> 0.99 <= best_epsilon(p3gm_plan(s), 1e-5).value / 1.0 <= 1.0
    True

    Args:
      event_fn: scale -> event.
      target_epsilon: > 0.
      target_delta: in (0, 1).
      accountant: ``"best"`` (default) or one of :data:`accounting.compose.ACCOUNTANTS`,
        not ``"gdp_clt"`` (an approximation: the returned scale must meet the target for
        sure).
      neighboring_relation: relation the events are analysed under.
      lower, upper: initial bracket, ``0 < lower < upper``.
      rtol: relative tolerance on epsilon, in (0, 0.01].
      prior: an event composed before every ``event_fn(s)``, or ``None``.

    Returns:
      the scale; the chosen accountant's epsilon of ``event_fn(s)`` at ``target_delta`` is
      ``<= target_epsilon`` always, and ``>= (1 - rtol) * target_epsilon`` unless ``lower``
      already met the target.

    Raises:
      ValueError: bad arguments (including ``accountant="gdp_clt"``).
      BudgetTooSmallError: no scale up to 1e6 meets the target (a ``ValueError``).
    """
    with _search():
        return _calibrate(
            event_fn, target_epsilon, target_delta, accountant, neighboring_relation, lower,
            upper, rtol, prior,
        )  # fmt: skip


def _calibrate(
    event_fn: Callable[[float], ev.DpEvent],
    target_epsilon: float,
    target_delta: float,
    accountant: str,
    neighboring_relation: ev.NeighboringRelation,
    lower: float,
    upper: float,
    rtol: float,
    prior: ev.DpEvent | None,
) -> float:
    """:func:`calibrate`'s search (its arguments, positional)."""
    if accountant == "gdp_clt":
        raise ValueError(
            "cannot calibrate with accountant 'gdp_clt': the mu-GDP central-limit "
            "approximation is not an upper bound (it can under-report epsilon); use 'rdp' or 'pld'"
        )
    target = check_positive("target_epsilon", target_epsilon)
    delta = check_open_unit("target_delta", target_delta)
    lower_bound = check_positive("lower", lower)
    hi = check_positive("upper", upper)
    if not lower_bound < hi:
        raise ValueError(f"expected lower < upper, got {lower} >= {upper}")
    if not 0 < rtol <= 0.01:
        raise ValueError(f"expected rtol in (0, 0.01], got {rtol}")

    def event_at(s: float) -> ev.DpEvent:
        if prior is None:
            return event_fn(s)
        # the prior's releases side by side with the plan, as a ledger lists its entries
        head = list(prior.events) if isinstance(prior, ev.ComposedDpEvent) else [prior]
        return ev.ComposedDpEvent([*head, event_fn(s)])

    def eps_of(name: str) -> Callable[[float], float]:
        def eps(s: float) -> float:
            return compute_epsilon(
                event_at(s), delta, accountant=name, neighboring_relation=neighboring_relation
            )

        return _remembered(eps)

    if accountant != BEST:
        return _bisect(eps_of(accountant), target, delta, lower_bound, hi, rtol)

    def narrowed(eps: Callable[[float], float], scale: float | None) -> float | None:
        """The smallest scale meeting the target by ``eps``: searched in the whole bracket,
        or a little below ``scale`` where ``eps`` (a tighter rule) meets it there already."""
        if scale is None:
            return _bisect(eps, target, delta, lower_bound, hi, rtol)
        if scale > lower_bound and eps(scale) <= target:
            return _bisect(eps, target, delta, lower_bound, scale, rtol, shrink=0.8)
        return scale

    scale: float | None = None
    failure: BudgetTooSmallError | None = None
    exact = False
    for name in RIGOROUS:
        try:
            scale = narrowed(eps_of(name), scale)
        except UnsupportedEventError:
            continue
        except BudgetTooSmallError as err:  # this accountant cannot; another may
            failure = err
        if name in EXACT:  # its scale is the exact one: no accountant can go lower
            exact = True
            break
    if not exact:
        # the ledger's last candidate (accounting.compose.best_epsilon): basic composition of
        # the pure parts (a prior's quantile knots, which PLD declines) with the best answer
        # on the rest
        relation = check_relation(neighboring_relation)

        def eps_split(s: float) -> float:
            eps_pure, rest = pure_split(event_at(s), relation)
            if rest is None:
                raise UnsupportedEventError("nothing pure to split off")
            return eps_pure + best_epsilon(rest, delta, neighboring_relation=relation).value

        try:
            scale = narrowed(_remembered(eps_split), scale)
        except UnsupportedEventError:
            pass
        except BudgetTooSmallError as err:
            failure = err
    if scale is not None:
        return scale
    if failure is not None:
        raise failure
    raise UnsupportedEventError(f"no accountant among {RIGOROUS} can analyse this event")


def calibrate_shares(
    plan: Callable[[Mapping[str, float]], ev.DpEvent],
    shares: Mapping[str, float],
    *,
    target_epsilon: float,
    target_delta: float,
    accountant: str = BEST,
    prior: ev.DpEvent | None = None,
) -> dict[str, float]:
    """Noise multipliers for a plan of phases that share one budget (P3GM, DPGM, dp-GAN).

    ``plan(z)`` is the plan's event with phase ``p`` at noise multiplier ``z[p]`` (phases
    missing from ``z`` left out). Each phase first gets ``z_p`` with
    ``eps(plan({p: z_p})) = share_p / sum(shares) * target_epsilon`` alone, which fixes the
    ratios between phases; then one factor ``k`` makes ``plan({p: k z_p})`` meet the target
    (``k < 1``: the composition is tighter than the sum of the shares) under ``accountant``.
    The ratios are a design choice, not a guarantee, so under the ledger's rule
    (``accountant="best"``) they are computed by RDP (about 10 ms an evaluation where PLD
    takes 0.2-0.5 s); the factor, which carries the guarantee, uses ``accountant`` itself.
    A function of public values only.
    """
    total = sum(shares.values())
    if not shares or not all(v > 0 for v in shares.values()):
        raise ValueError(f"expected positive shares, got {dict(shares)}")
    ratio_accountant = "rdp" if accountant == BEST else accountant
    with _search():
        return _shares(plan, shares, total, target_epsilon, target_delta, accountant,
                       ratio_accountant, prior)  # fmt: skip


def _shares(
    plan: Callable[[Mapping[str, float]], ev.DpEvent],
    shares: Mapping[str, float],
    total: float,
    target_epsilon: float,
    target_delta: float,
    accountant: str,
    ratio_accountant: str,
    prior: ev.DpEvent | None,
) -> dict[str, float]:
    """:func:`calibrate_shares`'s searches (its arguments, positional)."""
    base = {
        p: calibrate(
            lambda s, p=p: plan({p: s}),
            target_epsilon=target_epsilon * share / total,
            target_delta=target_delta,
            accountant=ratio_accountant,
        )
        for p, share in shares.items()
    }
    factor = calibrate(
        lambda k: plan({p: k * z for p, z in base.items()}),
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        accountant=accountant,
        prior=prior,
    )
    return {p: factor * z for p, z in base.items()}


def _bisect(
    eps: Callable[[float], float],
    target: float,
    delta: float,
    lower_bound: float,
    hi: float,
    rtol: float,
    *,
    shrink: float = 0.5,
) -> float:
    """:func:`calibrate`'s search for one accountant's ``eps``: the smallest scale in
    ``[lower_bound, 1e6]`` with ``eps(s) <= target``, starting from the bracket's top ``hi``.

    Bracket ``[lo, hi]`` with ``eps(lo) > target >= eps(hi)``: grow ``hi`` by doubling, then
    lower ``lo`` from ``hi`` by the factor ``shrink`` (never evaluating far below the answer:
    tiny noise scales are expensive for the PLD accountant; a caller that already holds a
    near answer passes a ``shrink`` close to 1). Then interpolation steps on ``log s`` as a
    function of ``log eps`` (smooth and nearly linear for every mechanism here), aimed at the
    middle of the window ``[(1 - rtol) target, target]`` the answer's epsilon must land in:
    through the last three evaluations (inverse quadratic, as Brent's method) or the last two
    (the secant) when that lands inside the bracket (superlinear, also when they are on one
    side of the answer), else through the bracket's ends with the Illinois rule
    (the weight of an end that stays put twice is halved, so both ends converge). The step
    stays inside the bracket; it is a midpoint where no secant is finite (an epsilon of 0 or
    infinity), and bisection takes over after three steps that halved neither the bracket
    nor the smallest gap to the aim (kinks, jumps). The bracket shrinks every step and its
    upper end, which is returned, always meets the target. About 3-4 evaluations to ``rtol =
    1e-3`` where bisection took 8-10; interpolating the last evaluations took dp-GAN's PLD
    search from 12 evaluations to 4 (``scripts/bench_accounting.py --calibration``).
    """
    eps_hi = eps(hi)
    while eps_hi > target:
        if hi >= _MAX_UPPER:
            raise BudgetTooSmallError(
                f"budget too small: no scale up to {_MAX_UPPER:g} meets "
                f"target_epsilon={target} at target_delta={delta} (epsilon there: "
                f"{eps_hi:.4g}); a scale above {_MAX_UPPER:g} would be needed",
                minimum_scale=_MAX_UPPER,
            )
        hi = min(2 * hi, _MAX_UPPER)
        eps_hi = eps(hi)
    while True:
        lo = max(hi * shrink, lower_bound)
        eps_lo = eps(lo)
        if eps_lo > target:
            break
        if lo == lower_bound:
            return lo
        hi, eps_hi = lo, eps_lo
    # f(x) = log eps(e^x) - log aim, aim = (1 - rtol/2) target, the middle of the window
    # [(1 - rtol) target, target] an answer's epsilon must land in: f(lo) > 0 > f(hi) while
    # the loop runs (an eps_hi at or above the aim ends it). Aimed at the target itself, a
    # secant step lands on the window's edge and half the time just above it, on the lo side,
    # and the next steps crawl back (PLD's answers jump by its own tolerance between scales).
    # eps may be infinite below.
    log_t = math.log(target * (1 - rtol / 2))
    f_lo = _log_gap(eps_lo, log_t)
    f_hi = _log_gap(eps_hi, log_t)
    x_lo, x_hi = math.log(lo), math.log(hi)
    recent = [(x_hi, f_hi), (x_lo, f_lo)]  # the last three evaluations, oldest first
    side, steps, checkpoint = 0, 0, (x_hi - x_lo, min(-f_hi, f_lo))
    stalled = False
    while eps_hi < (1 - rtol) * target and hi / lo > 1 + 1e-12:
        steps += 1
        if steps % 3 == 0:  # three steps that halved neither the bracket nor the least gap
            progress = (x_hi - x_lo, min(-f_hi, f_lo))
            stalled = stalled or all(p > c / 2 for p, c in zip(progress, checkpoint))
            checkpoint = progress
        width = x_hi - x_lo
        low, high = x_lo + 1e-3 * width, x_hi - 1e-3 * width  # inside, off the ends
        through = [_through(recent), _through(recent[-2:])]  # the last three, the last two
        x = next((t for t in through if t is not None and low <= t <= high), None)
        if x is None:
            x = _secant(x_lo, f_lo, x_hi, f_hi)  # regula falsi on the bracket's ends
            if x is not None:
                x = min(max(x, low), high)
        if stalled or x is None:
            x = (x_lo + x_hi) / 2  # bisect: no finite secant, or three steps gained too little
        mid = math.exp(x)
        e = eps(mid)
        recent = [*recent[-2:], (x, _log_gap(e, log_t))]
        if e <= target:
            hi, eps_hi, x_hi, f_hi = mid, e, x, recent[-1][1]
            if side == 1:  # hi moved twice: halve lo's weight (Illinois)
                f_lo /= 2
            side = 1
        else:
            lo, x_lo, f_lo = mid, x, recent[-1][1]
            if side == -1:
                f_hi /= 2
            side = -1
    return hi


def _through(points: list[tuple[float, float]]) -> float | None:
    """The zero of the polynomial ``x(f)`` through ``points`` ``(x, f)`` (two: the secant;
    three: inverse quadratic interpolation, as Brent's method); ``None`` when an ``f`` is
    infinite or two are equal."""
    fs = [f for _, f in points]
    if not all(math.isfinite(f) for f in fs) or len(set(fs)) < len(fs):
        return None
    return sum(
        x * math.prod(fj / (fj - fi) for j, (_, fj) in enumerate(points) if j != i)
        for i, (x, fi) in enumerate(points)
    )


def _secant(x0: float, f0: float, x1: float, f1: float) -> float | None:
    """The zero of the line through ``(x0, f0)`` and ``(x1, f1)``; ``None`` when an ``f`` is
    infinite or the two are equal."""
    if not (math.isfinite(f0) and math.isfinite(f1)) or f0 == f1:
        return None
    return x1 - f1 * (x1 - x0) / (f1 - f0)


def _log_gap(eps: float, log_target: float) -> float:
    """``log eps - log target`` (``-inf`` at ``eps = 0``, ``inf`` at ``eps = inf``)."""
    if eps <= 0:
        return -math.inf
    return math.log(eps) - log_target if math.isfinite(eps) else math.inf


def calibrate_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sampling_prob: float,
    steps: int,
    sampling: str = "poisson",
    dataset_size: int | None = None,
    accountant: str = BEST,
    noise_cut: float = 0.0,
    prior: ev.DpEvent | None = None,
) -> float:
    """The smallest DP-SGD noise multiplier ``z`` (noise std / clip norm ``C``) meeting
    (target_epsilon, target_delta).

    Built on :func:`calibrate` with :func:`accounting.builders.dpsgd_event`, in the same units
    as that function's ``noise_multiplier`` (and :func:`jdp.dpsgd.train.train`'s), under
    :func:`accounting.relations.dpsgd_neighboring_relation` (REPLACE_ONE for fixed-size
    sampling without replacement, where the event's Gaussian is ``z / 2``), with the noise
    sampler's cut ``noise_cut`` per step (:func:`accounting.builders.dpsgd_event`).

    ``prior``: what was spent before the run, composed first (:func:`calibrate`).

    A function of public numbers only, so it is cached: the CLI, a training loop and a
    method asking for the same plan get the one answer without repeating the search.
    """
    return _noise_multiplier(
        target_epsilon, target_delta, sampling_prob, steps, sampling, dataset_size, accountant,
        noise_cut, prior_key(prior),
    )  # fmt: skip


def prior_key(prior: ev.DpEvent | None) -> str | None:
    """``prior`` as a hashable cache key (its event's JSON), for a calibration cached by its
    public inputs; :func:`prior_event` reads it back."""
    return None if prior is None else json.dumps(event_to_dict(prior), sort_keys=True)


def prior_event(key: str | None) -> ev.DpEvent | None:
    """The event of a :func:`prior_key`."""
    return None if key is None else event_from_dict(json.loads(key))


@functools.lru_cache(maxsize=256)
def _noise_multiplier(
    target_epsilon: float,
    target_delta: float,
    sampling_prob: float,
    steps: int,
    sampling: str,
    dataset_size: int | None,
    accountant: str,
    noise_cut: float,
    prior: str | None,
) -> float:
    """:func:`calibrate_noise_multiplier`, cached (``prior`` as its event's JSON)."""
    q = check_probability("sampling_prob", sampling_prob)
    steps = check_count("steps", steps, minimum=1)
    relation = dpsgd_neighboring_relation(sampling)

    def plan(z: float) -> ev.DpEvent:
        return dpsgd_event(
            z, q, steps, sampling=sampling, dataset_size=dataset_size, noise_cut=noise_cut
        )

    plan(1.0)  # validate
    try:
        return calibrate(
            plan,
            target_epsilon=target_epsilon,
            target_delta=target_delta,
            accountant=accountant,
            neighboring_relation=relation,
            prior=prior_event(prior),
        )
    except BudgetTooSmallError as err:
        raise BudgetTooSmallError(
            f"budget (epsilon={target_epsilon}, delta={target_delta}) too small for {steps} "
            f"DP-SGD steps at sampling_prob={q}: it needs a noise multiplier above "
            f"{err.minimum_scale:g}; plan fewer steps, a smaller sampling_prob or a larger "
            f"budget",
            minimum_scale=err.minimum_scale,
        ) from None
