"""A black-box membership attack by density ratio (DOMIAS, van Breugel et al. 2023).

A generator that memorises its training records puts more synthetic density at them than the
population has: the score of a record is ``log p_syn(x) - log p_ref(x)``, the population
density estimated on a held-out reference sample. Like every attack in
:mod:`jdp.audit.attacks` it measures one attack and bounds nothing.
"""

from __future__ import annotations

import numpy as np

from jdp.audit.attacks import (
    AttackResult,
    attack_from_scores,
    check_matrix,
    check_same_record_shape,
)

#: Density estimators of :func:`density_ratio_scores`.
DENSITIES = ("kde", "gmm")


def _log_density(
    fit_on: np.ndarray, records: np.ndarray, density: str, bandwidth: float | str, seed: int
) -> np.ndarray:
    """``log p(records)`` under a density fitted to ``fit_on`` (scikit-learn)."""
    if density == "kde":
        from sklearn.neighbors import KernelDensity

        return KernelDensity(bandwidth=bandwidth).fit(fit_on).score_samples(records)
    from sklearn.mixture import GaussianMixture

    k = max(1, min(10, fit_on.shape[0] // 50))
    gmm = GaussianMixture(k, covariance_type="full", reg_covar=1e-3, random_state=seed)
    return gmm.fit(fit_on).score_samples(records)


def density_ratio_scores(
    records: object,
    synthetic: object,
    reference: object,
    *,
    density: str = "kde",
    bandwidth: float | str = "scott",
    seed: int = 0,
) -> np.ndarray:
    """Black-box attack score: ``log p_syn(x) - log p_ref(x)`` (DOMIAS, van Breugel et al.
    2023).

    A generator that memorises its training records puts more synthetic density at them
    than the population has; the population density is estimated from a *reference* sample
    of real records from the same distribution that were not trained on. The score is the
    log of the density ratio, each density estimated on its own sample: a Gaussian kernel
    density (``"kde"``, bandwidth ``"scott"``, ``"silverman"`` or a number) or a Gaussian
    mixture (``"gmm"``, up to 10 full-covariance components, ``reg_covar = 1e-3``), both
    scikit-learn's. Like every attack score it measures one attack; it is not a privacy
    guarantee.

    Args:
      records: the records to score, ``(n, d)``, encoded like ``synthetic``.
      synthetic: the released synthetic records, ``(s, d)``.
      reference: held-out real records (neither the scored members nor non-members), ``(r, d)``.
      density: ``"kde"`` or ``"gmm"``.
      bandwidth: the KDE bandwidth.
      seed: the GMM's initialisation seed.

    Returns:
      Scores of shape ``(n,)``; higher = more "member"-like.

    Raises:
      TypeError, ValueError: as :func:`jdp.audit.attacks.distance_to_closest_record_scores`, or an unknown
        ``density``.

    References:
      van Breugel, Sun, Qian & van der Schaar, "Membership Inference Attacks against
      Synthetic Data through Overfitting Detection", AISTATS 2023 (Eq. 2).
    """
    if density not in DENSITIES:
        raise ValueError(f"expected density in {DENSITIES}, got {density!r}")
    x = check_matrix("records", records)
    s = check_matrix("synthetic", synthetic, n_cols=x.shape[1])
    r = check_matrix("reference", reference, n_cols=x.shape[1])
    x, s, r = (a.astype(np.float64) for a in (x, s, r))
    return _log_density(s, x, density, bandwidth, seed) - _log_density(
        r, x, density, bandwidth, seed
    )


def density_ratio_attack(
    members: object,
    nonmembers: object,
    synthetic: object,
    reference: object,
    *,
    density: str = "kde",
    bandwidth: float | str = "scott",
    confidence: float = 0.95,
    name: str = "black-box density ratio",
) -> AttackResult:
    """Black-box DOMIAS attack end to end: :func:`density_ratio_scores` on both sets, then
    :func:`jdp.audit.attacks.attack_from_scores`. An attack measurement, not a privacy guarantee."""
    check_same_record_shape(members, nonmembers)
    members, nonmembers = np.asarray(members), np.asarray(nonmembers)
    both = density_ratio_scores(
        np.concatenate([members, nonmembers]),
        synthetic,
        reference,
        density=density,
        bandwidth=bandwidth,
    )
    m = members.shape[0]
    return attack_from_scores(both[:m], both[m:], confidence=confidence, name=name)
