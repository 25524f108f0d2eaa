"""P3GM and its baselines: ledger = phases, epsilon meets the target, no data path around the
mechanisms, fixed encoder mean = DP-PCA projection, sampling from the DP mixture, variants
differ only where they should. Tiny networks and few steps throughout."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget, PrivacyLedger
from accounting import events as ev
from accounting.calibrate import calibrate_noise_multiplier
from jdp.nn.heads import into_heads, log_likelihood
from jdp.nn.vae import Decoder, kl_diag_gaussians, kl_to_mixture
from jdp.synth import base, io
from jdp.synth.configs import apply_overrides
from jdp.synth.p3gm import model as P
from jdp.synth.p3gm import phases as Ph
from jdp.synth.p3gm.config import DPSGD_TEMPLATE, P3GMConfig
from jdp.synth.p3gm.privacy import calibrate_noise, non_private_ledger, phase_events
from jdp.synth.p3gm.variants import get_variant

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
TINY_OPTIONS = {
    "latent_dim": 3,
    "n_components": 2,
    "em_iterations": 3,
    "hidden": 8,
    # q N = 8 for the public N = 400 of ``small``
    "dpsgd": {"epochs": 0.1, "sampling_prob": 0.02, "expected_batch_size": 8.0},
    "performance": {"clipping": "general"},
}
TINY = apply_overrides(P3GMConfig(), TINY_OPTIONS)

#: A declared public row count: the method alone, without the shape rule's count release.
DECLARED_ROWS = 10**6


@pytest.fixture(scope="module")
def arrays(adult, small):
    codec = P.codec(adult.schema, TINY)
    return codec.encode(adult.schema.conform(small)), codec


class _Recorder:
    """Wraps the three mechanisms P3GM calls: records their outputs, or replays them."""

    def __init__(self, monkeypatch):
        self.outputs: list = []
        self.replay = False
        self.calls = 0
        monkeypatch.setattr(Ph.pca, "dp_pca_gaussian", self._wrap(Ph.pca.dp_pca_gaussian))
        monkeypatch.setattr(Ph.em, "dp_em", self._wrap(Ph.em.dp_em))
        monkeypatch.setattr(Ph, "train", self._wrap(Ph.train))

    def _wrap(self, fn):
        def wrapped(*args, **kwargs):
            if self.replay:
                out = self.outputs[self.calls]
                self.calls += 1
                return out
            out = fn(*args, **kwargs)
            self.outputs.append(out)
            return out

        return wrapped


@pytest.fixture(scope="module")
def recorded(adult, small):
    """A tiny P3GM fitted on ``small`` with every mechanism's release recorded."""
    with pytest.MonkeyPatch.context() as mp:
        rec = _Recorder(mp)
        model = base.fit_model(
            jax.random.key(3), "p3gm", small, BUDGET, TINY, schema=adult.schema, rows=DECLARED_ROWS
        )
    return model, rec.outputs


@pytest.fixture(scope="module")
def fitted(recorded):
    return recorded[0]


def _cut(adult, config, variant="p3gm"):
    """DP-SGD's sampler cut per step on a variant's networks for Adult's layout."""
    return Ph.sgd_noise_cut(config, variant, P.codec(adult.schema, config).layout)


def test_ledger_is_exactly_the_phases_and_meets_the_target(fitted, adult):
    cut = _cut(adult, TINY)
    noise = calibrate_noise(TINY, "p3gm", BUDGET, noise_cut=cut)
    expected = phase_events(TINY, noise, noise_cut=cut)
    labels = ["dp-mean", "dp-pca"] + ["dp-em"] * TINY.em_iterations + ["dp-sgd"]
    assert fitted.ledger.labels == labels == [label for label, _ in expected]
    assert [e.event for e in fitted.ledger.entries] == [e for _, e in expected]
    # calibrated to the whole budget as the ledger reports it (the best rigorous
    # accountant's figure), never above RDP's
    eps = fitted.ledger.epsilon(BUDGET.delta)
    assert 0.99 * BUDGET.epsilon <= eps <= BUDGET.epsilon
    assert eps <= fitted.ledger.epsilon(BUDGET.delta, accountant="rdp")


