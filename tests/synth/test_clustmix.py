"""ClustMix (jdp.synth.clustmix): strict mode's ledger holds every phase and equals its
data-free plan; paper mode is labelled "paper's claimed guarantee, not proven"; bad input
gives one-line errors and writes nothing; the codec and the CLI's paper-mode report (the
save/load round trip is tests/contracts/test_synthesizers.py's)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accounting import PrivacyBudget, PrivacyLedger, compute_epsilon
from accounting.ledger import PAPER_CLAIM
from jdp.data.schema import Column, Schema
from jdp.mechanisms.mixing import paper_noise_std
from jdp.synth import base
from jdp.synth.base import fit_model, sample_model
from jdp.synth.clustmix import ClustMix, ClustMixCodec, ClustMixConfig, fit, strict_plan
from jdp.synth.clustmix.model import released_statistics
from jdp.synth.configs import apply_overrides
from jdp.synth.signal import MEAN_PRECISION, weak_releases

EPS, DELTA = 1.0, 1e-5
X_WIDTH = 4  # the columns of _arrays (a public shape the plan's DP-KIP phase reads)
SCHEMA = Schema(
    columns=(
        Column(name="a", kind="continuous", lower=0.0, upper=10.0),
        Column(name="b", kind="integer", lower=0, upper=4),
        Column(name="c", kind="categorical", categories=("u", "v", "w")),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    ),
    target="y",
)


def _arrays(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = np.clip(rng.normal(0.3 + 0.4 * y[:, None], 0.1, (n, 4)), 0.0, 1.0)
    return x, y


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "a": np.clip(rng.normal(3 + 4 * y, 1.0), 0, 10),
            "b": rng.integers(0, 5, n),
            "c": rng.choice(["u", "v", "w"], n).astype(object),
            "y": np.where(y == 1, "yes", "no").astype(object),
        }
    )


CONFIG = ClustMixConfig(n_clusters=3, mixture_size=20, cluster_steps=3, adapt=False)
PAPER = dataclasses.replace(CONFIG, mode="paper")


def _kip(config: ClustMixConfig, **kip_dpsgd) -> ClustMixConfig:
    """``config`` with Adapt on and these ``kip_dpsgd`` fields."""
    return apply_overrides(config, {"adapt": True, "kip_dpsgd": kip_dpsgd})


def _fit(config: ClustMixConfig, x=None, y=None, key: int = 0):
    if x is None:
        x, y = _arrays()
    return fit(jax.random.key(key), x, y, n_classes=2, epsilon=EPS, delta=DELTA, config=config)


@pytest.fixture(scope="module")
def strict_release():
    return _fit(CONFIG)


@pytest.fixture(scope="module")
def paper_release():
    return _fit(PAPER)


# -- strict mode ------------------------------------------------------------------------------
def test_strict_ledger_holds_every_phase_and_equals_the_data_free_plan(strict_release):
    release = strict_release
    ledger = release.ledger
    assert ledger.labels == ["clustmix/dp-clustering", "clustmix/cluster-sizes", "clustmix/mixing"]
    assert not ledger.has_paper_mode
    plan = strict_plan(CONFIG, 2, X_WIDTH, release.info["scale"])
    # the ledger's figure is the best accountant's, the plan's under the same rule; the
    # calibration (to that same figure) lands within 1% of the target
    assert ledger.epsilon(DELTA) == pytest.approx(
        compute_epsilon(plan, DELTA, accountant="best"), rel=1e-9
    )
    assert 0.99 * EPS <= ledger.epsilon(DELTA) <= EPS
    assert ledger.epsilon(DELTA) <= ledger.epsilon(DELTA, accountant="rdp")
    # every phase costs something: removing any entry lowers epsilon
    for i in range(len(ledger.entries)):
        rest = PrivacyLedger(ledger.entries[:i] + ledger.entries[i + 1 :])
        assert rest.epsilon(DELTA) < ledger.epsilon(DELTA)
    # the noise never depends on the data: another dataset, same ledger
    x, y = _arrays(n=3000, seed=5)
    assert _fit(CONFIG, x, y, key=3).ledger.to_dict() == ledger.to_dict()
    assert release.features.shape[1] == 4 and set(release.labels) <= {0, 1}
    assert np.all((release.features >= 0) & (release.features <= 1))


def test_strict_ledger_with_dp_kip_holds_the_adapt_phase():
    config = _kip(CONFIG, steps=2, sampling_prob=0.1)
    x, y = _arrays(n=600)
    release = _fit(config, x, y)
    ledger = release.ledger
    assert ledger.labels == [
        "clustmix/dp-clustering",
        "clustmix/cluster-sizes",
        "clustmix/dp-kip",
        "clustmix/mixing",
    ]
    plan = strict_plan(config, 2, X_WIDTH, release.info["scale"])
    assert ledger.epsilon(DELTA) == pytest.approx(
        compute_epsilon(plan, DELTA, accountant="best"), rel=1e-9
    )
    assert 0.99 * EPS <= ledger.epsilon(DELTA) <= min(EPS, ledger.epsilon(DELTA, accountant="rdp"))
    # Adapt moved the mixtures: same key without DP-KIP gives other features
    plain = _fit(dataclasses.replace(config, adapt=False), x, y)
    assert release.features.shape[1] == plain.features.shape[1]
    assert not np.allclose(release.features.mean(axis=0), plain.features.mean(axis=0))


def test_strict_mixtures_follow_the_classes(strict_release):
    release = strict_release
    means = [release.features[release.labels == c].mean(axis=0) for c in (0, 1)]
    # class means are 0.3 and 0.7; mixture noise std about 0.2 per coordinate over ~50 mixtures
    assert np.all(np.abs(means[0] - 0.3) < 0.15) and np.all(np.abs(means[1] - 0.7) < 0.15)


def test_strict_em_clustering_and_budget_too_small():
    release = _fit(dataclasses.replace(CONFIG, clustering="em"))
    assert release.ledger.epsilon(DELTA) <= EPS
    x, y = _arrays(n=200)
    with pytest.raises(ValueError, match="budget too small"):  # data-free refusal
        fit(jax.random.key(0), x, y, n_classes=2, epsilon=0.01, delta=DELTA, config=CONFIG)
    # l beyond every cluster: in each class (none has a full group), each cluster whose noisy
    # size keeps its one mixture's noise within the box forms one group (groups_per_cluster)
    huge = _fit(dataclasses.replace(CONFIG, mixture_size=5000), x, y)
    assert 1 <= huge.info["groups"] <= 2 * CONFIG.n_clusters
    # two records of 400 features: one mixture needs z sqrt(D) / 2 = 43 of them, 2.6 sds of
    # the size noise above the clusters' counts (this key: every noisy size falls below)
    wide, labels = np.full((2, 400), 0.5), np.array([0, 1])
    with pytest.raises(ValueError, match="no cluster can supply a mixture"):
        _fit(dataclasses.replace(CONFIG, mixture_size=200), wide, labels)


# -- paper mode -------------------------------------------------------------------------------
def test_paper_mode_mixes_a_small_class_at_the_largest_l_it_holds():
    """30 records of class 1 cannot fill 3 clusters of l = 20: they are mixed in groups of
    l_1 = 10 (3 clusters of exactly 10: 3 mixtures) instead of refusing the table; class 0
    keeps l = 20. Fewer records than clusters is refused."""
    x, y = _arrays(n=2000)
    keep = np.concatenate([np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:30]])
    release = _fit(PAPER, x[keep], y[keep])
    assert release.info["class_mixture_sizes"] == [20, 10]
    labels = np.asarray(release.labels)
    assert np.sum(labels == 1) == 3 and 3 <= np.sum(labels == 0) <= np.sum(y == 0) // 20
    two = np.concatenate([np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:2]])
    with pytest.raises(ValueError, match="fewer records than n_clusters"):
        _fit(PAPER, x[two], y[two])


def test_paper_mode_is_labelled_and_uses_eq8(paper_release):
    release = paper_release
    ledger = release.ledger
    assert ledger.labels == ["clustmix/approximate", "clustmix/anonymise"]
    assert all(e.mode == "paper" and e.note.startswith(PAPER_CLAIM) for e in ledger.entries)
    report = ledger.report(DELTA)
    assert "paper's claimed guarantee, not proven" in report and "NOT a DP guarantee" in report
    assert ledger.epsilon(DELTA) == pytest.approx(EPS)
    sigma = paper_noise_std(EPS, DELTA, mixture_size=20, n_classes=2, n_features=4)
    assert release.info["noise_std"] == pytest.approx(sigma)
    # every cluster held >= l records: floor(n_c / l) groups per class at most, and at least
    # one group per cluster
    assert 2 * 3 <= release.info["groups"] <= 2000 // 20


def test_paper_mode_with_kip_adapt_records_the_adapt_phase(paper_release):
    config = _kip(dataclasses.replace(PAPER, kip_target_batch_size=200), steps=3)
    release = _fit(config)
    assert release.ledger.labels == [
        "clustmix/approximate",
        "clustmix/adapt",
        "clustmix/anonymise",
    ]
    assert not np.allclose(release.features, paper_release.features)  # same key, no Adapt


# -- bad input --------------------------------------------------------------------------------
def test_bad_input_gives_one_line_errors():
    x, y = _arrays(n=100)
    with pytest.raises(ValueError, match=r"alpha in \[0, 1\]"):
        ClustMixConfig(alpha=1.5)
    with pytest.raises(ValueError, match="mixture_size >= 1"):
        ClustMixConfig(mixture_size=0)
    with pytest.raises(ValueError, match="fewer records than n_clusters"):  # ~50 per class
        _fit(dataclasses.replace(PAPER, n_clusters=60), x, y)
    with pytest.raises(TypeError, match="public encoding"):
        _fit(CONFIG, x.astype(object), y)
    with pytest.raises(ValueError, match="public box"):
        _fit(CONFIG, x * 5, y)
    with pytest.raises(ValueError, match="delta in"):
        fit(jax.random.key(0), x, y, n_classes=2, epsilon=1, delta=0.0, config=CONFIG)
    with pytest.raises(ValueError, match="kip_dpsgd without noise_multiplier"):
        _kip(CONFIG, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="kip_dpsgd.sampling='poisson'"):
        _kip(CONFIG, sampling="without_replacement")
    with pytest.raises(ValueError, match="categorical target"):
        fit_model(
            jax.random.key(0), "clustmix", _frame(), PrivacyBudget(epsilon=1, delta=1e-5),
            CONFIG, schema=dataclasses.replace(SCHEMA, target=None),
        )  # fmt: skip


# -- the CLI ----------------------------------------------------------------------------------
def test_cli_fit_paper_mode_shows_the_label_and_bad_options_write_nothing(tmp_path, capsys):
    from jdp.cli import main

    _frame().to_csv(tmp_path / "d.csv", index=False)
    SCHEMA.save(tmp_path / "s.json")
    base = ["fit", "--method", "clustmix", "--data", str(tmp_path / "d.csv"), "--schema",
            str(tmp_path / "s.json"), "--epsilon", "1", "--delta", "1e-5", "--seed", "0",
            "--set", "adapt=false"]  # fmt: skip
    code = main(base + ["--out", str(tmp_path / "m"), "--set", "mode=paper",
                        "--set", "n_clusters=2", "--set", "mixture_size=10"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert PAPER_CLAIM in out and "NOT a DP guarantee" in out
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    modes = {e["label"]: e["mode"] for e in saved["ledger"]["entries"]}
    # every phase follows the paper; the shape rule's class counts are a real Laplace release
    assert modes.pop("class counts") == "strict" and set(modes.values()) == {"paper"}
    for bad in (["--set", "alpha=2"], ["--set", "n_clusters=100000", "--set", "mode=paper"]):
        code = main(base + ["--out", str(tmp_path / "bad")] + bad)
        _, err = capsys.readouterr()
        lines = err.strip().splitlines()  # warnings from before the fit may come first
        assert code != 0 and [line.startswith("jdp fit: error:") for line in lines].count(True) == 1
        assert all(line.startswith("jdp fit: ") for line in lines)
        assert not (tmp_path / "bad").exists()


def test_ordinal_encoding_is_one_feature_per_column_and_decodes_exactly():
    frame = _frame()
    codec = ClustMixCodec.of(SCHEMA, "ordinal")
    o, y = codec.encode(frame)
    assert o.shape == (len(frame), 3) and o.min() >= 0 and o.max() <= 1
    back = codec.decode(jax.random.key(0), (o, y))
    pd.testing.assert_frame_equal(
        back[["b", "c", "y"]], frame[["b", "c", "y"]].astype(back[["b", "c", "y"]].dtypes)
    )
    assert np.allclose(back["a"], frame["a"])
    model = ClustMix(
        epsilon=1.0, delta=1e-5, schema=SCHEMA, seed=0, n_clusters=2, mixture_size=10,
        adapt=False, categorical_encoding="ordinal",
    )  # fmt: skip
    rows = model.fit(frame).sample(40)
    assert set(rows["c"]) <= {"u", "v", "w"} and rows["b"].between(0, 4).all()
    with pytest.raises(ValueError, match="categorical_encoding"):
        ClustMixConfig(categorical_encoding="binary")


def test_strict_groups_change_only_for_the_added_or_removed_record():
    """The strict pipeline's grouping (assignment to released centres, then the hashed
    bucket), conditioned on the releases: an adversarial record added -- a box corner, a
    duplicate of a record, one exactly between two centres -- or any record removed leaves
    every other record in its group, so exactly one group sum changes."""
    from jdp.mechanisms.mixing import group_sums, mixing_sensitivity
    from jdp.synth.clustmix.phases import assign_clusters, mixing_groups

    x, y = _arrays(n=400)
    centres = [np.array([[0.2] * 4, [0.4] * 4]), np.array([[0.6] * 4, [0.8] * 4])]
    n_groups = np.array([3, 2, 4, 1])
    salt = b"released-salt"

    def groups(xs, ys):
        return mixing_groups(xs, assign_clusters(xs, ys, centres), n_groups, salt)

    base = groups(x, y)
    base_sums = group_sums(x, base, n_groups.sum())
    extra = [(np.ones(4), 0), (np.zeros(4), 1), (x[5], y[5]), (np.full(4, 0.3), 0)]
    for record, label in extra:
        xs, ys = np.vstack([x, record]), np.append(y, label)
        new = groups(xs, ys)
        assert np.array_equal(new[:-1], base)  # nobody else moved
        diff = group_sums(xs, new, n_groups.sum()) - base_sums
        assert np.count_nonzero(np.any(diff != 0, axis=1)) <= 1
        assert np.linalg.norm(diff) <= mixing_sensitivity(4) * (1 + 1e-12)
    for i in range(0, 400, 37):
        assert np.array_equal(groups(np.delete(x, i, 0), np.delete(y, i)), np.delete(base, i))


def test_a_class_with_fewer_groups_than_clusters_adds_one_per_cluster_in_the_box():
    """floor(s / l) groups from a noisy size s. A class with fewer full groups than clusters
    (credit's frauds: one cluster of 320 and a few of 17-54 at l = 139) also gets one group
    from each cluster without one that holds at least ``smallest`` records; a class with at
    least K groups keeps floor(s / l) everywhere."""
    from jdp.synth.clustmix.phases import groups_per_cluster

    frauds = [320.0, 17.0, -6.0, 37.0, 13.0, 54.0]
    other = [17.9, 18.0, 45.0, 179.0, 400.0, 1000.0]
    got = groups_per_cluster(np.array(frauds + other), 139, smallest=13.81, n_classes=2)
    np.testing.assert_array_equal(got, [2, 1, 0, 1, 0, 1, 0, 0, 0, 1, 2, 7])


def test_denoise_mixtures_keeps_class_means_and_removes_noise():
    """Empirical-Bayes shrinkage: each class's mean of every coordinate is kept exactly; a
    coordinate whose spread is below the noise level collapses to its class mean; one with
    real spread (std 0.2 under noise 0.3) gets closer to the true group means: expected
    squared error ``tau^2 s^2 / (tau^2 + s^2) = 0.028`` against ``s^2 = 0.09`` raw (bound
    0.5 of raw; 800 mixtures per class put the estimate's error far below that)."""
    from jdp.synth.clustmix.model import denoise_mixtures

    rng = np.random.default_rng(3)
    labels = np.repeat([0, 1, 2], [800, 800, 1])
    truth = np.column_stack(
        [rng.normal(0.5, 0.2, labels.size), np.where(labels == 1, 0.8, 0.1), np.zeros(labels.size)]
    )
    noise = rng.normal(0.0, [0.3, 0.3, 0.2], truth.shape)
    out = denoise_mixtures(truth + noise, labels, 0.3)
    for c in (0, 1):
        rows = labels == c
        np.testing.assert_allclose(out[rows].mean(axis=0), (truth + noise)[rows].mean(axis=0))
        np.testing.assert_allclose(out[rows, 2], (truth + noise)[rows, 2].mean())  # var < s^2
        raw = np.mean(noise[rows, 0] ** 2)
        assert np.mean((out[rows, 0] - truth[rows, 0]) ** 2) < 0.5 * raw
    np.testing.assert_array_equal(out[labels == 2], (truth + noise)[labels == 2])
    with pytest.raises(ValueError, match="noise_std"):
        denoise_mixtures(truth, labels, 0.0)


MASS_SCHEMA = Schema(
    columns=(
        Column(name="a", kind="continuous", lower=0.0, upper=10.0),
        Column(name="g", kind="integer", lower=0, upper=100, point_masses=(0,)),
        Column(name="y", kind="categorical", categories=("no", "yes")),
    ),
    target="y",
)


@pytest.mark.parametrize("adapt", [False, True])
def test_table_state_blocks_are_drawn_from_the_denoised_unshifted_mixtures(adapt):
    """Issue 15 section 3: the zero state of ``g`` is drawn with the probabilities of the
    denoised mixtures without the Adapt shift. ``n`` is a multiple of the number of released
    mixtures, so every mixture is drawn ``r`` times and the expected zero count is ``r`` times
    the sum of their zero probabilities; the observed count is within 5 standard deviations
    of it (Poisson-binomial). Without Adapt, the argmax of the clipped block (the old
    decoding) lies far outside that bound (asserted; with 3 DP-KIP steps at this size the
    two happen to be close)."""
    from jdp.synth.clustmix.model import denoise_mixtures

    rng = np.random.default_rng(5)
    n = 4000
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "a": np.clip(rng.normal(3 + 4 * y, 1.0), 0, 10),
            "g": np.where(rng.random(n) < np.where(y == 1, 0.6, 0.85), 0, rng.integers(1, 101, n)),
            "y": np.where(y == 1, "yes", "no").astype(object),
        }
    )
    config = _kip(ClustMixConfig(n_clusters=3, mixture_size=20, cluster_steps=3), steps=3)
    config = dataclasses.replace(config, adapt=adapt)
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    model = fit_model(jax.random.key(0), "clustmix", frame, budget, config, schema=MASS_SCHEMA)
    p = model.params
    m, r = len(p["labels"]), 40  # the gap to the old decoding grows like sqrt(r) in sd
    out = sample_model(jax.random.key(1), model, m * r)
    state = denoise_mixtures(p["mixtures"], p["labels"], float(p["noise_std"]))[:, 2:4]
    weight = np.maximum(state, 0.0)
    p_zero = weight[:, 1] / weight.sum(axis=1)
    expected, sd = r * p_zero.sum(), np.sqrt(r * np.sum(p_zero * (1 - p_zero)))
    observed = int((out["g"] == 0).sum())
    assert abs(observed - expected) < 5 * sd, (observed, expected, sd)
    if not adapt:  # the old decoding: argmax of the shifted (here: zero shift), clipped block
        shifted = np.clip(p["mixtures"] + p["shift"], 0.0, 1.0)[:, 2:4]
        argmax = r * int((shifted.argmax(axis=1) == 1).sum())
        assert abs(argmax - expected) > 5 * sd, (argmax, expected, sd)


