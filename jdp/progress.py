"""One progress rule for the whole library: what a person sees while long work runs.

Every loop that can take more than a few seconds (calibration, DP-PCA, DP-EM, DP-SGD, a
method's clusters, the evaluation's classifier fits, writing samples) announces itself as a
*phase*, and nothing else in the library writes progress::

    from jdp.progress import phase, track

    with phase("DP-EM iteration", total=steps) as p:
        for t in range(steps):
            ...
            p.update()

    for chunks in track(batches, "DP-SGD step", total=steps, epsilon=eps_after):
        ...

The rule (:func:`jdp.verbosity.progress_on_terminal`): when stderr is a terminal and the code
does not run inside :func:`jdp.verbosity.no_progress` (``jdp ... --quiet``), one status line
on stderr, rewritten in place, shows the phases open now (outermost first, ``" > "``
between them), ``i/T`` of each, the time the innermost has taken and its ETA, and where the
caller gives one, the epsilon its steps have spent so far::

    jdp fit: DP-SGD step 120/300 | eps=0.412 spent | 0:12, ETA 0:18

A phase opened outside every other one leaves its last line when it ends (``... | done in
0:42``); a nested one hands the line back to its parent. Anywhere else -- a pipe, a log
file, CI, pytest -- nothing at all is written: no bar and no carriage return.

What a phase shows is public: names and step counts of a public plan, wall-clock time, and
an epsilon computed from the plan (noise multiplier, sampling rate, steps, the budget's
delta), never a count of private records or any value read off the data.

Calibration lives in :mod:`accounting`, which imports nothing of ``jdp``: its searches call
the observer :func:`accounting.calibrate.set_search_observer` installs, and this module
installs one that shows them as the phase ``"calibrating noise"``. :func:`show_ledger`
shows each privacy-ledger entry as it is spent (``jdp fit``).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from jdp.verbosity import no_progress, progress_on_terminal

__all__ = [
    "Phase",
    "command",
    "fit_delta",
    "no_progress",
    "phase",
    "show_ledger",
    "shown",
    "track",
]

T = TypeVar("T")

#: Least seconds between two redraws of the status line (the first and last always draw).
MIN_INTERVAL = 0.1
#: Least seconds between two evaluations of a phase's epsilon (its last step always has one).
EPSILON_INTERVAL = 1.0
#: An epsilon evaluation waits at least this many times what the last one took (an accountant
#: can take a second: the display must not slow the work down by more than a few percent).
EPSILON_COST_FACTOR = 20.0
#: Width assumed when the terminal reports none (a pseudo-terminal without a size).
DEFAULT_WIDTH = 100
#: The name of the phase :mod:`accounting`'s calibration searches show.
CALIBRATION = "calibrating noise"

_PREFIX: ContextVar[str] = ContextVar("jdp_progress_prefix", default="jdp")
_DELTA: ContextVar[float | None] = ContextVar("jdp_progress_delta", default=None)


def shown() -> bool:
    """Whether progress is shown here and now (:func:`jdp.verbosity.progress_on_terminal`)."""
    return progress_on_terminal()


class _Line:
    """The one status line on stderr: the open phases, the last ledger entry spent."""

    def __init__(self) -> None:
        self.open: list[Phase] = []  # outermost first
        self.dirty = False  # the cursor stands at the end of an unfinished status line
        self.kind = ""  # what that line shows: "phase" or "spent"
        self.spent = ""  # the last ledger entry spent inside the open phases
        self.last_draw = -math.inf

    def write(self, text: str, *, newline: bool = False) -> None:
        stream = sys.stderr
        try:
            stream.write(f"\r\033[K{text}" + ("\n" if newline else ""))
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is not worth a crash
            return
        self.dirty = not newline

    def end_line(self) -> None:
        """Keep what the line shows and move to the next one."""
        if self.dirty:
            try:
                sys.stderr.write("\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            self.dirty = False

    def draw(self, *, force: bool = False) -> None:
        live = [p for p in self.open if p.live]
        if not live:
            return
        now = time.monotonic()
        if not force and now - self.last_draw < MIN_INTERVAL:
            return
        self.last_draw = now
        inner = live[-1]
        parts = [" > ".join(p.segment() for p in live)]
        eps = next((p.epsilon_text() for p in reversed(live) if p.has_epsilon), "")
        if eps:
            parts.append(eps)
        parts.append(inner.timing())
        if self.spent:
            parts.append(self.spent)
        self.kind = "phase"
        self.write(_fit(f"{_PREFIX.get()}: {' | '.join(parts)}"))


_LINE = _Line()


def _fit(text: str) -> str:
    """``text`` cut to the terminal's width (one row: a wrapped line cannot be rewritten)."""
    try:
        width = os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):
        width = 0
    width = width or DEFAULT_WIDTH
    return text if len(text) < width else text[: width - 2] + "~"