def test_budget_split_moves_noise_between_phases_and_still_meets_the_target(adult):
    from accounting.compose import best_epsilon

    noises = []
    for split in ((0.1, 0.2, 0.7), (0.3, 0.3, 0.4)):
        config = dataclasses.replace(TINY, budget_split=split)
        cut = _cut(adult, config)
        noise = calibrate_noise(config, "p3gm", BUDGET, noise_cut=cut)
        composed = ev.ComposedDpEvent([e for _, e in phase_events(config, noise, noise_cut=cut)])
        assert 0.99 <= best_epsilon(composed, BUDGET.delta).value <= 1.0
        noises.append(noise)
    # a larger share buys less noise: PCA and EM gain, DP-SGD loses
    assert noises[1]["pca"] < noises[0]["pca"] and noises[1]["em"] < noises[0]["em"]
    assert noises[1]["sgd"] > noises[0]["sgd"]


def test_model_depends_on_data_only_through_accounted_releases(adult, small, recorded, monkeypatch):
    """Fit on D recording every mechanism's release; fit on D + one extreme record replaying
    those releases: the two models are identical, so nothing else data-derived (a raw mean,
    the row count, a category list) reaches the model."""
    m1, outputs = recorded
    extreme = {
        c.name: (c.upper if c.is_numeric else c.categories[-1]) for c in adult.schema.columns
    }
    neighbour = pd.concat([small, pd.DataFrame([extreme])], ignore_index=True)
    rec = _Recorder(monkeypatch)
    rec.outputs, rec.replay = outputs, True
    m2 = base.fit_model(
        jax.random.key(3), "p3gm", neighbour, BUDGET, TINY, schema=adult.schema, rows=DECLARED_ROWS
    )
    assert rec.calls == len(outputs) == 3
    flat1, flat2 = io.flatten_params(m1.params), io.flatten_params(m2.params)
    assert flat1.keys() == flat2.keys()
    for name in flat1:
        np.testing.assert_array_equal(flat1[name], flat2[name], err_msg=name)
    assert m1.ledger.to_dict() == m2.ledger.to_dict()


def test_neighbours_with_real_noise_share_all_public_parts(adult, small, fitted):
    extreme = {c.name: (c.lower if c.is_numeric else c.categories[0]) for c in adult.schema.columns}
    neighbour = pd.concat([small, pd.DataFrame([extreme])], ignore_index=True)
    m1 = fitted
    m2 = base.fit_model(
        jax.random.key(3), "p3gm", neighbour, BUDGET, TINY, schema=adult.schema, rows=DECLARED_ROWS
    )
    assert m1.ledger.to_dict() == m2.ledger.to_dict() and m1.config == m2.config
    shapes1 = {k: v.shape for k, v in io.flatten_params(m1.params).items()}
    assert shapes1 == {k: v.shape for k, v in io.flatten_params(m2.params).items()}


def test_fixed_encoder_mean_is_the_dp_pca_projection(recorded, arrays):
    fitted, outputs = recorded
    x, codec = arrays
    layout, bound = codec.layout, codec.row_norm_bound
    proj = fitted.params["projection"]
    # the stored projection IS the DP-PCA release (DP centre, sorted components) and the
    # prior IS the DP-EM release
    pca_result = outputs[0][0]
    np.testing.assert_array_equal(proj["components"], pca_result.components)
    np.testing.assert_array_equal(proj["centre"], pca_result.centre)
    np.testing.assert_allclose(
        pca_result.transform(x / bound), (x / bound - proj["centre"]) @ proj["components"]
    )
    np.testing.assert_array_equal(fitted.params["prior"]["means"], outputs[1][0].mixture.means)
    expected = (x / bound - proj["centre"]) @ proj["components"]
    np.testing.assert_allclose(
        np.asarray(Ph.project(fitted.params, jnp.asarray(x))), expected, atol=1e-5
    )
    # components are orthonormal (a PCA basis), and the encoder has no mean head
    comps = np.asarray(proj["components"])
    np.testing.assert_allclose(comps.T @ comps, np.eye(comps.shape[1]), atol=1e-8)
    assert set(fitted.params["trainable"]["encoder"]["params"]) == {"hidden", "logvar"}
    # with the learned variance driven to 0 the decoder sees exactly c_x, like P3GM(AE)
    trainable = jax.tree_util.tree_map(jnp.asarray, fitted.params["trainable"])
    bias = trainable["encoder"]["params"]["logvar"]["bias"]
    trainable["encoder"]["params"]["logvar"]["bias"] = jnp.full_like(bias, -80.0)
    trainable["encoder"]["params"]["logvar"]["kernel"] *= 0.0
    fixed = jax.tree_util.tree_map(
        jnp.asarray, {k: fitted.params[k] for k in ("projection", "prior", "latent_scale")}
    )
    row = jnp.asarray(x[0], jnp.float32)
    ll_p3gm, _ = Ph.example_terms(
        trainable, fixed, row, jax.random.key(0), config=TINY, variant="p3gm", layout=layout
    )
    ll_ae, kl_ae = Ph.example_terms(
        trainable, fixed, row, jax.random.key(0), config=TINY, variant="p3gm-ae", layout=layout
    )
    assert float(ll_p3gm) == pytest.approx(float(ll_ae), rel=1e-5) and float(kl_ae) == 0.0