def test_strict_fit_does_not_depend_on_a_class_size():
    """Rule 7 (issue 24, item 2): the size of a class is private, so strict mode's per-class
    DP clustering runs for any class size. Class "yes" with exactly ``k`` records, with
    ``k - 1`` (a neighbour) and with none (the schema declares it): all three fit through
    ``fit_model`` with the same ledger (the old code refused ``k - 1`` with "too few rows for
    k=..." and 0 with "at least one row")."""
    k = 2
    config = ClustMixConfig(n_clusters=k, mixture_size=10, cluster_steps=2, adapt=False)
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    frame = _frame(n=80, seed=1)
    no, yes = frame[frame["y"] == "no"], frame[frame["y"] == "yes"]
    ledgers = []
    for n_yes in (k, k - 1, 0):
        table = pd.concat([no, yes.iloc[:n_yes]], ignore_index=True)
        model = fit_model(jax.random.key(0), "clustmix", table, budget, config, schema=SCHEMA)
        assert model.params["mixtures"].shape[1] == model.params["shift"].shape[1]
        ledgers.append(model.ledger.to_dict())
    assert ledgers[0] == ledgers[1] == ledgers[2]
    # no record at all (array level; a Table has >= 2 rows): the only refusal left is on the
    # released noisy sizes (no cluster can supply a mixture), never "at least one record"
    try:
        release = _fit(config, np.zeros((0, 4)), np.zeros(0, dtype=np.int64))
    except ValueError as error:
        assert "no cluster can supply a mixture" in str(error)
    else:
        assert release.ledger.labels == [
            "clustmix/dp-clustering", "clustmix/cluster-sizes", "clustmix/mixing"
        ]  # fmt: skip