def _clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    seconds = int(max(seconds, 0.0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Phase:
    """An open phase (from :func:`phase` or :func:`track`): ``update`` after each step.

    Attributes:
        name: what the line calls it (``"DP-SGD step"``).
        total: its planned number of steps, or ``None`` (then only the count and time).
        done: steps completed so far.
        live: whether it draws (the progress rule held when it opened).
    """

    def __init__(
        self,
        name: str,
        total: int | None = None,
        *,
        unit: str = "",
        epsilon: Callable[[int], float] | None = None,
        current: bool = False,
        live: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"expected a non-empty phase name, got {name!r}")
        if total is not None and (isinstance(total, bool) or int(total) != total or total < 0):
            raise ValueError(f"expected total to be a count >= 0 or None, got {total!r}")
        self.name = name
        self.total = None if total is None else int(total)
        self.unit = unit
        self.done = 0
        self.live = live
        self.note_text = ""
        self._epsilon_fn = epsilon
        self._current = current
        self._epsilon: float | None = None
        self._epsilon_steps = -1  # the step count the shown epsilon is for
        self._epsilon_next = -math.inf  # when the next evaluation may run
        self._start = time.monotonic()
        self._first = (self._start, 0)  # when the first update came, and its steps

    # -- what the caller does --------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        """``n`` more steps done."""
        if self.done == 0:  # the first update often includes compiling: the ETA starts after
            self._first = (time.monotonic(), n)
        self.done += n
        if self.live:
            _LINE.draw(force=self.total is not None and self.done >= self.total)

    def note(self, text: str) -> None:
        """A short public remark after ``i/T`` (``"LogisticRegression on synthetic"``)."""
        self.note_text = text
        if self.live:
            _LINE.draw()

    # -- what the line shows ---------------------------------------------------------------
    @property
    def has_epsilon(self) -> bool:
        return self._epsilon_fn is not None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def segment(self) -> str:
        """``name i/T (note)``."""
        text = self.name
        if self.total is not None:
            shown_count = self.done + 1 if self._current and self.done < self.total else self.done
            text += f" {min(shown_count, self.total)}/{self.total}"
        elif self.done:
            text += f": {self.done}" + (f" {self.unit}" if self.unit else "")
        return f"{text} ({self.note_text})" if self.note_text else text

    def timing(self) -> str:
        """``elapsed, ETA t``: the ETA from the second update on, when the total is known, at
        the pace of the steps after the first (the first often includes compiling: an ETA at
        its pace read "43:43" for a seven-second fit)."""
        text = _clock(self.elapsed)
        at, first = self._first
        if self.total is not None and first < self.done < self.total:
            pace = (time.monotonic() - at) / (self.done - first)
            text += f", ETA {_clock(pace * (self.total - self.done))}"
        return text

    def epsilon_text(self) -> str:
        """``eps=X spent`` after :attr:`done` steps (re-evaluated at the last step and when a
        quarter of the steps is passed, otherwise at most every :data:`EPSILON_INTERVAL`
        seconds and :data:`EPSILON_COST_FACTOR` times what the last evaluation took: a short
        run whose evaluations are slow showed its first figure until three quarters in)."""
        if self._epsilon_fn is None or self.done == 0:
            return ""
        now = time.monotonic()
        last = self.total is not None and self.done >= self.total
        quarter = self.total is not None and (
            4 * self.done // self.total > 4 * max(self._epsilon_steps, 0) // self.total
        )
        if (last and self._epsilon_steps != self.done) or quarter or now >= self._epsilon_next:
            try:
                self._epsilon = float(self._epsilon_fn(self.done))
            except Exception:  # noqa: BLE001 -- a display must never stop a fit
                self._epsilon_fn = None
                self._epsilon = None
            self._epsilon_steps = self.done
            cost = time.monotonic() - now
            self._epsilon_next = now + max(EPSILON_INTERVAL, EPSILON_COST_FACTOR * cost)
        return "" if self._epsilon is None else f"eps={self._epsilon:.3g} spent"

    # -- opening and closing ---------------------------------------------------------------
    def _open(self) -> None:
        if self.live and not any(p.live for p in _LINE.open):
            if _LINE.dirty and _LINE.kind == "spent":
                _LINE.end_line()  # keep the ledger line above the phase's
            _LINE.spent = ""
        _LINE.open.append(self)
        if self.live:
            _LINE.draw(force=True)

    def _close(self, failed: bool) -> None:
        if self in _LINE.open:
            _LINE.open.remove(self)
        if not self.live:
            return
        if any(p.live for p in _LINE.open):
            _LINE.draw(force=True)  # the parent takes the line back
            return
        parts = [self.segment()]
        eps = self.epsilon_text()
        if eps:
            parts.append(eps)
        parts.append(("stopped after " if failed else "done in ") + _clock(self.elapsed))
        if _LINE.spent:
            parts.append(_LINE.spent)
        _LINE.spent = ""
        _LINE.write(_fit(f"{_PREFIX.get()}: {' | '.join(parts)}"), newline=True)


@contextlib.contextmanager
def phase(
    name: str,
    total: int | None = None,
    *,
    unit: str = "",
    epsilon: Callable[[int], float] | None = None,
    current: bool = False,
) -> Iterator[Phase]:
    """Announce a phase of ``total`` steps (``None``: unknown) for the block; yields the
    :class:`Phase` to ``update()``.

    Args:
        name: what the line calls the phase.
        total: the planned number of steps (a public count), or ``None``.
        unit: what a step is called when ``total`` is unknown (``"evaluations"``).
        epsilon: ``epsilon(i)``: the epsilon the phase's first ``i`` steps spent, computed
            from public values only (the plan and the budget's delta); shown as
            ``eps=X spent``.
        current: show the step being worked on (``cluster 2/5`` while the second runs)
            rather than the steps done.

    On a terminal (:func:`shown`) the phase draws the status line; elsewhere it is a no-op.
    A phase of unknown length opened inside an open one of the same name is that phase (a
    calibration inside a calibration shows once).
    """
    _install()
    parent = next((p for p in reversed(_LINE.open)), None)
    if parent is not None and parent.name == name and total is None and parent.total is None:
        yield parent
        return
    p = Phase(name, total, unit=unit, epsilon=epsilon, current=current, live=shown())
    p._open()
    failed = True
    try:
        yield p
        failed = False
    except GeneratorExit:  # a loop over track() left early (break, return): it ended
        failed = False
        raise
    finally:
        p._close(failed)


def track(
    iterable: Iterable[T],
    name: str,
    total: int | None = None,
    *,
    epsilon: Callable[[int], float] | None = None,
    current: bool = False,
) -> Iterator[T]:
    """Iterate ``iterable`` inside :func:`phase` ``(name, total)``, one step per item
    (``total`` defaults to ``len(iterable)`` where it has one)."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with phase(name, total, epsilon=epsilon, current=current) as p:
        for item in iterable:
            yield item
            p.update()


# -- the command's name, the fit's delta ---------------------------------------------------------


@contextlib.contextmanager
def command(name: str | None) -> Iterator[None]:
    """Lines start with ``jdp NAME:`` inside the block (``jdp:`` outside any command)."""
    token = _PREFIX.set(f"jdp {name}" if name else "jdp")
    try:
        yield
    finally:
        _PREFIX.reset(token)
        _LINE.end_line()


@contextlib.contextmanager
def fit_delta(delta: float | None) -> Iterator[None]:
    """The budget's delta for the block (public): phases that show an epsilon use it when
    their own plan names none (a method's DP-SGD run with its noise already calibrated)."""
    _install()
    token = _DELTA.set(delta)
    try:
        yield
    finally:
        _DELTA.reset(token)


def current_delta() -> float | None:
    """The delta :func:`fit_delta` set, or ``None``."""
    return _DELTA.get()


def say(text: str) -> None:
    """Print ``text`` as its own line on stderr now (a warning while work runs): on a
    terminal the status line is kept above it and redrawn below it."""
    _LINE.end_line()
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        return
    _LINE.draw(force=True)


# -- the privacy ledger ---------------------------------------------------------------------------


@contextlib.contextmanager
def show_ledger() -> Iterator[None]:
    """While progress is shown, show each privacy-ledger entry as it is spent: ``spent
    dp-em x 7 (9 entries)`` on its own status line, or after the open phases' on theirs.

    Wraps :meth:`accounting.PrivacyLedger.record` for the block: every mechanism's event
    passes through it, so every method shows its phases. Labels and counts of ledger entries
    are public (they follow from the config), never a count of private records.
    """
    if not shown():
        yield
        return
    from accounting import PrivacyLedger

    _install()
    record = PrivacyLedger.record
    state: dict[str, Any] = {"label": None, "repeat": 0}

    def recording(self: PrivacyLedger, label: str, *args: Any, **kwargs: Any) -> PrivacyLedger:
        ledger = record(self, label, *args, **kwargs)
        state["repeat"] = state["repeat"] + 1 if label == state["label"] else 1
        state["label"] = label
        times = f" x {state['repeat']}" if state["repeat"] > 1 else ""
        text = f"spent {label}{times} ({len(ledger.entries)} entries)"
        if any(p.live for p in _LINE.open):
            _LINE.spent = text
            _LINE.draw()
        else:
            _LINE.kind = "spent"
            _LINE.write(_fit(f"{_PREFIX.get()}: {text}"))
        return ledger

    PrivacyLedger.record = recording  # type: ignore[method-assign]
    try:
        yield
    finally:
        PrivacyLedger.record = record  # type: ignore[method-assign]
        _LINE.end_line()


# -- calibration (accounting's searches) ----------------------------------------------------------

_SEARCHES: list[contextlib.ExitStack] = []


def _observe_search(event: str) -> None:
    """:mod:`accounting.calibrate`'s observer: a search is the phase :data:`CALIBRATION`."""
    if event == "start":
        stack = contextlib.ExitStack()
        stack.enter_context(phase(CALIBRATION, unit="accountant evaluations"))
        _SEARCHES.append(stack)
    elif event == "step":
        found = next((p for p in reversed(_LINE.open) if p.name == CALIBRATION), None)
        if found is not None:
            found.update()
    elif event == "end" and _SEARCHES:
        _SEARCHES.pop().close()


_INSTALLED = False


def _install() -> None:
    """Install :func:`_observe_search` as :mod:`accounting.calibrate`'s observer, once, when
    accounting is loaded (it takes a second to import: this module never imports it first)."""
    global _INSTALLED
    if _INSTALLED or "accounting.calibrate" not in sys.modules:
        return
    sys.modules["accounting.calibrate"].set_search_observer(_observe_search)
    _INSTALLED = True


_install()