def test_sampling_draws_the_latent_from_the_dp_mixture(fitted):
    params = {
        **fitted.params,
        "prior": {
            "weights": np.array([0.25, 0.75]),
            "means": np.array([[4.0, -4.0, 0.0], [-2.0, 2.0, 8.0]]),
            "variances": np.array([[0.01, 0.04, 0.09], [0.01, 0.01, 0.01]]),
        },
    }
    n = 4000
    z = P.sample_latent(jax.random.key(1), params, "p3gm", n, 3)
    first = z[:, 0] > 1.0
    # component membership is Binomial(n, 0.25): 5-sigma bound
    assert abs(first.mean() - 0.25) < 5 * np.sqrt(0.25 * 0.75 / n)
    for comp, mask in ((0, first), (1, ~first)):
        m, v = params["prior"]["means"][comp], params["prior"]["variances"][comp]
        se = np.sqrt(v / mask.sum())
        assert np.all(np.abs(z[mask].mean(axis=0) - m) < 5 * se)
    # and the decoded table follows the latent: moving the prior moves the samples
    codec = P.codec(fitted.schema, TINY)
    a = P.sample_arrays(jax.random.key(2), fitted.params, codec, TINY, 200, variant="p3gm")
    b = P.sample_arrays(jax.random.key(2), params, codec, TINY, 200, variant="p3gm")
    assert not np.allclose(a, b)
    # DP-VAE samples N(0, I): chi-square bound on the sum of squares
    zv = P.sample_latent(jax.random.key(3), {}, "dp-vae", n, 3)
    assert abs((zv**2).sum() - 3 * n) < 5 * np.sqrt(2 * 3 * n)


def test_sampled_labels_come_from_the_model(fitted):
    out = base.sample_model(jax.random.key(4), fitted, 300)
    assert list(out.columns) == fitted.schema.names
    assert set(out["income"]) <= set(fitted.schema["income"].categories)


def test_numeric_columns_are_drawn_from_the_decoder_not_decoded_at_their_mean(fitted):
    """With binned heads a sampled numeric column follows the decoder's histogram: a decoder
    whose age head puts softmax probabilities p on age's cells (output kernel zero, so
    whatever z) yields ages whose counts pass Pearson's chi-square against p (1 - 1e-6
    quantile), and capital-gain is 0 exactly where its state head draws the point mass
    (Binomial 5-sigma bound on that share). Decoding at the mean would give one age."""
    from scipy import stats

    from jdp.nn.heads import binned_cell, raw_width

    config = dataclasses.replace(TINY, numeric_head="binned", numeric_bins=16)
    codec = P.codec(fitted.schema, config)
    layout = codec.layout
    assert layout[0] == ("binned", 16) and ("state", 2) in layout
    assert P.codec(fitted.schema, dataclasses.replace(TINY, numeric_head="auto")).layout == (
        P.codec(fitted.schema, dataclasses.replace(TINY, numeric_head="bernoulli")).layout
    )  # hidden 8 is narrower than the binned output layer
    fixed = {k: fitted.params[k] for k in ("projection", "prior", "latent_scale")}
    decoder = Ph.init_networks(jax.random.key(0), config, get_variant("p3gm"), layout, fixed)
    params = jax.tree_util.tree_map(np.asarray, decoder)["decoder"]
    out = params["params"]["out"]
    np.testing.assert_array_equal(out["kernel"][:, :16], 0.0)  # binned heads start uniform
    logits = np.linspace(-1.5, 1.5, 16) ** 2
    out["kernel"] = np.zeros_like(out["kernel"])
    out["bias"] = np.zeros(raw_width(layout), np.float32)
    out["bias"][:16] = logits
    start = raw_width(layout[: layout.index(("state", 2))])
    out["bias"][start : start + 2] = [0.0, 1.0]  # P(point mass) = e / (1 + e)
    n = 4000
    rows = P.sample_arrays(
        jax.random.key(1),
        {**fixed, "trainable": {"decoder": params}},
        codec,
        config,
        n,
        variant="p3gm",
    )
    table = codec.decode(jax.random.key(0), rows)
    assert table["age"].nunique() > 10
    cells = np.asarray(binned_cell(jnp.asarray(rows[:, 0]), 16))  # age is coordinate 0
    p = np.exp(logits) / np.exp(logits).sum()
    counts = np.bincount(cells, minlength=16)
    stat = np.sum((counts - n * p) ** 2 / (n * p))
    assert stat < stats.chi2.ppf(1 - 1e-6, 15)
    share = np.mean(table["capital-gain"].to_numpy() == 0)
    q = np.e / (1 + np.e)
    assert abs(share - q) < 5 * np.sqrt(q * (1 - q) / n)


