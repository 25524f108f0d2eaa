"""Recording what a mechanism spent: one ledger entry per release, per iteration, per plan.

Every host-side mechanism returns ``(output, event)`` (DESIGN section 2, rule 1). The
encoding-phase algorithms (:mod:`jdp.encoding.pca`, :mod:`jdp.encoding.em`,
:mod:`jdp.encoding.kmeans`) turn those pairs into a :class:`accounting.ledger.PrivacyLedger`
in three ways, each written once here:

* :func:`record_release` -- one release, one labelled entry;
* :func:`iterate_releases` -- ``T`` adaptive iterations (the state after iteration ``t`` is
  public to iteration ``t + 1``), one entry per iteration (adaptive sequential composition;
  Dwork & Roth 2014, Thm. 3.16; Mironov 2017, Prop. 1 for RDP);
* :func:`run_calibrated` -- the smallest noise multiplier whose *plan* (the data-free event
  of the whole run, a function of the multiplier) meets a target ``(epsilon, delta)``
  (:func:`accounting.calibrate.calibrate`), then the run at that multiplier.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from accounting import events as ev
from accounting.calibrate import calibrate
from accounting.compose import BEST
from accounting.ledger import PrivacyLedger
from accounting.validation import check_count
from jdp.mechanisms.noise import gaussian_event
from jdp.progress import track

__all__ = ["gaussian_iterations_event", "iterate_releases", "record_release", "run_calibrated"]

T = TypeVar("T")


def record_release(
    ledger: PrivacyLedger, label: str, release: tuple[T, ev.DpEvent], *, note: str = ""
) -> tuple[T, PrivacyLedger]:
    """``(output, ledger + entry(label, event))`` for a mechanism's ``release = (output, event)``."""
    output, event = release
    return output, ledger.record(label, event, note=note)


def iterate_releases(
    step: Callable[[T], tuple[T, ev.DpEvent]],
    state: T,
    steps: int,
    label: str,
    *,
    ledger: PrivacyLedger | None = None,
    name: str | None = None,
) -> tuple[T, PrivacyLedger]:
    """Run ``state, event = step(state)`` ``steps`` times, one entry ``label`` per iteration.

    ``step`` is one noisy iteration: it reads the private data and the (public) current
    state, and returns the next state -- released, hence public -- with the event it spent.
    Entries are noted ``"iteration t of T"``; ``ledger`` (default: empty) is extended. A
    terminal shows the progress phase ``name`` (default ``"LABEL iteration"``) ``t/T``
    (:mod:`jdp.progress`).

    Privacy:
      Adaptive sequential composition of the ``steps`` events.
    """
    steps = check_count("steps", steps, minimum=1)
    ledger = PrivacyLedger() if ledger is None else ledger
    for t in track(range(steps), name or f"{label} iteration"):
        state, ledger = record_release(
            ledger, label, step(state), note=f"iteration {t + 1} of {steps}"
        )
    return state, ledger


def gaussian_iterations_event(
    noise_multiplier: float, *, releases: int, steps: int
) -> ev.SelfComposedDpEvent:
    """The plan of ``steps`` iterations of ``releases`` Gaussian mechanisms each, all with
    multiplier ``noise_multiplier`` (each statistic noised relative to its own sensitivity):
    ``SelfComposed(Composed([gaussian_event(z)] * releases), steps)`` -- what :func:`iterate_releases`
    records for a step built on :func:`jdp.mechanisms.noise.gaussian_releases`."""
    one = ev.ComposedDpEvent([gaussian_event(noise_multiplier)] * releases)
    return ev.SelfComposedDpEvent(one, check_count("steps", steps, minimum=1))


def run_calibrated(
    run: Callable[..., T],
    plan: Callable[[float], ev.DpEvent],
    target_epsilon: float,
    target_delta: float,
    *,
    accountant: str = BEST,
) -> T:
    """``run(noise_multiplier=z)`` at the smallest ``z`` whose ``plan(z)`` meets the target.

    Args:
      run: the algorithm, called with the keyword ``noise_multiplier`` (e.g.
        ``functools.partial(dp_em, rng, x, n_components, steps=steps)``).
      plan: the data-free event ``run(z)`` spends (e.g. :func:`jdp.encoding.em.dp_em_event`);
        its epsilon must be non-increasing in ``z``.
      target_epsilon, target_delta: the budget; ``accountant`` composes the plan.

    The ledger of the run holds ``plan(z)``'s events, so its epsilon never exceeds the
    target (:func:`accounting.calibrate.calibrate` returns a ``z`` that meets it).
    """
    z = calibrate(
        plan, target_epsilon=target_epsilon, target_delta=target_delta, accountant=accountant
    )
    return run(noise_multiplier=z)
