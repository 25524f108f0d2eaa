"""The shape rule: a method says before fitting when it cannot work on a table this small."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from accounting import events as ev
from jdp.data.schema import Column, Schema
from jdp.random import key_from_seed
from jdp.synth import feasibility as F
from jdp.synth.base import fit_model, get_method

SCHEMA = Schema(
    columns=(
        Column(name="age", kind="integer", lower=0, upper=100, point_masses=(0,)),
        Column(name="city", kind="categorical", categories=("a", "b", "c"), nullable=True),
        Column(name="y", kind="categorical", categories=("n", "p")),
    ),
    target="y",
)


def test_public_width_counts_states_and_leaves_the_target_out():
    assert F.public_width(SCHEMA) == (1 + 1) + (3 + 1)


def test_records_per_width_is_rows_times_epsilon_over_width():
    assert F.PublicShape(rows=600.0, width=60, epsilon=0.5).records_per_width == 5.0
    assert F.PublicShape(rows=-3.0, width=60, epsilon=0.5).records_per_width == 0.0


def test_the_row_count_is_a_laplace_release_of_its_share():
    budget = PrivacyBudget(epsilon=2.0, delta=1e-6)
    noisy, ledger, rest = F.release_row_count(np.random.default_rng(0), 500, budget)
    ((entry),) = ledger.entries
    assert entry.label == "row count"
    assert isinstance(entry.event, ev.LaplaceDpEvent)
    np.testing.assert_allclose(ledger.epsilon(0.0), F.ROW_COUNT_SHARE * 2.0, rtol=1e-9)
    assert rest == PrivacyBudget(epsilon=2.0 * (1 - F.ROW_COUNT_SHARE), delta=1e-6)
    # Laplace sd sqrt(2) / 0.02 = 70.7: within 6 sd of the truth
    assert abs(noisy - 500) < 6 * np.sqrt(2) / (F.ROW_COUNT_SHARE * 2.0)


def test_a_minimum_lies_between_its_measured_failure_and_success(monkeypatch):
    monkeypatch.setattr(F, "_MINIMUM", {})
    m = F.register_minimum("slow", failed="spambase", worked="adult-5k")
    assert F.MEASURED_AT["rows"]["spambase"] < m < F.MEASURED_AT["rows"]["adult-5k"]
    c = F.register_minimum("slow", failed="creditcard-paper-5k", worked="adult-5k",
                           of="smallest class")  # fmt: skip
    measured = F.MEASURED_AT["smallest class"]
    assert measured["creditcard-paper-5k"] < c < measured["adult-5k"]
    assert F.has_minimum("slow") and F.has_minimum("slow", "smallest class")
    with pytest.raises(ValueError, match="below"):
        F.register_minimum("slow", failed="adult-5k", worked="crx")
    with pytest.raises(ValueError, match="expected of in"):
        F.register_minimum("slow", failed="adult-5k", worked="adult", of="columns")


def test_a_share_too_small_to_release_gives_the_public_cap_and_spends_nothing():
    budget = PrivacyBudget(epsilon=1e-9, delta=1e-5)
    from jdp.mechanisms.noise import DEFAULT_MAX_RECORDS

    rows, ledger, rest = F.release_row_count(np.random.default_rng(0), 500, budget)
    assert rows == DEFAULT_MAX_RECORDS and not ledger.entries and rest == budget


def test_below_the_minimum_warns_and_names_a_method_that_passes(monkeypatch):
    monkeypatch.setattr(F, "_MINIMUM", {("slow", "rows"): 30.0, ("clustmix", "rows"): 100.0})
    small = F.PublicShape(rows=500.0, width=50, epsilon=1.0)  # 10 per width
    with pytest.warns(F.CannotWorkWarning, match="slow cannot work here.*marginals"):
        assert F.check_shape("slow", small) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.check_shape("slow", F.PublicShape(rows=5000.0, width=50, epsilon=1.0)) is None
        assert F.check_shape("marginals", small) is None  # no minimum: never judged


def test_the_message_hides_the_row_count_unless_asked(monkeypatch):
    monkeypatch.setattr(F, "_MINIMUM", {("slow", "rows"): 30.0, ("slow", "smallest class"): 9.0})
    shapes = (F.PublicShape(517.0, 50, 1.0), F.PublicShape(5170.0, 50, 1.0, 223.0))
    for shape, count in zip(shapes, ("517", "223"), strict=True):
        with pytest.warns(F.CannotWorkWarning) as record:
            F.check_shape("slow", shape)
        assert count not in str(record[0].message)


def test_the_smallest_class_has_its_own_minimum(monkeypatch):
    """A table above a method's row minimum whose smallest class is below its class minimum
    warns, naming that count, and the fallback judged by both; a count not released (None)
    is not judged."""
    monkeypatch.setattr(F, "_MINIMUM", {("slow", "rows"): 30.0, ("slow", "smallest class"): 9.0,
                                        ("marginals", "smallest class"): 8.0})  # fmt: skip
    rare = F.PublicShape(rows=5000.0, width=30, epsilon=1.0, smallest_class=222.0)  # 7.4
    assert rare.per_width("smallest class") == pytest.approx(7.4)
    with pytest.warns(F.CannotWorkWarning, match="smallest target class.*clustmix") as record:
        assert F.check_shape("slow", rare) is not None
    assert "7.4 records per width" in str(record[0].message)
    assert F.alternative(F.PublicShape(5000.0, 30, 1.0, 700.0)) == "marginals"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.check_shape("slow", F.PublicShape(5000.0, 30, 1.0, 300.0)) is None
        assert F.check_shape("slow", F.PublicShape(5000.0, 30, 1.0, None)) is None


def test_the_class_counts_are_one_laplace_release_of_their_share():
    """The target's class counts in the schema's order (a class absent from the data counts
    0): one entry of CLASS_COUNT_SHARE of epsilon, the sum and least within 6 sd of the
    truth (Laplace sd sqrt(2) / (share epsilon) per count)."""
    budget = PrivacyBudget(epsilon=2.0, delta=1e-6)
    target = pd.Series(["n"] * 900 + ["p"] * 100)
    rows, smallest, ledger, rest = F.release_class_counts(
        np.random.default_rng(1), target, ("n", "p", "q"), budget
    )
    ((entry),) = ledger.entries
    assert entry.label == "class counts" and isinstance(entry.event, ev.LaplaceDpEvent)
    np.testing.assert_allclose(ledger.epsilon(0.0), F.CLASS_COUNT_SHARE * 2.0, rtol=1e-9)
    assert rest == PrivacyBudget(epsilon=2.0 * (1 - F.CLASS_COUNT_SHARE), delta=1e-6)
    sd = np.sqrt(2) / (F.CLASS_COUNT_SHARE * 2.0)
    assert abs(rows - 1000) < 6 * sd * np.sqrt(3) and abs(smallest - 0) < 6 * sd


def frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(0, 100, n),
            "city": rng.choice(["a", "b", "c"], n),
            "y": rng.choice(["n", "p"], n),
        }
    )


def tiny_fit(n, rows, method="pca-gauss"):
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = fit_model(key_from_seed(0), method, frame(n, n), budget, schema=SCHEMA, rows=rows)
    return model, [w for w in caught if issubclass(w.category, F.CannotWorkWarning)]


def test_a_declared_count_is_read_for_free_and_decides_alone():
    """With ``rows`` declared, whether the warning appears depends on it and not on the
    private number of rows (two tables of very different sizes, the same verdict)."""
    get_method("pca-gauss")  # registers its minimum on import
    assert F.has_minimum("pca-gauss")
    for n in (40, 4000):
        model, warned = tiny_fit(n, rows=10.0)
        assert len(warned) == 1 and "pca-gauss cannot work here" in str(warned[0].message)
        assert "row count" not in [e.label for e in model.ledger.entries]
        model, warned = tiny_fit(n, rows=1e7)
        assert not warned


def test_without_a_declared_count_the_noisy_count_opens_the_ledger_within_budget():
    """pca-gauss has a minimum of the smallest class and SCHEMA a categorical target: the
    class counts are released in place of the row count; without a categorical target, the
    row count."""
    assert F.has_minimum("pca-gauss", "smallest class")
    model, _ = tiny_fit(300, rows=None)
    assert model.ledger.entries[0].label == "class counts"
    assert model.epsilon() <= 1.0 * (1 + 1e-9)
    untargeted = Schema(columns=SCHEMA.columns)
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", F.CannotWorkWarning)
        model = fit_model(key_from_seed(0), "pca-gauss", frame(300, 1), budget, schema=untargeted)
    assert model.ledger.entries[0].label == "row count"


def test_a_rare_class_warns_before_the_fit_and_a_common_one_does_not():
    """A 60-wide table of 4,000 rows (66 rows per width, above pca-gauss's row minimum):
    with 100 records in its smaller class (1.7 per width, 15 noise sd below the class
    minimum) the fit warns; with 2,000 (33 per width, 50 sd above) it does not."""
    wide = Schema(
        columns=(
            Column(name="x", kind="continuous", lower=0, upper=1),
            Column(name="c", kind="categorical", categories=tuple(f"k{i}" for i in range(59))),
            Column(name="y", kind="categorical", categories=("n", "p")),
        ),
        target="y",
    )
    rng = np.random.default_rng(5)
    n = 4000
    for minority, warns in ((100, True), (2000, False)):
        data = pd.DataFrame({
            "x": rng.uniform(size=n), "c": rng.choice(wide["c"].categories, n),
            "y": np.where(np.arange(n) < minority, "p", "n"),
        })  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
            fit_model(key_from_seed(0), "pca-gauss", data, budget, schema=wide)
        said = [w for w in caught if issubclass(w.category, F.CannotWorkWarning)]
        assert len(said) == warns
        if warns:
            assert "smallest target class" in str(said[0].message)


@pytest.mark.parametrize("rows", [0.0, -5.0, float("nan")])
def test_a_declared_count_must_be_positive(rows):
    with pytest.raises(ValueError, match="rows"):
        tiny_fit(50, rows=rows)


def test_one_record_moves_one_class_count_by_one():
    """The class counts' L1 sensitivity (docs/privacy.md, "The smallest class"): adding any
    one record -- of a class, of a class absent so far, with a missing target -- changes the
    count vector by at most 1 in one entry."""
    classes = ("n", "p", "q")
    base = pd.Series(["n"] * 7 + ["p"] * 3 + [None])
    before = F.class_counts(base, classes)
    np.testing.assert_array_equal(before, [7.0, 3.0, 0.0])
    for extra, moved in (("n", 1), ("p", 1), ("q", 1), (None, 0), (np.nan, 0)):
        after = F.class_counts(pd.concat([base, pd.Series([extra])], ignore_index=True), classes)
        assert np.abs(after - before).sum() == moved and np.abs(after - before).max() <= 1


def test_a_release_noisier_than_any_table_could_show_warns_before_the_fit(monkeypatch):
    """check_public_noise: a registered release whose noise reaches the largest signal it
    could carry (ratio >= 1) warns, naming it and a fallback; one below does not; a method
    that registered nothing is not judged."""
    from jdp.synth.signal import Release

    noise = {"level": 0.2}
    monkeypatch.setattr(F, "_PUBLIC_NOISE", {})
    F.register_public_noise("slow", lambda c, k, b: [Release("the values", noise["level"], 0.125)])
    budget, shape = PrivacyBudget(epsilon=1.0, delta=1e-5), F.PublicShape(5000.0, 50, 1.0)
    with pytest.warns(F.CannotWorkWarning, match=r"slow cannot place the values \(noise/signal "
                      r"at least 1.6\).*marginals is expected"):  # fmt: skip
        assert F.check_public_noise("slow", None, None, budget, shape) is not None
    noise["level"] = 0.12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.check_public_noise("slow", None, None, budget, shape) is None
        assert F.check_public_noise("marginals", None, None, budget, shape) is None