def test_variants_differ_only_where_they_should(arrays):
    x, codec = arrays
    layout, bound = codec.layout, codec.row_norm_bound
    key = jax.random.key(11)
    # the same phases: equal noise, up to each variant's networks' own sampler cut
    noise_ae, noise = (
        calibrate_noise(TINY, v, BUDGET, noise_cut=Ph.sgd_noise_cut(TINY, v, layout))
        for v in ("p3gm-ae", "p3gm")
    )
    assert noise_ae.keys() == noise.keys()
    assert all(noise_ae[p] == pytest.approx(noise[p], rel=1e-6) for p in noise)
    # a plain array and a codec declared by hand (no table encoder) fit as the table's codec
    declared = P.P3GMCodec(layout=layout, row_norm_bound=bound, target_coords=codec.target_coords)
    with pytest.raises(ValueError, match="declared for arrays"):
        declared.decode(key, x)
    p_ae, l_ae = P.fit_arrays(key, x, declared, BUDGET, TINY, variant="p3gm-ae")
    assert set(p_ae["trainable"]) == {"decoder"} and set(p_ae) == {
        "trainable",
        "projection",
        "prior",
        "latent_scale",
    }
    assert l_ae.labels[:-1] == ["dp-mean", "dp-pca"] + ["dp-em"] * TINY.em_iterations
    # PGM (no noise): the encoding phase is the exact PCA of the clipped, exactly centred rows,
    # and the variant's ledger is non-private in every phase
    fixed_pgm, _ = Ph.encoding_phase(np.random.default_rng(0), x, bound, TINY, noise=None)
    l_pgm = non_private_ledger(get_variant("pgm").phases(TINY))
    assert l_pgm.entries and all(isinstance(e.event, ev.NonPrivateDpEvent) for e in l_pgm.entries)
    assert l_pgm.epsilon(1e-5) == np.inf
    scaled = x / bound
    centred = scaled - scaled.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    overlap = np.linalg.svd(
        vt[: TINY.latent_dim] @ fixed_pgm["projection"]["components"], compute_uv=False
    )
    assert overlap.min() > 0.999
    # DP-VAE: learned encoder mean, no encoding phase, the whole budget to DP-SGD
    p_vae, l_vae = P.fit_arrays(key, x, codec, BUDGET, TINY, variant="dp-vae")
    assert set(p_vae) == {"trainable"} and l_vae.labels == ["dp-sgd"]
    assert set(p_vae["trainable"]["encoder"]["params"]) == {"hidden", "logvar", "mean"}
    cut = Ph.sgd_noise_cut(TINY, "dp-vae", layout)
    z = calibrate_noise_multiplier(
        target_epsilon=1.0,
        target_delta=1e-5,
        sampling_prob=TINY.dpsgd.sampling_prob,
        steps=TINY.dpsgd.num_steps,
        noise_cut=cut,
    )
    z_vae = calibrate_noise(TINY, "dp-vae", BUDGET, noise_cut=cut)["sgd"]
    assert z_vae == pytest.approx(z, rel=0.01)


@pytest.mark.parametrize("variant", ["p3gm", "p3gm-ae", "dp-vae"])
def test_the_trained_loss_takes_the_ghost_path_and_it_is_exact(arrays, variant):
    """The path choice is structural (:func:`jdp.dpsgd.ghost_clipping.ghost_support`); the
    numerical comparison of both paths runs here, on each variant's own DP-SGD loss."""
    from jdp.dpsgd.ghost_clipping import compare_paths
    from jdp.dpsgd.step import choose_method

    x, codec = arrays
    chosen = get_variant(variant)
    fixed = {}
    if chosen.fixed_mean:
        fixed, _ = Ph.encoding_phase(
            np.random.default_rng(0), x, codec.row_norm_bound, TINY, None, codec.target_coords
        )
    params = Ph.init_networks(jax.random.key(0), TINY, chosen, codec.layout, fixed)
    loss_fn = Ph.negative_elbo(fixed, codec.layout, TINY, chosen)
    example = jnp.asarray(x[:1], jnp.float32)
    assert choose_method(loss_fn, params, example) == "ghost"
    assert compare_paths(loss_fn, params, example) is None


