"""Reproduce P3GM (Takagi et al.) Tables V-VIII, Fig. 7 and Fig. 9 on the data available here.

* Table V/VI: TSTR AUROC / AUPRC averaged over the four classifiers of
  :func:`jdp.eval.utility.paper_classifiers` on Adult (embedded) and Kaggle credit-card
  fraud (optional package), for P3GM, DP-VAE and (full mode) P3GM(AE) and the
  NON-private PGM, beside the real-data baseline and the paper's numbers.
* Table VII: MNIST (optional package): accuracy of the paper's small CNN (conv 28 3x3,
  max-pool 2x2, dense 128 with dropout, dense 10; flax) trained on synthetic images and
  labels, tested on real.
* Table VIII: average total-variation distance of all 2-way marginals.
* Fig. 7: learning efficiency (reconstruction loss on real test rows and TSTR AUROC with
  logistic regression per epoch) of P3GM, DP-VAE and P3GM(AE) on Adult, as PNG.
* Fig. 9: epsilon of the whole P3GM plan against the DP-SGD noise multiplier, RDP
  composition vs the paper's baseline (zCDP for DP-PCA and DP-EM, the moments accountant for
  DP-SGD, composed sequentially with delta split in three), as PNG.
* An MNIST sample grid (PNG).

Every private method runs at ONE (epsilon, delta) = (1, 1e-5) (``--epsilon``), split across
its phases and calibrated jointly (:func:`jdp.synth.p3gm.privacy.calibrate_noise`); the spent epsilon
is computed from each fitted ledger and printed. Hyper-parameters follow Table IV (epochs,
batch size as ``q = B / N`` with ``N`` the dataset's documented, public training size
:data:`PUBLIC_TRAIN_ROWS`, never the row count read off the data), d' = 10 (5 on credit, where
the paper has no reduction: :data:`SETTINGS`), and the library's default DP-EM prior (one
full-covariance Gaussian, 0e7699f; the paper's K = 3 diagonal components with T_e = 20 are
``n_components=3, prior_covariance="diag"``). Fig. 7's per-epoch runs add up to exactly the DP-SGD steps
the ledger accounts (:func:`epoch_steps`).

``--quick`` runs on subsets with a smaller network and fewer epochs (minutes on 2 CPUs);
``--json`` prints ONE JSON object on stdout (tables go to stderr).

Measured on the shared 2-CPU machine (other jobs running): ``--quick`` 5 min, peak 2.5 GB;
full mode on Adult (4 methods, no Fig. 7) 2.4 min, peak 1.0 GB; one full P3GM fit on MNIST
(60k, 800 steps, hidden 1000) 94 s, peak 2.0 GB; on credit (190k rows, 28,481 steps) 130 s,
peak 0.8 GB. Full mode spends most of its time in the TSTR classifiers and the MNIST CNN.
Issue 15 settings (declared row bounds, decoder initialisation, MNIST split): one P3GM fit,
sample and 10-epoch CNN on MNIST took 22 min wall under load (accuracy 0.784, paper 0.794;
``scripts/ablate_p3gm.py --datasets mnist --rows p3gm``). With the public-rule split
(0.15, 0.15, 0.7) and PLD calibration (accounting/calibrate.py at c33b86c): accuracy 0.792,
eps spent 1.000, 24.7 min wall under load (same command). Leaving the label out of the
latent (``latent_excludes_target``) does not matter on MNIST: 0.5435 vs 0.545 on a 20k-row
subset (3-epoch CNN, 2k test images, same keys).

Credit is the paper's task (``creditcard-paper``: all frauds plus 10,000 seeded legitimate
rows, ``Time`` dropped, 9,443 training rows; ``--datasets credit-full`` runs the whole
table). Full mode on it (4 variants + real, 3.4 min under load; accounting/calibrate.py at
c33b86c, PLD calibration), mean of 4 classifiers, AUROC / AUPRC: P3GM 0.833 / 0.336 (paper
0.8991 / 0.6586), P3GM(AE) 0.916 / 0.623, DP-VAE 0.525 / 0.109, PGM 0.981 / 0.921, real
0.988 / 0.958 (paper 0.9663 / 0.8927); eps spent 0.9996. Before d' = 5 (no reduction, as the
paper) P3GM gave 0.791, 0.504 and 0.168 on three keys: the ablation table in
``scripts/ablate_p3gm.py``. With the one-Gaussian DP-EM prior (0e7699f) and ``--keys 3``
(``--datasets credit --no-curves --keys 3``: 575 s wall under load, peak 1.1 GB), mean of 4
classifiers per key, then mean +- sample std over the keys, AUROC (per key) / AUPRC: P3GM
**0.912 +- 0.062** (0.948, 0.840, 0.949) / 0.641 (paper 0.8991 / 0.6586; eps spent 0.9996
on each key), P3GM(AE) 0.928 +- 0.004 / 0.677, DP-VAE 0.874 +- 0.098 / 0.616, PGM 0.977 +-
0.012 / 0.936, real 0.988 / 0.958. ``ablate_p3gm.py``'s all-private row on three other keys:
0.966 +- 0.009. Table VI reads as one run (four-classifier mean); one key in six here is
still low (0.840, AUPRC 0.38): DP-SGD carries most of the remaining spread (ablation).

Full mode on all three tables (``--keys 3 --json``, keys for Adult and credit: 53.9 min wall
beside another job, peak 3.6 GB), mean of 4 classifiers: Adult P3GM AUROC 0.858 +- 0.013
(paper 0.8214), AUPRC 0.662 (paper 0.5972), 2-way TVD 0.081 (paper 0.3867); DP-VAE 0.863,
P3GM(AE) 0.862, PGM 0.893, real 0.914. Credit as above, to the digit. MNIST: P3GM 0.785
(paper 0.7940), DP-VAE 0.722, real-data CNN 0.988; eps spent <= 0.9998 on every fit. MNIST
over keys (the same full-size fit, sample and 10-epoch CNN; ``ablate_p3gm.py --datasets mnist
--rows p3gm --seed S`` for S = 0, 1, 2, ~10 min each): 0.804, 0.783, 0.790, so with this
script's 0.785 the mean over four keys is 0.791 +- 0.009, the paper's 0.794 within one std.
The paper's prior (``--set n_components=3 --set prior_covariance=diag``) gives 0.785 on this
script's key, the same as the default (MNIST's PCA scores are uncorrelated and its DP-EM
components merge, so the two priors nearly coincide), and 0.796 vs 0.804 on ablate's seed 0.

``--sweep-dims 2,5,10,20,50 --sweep-rows 20000`` adds Fig. 5-6 (P3GM MNIST accuracy vs d'
on a 20,000-row subset, 5-epoch CNN, the Table VII split held fixed) as
``p3gm_fig5_latent_dim.png``. Measured (20 min wall under load, c33b86c): d' = 2, 5, 10, 20,
50 give 0.339, 0.621, 0.698, 0.444, 0.447 (one key each; paper: [10, 100] best at 60k).

Usage::

    python scripts/reproduce_p3gm.py --quick --json > p3gm.json
    python scripts/reproduce_p3gm.py --out figures/          # full mode (hours on 2 CPUs)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from accounting import PrivacyBudget
from accounting import events as ev
from accounting.builders import dpsgd_event
from accounting.compose import compute_epsilon
from jdp.data.datasets import (
    CREDITCARD_PAPER_LEGIT,
    CREDITCARD_PAPER_TEST_FRACTION,
    TEST_FRACTION,
    DatasetNotInstalledError,
    load_dataset,
)
from jdp.eval.marginals import two_way_tvd
from jdp.eval.plots import image_grid
from jdp.eval.utility import mean_score, paper_classifiers, tstr_table
from jdp.random import numpy_rng
from jdp.synth.p3gm import model as P

PAPER_TABLE_VI = {  # P3GM and "original" (real data), Table VI
    "adult": {
        "p3gm": {"AUROC": 0.8214, "AUPRC": 0.5972},
        "real": {"AUROC": 0.9119, "AUPRC": 0.7844},
    },
    "credit": {
        "p3gm": {"AUROC": 0.8991, "AUPRC": 0.6586},
        "real": {"AUROC": 0.9663, "AUPRC": 0.8927},
    },
}
PAPER_TABLE_V = {
    "pgm": {"AUROC": 0.9387, "AUPRC": 0.6649},
    "vae": {"AUROC": 0.9558, "AUPRC": 0.5466},
}
PAPER_TABLE_VII = {"p3gm": 0.7940, "vae": 0.8571}
PAPER_TABLE_VIII = {"adult": 0.3867, "credit": 0.2411}
# "credit" is the paper's task (jdp.data.datasets.load_creditcard_paper: all frauds plus 10,000
# legitimate rows, Time dropped, 90/10 split); "credit-full" the whole documented table.
TABULAR = ("adult", "credit", "credit-full")
for _table in (PAPER_TABLE_VI, PAPER_TABLE_VIII):  # the paper has one credit row
    _table["credit-full"] = _table["credit"]
DATASET_NAMES = {
    "adult": "adult",
    "credit": "creditcard-paper",
    "credit-full": "creditcard",
    "mnist": "mnist",
}

# Table IV (epochs, batch size), d' (credit: no reduction), the declared row-norm bounds of
# DP-PCA / DP-EM (in units of the encoder's public bound b; issue 15) and the --quick sizes.
# The bounds are declared from public descriptions of the data, near the typical norm of a
# centred row (a bound far above it wastes signal: noise ~ C^2, signal capped by the norms):
# * MNIST: a size-normalised digit inks about 150 of 784 pixels at intensity ~0.5-0.7, a row
#   norm of about 8 in pixel units, centred about 7: 0.25 b (b = 28) for both. The split
#   keeps Sec. VI-E's 3:7 encoder:decoder; inside the encoder, DP-PCA gets the smallest
#   share (grid 0.05) whose noise meets the public rule :func:`pca_noise_limit` (n = 60,000,
#   d = 794, d' = 10: z_p <= 26.6; 0.15 gives 26.2, 0.10 gives 38.0) and DP-EM the rest.
#   (The previous (0.2, 0.1, 0.7) was chosen from a diagnostic on the data: issue 15.)
# * credit: the DP mean sees uncentred rows (every [0, 1] coordinate near its midpoint:
#   norm ~0.52 b), so 0.6; centred, Time (uniform over the two days: std 0.29) and the PCA
#   scores (total variance ~ the number of inputs, ~30, in [-20, 20]) give ~0.06 b, so 0.1.
#   Unlike the paper (no reduction on credit), d' = 5: DP-EM's noise on a component mean has
#   norm ~ z_e C_e sqrt(d') / n_k, and the fraud component (n_k ~ 440 of 9,443 rows) was
#   lost in it at d' = 29 (ablation, issue 15: all-private AUROC 0.50 at d' = 29, 0.63 at
#   10, 0.96 at 5, one seed each; d' chosen from these runs, i.e. tuned on the data).
# * Adult keeps the defaults (1.0), with which it already meets its paper (issue 15).
# Credit also leaves the label out of the fixed encoder mean (latent_excludes_target): with
# it in, the decoder reads the label off c_x and a prior draw never reaches the fraud value
# (0.17% of rows), so no synthetic fraud looks like one (ablation: non-private PGM AUROC 0.16).
SETTINGS = {
    "adult": {"epochs": 5.0, "batch": 200, "latent_dim": 10},
    "credit": {
        "epochs": 15.0,
        "batch": 100,
        "latent_dim": 5,
        "pca_clip_norm": 0.6,
        "em_clip_norm": 0.1,
        "latent_excludes_target": True,
    },
    "mnist": {
        "epochs": 4.0,
        "batch": 300,
        "latent_dim": 10,
        "pca_clip_norm": 0.25,
        "em_clip_norm": 0.25,
        "budget_split": (0.15, 0.15, 0.7),
    },
}
SETTINGS["credit-full"] = SETTINGS["credit"]
QUICK = {  # Adult keeps its whole training split; the others are subsampled
    "adult": {"n_train": 10**9, "epochs": 2.0, "batch": 200, "hidden": 300},
    "credit": {"n_train": 10**9, "epochs": 1.0, "batch": 200, "hidden": 300},
    "credit-full": {"n_train": 40000, "epochs": 1.0, "batch": 200, "hidden": 300},
    "mnist": {"n_train": 20000, "epochs": 1.0, "batch": 200, "hidden": 300},
}
# Documented training-split sizes, PUBLIC constants (the row count of the private data is not
# read to set q): UCI adult.data 32,561 rows; the 90% split of the paper's 10,492-row credit
# subsample and the 2/3 split of the 284,807 documented credit-card transactions
# (jdp.data.datasets); MNIST's 60,000 training images.
_CREDIT_PAPER_ROWS = CREDITCARD_PAPER_LEGIT + 492  # every documented fraud
PUBLIC_TRAIN_ROWS = {
    "adult": 32_561,
    "credit": _CREDIT_PAPER_ROWS - round(_CREDIT_PAPER_ROWS * CREDITCARD_PAPER_TEST_FRACTION),
    "credit-full": 284_807 - round(284_807 * TEST_FRACTION),
    "mnist": 60_000,
}


def log(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


# -- data -------------------------------------------------------------------------------------


def pca_noise_limit(n: int, d: int, latent_dim: int) -> float:
    """The largest DP-PCA noise multiplier ``z_p`` a public rule allows (MNIST's split).

    Analyze Gauss adds a symmetric ``d x d`` Gaussian matrix of entry std ``z_p C_p^2`` to
    the centred scatter; its spectral norm is about ``2 z_p C_p^2 sqrt(d)`` (Wigner). With
    ``C_p`` declared at the typical centred row norm the scatter's trace is about
    ``n C_p^2``; declare that the top ``d'`` directions carry half of it evenly, so the
    ``d'``-th eigenvalue is about ``n C_p^2 / (2 d')``. The rule keeps the noise's norm
    within half that eigenvalue (a Davis-Kahan gap that leaves the top ``d'`` subspace
    mostly signal): ``z_p <= n / (8 d' sqrt(d))``. Every input is public (``n`` the
    documented size, ``d`` the encoded width DP-PCA reads, ``d'``, ``C_p``).
    """
    return n / (8 * latent_dim * d**0.5)


def public_train_rows(name: str, quick: bool) -> int:
    """The declared (public) number of training rows: the documented size, or in quick mode
    the public subset size when it is smaller."""
    n = PUBLIC_TRAIN_ROWS[name]
    return min(QUICK[name]["n_train"], n) if quick else n


def load(name: str, quick: bool, seed: int) -> tuple[Any, pd.DataFrame, pd.DataFrame] | None:
    """(dataset, train, test); in quick mode a fixed random subset of the training split
    (of the public size :func:`public_train_rows`)."""
    try:
        ds = load_dataset(DATASET_NAMES[name])
    except DatasetNotInstalledError as exc:
        log(f"[{name}] skipped: {exc}")
        return None
    train, test = ds.train, ds.test
    if quick:
        if QUICK[name]["n_train"] < PUBLIC_TRAIN_ROWS[name]:
            n = public_train_rows(name, quick)
            train = train.sample(n=n, random_state=seed).reset_index(drop=True)
        if name == "mnist":
            test = test.sample(n=2000, random_state=seed).reset_index(drop=True)
    return ds, train, test


def config_for(name: str, quick: bool, *, n_public: int | None = None) -> P.P3GMConfig:
    """Table IV's settings; ``q = batch / n`` with ``n`` public (default
    :func:`public_train_rows`; Fig. 9 passes the paper's 45,222), never the data's row count.
    Poisson sampling at this ``q`` is accounted as such whatever the true ``n`` is."""
    s = dict(SETTINGS[name])
    hidden = 1000
    if quick:
        s.update({k: v for k, v in QUICK[name].items() if k in ("epochs", "batch")})
        hidden = QUICK[name]["hidden"]
    n = public_train_rows(name, quick) if n_public is None else n_public
    return P.P3GMConfig(
        latent_dim=s["latent_dim"],
        pca_clip_norm=s.get("pca_clip_norm", 1.0),
        em_clip_norm=s.get("em_clip_norm", 1.0),
        budget_split=s.get("budget_split", (0.1, 0.2, 0.7)),
        latent_excludes_target=s.get("latent_excludes_target", False),
        epochs=s["epochs"],
        sampling_prob=min(1.0, s["batch"] / n),
        expected_batch_size=min(s["batch"], n),  # q n with the public n: DP-SGD's normaliser
        hidden=hidden,
    )


# -- fitting ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Fitted:
    variant: str
    params: dict
    epsilon: float
    seconds: float


def fit(
    key: jax.Array,
    x: np.ndarray,
    encoder: Any,
    layout: Any,
    budget: PrivacyBudget,
    config: P.P3GMConfig,
    variant: str,
) -> Fitted:
    """Fit ``variant`` on the encoded rows ``x`` (the encoder's public row-norm bound and
    target coordinates)."""
    t = time.time()
    params, ledger = P.fit_arrays(
        key,
        x,
        layout,
        encoder.row_norm_bound,
        budget,
        config,
        variant,
        target_coords=P.target_coords(encoder),
    )
    eps = ledger.epsilon(budget.delta)
    log(
        f"    {variant:8s} fitted in {time.time() - t:6.1f} s, epsilon spent {eps:.4f} at delta {budget.delta:g}"
    )
    return Fitted(variant, params, eps, time.time() - t)


def synthesize(
    key: jax.Array, f: Fitted, encoder: Any, layout: Any, config: P.P3GMConfig, n: int
) -> pd.DataFrame:
    return encoder.decode(P.sample_arrays(key, f.params, layout, config, f.variant, n))


# -- tables V / VI / VIII -----------------------------------------------------------------------


def tstr_means(
    train: pd.DataFrame, synth: pd.DataFrame, test: pd.DataFrame, target: str, seed: int
) -> dict[str, dict[str, float]]:
    """Mean over the four classifiers of AUROC and AUPRC, for real and synthetic training."""
    rows = tstr_table(train, synth, test, target, classifiers=paper_classifiers(seed))
    out: dict[str, dict[str, float]] = {"real": {}, "synthetic": {}}
    for metric in ("AUROC", "AUPRC"):
        for side, scores in out.items():
            scores[metric], dropped = mean_score(rows, metric, side)
            if dropped:  # a diverged classifier is reported, never averaged in
                log(f"    {side} {metric}: left out (diverged): {', '.join(dropped)}")
    return out


def over_keys(runs: list[dict[str, float]]) -> dict[str, Any]:
    """One variant's entry over its keys: the mean of every score, the largest epsilon spent,
    and with several keys each metric's per-key values and (sample) standard deviation."""
    entry: dict[str, Any] = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    entry["epsilon_spent"] = max(r["epsilon_spent"] for r in runs)
    if len(runs) > 1:
        for metric in ("AUROC", "AUPRC"):
            values = [r[metric] for r in runs]
            entry[f"{metric}_keys"] = values
            entry[f"{metric}_std"] = float(np.std(values, ddof=1))
    return entry


def tabular(
    name: str, args: argparse.Namespace, key: jax.Array, budget: PrivacyBudget
) -> dict[str, Any] | None:
    loaded = load(name, args.quick, args.seed)
    if loaded is None:
        return None
    ds, train, test = loaded
    config = config_for(name, args.quick)
    encoder = P.table_encoder(ds.schema)
    layout = P.head_layout(encoder)
    x = encoder.encode(ds.schema.conform(train))
    log(
        f"[{name}] n_train={len(train)} d={x.shape[1]} d'={config.latent_dim} steps={config.steps} q={config.sampling_prob:.4g} hidden={config.hidden}"
    )
    variants = ("p3gm", "dp-vae") if args.quick else ("p3gm", "dp-vae", "p3gm-ae", "pgm")
    result: dict[str, Any] = {"n_train": len(train), "config": dataclasses.asdict(config)}
    real = None
    for i, variant in enumerate(variants):
        runs = []
        for r in range(args.keys):  # key r of variant i: fold_in(key, i + 100 r)
            k_fit, k_sample = jax.random.split(jax.random.fold_in(key, i + 100 * r))
            f = fit(k_fit, x, encoder, layout, budget, config, variant)
            synth = synthesize(k_sample, f, encoder, layout, config, len(train))
            scores = tstr_means(train, synth, test, ds.target, args.seed)
            real = scores["real"]
            run = dict(scores["synthetic"])
            run["tvd_2way"] = two_way_tvd(train, synth)
            run["epsilon_spent"] = f.epsilon
            run["fit_seconds"] = f.seconds
            run["positive_rate"] = float(
                np.mean(synth[ds.target] == ds.schema[ds.target].categories[-1])
            )
            runs.append(run)
        result[variant.replace("-", "_")] = over_keys(runs)
    result["real"] = {
        **real,
        "positive_rate": float(np.mean(train[ds.target] == ds.schema[ds.target].categories[-1])),
    }
    result["paper"] = {**PAPER_TABLE_VI[name], "tvd_2way_p3gm": PAPER_TABLE_VIII[name]}
    return result


# -- table VII: MNIST ---------------------------------------------------------------------------


class SmallCNN(nn.Module):
    """P3GM Sec. VI: conv (28 kernels 3x3), max-pool 2x2, dense [128, 10], ReLU, dropout."""

    @nn.compact
    def __call__(self, x: jax.Array, *, train: bool) -> jax.Array:
        x = nn.relu(nn.Conv(28, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.Dropout(0.5, deterministic=not train)(nn.relu(nn.Dense(128)(x)))
        return nn.Dense(10)(x)


def cnn_accuracy(
    key: jax.Array,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    epochs: int,
) -> float:
    """Train the small CNN on (x_train, y_train) (pixels in [0, 1]) and return test accuracy."""
    model = SmallCNN()
    init_key, key = jax.random.split(key)
    params = model.init(init_key, jnp.zeros((1, 28, 28, 1)), train=False)
    opt = optax.adam(1e-3)
    state = opt.init(params)

    @jax.jit
    def step(params, state, xb, yb, k):
        def loss(p):
            logits = model.apply(p, xb, train=True, rngs={"dropout": k})
            return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

        grads = jax.grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    predict = jax.jit(lambda p, xb: jnp.argmax(model.apply(p, xb, train=False), axis=-1))
    xt = x_train.reshape(-1, 28, 28, 1).astype(np.float32)
    rng = np.random.default_rng(0)
    for epoch in range(epochs):
        order = rng.permutation(len(xt))
        for j in range(0, len(order) - 127, 128):
            idx = order[j : j + 128]
            key, sub = jax.random.split(key)
            params, state = step(params, state, xt[idx], y_train[idx], sub)
    xs = x_test.reshape(-1, 28, 28, 1).astype(np.float32)
    preds = np.concatenate(
        [np.asarray(predict(params, xs[j : j + 1000])) for j in range(0, len(xs), 1000)]
    )
    return float(np.mean(preds == y_test))


def mnist_images(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(pixels in [0, 1] as float32 rows, integer labels) of an MNIST frame."""
    pixels = [c for c in frame.columns if c != "label"]
    return frame[pixels].to_numpy(np.float32) / 255.0, frame["label"].to_numpy(np.int32)


def mnist_accuracy(
    key: jax.Array,
    x: np.ndarray,
    encoder: Any,
    layout: Any,
    budget: PrivacyBudget,
    config: P.P3GMConfig,
    variant: str,
    test: tuple[np.ndarray, np.ndarray],
    cnn_epochs: int,
) -> tuple[Fitted, np.ndarray, np.ndarray, float]:
    """Fit ``variant``, sample as many images as training rows, train the small CNN on them
    and test on real: (fitted, synthetic pixels, synthetic labels, accuracy)."""
    k_fit, k_sample, k_cnn = jax.random.split(key, 3)
    f = fit(k_fit, x, encoder, layout, budget, config, variant)
    xs, ys = mnist_images(synthesize(k_sample, f, encoder, layout, config, len(x)))
    return f, xs, ys, cnn_accuracy(k_cnn, xs, ys, *test, cnn_epochs)


def mnist(
    args: argparse.Namespace, key: jax.Array, budget: PrivacyBudget, out: Path
) -> dict[str, Any] | None:
    loaded = load("mnist", args.quick, args.seed)
    if loaded is None:
        return None
    ds, train, test = loaded
    config = config_for("mnist", args.quick)
    encoder = P.table_encoder(ds.schema)
    layout = P.head_layout(encoder)
    x = encoder.encode(ds.schema.conform(train))
    log(
        f"[mnist] n_train={len(train)} d={x.shape[1]} d'={config.latent_dim} steps={config.steps} q={config.sampling_prob:.4g} hidden={config.hidden}"
    )
    cnn_epochs = 2 if args.quick else 10
    test_images = mnist_images(test)
    result: dict[str, Any] = {"n_train": len(train), "config": dataclasses.asdict(config)}
    xr, yr = mnist_images(train)
    result["real"] = {
        "accuracy": cnn_accuracy(jax.random.fold_in(key, 99), xr, yr, *test_images, cnn_epochs)
    }
    for i, variant in enumerate(("p3gm", "dp-vae")):
        f, xs, ys, acc = mnist_accuracy(
            jax.random.fold_in(key, i),
            x,
            encoder,
            layout,
            budget,
            config,
            variant,
            test_images,
            cnn_epochs,
        )
        result[variant.replace("-", "_")] = {
            "accuracy": acc,
            "epsilon_spent": f.epsilon,
            "fit_seconds": f.seconds,
        }
        if variant == "p3gm":
            order = np.argsort(ys[:200], kind="stable")[:50]
            grid = image_grid(
                xs[:200][order],
                out / "p3gm_mnist_samples.png",
                image_shape=(28, 28),
                labels=list(ys[:200][order]),
                title="P3GM samples, eps=1",
            )
            result["sample_grid"] = str(grid)
    result["paper"] = {
        "p3gm": {"accuracy": PAPER_TABLE_VII["p3gm"]},
        "vae_nonprivate": {"accuracy": PAPER_TABLE_VII["vae"]},
    }
    return result


# -- Fig. 5-6: the reduced dimension d' ---------------------------------------------------------


def latent_dim_sweep(
    args: argparse.Namespace, key: jax.Array, budget: PrivacyBudget, out: Path
) -> dict[str, Any] | None:
    """MNIST accuracy of P3GM against ``d'`` at one budget (Fig. 5-6), on a fixed random
    subset of ``--sweep-rows`` training images (a public size; ``q = B / n`` with it), every
    other setting as Table VII's run (``--quick``: its quick settings)."""
    loaded = load("mnist", args.quick, args.seed)
    if loaded is None:
        return None
    ds, train, test = loaded
    n = min(args.sweep_rows, len(train))
    train = train.sample(n=n, random_state=args.seed).reset_index(drop=True)
    encoder = P.table_encoder(ds.schema)
    layout = P.head_layout(encoder)
    x = encoder.encode(ds.schema.conform(train))
    test_images = mnist_images(test)
    dims = [int(d) for d in args.sweep_dims.split(",")]
    base = config_for("mnist", args.quick, n_public=n)
    accuracy, seconds = [], []
    path = out / "p3gm_fig5_latent_dim.png"
    for d in dims:
        t = time.time()
        config = dataclasses.replace(base, latent_dim=d)
        *_, acc = mnist_accuracy(
            jax.random.fold_in(key, d),
            x,
            encoder,
            layout,
            budget,
            config,
            "p3gm",
            test_images,
            args.sweep_cnn_epochs,
        )
        accuracy.append(acc)
        seconds.append(time.time() - t)
        log(f"    d'={d:3d}: accuracy {acc:.4f} ({seconds[-1]:.0f} s)")
        plot_sweep(dims[: len(accuracy)], accuracy, n, budget, path)  # kept after each point
    return {
        "n_train": n,
        "latent_dim": dims,
        "accuracy": accuracy,
        "seconds": seconds,
        "cnn_epochs": args.sweep_cnn_epochs,
        "png": str(path),
    }


def plot_sweep(
    dims: list[int], accuracy: list[float], n: int, budget: PrivacyBudget, path: Path
) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.5, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    order = np.argsort(dims)
    ax.plot(
        np.asarray(dims)[order], np.asarray(accuracy)[order], marker="o", label=f"P3GM, {n:,} rows"
    )
    ax.plot([10], [PAPER_TABLE_VII["p3gm"]], "k*", markersize=10, label="paper, d'=10, 60k")
    ax.set_xscale("log")
    ax.set(
        xlabel="reduced dimension d'",
        ylabel="CNN accuracy (synthetic train, real test)",
        title=f"Fig. 5-6: MNIST, eps={budget.epsilon:g}",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# -- Fig. 7: learning efficiency -----------------------------------------------------------------


def reconstruction_fn(
    fixed: dict, x_test: jax.Array, config: P.P3GMConfig, variant: str, layout: Any
) -> Any:
    """Jitted mean of ``-log p(x | z)``, ``z ~ q(z | x)``, over real test rows (Fig. 7 a/b)."""

    def one(trainable: dict, row: jax.Array, k: jax.Array) -> jax.Array:
        ll, _ = P.example_terms(
            trainable, fixed, row, k, config=config, variant=variant, layout=layout
        )
        return -ll

    return jax.jit(
        lambda trainable, keys: jnp.mean(
            jax.vmap(one, in_axes=(None, 0, 0))(trainable, x_test, keys)
        )
    )


def epoch_steps(config: P.P3GMConfig) -> list[int]:
    """DP-SGD steps of each of the ``round(epochs)`` learning-curve epochs: ``config.steps``
    (the count the ledger's ``dp-sgd`` event charges, :func:`jdp.synth.p3gm.privacy.single_phase_events`)
    split as evenly as possible, so the per-epoch runs add up to exactly the accounted steps."""
    epochs = max(1, round(config.epochs))
    base, extra = divmod(config.steps, epochs)
    return [base + (e < extra) for e in range(epochs)]


def train_by_epoch(
    key: jax.Array,
    x: np.ndarray,
    fixed: dict,
    layout: Any,
    config: P.P3GMConfig,
    variant: str,
    noise_multiplier: float,
    after_epoch: Any,
) -> dict:
    """DP-SGD in :func:`epoch_steps` chunks, calling ``after_epoch(e, trainable)`` after each
    (Fig. 7); the whole run is ``config.steps`` steps at ``noise_multiplier``, as accounted."""
    trainable = None
    for e, steps in enumerate(epoch_steps(config)):
        trainable, _ = P.decoding_phase(
            jax.random.fold_in(key, e),
            x,
            fixed,
            layout,
            config,
            variant,
            noise_multiplier,
            trainable=trainable,
            steps=steps,
        )
        after_epoch(e, trainable)
    return trainable


def learning_curves(
    args: argparse.Namespace, key: jax.Array, budget: PrivacyBudget, out: Path
) -> dict[str, Any]:
    """Per-epoch reconstruction loss on real test rows and LR TSTR AUROC (Adult)."""
    ds, train, test = load("adult", args.quick, args.seed)
    config = config_for("adult", args.quick)
    encoder = P.table_encoder(ds.schema)
    layout = P.head_layout(encoder)
    x = encoder.encode(ds.schema.conform(train))
    x_test = jnp.asarray(encoder.encode(ds.schema.conform(test))[:2000], jnp.float32)
    curves: dict[str, Any] = {}
    for i, variant in enumerate(("p3gm", "dp-vae", "p3gm-ae")):
        k_enc, k_dec, k_s = jax.random.split(jax.random.fold_in(key, 100 + i), 3)
        noise = P.calibrate_noise(config, variant, budget)
        fixed: dict[str, Any] = {}
        if variant != "dp-vae":
            fixed, _ = P.encoding_phase(
                numpy_rng(k_enc), x, encoder.row_norm_bound, config, noise, P.target_coords(encoder)
            )
        fixed_j = jax.tree_util.tree_map(jnp.asarray, fixed)

        recon = reconstruction_fn(fixed_j, x_test, config, variant, layout)

        losses, aurocs = [], []

        def after_epoch(  # called within this iteration; the defaults bind its variables
            e: int,
            trainable: dict,
            losses: list = losses,
            aurocs: list = aurocs,
            recon: Any = recon,
            k_s: jax.Array = k_s,
            fixed: dict = fixed,
            variant: str = variant,
        ) -> None:
            losses.append(
                float(
                    recon(trainable, jax.random.split(jax.random.fold_in(k_s, e), x_test.shape[0]))
                )
            )
            synth = encoder.decode(
                P.sample_arrays(
                    jax.random.fold_in(k_s, 1000 + e),
                    {**fixed, "trainable": trainable},
                    layout,
                    config,
                    variant,
                    len(train),
                )
            )
            lr = {"LogisticRegression": paper_classifiers(args.seed)["LogisticRegression"]}
            rows = tstr_table(train, synth, test, ds.target, classifiers=lr)
            aurocs.append(float(next(r["synthetic"] for r in rows if r["metric"] == "AUROC")))
            log(
                f"    fig7 {variant:8s} epoch {e + 1}: reconstruction {losses[-1]:.3f}, LR AUROC {aurocs[-1]:.4f}"
            )

        train_by_epoch(k_dec, x, fixed, layout, config, variant, noise["sgd"], after_epoch)
        curves[variant.replace("-", "_")] = {"reconstruction": losses, "auroc_lr": aurocs}
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.5))
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    for name, c in curves.items():
        ep = np.arange(1, len(c["reconstruction"]) + 1)
        ax1.plot(ep, c["reconstruction"], marker="o", label=name)
        ax2.plot(ep, c["auroc_lr"], marker="o", label=name)
    ax1.set(xlabel="epoch", ylabel="reconstruction loss (test)", title="Fig. 7 (Adult)")
    ax2.set(xlabel="epoch", ylabel="TSTR AUROC (LR)")
    ax1.legend()
    fig.tight_layout()
    path = out / "p3gm_fig7_learning_efficiency.png"
    fig.savefig(path, dpi=100)
    return {
        "curves": curves,
        "png": str(path),
        "note": "Adam state restarts each epoch (one train call per epoch); noise and accounting are those of the whole run",
    }


# -- Fig. 9: composition ------------------------------------------------------------------------


def composition(config: P.P3GMConfig, budget: PrivacyBudget, out: Path) -> dict[str, Any]:
    """Epsilon of the P3GM plan vs the DP-SGD noise, RDP vs zCDP (PCA, EM) + MA (SGD).

    PCA and EM multipliers are those the default split calibrates at the budget; the DP-SGD
    multiplier varies (the paper freezes the other phases' noise the same way).
    """
    noise = P.calibrate_noise(config, "p3gm", budget)
    delta = budget.delta
    sigmas = np.linspace(0.8, 3.0, 12)
    rdp, baseline = [], []
    enc_events = [
        e
        for _, e in P.phase_events(config, {"pca": noise["pca"], "em": noise["em"]})
        if _ != "dp-sgd"
    ]
    for s in sigmas:
        sgd = dpsgd_event(float(s), config.sampling_prob, config.steps)
        rdp.append(compute_epsilon(ev.ComposedDpEvent([*enc_events, sgd]), delta))
        eps_enc = compute_epsilon(ev.ComposedDpEvent(enc_events), delta / 2, accountant="zcdp")
        eps_sgd = compute_epsilon(sgd, delta / 2, accountant="moments")
        baseline.append(eps_enc + eps_sgd)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.5, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot(sigmas, rdp, marker="o", label="RDP (ours)")
    ax.plot(sigmas, baseline, marker="s", label="zCDP + MA (baseline)")
    ax.set(xlabel="DP-SGD noise multiplier", ylabel=f"epsilon at delta={delta:g}", title="Fig. 9")
    ax.legend()
    fig.tight_layout()
    path = out / "p3gm_fig9_composition.png"
    fig.savefig(path, dpi=100)
    return {"sigma_sgd": sigmas.tolist(), "rdp": rdp, "zcdp_plus_ma": baseline, "png": str(path)}


# -- report -------------------------------------------------------------------------------------


def print_tables(res: dict[str, Any]) -> None:
    log("")
    log(
        f"P3GM reproduction at (epsilon, delta) = ({res['epsilon']}, {res['delta']:g})  [{res['mode']} mode]"
    )
    log("Table VI  (mean over 4 classifiers; paper numbers in brackets)")
    log(
        f"{'dataset':8s} {'method':9s} {'AUROC':>8s} {'paper':>8s} {'AUPRC':>8s} {'paper':>8s} {'2-way TVD':>10s} {'paper':>7s} {'eps':>7s}"
    )
    for name in TABULAR:
        r = res.get(name)
        if not r:
            continue
        paper = r["paper"]
        for m in ("p3gm", "dp_vae", "p3gm_ae", "pgm", "real"):
            if m not in r:
                continue
            row = r[m]
            p = paper.get(m, {})
            tvd = f"{row['tvd_2way']:10.4f}" if "tvd_2way" in row else " " * 10
            ptvd = f"{paper['tvd_2way_p3gm']:7.4f}" if m == "p3gm" else " " * 7
            eps = f"{row['epsilon_spent']:7.4f}" if "epsilon_spent" in row else "    n/a"
            spread = (
                f"  AUROC std {row['AUROC_std']:.4f} over {len(row['AUROC_keys'])} keys"
                if "AUROC_std" in row
                else ""
            )
            log(
                f"{name:8s} {m:9s} {row['AUROC']:8.4f} {p.get('AUROC', float('nan')):8.4f} {row['AUPRC']:8.4f} {p.get('AUPRC', float('nan')):8.4f} {tvd} {ptvd} {eps}{spread}"
            )
    if res.get("mnist"):
        r = res["mnist"]
        log("Table VII (MNIST, small CNN trained on synthetic, tested on real)")
        log(
            f"  p3gm {r['p3gm']['accuracy']:.4f} [paper 0.7940]   dp_vae {r['dp_vae']['accuracy']:.4f}   real {r['real']['accuracy']:.4f} [paper VAE 0.8571]"
        )
    if res.get("fig5"):
        f = res["fig5"]
        log(
            f"Fig. 5-6   MNIST accuracy vs d' ({f['n_train']:,} rows; paper 0.7940 at d'=10, 60k): "
            + ", ".join(f"{d}: {a:.4f}" for d, a in zip(f["latent_dim"], f["accuracy"]))
        )
    if res.get("fig9"):
        f = res["fig9"]
        log(
            "Fig. 9    epsilon vs DP-SGD noise: "
            + ", ".join(
                f"{s:.2f}: RDP {a:.3f} / base {b:.3f}"
                for s, a, b in list(zip(f["sigma_sgd"], f["rdp"], f["zcdp_plus_ma"]))[::3]
            )
        )
    log(f"run time {res['runtime_s']:.0f} s, peak memory {res['peak_memory_mb']:.0f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="subsets, small network, few epochs")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0, help="research reproducibility only")
    parser.add_argument("--datasets", default="adult,credit,mnist", help="comma-separated subset")
    parser.add_argument("--no-curves", action="store_true", help="skip Fig. 7 (slow)")
    parser.add_argument(
        "--keys", type=int, default=1, help="fits per tabular variant (mean and std over keys)"
    )
    parser.add_argument("--out", default="out/p3gm", help="directory for PNGs")
    parser.add_argument(
        "--sweep-dims", default="", help="d' values of the MNIST Fig. 5-6 sweep, e.g. 2,5,10,20,50"
    )
    parser.add_argument("--sweep-rows", type=int, default=20_000, help="MNIST rows of the sweep")
    parser.add_argument("--sweep-cnn-epochs", type=int, default=5, help="CNN epochs in the sweep")
    args = parser.parse_args(argv)
    start = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    budget = PrivacyBudget(epsilon=args.epsilon, delta=args.delta)
    key = jax.random.key(args.seed)
    wanted = [d.strip() for d in args.datasets.split(",") if d.strip()]
    res: dict[str, Any] = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "mode": "quick" if args.quick else "full",
    }
    for i, name in enumerate(TABULAR):
        if name in wanted:
            res[name] = tabular(name, args, jax.random.fold_in(key, i), budget)
    if "mnist" in wanted:
        res["mnist"] = mnist(args, jax.random.fold_in(key, 2), budget, out)
    if args.sweep_dims:
        res["fig5"] = latent_dim_sweep(args, jax.random.fold_in(key, 4), budget, out)
    res["fig9"] = composition(config_for("adult", False, n_public=45222), budget, out)
    if not args.no_curves and "adult" in wanted:
        res["fig7"] = learning_curves(args, jax.random.fold_in(key, 3), budget, out)
    res["runtime_s"] = time.time() - start
    res["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print_tables(res)
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
