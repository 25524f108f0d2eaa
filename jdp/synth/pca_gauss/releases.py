"""PCA-Gauss's released statistics, for the no-signal warning (:mod:`jdp.synth.signal`)."""

from __future__ import annotations

import math

import numpy as np

from accounting.compose import split_approximate
from jdp.encoding.pca import lap_pca_l1_sensitivity
from jdp.mechanisms.moments import moment_sensitivity
from jdp.synth.base import FittedModel
from jdp.synth.pca_gauss.codec import PCAGaussCodec
from jdp.synth.pca_gauss.gaussian import ADD_OR_REMOVE_ONE, record_bounds
from jdp.synth.signal import SIGNAL_SHARE, Release, laplace_std, mean_release, spectral_noise


def released_statistics(fitted: FittedModel) -> list[Release]:
    """PCA-Gauss's releases for :func:`jdp.synth.signal.check_signal`, from the fitted
    parameters (released) and the ledger's events; ``n_hat`` is the sum of the noisy counts.

    * the subspace: the noise matrix's spectral norm against ``SIGNAL_SHARE`` of the
      scatter's trace bound: ``n_hat`` for Analyze Gauss (rows of norm <= 1, Frobenius
      sensitivity 1, entry std ``z``), ``n_hat d`` for Lap-PCA (rows in ``[-1, 1]^d``);
    * per Gaussian (class): the noisy count against itself; the mean's noise norm
      ``sqrt(k) sqrt(2) Delta_1 / (eps m)`` against ``sqrt(SIGNAL_SHARE)`` of the features'
      norm bound; the covariance's noise spectral norm against ``SIGNAL_SHARE`` of its trace
      bound (``m`` = the class's noisy count);
    * per numeric column: its mean as the released model gives it (:func:`column_means`).
    """
    p = fitted.params
    d, k = np.asarray(p["components"]).shape
    counts = np.asarray(p["counts"], float)
    n_hat = max(float(counts.sum()), 1.0)
    # each entry's ideal event (a Gaussian release carries its sampler's cut beside it)
    events = {e.label: split_approximate(e.event).rest for e in fitted.ledger.entries}
    out = []
    if "dp-pca" in events:
        noise = spectral_noise(events["dp-pca"].noise_multiplier, d)
        out.append(Release("subspace", noise, SIGNAL_SHARE * n_hat))
    elif "lap-pca" in events:
        eps = 1.0 / events["lap-pca"].noise_multiplier
        noise = spectral_noise(laplace_std(lap_pca_l1_sensitivity(np.ones(d)), eps), d)
        out.append(Release("subspace", noise, SIGNAL_SHARE * n_hat * d))
    if "pca-gauss/classes" in events:
        parts = [tuple(c.events) for c in events["pca-gauss/classes"].events]
    else:
        parts = [tuple(events[f"pca-gauss/{n}"] for n in ("count", "mean", "covariance"))]
    codec = PCAGaussCodec.of(fitted.schema, fitted.config)
    with_label = codec.mode == "supervised"
    a, b = record_bounds(k, with_label=with_label)
    sens = moment_sensitivity(a, b, ADD_OR_REMOVE_ONE)
    width = k + int(with_label)
    mean_stds = []
    for j, (count_ev, mean_ev, second_ev) in enumerate(parts):
        tag = f" (class {j})" if len(parts) > 1 else ""
        m = max(float(counts[j]), 1.0)
        count_std = laplace_std(sens.count, 1.0 / count_ev.noise_multiplier)
        mean_std = laplace_std(sens.total, 1.0 / mean_ev.noise_multiplier) / m
        second_std = laplace_std(sens.second, 1.0 / second_ev.noise_multiplier) / m
        mean_stds.append(mean_std)
        out += [
            Release(f"count{tag}", count_std, max(float(counts[j]), 0.0)),
            Release(f"mean{tag}", math.sqrt(width) * mean_std, math.sqrt(SIGNAL_SHARE) * a),
            Release(f"covariance{tag}", spectral_noise(second_std, width), SIGNAL_SHARE * a * a),
        ]
    return out + column_means(fitted, codec, np.asarray(mean_stds))


def column_means(fitted: FittedModel, codec: PCAGaussCodec, mean_stds: np.ndarray) -> list[Release]:
    """Each numeric column's mean on its unit scale as the released model gives it, for the
    no-signal rule (:func:`jdp.synth.signal.mean_release`, lower bound 0 on the unit scale).

    A column's coordinate ``i`` of the box ``[-1, 1]^d`` is ``c_i + R V_i u`` (PCA-Gauss,
    Lemma 1), so its mean is ``c_i + R V_i mu`` with ``mu = sum_j w_j mu_j`` the classes'
    released feature means weighted by their noisy shares ``w_j`` (one class for Algorithms 1
    and 2; Algorithm 2's label coordinate left out); on the unit scale ``(box + 1) / 2``. Each
    ``mu_j`` carries independent noise of sd ``s_j`` per coordinate (``mean_stds``), so the
    column's mean moves by about ``R ||V_i|| sqrt(sum_j w_j^2 s_j^2) / 2``. A point mass
    counts at its own value (the encoding's), so this is the column's whole mean. Columns of
    two values or fewer are left out (their mean is a share, judged by the count).
    Post-processing of released values only."""
    p = fitted.params
    v = np.asarray(p["components"], float)
    k = v.shape[1]
    counts = np.maximum(np.asarray(p["counts"], float), 0.0)
    weights = counts / counts.sum() if counts.sum() > 0 else np.full(len(counts), 1 / len(counts))
    mu = weights @ np.asarray(p["means"], float)[:, :k]
    centre, radius = np.asarray(p["centre"], float), float(p["radius"])
    noise = radius * math.sqrt(float(np.sum((weights * mean_stds) ** 2))) / 2.0
    position = {int(j): i for i, j in enumerate(codec.feature_index)}
    out = []
    for span in codec.encoder.spans:
        column = fitted.schema[span.name] if span.name in fitted.schema.names else None
        if column is None or not column.is_numeric or span.start not in position:
            continue
        if column.kind == "integer" and column.upper - column.lower <= 1:
            continue
        i = position[span.start]
        mean = (centre[i] + radius * float(v[i] @ mu) + 1.0) / 2.0
        out.append(mean_release(column.name, mean, noise * float(np.linalg.norm(v[i])), 0.0))
    return out