def test_mixture_kl_approximation_reduces_to_the_exact_kl_for_one_component():
    rng = np.random.default_rng(0)
    mean, logvar = rng.normal(size=4), rng.normal(size=4)
    mb, lb = rng.normal(size=(1, 4)), rng.normal(size=(1, 4))
    exact = kl_diag_gaussians(mean, logvar, mb[0], lb[0])
    chol = jnp.diag(jnp.exp(0.5 * lb[0]))[None]
    assert float(kl_to_mixture(mean, logvar, jnp.ones(1), mb, chol)) == pytest.approx(
        float(exact), rel=1e-5
    )
    # two identical components: the same value; a far second component adds log(1/w)
    two = kl_to_mixture(
        mean,
        logvar,
        jnp.array([0.5, 0.5]),
        jnp.concatenate([mb, mb + 1e3]),
        jnp.concatenate([chol, chol]),
    )
    assert float(two) == pytest.approx(float(exact) + np.log(2.0), rel=1e-5)


def test_kl_to_a_full_covariance_component_is_the_gaussian_kl():
    # KL(N(m, diag v) || N(mb, S)) from numpy's inverse and log-determinant (independent of
    # the Cholesky solves): 0.5 (tr(S^-1 V) + (mb - m)^T S^-1 (mb - m) - d + log|S| - log|V|)
    rng = np.random.default_rng(1)
    d = 4
    mean, logvar, mb = rng.normal(size=d), rng.normal(size=d), rng.normal(size=d)
    a = rng.normal(size=(d, d))
    cov = a @ a.T + 0.5 * np.eye(d)
    prec = np.linalg.inv(cov)
    diff = mb - mean
    want = 0.5 * (
        np.sum(np.diag(prec) * np.exp(logvar))
        + diff @ prec @ diff
        - d
        + np.linalg.slogdet(cov)[1]
        - logvar.sum()
    )
    got = kl_to_mixture(mean, logvar, jnp.ones(1), mb[None], np.linalg.cholesky(cov)[None])
    assert float(got) == pytest.approx(want, rel=1e-4)


def _mixture_covariance(prior):
    w, mu = np.asarray(prior["weights"]), np.asarray(prior["means"])
    var = np.asarray(prior["variances"])
    cov = var if var.ndim == 3 else np.stack([np.diag(v) for v in var])
    m = w @ mu
    return np.einsum("k,kij->ij", w, cov + mu[:, :, None] * mu[:, None, :]) - np.outer(m, m)


def test_default_prior_matches_the_encoder_means_within_its_release_noise(adult):
    """The prior samples ``z`` for the decoder, which only ever saw encoder means ``c_x``: its
    covariance must be the covariance of ``c_x`` up to the release's noise. Default (one
    full-covariance Gaussian, one release): DP-EM's ``Q = sum c c^T + E``, ``E`` symmetric with
    i.i.d. ``N(0, (z C^2)^2)`` upper triangle, so ``Sigma - Cov(c) ~ E / n`` (mean and count
    noise are ``O(z / n)`` times ``|mu| ~ 0`` and ``|Sigma| ~ 0.05``: negligible; the
    eigenvalue clip is a projection onto a convex set holding ``Cov(c)``, so it only shrinks
    the error): ``n^2 ||.||_F^2 / (z C^2)^2`` has mean ``d^2`` and variance
    ``2 d + 4 d (d - 1)``; 5 SD bound. The paper's ``K = 3, T_e = 20`` diagonal mixture at the
    same budget (noise multiplier 110, 60 releases) exceeds the bound: on Adult it collapsed
    to one component with the small variances off by 2-4x (issue 15 measurement)."""
    encoder = P.table_encoder(adult.schema)
    x = encoder.encode(adult.train)
    n = x.shape[0]

    def error(config):
        noise = calibrate_noise(config, "p3gm", BUDGET, noise_cut=_cut(adult, config))
        fixed, _ = Ph.encoding_phase(
            np.random.default_rng(0), x, encoder.row_norm_bound, config, noise
        )
        c = np.asarray(Ph.project(fixed, jnp.asarray(x)))
        err = _mixture_covariance(fixed["prior"]) - np.cov(c.T, bias=True)
        return float(np.sum(err**2)), noise["em"] * config.em_clip_norm**2

    default = P.for_shape(P3GMConfig(), adult.schema, BUDGET, float(n))  # n: public here
    assert (default.n_components, default.em_steps, default.prior_covariance) == (1, 1, "full")
    sq, scale = error(default)
    d = default.latent_dim
    bound = (scale / n) ** 2 * (d**2 + 5 * np.sqrt(2 * d + 4 * d * (d - 1)))
    assert sq < bound
    paper = dataclasses.replace(default, n_components=3, em_iterations=20, prior_covariance="diag")
    assert error(paper)[0] > bound


