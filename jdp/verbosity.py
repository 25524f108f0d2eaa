"""Whether error and warning messages may show private quantities (row counts, value counts).

Messages end up on stderr, in logs, CI output and bug reports. Under add/remove-one
neighbours the number of records is private, and so is any count over the private records
(values clipped to the declared bounds, ``1/n`` in the delta check). By default the library
leaves them out of every exception and warning ("too few rows: expected at least 2"); the
data holder can ask for them on their own terminal with ``jdp fit --verbose`` or, in Python::

    with jdp.verbosity.show_private_details():
        model = fit_model(...)

The same holds for whether a warning appears at all. A warning raised exactly when some
record is out of bounds, holds a category the DP schema suppressed, gives a non-finite
gradient, or when ``delta >= 1/n`` for the private ``n``, tells its reader one private bit
(a rare value exists) whatever its text says. One rule: every warning whose presence depends
on the private data goes through :func:`warn_private`, which warns only under
:func:`show_private_details` and otherwise stays silent. Warnings that depend on public
inputs and released values only (an epsilon too small for the declared width, a schema used
without its release, noise above a released statistic's signal) use ``warnings.warn``.
"""

from __future__ import annotations

import contextlib
import warnings
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


def warn_private(message: str, category: type[Warning] = UserWarning, stacklevel: int = 1) -> bool:
    """Warn ``message`` only when private details are shown; otherwise stay silent.

    For every warning whose presence depends on the private data (see the module doc): the
    data holder sees it on their own terminal (``jdp fit --verbose``,
    :func:`show_private_details`), nobody else learns that it would have appeared. As
    the message is shown only there, it may state the private counts. ``stacklevel`` is that
    of ``warnings.warn`` called where :func:`warn_private` is called. Returns whether it warned.
    """
    if not private_details_shown():
        return False
    warnings.warn(message, category, stacklevel=stacklevel + 1)
    return True


_QUIET: ContextVar[bool] = ContextVar("jdp_no_progress", default=False)


@contextlib.contextmanager
def no_progress(enabled: bool = True) -> Iterator[None]:
    """Inside this block :func:`progress_on_terminal` is False (``jdp ... --quiet``).

    ``enabled=False`` adds nothing: a block never shows what an outer one silenced."""
    token = _QUIET.set(_QUIET.get() or bool(enabled))
    try:
        yield
    finally:
        _QUIET.reset(token)


def progress_on_terminal() -> bool:
    """Whether long work shows its progress (:mod:`jdp.progress`, the one rule): when stderr
    is a terminal (not in logs, pipes or CI output) and not inside :func:`no_progress`.
    Progress lines show phases, steps of a public plan, time and the epsilon spent, never a
    count of the private records."""
    import sys

    return not _QUIET.get() and bool(getattr(sys.stderr, "isatty", lambda: False)())
