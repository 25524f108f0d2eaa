"""What every accountant shares: how Gaussian mechanisms on one sampled batch are read off an
event."""

from __future__ import annotations

import math

from accounting import events as ev


def gaussian_multipliers(event: ev.DpEvent) -> list[float] | None:
    """The noise multipliers of ``event`` if it is a plain (composition of) Gaussian
    mechanism(s), one entry per mechanism application; ``None`` otherwise."""
    if isinstance(event, ev.GaussianDpEvent):
        return [float(event.noise_multiplier)]
    if isinstance(event, ev.SelfComposedDpEvent):
        inner = gaussian_multipliers(event.event)
        return None if inner is None else inner * int(event.count)
    if isinstance(event, ev.ComposedDpEvent):
        out: list[float] = []
        for e in event.events:
            inner = gaussian_multipliers(e)
            if inner is None:
                return None
            out.extend(inner)
        return out
    if isinstance(event, ev.NoOpDpEvent):
        return []
    return None


def effective_noise_multiplier(multipliers: list[float]) -> float:
    """The one Gaussian mechanism equivalent to releasing several on the same data.

    Jointly releasing ``f_i(D) + N(0, z_i^2 s_i^2 I)`` for ``i = 1..k`` (sensitivities
    ``s_i``) is, after rescaling each block by ``1/(z_i s_i)``, one Gaussian mechanism with
    unit noise and L2 sensitivity ``sqrt(sum_i z_i^-2)``; i.e. noise multiplier
    ``(sum_i z_i^-2)^(-1/2)``. This is exact (the privacy-loss distributions coincide), also
    after Poisson subsampling of the shared batch. ``z_i = 0`` gives 0 (non-private).
    """
    if not multipliers:
        return math.inf
    if any(z == 0 for z in multipliers):
        return 0.0
    return float(sum(z**-2 for z in multipliers) ** -0.5)