def test_log_likelihood_heads():
    x = jnp.array([1.0, 0.0, 0.0, 1.0, 0.0])
    raw = jnp.array([0.0, 0.0, 1.0, 2.0, 3.0])
    layout = (("bernoulli", 2), ("categorical", 3))
    expected = 2 * np.log(0.5) + (2.0 - np.log(np.exp(1) + np.exp(2) + np.exp(3)))
    assert float(log_likelihood(raw, x, layout)) == pytest.approx(expected, rel=1e-6)


def test_config_validation():
    with pytest.raises(ValueError, match="budget_split"):
        P3GMConfig(budget_split=(0.5, 0.5))
    with pytest.raises(ValueError, match="expected latent_dim >= 1"):
        P3GMConfig(latent_dim=0)
    with pytest.raises(ValueError, match="sampling_prob"):
        apply_overrides(P3GMConfig(), {"dpsgd": {"sampling_prob": 0.0}})
    with pytest.raises(ValueError, match="expected expected_batch_size > 0, got 0"):
        apply_overrides(P3GMConfig(), {"dpsgd": {"expected_batch_size": 0.0}})
    with pytest.raises(ValueError, match="expected numeric_head in"):
        P3GMConfig(numeric_head="gaussian")
    with pytest.raises(ValueError, match="expected numeric_bins >= 2, got 1"):
        P3GMConfig(numeric_bins=1)
    # the DP-SGD settings are a template: P3GM calibrates the noise, and its phases compose
    # under add/remove-one, so the sampling must be Poisson
    with pytest.raises(ValueError, match="without noise_multiplier"):
        P3GMConfig(dpsgd=DPSGD_TEMPLATE.with_noise(1.0))
    with pytest.raises(ValueError, match="sampling='poisson'"):
        apply_overrides(P3GMConfig(), {"dpsgd": {"sampling": "without_replacement"}})


def test_dpsgd_normaliser_is_the_configs_public_constant_not_the_row_count(arrays, monkeypatch):
    """DP-SGD divides its noisy sum by the declared ``expected_batch_size``, the same for
    datasets of n and n - 1 rows (it used to be ``q * len(x)``, which the noise scale of
    the update reveals)."""
    seen = []

    class Stop(Exception):
        pass

    def fake_train(*args, **kwargs):
        seen.append(args[5].expected_batch_size)  # train(key, loss, params, opt, data, dpsgd)
        raise Stop

    monkeypatch.setattr(Ph, "train", fake_train)
    x, codec = arrays
    for rows in (x, x[:-1]):
        with pytest.raises(Stop):
            Ph.decoding_phase(jax.random.key(0), rows, {}, codec.layout, TINY, "dp-vae", 1.0)
    assert seen == [TINY.dpsgd.expected_batch_size] * 2


def test_initial_decoder_fits_the_inverse_projection_from_released_values_only(recorded, arrays):
    """The initialisation is post-processing: a function of the released projection and
    mixture alone (it has no data argument; the replay test above covers a whole fit), and
    it closes most of the gap between a random decoder and the best possible fit (the
    targets' own entropy) to the DP-PCA reconstruction of prior draws."""
    fitted, _ = recorded
    layout = arrays[1].layout
    fixed = jax.tree_util.tree_map(
        jnp.asarray, {k: fitted.params[k] for k in ("projection", "prior", "latent_scale")}
    )
    config = dataclasses.replace(TINY, hidden=32, decoder_init_steps=300)
    d = sum(w for _, w in layout)
    start = Ph.init_networks(jax.random.key(0), config, get_variant("p3gm"), layout)["decoder"]
    z = jnp.asarray(P.sample_latent(jax.random.key(9), fitted.params, "p3gm", 2000, 3))
    target = into_heads(Ph.inverse_projection(fixed, z), layout)

    def nll(raw):
        return -float(jnp.mean(jax.vmap(log_likelihood, in_axes=(0, 0, None))(raw, target, layout)))

    def loss(params):
        return nll(Decoder(config.hidden, d).apply(params, Ph.standardize(fixed, z)))

    t = jnp.clip(target, 1e-6, 1 - 1e-6)
    best = nll(
        jnp.log(t)
        - jnp.log1p(-t)
        * jnp.asarray(  # logit (bernoulli), log p (softmax)
            np.concatenate([np.full(w, k == "bernoulli", float) for k, w in layout])
        )
    )
    after = loss(Ph.initial_decoder(jax.random.key(1), start, fixed, layout, config))
    before = loss(start)
    assert best <= after < best + 0.5 * (before - best)


