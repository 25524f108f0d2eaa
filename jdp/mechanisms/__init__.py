"""Privacy mechanisms on the host (numpy): every draw of privacy noise outside DP-SGD is here.

Each mechanism takes ``rng: np.random.Generator`` explicitly and returns ``(output, event)``
(DESIGN section 2, rules 1 and 6); :mod:`jdp.mechanisms.release` turns those pairs into
ledger entries.

* :mod:`~jdp.mechanisms.noise` -- Gaussian and Laplace mechanisms (entrywise or symmetric),
  Mironov's snapping mechanism (``secure_noise``), row clipping.
* :mod:`~jdp.mechanisms.release` -- record a release, iterate noisy steps, calibrate a plan.
* :mod:`~jdp.mechanisms.selection` -- the exponential mechanism (Gumbel-max).
* :mod:`~jdp.mechanisms.suffstats` -- sums over records in bounded-memory chunks.
* :mod:`~jdp.mechanisms.moments` -- bounded moment sums and their sensitivities.

Only numpy/scipy are imported here (no JAX).
"""

from jdp.mechanisms.moments import MomentSensitivity, moment_sensitivity, moment_sums
from jdp.mechanisms.noise import (
    DEFAULT_MAX_RECORDS,
    Snapping,
    clip_rows,
    gaussian_mechanism,
    gaussian_releases,
    laplace_mechanism,
    snapping_epsilon,
    snapping_laplace,
    snapping_laplace_parameters,
)
from jdp.mechanisms.release import (
    gaussian_iterations_event,
    iterate_releases,
    record_release,
    run_calibrated,
)
from jdp.mechanisms.selection import gumbel_max
from jdp.mechanisms.suffstats import check_data_matrix, chunked_sum, iter_chunks

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "MomentSensitivity",
    "Snapping",
    "check_data_matrix",
    "chunked_sum",
    "clip_rows",
    "gaussian_iterations_event",
    "gaussian_mechanism",
    "gaussian_releases",
    "gumbel_max",
    "iter_chunks",
    "iterate_releases",
    "laplace_mechanism",
    "moment_sensitivity",
    "moment_sums",
    "record_release",
    "run_calibrated",
    "snapping_epsilon",
    "snapping_laplace",
    "snapping_laplace_parameters",
]
