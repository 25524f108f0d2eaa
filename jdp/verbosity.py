"""Whether error and warning messages may show private quantities (row counts, value counts).

Messages end up on stderr, in logs, CI output and bug reports. Under add/remove-one
neighbours the number of records is private, and so is any count over the private records
(values clipped to the declared bounds, ``1/n`` in the delta check). By default the library
leaves them out of every exception and warning ("too few rows for k=5"); the data holder
can ask for them on their own terminal with ``jdp fit --verbose`` or, in Python::

    with jdp.verbosity.show_private_details():
        model = fit_model(...)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_SHOW: ContextVar[bool] = ContextVar("jdp_show_private_details", default=False)


def private_details_shown() -> bool:
    """True inside :func:`show_private_details` (the data holder opted in)."""
    return _SHOW.get()


@contextlib.contextmanager
def show_private_details(enabled: bool = True) -> Iterator[None]:
    """Let messages raised or warned inside this block show private counts (``enabled``)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"expected enabled to be a bool, got {enabled!r}")
    token = _SHOW.set(enabled)
    try:
        yield
    finally:
        _SHOW.reset(token)


def private_detail(text: str) -> str:
    """``" (text)"`` when private details are shown, else ``""``: append it to a message."""
    return f" ({text})" if private_details_shown() else ""


_QUIET: ContextVar[bool] = ContextVar("jdp_no_progress", default=False)


@contextlib.contextmanager
def no_progress(enabled: bool = True) -> Iterator[None]:
    """Inside this block :func:`progress_on_terminal` is False (``jdp ... --quiet``)."""
    token = _QUIET.set(bool(enabled))
    try:
        yield
    finally:
        _QUIET.reset(token)


def progress_on_terminal() -> bool:
    """Whether long work shows a progress bar by default: when stderr is a terminal (not in
    logs, pipes or CI output) and not inside :func:`no_progress`. Bars show steps and the
    running epsilon, never a count of the private records."""
    import sys

    return not _QUIET.get() and bool(getattr(sys.stderr, "isatty", lambda: False)())