def _encoding_phase(config, x, codec, seed):
    """The encoding phase at the multipliers a whole fit of ``config`` calibrates (the fit
    runs exactly this function before DP-SGD), with the events the fit's ledger must hold."""
    cut = Ph.sgd_noise_cut(config, "p3gm", codec.layout)
    noise = calibrate_noise(config, "p3gm", BUDGET, noise_cut=cut)
    fixed, ledger = Ph.encoding_phase(
        np.random.default_rng(seed), x, codec.row_norm_bound, config, noise, codec.target_coords
    )
    return fixed, ledger, phase_events(config, noise, noise_cut=cut)


def test_without_reduction_the_fixed_mean_is_the_dp_centred_row(arrays, monkeypatch):
    """latent_dim=None (the paper's credit setting): the "pca" phase is one DP mean, the
    phases are [dp-mean, dp-em x T_e, dp-sgd] and meet the target, and the fixed encoder
    mean is the row minus that released centre (identity components)."""
    config = dataclasses.replace(TINY, latent_dim=None)
    releases, original = [], Ph.pca.dp_mean_gaussian

    def dp_mean(*args, **kwargs):
        releases.append(original(*args, **kwargs))
        return releases[-1]

    monkeypatch.setattr(Ph.pca, "dp_mean_gaussian", dp_mean)
    x, codec = arrays
    fixed, ledger, expected = _encoding_phase(config, x, codec, seed=4)
    labels = ["dp-mean"] + ["dp-em"] * config.em_iterations + ["dp-sgd"]
    assert [label for label, _ in expected] == labels
    assert [(e.label, e.event) for e in ledger.entries] == expected[:-1]
    whole = PrivacyLedger()
    for label, event in expected:
        whole = whole.record(label, event)
    assert 0.99 <= whole.epsilon(BUDGET.delta) <= 1.0
    proj = fixed["projection"]
    np.testing.assert_array_equal(proj["components"], np.eye(x.shape[1]))
    # the centre IS the one DP-mean release (with its event in the ledger), not a raw mean
    ((centre, event),) = releases
    np.testing.assert_array_equal(proj["centre"], centre)
    assert ledger.entries[0].event == event
    params = jax.tree_util.tree_map(jnp.asarray, fixed)
    c = np.asarray(Ph.project(params, jnp.asarray(x)))
    np.testing.assert_allclose(c, x / codec.row_norm_bound - proj["centre"], atol=1e-5)


def test_latent_excluding_the_target_reads_features_only(adult, small, arrays):
    """latent_excludes_target: zero loadings and centre on the label's coordinates, so a
    row's fixed encoder mean does not move when only its label changes; same phases."""
    config = dataclasses.replace(TINY, latent_excludes_target=True)
    x, codec = arrays
    fixed, ledger, expected = _encoding_phase(config, x, codec, seed=5)
    encoder = P.table_encoder(adult.schema)
    start, stop = P.target_coords(encoder)
    assert (start, stop) == codec.target_coords
    assert stop - start == len(adult.schema[adult.schema.target].categories)
    proj = fixed["projection"]
    assert np.all(proj["components"][start:stop] == 0) and np.all(proj["centre"][start:stop] == 0)
    assert np.any(proj["components"][:start] != 0)
    flipped = small.copy()
    cats = adult.schema[adult.schema.target].categories
    flipped[adult.schema.target] = [
        cats[0] if v == cats[-1] else cats[-1] for v in small[adult.schema.target]
    ]
    params = jax.tree_util.tree_map(jnp.asarray, fixed)
    c1 = Ph.project(params, jnp.asarray(encoder.encode(adult.schema.conform(small))))
    c2 = Ph.project(params, jnp.asarray(encoder.encode(adult.schema.conform(flipped))))
    np.testing.assert_array_equal(np.asarray(c1), np.asarray(c2))
    labels = ["dp-mean", "dp-pca"] + ["dp-em"] * TINY.em_iterations
    assert ledger.labels == labels == [label for label, _ in expected[:-1]]