# -- mixture_size="auto" ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "paper"])
def test_auto_mixture_size_is_the_least_l_within_the_target_noise(mode):
    """``l`` from the public noise alone: the mixtures' per-feature noise is at most
    AUTO_NOISE_STD, and one record fewer per mixture would put it above."""
    from jdp.synth.clustmix.config import AUTO_NOISE_STD

    config = dataclasses.replace(CONFIG, mode=mode, mixture_size="auto", n_clusters=2)
    release = _fit(config, *_arrays(6000))
    l, noise = release.info["mixture_size"], float(release.info["noise_std"])
    assert noise <= AUTO_NOISE_STD < noise * l / (l - 1)
    # the same l whatever the records (their number included): it reads no data
    assert _fit(config, *_arrays(5000, seed=1)).info["mixture_size"] == l


def test_auto_is_the_only_word_mixture_size_takes():
    assert ClustMixConfig(mixture_size="auto").mixture_size == "auto"
    with pytest.raises((TypeError, ValueError), match="mixture_size"):
        ClustMixConfig(mixture_size="big")


def test_released_spread_is_the_mixtures_spread_beyond_their_noise():
    """Per numeric column, the reported signal is a quarter (MEAN_PRECISION) of the pooled
    within-class spread of the released mixtures less their public noise: ``x`` has real
    spread 0.2 under noise 0.03 (ratio 0.6), so ``(spread^2 + s^2) / (0.2^2 + s^2)`` is a chi-square
    over its degrees of freedom (bound at ALPHA); ``z`` is all noise and reported (ratio >= 1),
    ``x`` not."""
    alpha, s, m = 1e-3, 0.03, 3000
    schema = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0.0, upper=1.0),
            Column(name="z", kind="continuous", lower=0.0, upper=1.0),
            Column(name="y", kind="categorical", categories=("a", "b")),
        ),
        target="y",
    )
    rng = np.random.default_rng(5)
    labels = np.repeat([0, 1], m)
    centres = np.where(labels == 0, 0.3, 0.6)
    x = centres + rng.normal(0, 0.2, 2 * m) + rng.normal(0, s, 2 * m)
    z = centres + rng.normal(0, s, 2 * m)
    model = base.FittedModel(
        method="clustmix",
        params={
            "labels": labels,
            "mixtures": np.column_stack([x, z]),
            "shift": np.zeros((2 * m, 2)),
            "noise_std": np.array(s),
        },
        schema=schema,
        config=ClustMixConfig(),
        budget=PrivacyBudget(epsilon=1.0, delta=1e-5),
        ledger=PrivacyLedger(),
    )
    spread_x, spread_z = released_statistics(model)
    assert spread_x.name == "spread of x (to within half)" and spread_x.noise == s
    ratio = ((spread_x.signal / MEAN_PRECISION) ** 2 + s**2) / (0.2**2 + s**2)
    dof = 2 * m - 2
    assert stats.chi2.ppf(alpha / 2, dof) / dof <= ratio <= stats.chi2.ppf(1 - alpha / 2, dof) / dof
    assert [r.name for r in weak_releases([spread_x, spread_z])] == ["spread of z (to within half)"]


