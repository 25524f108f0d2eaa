"""Private selection: the exponential mechanism by the Gumbel-max trick.

Choosing index ``k`` with probability proportional to ``exp(logit_k)`` equals taking
``argmax_k (logit_k + G_k)`` with ``G_k`` i.i.d. standard Gumbel (Gumbel 1954; e.g. Durfee &
Rogers 2019, "Practical differentially private top-k selection", Sec. 3). With
``logit_k = log(mu_k) + epsilon * u_k / (2 Delta_u)`` (a public base measure ``mu`` and a
utility ``u`` of sensitivity ``Delta_u``) this is the exponential mechanism (McSherry & Talwar
2007), ``epsilon``-DP. The caller builds the logits (and so states the utility and its
sensitivity, e.g. :func:`jdp.mechanisms.quantiles.dp_quantiles`) and records the event.
"""

from __future__ import annotations

import numpy as np

from jdp.mechanisms.tape import released

__all__ = ["gumbel_max"]


@released(lambda rng, logits: np.shape(logits))
def gumbel_max(rng: np.random.Generator, logits: np.ndarray) -> int:
    """An index drawn with probability ``exp(logit_k) / sum_j exp(logit_j)``.

    Entries of ``-inf`` (zero base measure) are never chosen; at least one must be finite.
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 1 or not np.any(np.isfinite(logits)):
        raise ValueError("expected a 1-D array of logits with at least one finite entry")
    gumbel = rng.gumbel(size=logits.shape[0])
    return int(np.argmax(np.where(np.isfinite(logits), logits + gumbel, -np.inf)))