def test_a_latent_wider_than_the_table_is_refused_before_any_work(monkeypatch):
    """A narrow table (3 encoded columns) with the default ``latent_dim=10``: one ValueError
    naming the width and the ``--set`` hint, raised before the calibration runs."""
    codec = P.P3GMCodec(layout=(("bernoulli", 3),), row_norm_bound=2.0)
    calls = []
    monkeypatch.setattr(P, "calibrate_noise", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError, match=r"latent_dim=10 .* 3 encoded columns.*--set latent_dim=3"):
        P.fit_arrays(jax.random.key(0), np.zeros((5, 3)), codec, BUDGET, P3GMConfig())
    assert calls == []
    P.check_latent_dim(dataclasses.replace(P3GMConfig(), latent_dim=3), codec)  # fits exactly


def test_the_default_sampling_rate_follows_the_public_row_count(adult, small):
    """P3GM's default ``q`` is ``B̄ / N`` for the declared or released row count ``N``
    (Table IV's expected batch of 200 on any table, not 200 / 45,222 everywhere), resolved by
    the table adapter before any work; an unresolved ``"auto"`` is refused with a hint."""
    default = P3GMConfig()
    assert default.dpsgd.sampling_prob == "auto"
    own = P.for_shape(default, adult.schema, BUDGET, 1852.0)
    assert own.dpsgd.sampling_prob == pytest.approx(200 / 1852)
    assert own.dpsgd.num_steps == int(np.ceil(5 / (200 / 1852)))
    assert P.for_shape(default, adult.schema, BUDGET, 150.0).dpsgd.sampling_prob == 1.0
    assert P.for_shape(default, adult.schema, BUDGET, None) is None
    assert P.for_shape(TINY, adult.schema, BUDGET, None) is TINY
    with pytest.raises(ValueError, match="resolved from a public row count"):
        _ = default.dpsgd.num_steps
    auto = apply_overrides(TINY, {"dpsgd": {"sampling_prob": "auto"}})
    model = base.fit_model(
        jax.random.key(0), "p3gm", small, BUDGET, auto, schema=adult.schema, rows=400
    )
    assert model.config.dpsgd.sampling_prob == pytest.approx(8.0 / 400)
    sgd = dict(zip(model.ledger.labels, model.ledger.entries))["dp-sgd"].event
    (steps,) = [e.count for e in sgd.events if isinstance(e, ev.SelfComposedDpEvent)]
    assert steps == model.config.dpsgd.num_steps == int(np.ceil(0.1 / (8.0 / 400)))


def test_fixed_means_by_row_blocks_are_the_whole_projection(monkeypatch):
    """The encoding phase projects the rows a block at a time (issue 29 item 4: no temporary
    of the table's size); each row's ``c_x`` is the one the whole matrix gives, bit for bit."""
    from jdp.mechanisms import suffstats

    rng = np.random.default_rng(0)
    x = rng.random((1000, 7))
    projection = {
        "components": rng.normal(size=(7, 3)),
        "centre": rng.random(7),
        "row_norm_bound": np.asarray(2.5),
    }
    whole = (x / 2.5 - projection["centre"]) @ projection["components"]
    monkeypatch.setattr(suffstats, "DEFAULT_CHUNK_BYTES", 8 * 7 * 300)  # 300 rows: 4 blocks
    np.testing.assert_array_equal(Ph.fixed_means(projection, x), whole)
    assert Ph.fixed_means(projection, x[:0]).shape == (0, 3)


def test_the_encoded_table_is_float32_and_both_phases_read_that_one_copy(arrays, monkeypatch):
    """Issue 29 item 4: P3GM's codec encodes in float32 and ``fit_arrays`` hands that very
    array to the encoding and the decoding phase (it made a float64 copy, 475 MiB beside the
    table on 16 Adults' 521k rows)."""
    x, codec = arrays
    assert x.dtype == np.float32
    seen = []

    class Stop(Exception):
        pass

    def encoding(rng, rows, *args):
        seen.append(rows)
        return {}, PrivacyLedger()

    def decoding(key, rows, *args):
        seen.append(rows)
        raise Stop

    monkeypatch.setattr(P, "encoding_phase", encoding)
    monkeypatch.setattr(P, "decoding_phase", decoding)
    with pytest.raises(Stop):
        P.fit_arrays(jax.random.key(0), x, codec, BUDGET, TINY)
    assert len(seen) == 2 and all(rows is x for rows in seen)