# -- the rule before the fit ------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["strict", "paper"])
def test_the_noise_judged_before_the_fit_is_the_fits(mode):
    """public_releases' noise (data-free, read before the fit) is the noise std the fit
    then releases, in both modes, and its signal is the largest spread on [0, 1] in the
    post-fit rule's units."""
    from jdp.synth.clustmix.model import MAX_SPREAD, public_releases

    config = dataclasses.replace(CONFIG, mode=mode)
    codec = ClustMixCodec.of(Schema(columns=tuple(
        Column(name=f"x{j}", kind="continuous", lower=0.0, upper=1.0) for j in range(X_WIDTH)
    ) + (SCHEMA["y"],), target="y"))  # fmt: skip
    ((release),) = public_releases(config, codec, PrivacyBudget(epsilon=EPS, delta=DELTA))
    assert release.noise == pytest.approx(float(_fit(config).info["noise_std"]), rel=1e-12)
    assert release.signal == MEAN_PRECISION * MAX_SPREAD


def test_a_fit_says_before_it_starts_when_no_numeric_column_can_be_placed(monkeypatch):
    """At mixture_size 20 on SCHEMA's 5 features the mixtures' noise std is above 1/8: the
    warning comes before the arrays are fitted (a fit that fails at once still shows it) and
    calibration runs once for the rule and the fit; at mixture_size 400 it stays silent."""
    from jdp.synth.clustmix import phases
    from jdp.synth.feasibility import CannotWorkWarning

    def said(config, method=None):
        if method is not None:
            monkeypatch.setitem(base._REGISTRY, "clustmix", method)
        budget = PrivacyBudget(epsilon=EPS, delta=DELTA)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fit_model(jax.random.key(0), "clustmix", _frame(), budget, config,
                          schema=SCHEMA, rows=1e6)  # fmt: skip
            except RuntimeError:
                pass
        return [str(w.message) for w in caught if issubclass(w.category, CannotWorkWarning)]

    calls = []
    real = phases.calibrate
    monkeypatch.setattr(phases, "calibrate", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(phases, "_SCALES", {})
    (message,) = said(CONFIG)
    assert "cannot place the values of every numeric column" in message
    assert len(calls) == 1
    assert not said(dataclasses.replace(CONFIG, mixture_size=400))

    def boom(*args):
        raise RuntimeError("the fit started")

    method = dataclasses.replace(base.get_method("clustmix"), fit_arrays=boom)
    assert len(said(CONFIG, method)) == 1
