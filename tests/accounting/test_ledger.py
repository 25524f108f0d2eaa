"""Ledger, events, compose dispatch and neighbouring-relation handling."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

from accounting import PrivacyLedger
from accounting import events as ev
from accounting.accountants import rdp
from accounting.accountants.base import effective_noise_multiplier, gaussian_multipliers
from accounting.builders import dpsgd_event
from accounting.compose import best_epsilon, compute_delta, compute_epsilon
from accounting.relations import (
    ADD_OR_REMOVE_ONE,
    REPLACE_ONE,
    convert_relation,
    dpsgd_sensitivity_factor,
    parallel_worst_cases,
)

G = ev.GaussianDpEvent


def _ledger() -> PrivacyLedger:
    return (
        PrivacyLedger()
        .record("dp-pca", G(4.0))
        .record(
            "dp-em", ev.SelfComposedDpEvent(G(8.0), 30), mode="paper", note="DP-EM moment bound"
        )
        .record("dp-sgd", dpsgd_event(1.1, 0.01, 1000))
        .record(
            "per-class", ev.ParallelComposedDpEvent([ev.LaplaceDpEvent(2.0), ev.PureDpEvent(0.3)])
        )
        .record("gdp", ev.MuGdpEvent(0.1))
    )


def test_json_round_trip_preserves_entries_and_epsilon():
    ledger = _ledger()
    text = ledger.to_json()
    back = PrivacyLedger.from_json(text)
    assert back == ledger
    assert json.loads(back.to_json()) == json.loads(text)
    assert back.epsilon(1e-5) == ledger.epsilon(1e-5)
    assert back.entries[1].mode == "paper" and back.entries[1].note == "DP-EM moment bound"


def test_ledger_epsilon_is_the_composed_event():
    ledger = _ledger()
    # by default the minimum over the rigorous accountants; a forced one is that one
    best = best_epsilon(ledger.event, 1e-5)
    assert ledger.epsilon(1e-5) == best.value == min(best.by_accountant.values())
    assert ledger.epsilon_bound(1e-5) == best
    rdp_eps = compute_epsilon(ledger.event, 1e-5, accountant="rdp")
    assert ledger.epsilon(1e-5, accountant="rdp") == rdp_eps >= ledger.epsilon(1e-5)
    assert ledger.delta(ledger.epsilon(1e-5)) <= 1e-5 * (1 + 1e-9)
    rows = ledger.breakdown(1e-5)
    assert [r["label"] for r in rows] == ledger.labels
    assert sum(r["epsilon_alone"] for r in rows) > ledger.epsilon(1e-5)
    text = ledger.report(1e-5)
    assert "add/remove-one" in text and "paper mode" in text and "dp-sgd" in text


def test_ledger_refuses_mixed_relations_and_converts_explicitly():
    ledger = PrivacyLedger().record("a", G(2.0))
    with pytest.raises(ValueError, match="convert_relation"):
        ledger.record("b", G(2.0), neighboring_relation=REPLACE_ONE)
    with pytest.raises(ValueError, match="explicit conversion"):
        ledger.extend(PrivacyLedger(neighboring_relation=REPLACE_ONE))
    replace = PrivacyLedger(neighboring_relation=REPLACE_ONE)
    converted = convert_relation(
        ev.ComposedDpEvent([G(2.0), ev.LaplaceDpEvent(1.0)]), ADD_OR_REMOVE_ONE, REPLACE_ONE
    )
    assert converted == ev.ComposedDpEvent([G(1.0), ev.LaplaceDpEvent(0.5)])
    replace = replace.record("b", converted, neighboring_relation=REPLACE_ONE)
    assert replace.epsilon(1e-5) > PrivacyLedger().record("b", G(2.0)).epsilon(1e-5)


def test_convert_relation_rules():
    assert convert_relation(ev.PureDpEvent(0.5), ADD_OR_REMOVE_ONE, REPLACE_ONE) == ev.PureDpEvent(
        1.0
    )
    assert convert_relation(ev.MuGdpEvent(0.5), ADD_OR_REMOVE_ONE, REPLACE_ONE) == ev.MuGdpEvent(
        1.0
    )
    assert convert_relation(ev.ZCDpEvent(0.1), ADD_OR_REMOVE_ONE, REPLACE_ONE) == ev.ZCDpEvent(0.4)
    assert convert_relation(G(1.0), REPLACE_ONE, REPLACE_ONE) == G(1.0)
    with pytest.raises(ValueError, match="REPLACE_ONE event to ADD_OR_REMOVE_ONE"):
        convert_relation(G(1.0), REPLACE_ONE, ADD_OR_REMOVE_ONE)
    with pytest.raises(ValueError, match="PoissonSampledDpEvent"):
        convert_relation(dpsgd_event(1.0, 0.1, 10), ADD_OR_REMOVE_ONE, REPLACE_ONE)


def test_parallel_composition_under_both_relations():
    a, b, c = G(1.0), G(2.0), G(4.0)
    par = ev.ParallelComposedDpEvent([a, b, c])
    orders = rdp.DEFAULT_ORDERS
    # add/remove: the worst single component
    np.testing.assert_allclose(rdp.event_rdp(par), rdp.gaussian_rdp(1.0, orders))
    assert compute_epsilon(par, 0) == math.inf
    # replace-one: max(two largest composed, worst component at doubled sensitivity)
    pair = rdp.gaussian_rdp(1.0, orders) + rdp.gaussian_rdp(2.0, orders)
    within = rdp.gaussian_rdp(0.5, orders)
    np.testing.assert_allclose(
        rdp.event_rdp(par, neighboring_relation=REPLACE_ONE), np.maximum(pair, within)
    )
    # pure: max under add/remove, 2x under replace-one (Laplace partitions)
    lap = ev.ParallelComposedDpEvent([ev.LaplaceDpEvent(1.0), ev.LaplaceDpEvent(2.0)])
    assert compute_epsilon(lap, 0) == pytest.approx(1.0)
    assert compute_epsilon(lap, 0, neighboring_relation=REPLACE_ONE) == pytest.approx(2.0)
    # a record may change partition between rounds: still bounded by the worst per round
    rounds = ev.SelfComposedDpEvent(par, 10)
    np.testing.assert_allclose(rdp.event_rdp(rounds), 10 * rdp.gaussian_rdp(1.0, orders))
    for acc in ("gdp", "zcdp"):
        assert compute_epsilon(par, 1e-5, accountant=acc) == pytest.approx(
            compute_epsilon(a, 1e-5, accountant=acc)
        )


def test_parallel_cases_list_equal_components_once():
    # DPGM's k clusters run one identical event each: one case to analyse, not k (k^2 / 2
    # pairs under replace-one); the pair of two equal partitions stays (a record may move
    # between them), and an event seen once has no pair with itself.
    a, b = G(1.0), G(2.0)
    cases = parallel_worst_cases([a, G(1.0), b, a], ADD_OR_REMOVE_ONE)
    assert cases == [(a, ADD_OR_REMOVE_ONE), (b, ADD_OR_REMOVE_ONE)]
    replace = parallel_worst_cases([a, b, a], REPLACE_ONE)
    pairs = [e for e, r in replace if r == ADD_OR_REMOVE_ONE]
    assert pairs == [ev.ComposedDpEvent([a, a]), ev.ComposedDpEvent([a, b])]
    assert len(replace) == 4  # the two pairs and each kind within its partition
    assert len(parallel_worst_cases([a, b], REPLACE_ONE)) == 3  # no (a, a) nor (b, b)
    # the figure is the maximum over the full list of cases, under both relations
    par = ev.ParallelComposedDpEvent([a, b, a, b])
    every_pair = [ev.ComposedDpEvent([x, y]) for x, y in [(a, b), (a, a), (b, b)]]
    within = [convert_relation(x, ADD_OR_REMOVE_ONE, REPLACE_ONE) for x in (a, b)]
    for acc in ("rdp", "gdp", "zcdp"):
        eps = functools.partial(compute_epsilon, delta=1e-5, accountant=acc)
        assert eps(par) == pytest.approx(eps(a), rel=1e-12)
        full = max(
            *[eps(e) for e in every_pair],
            *[eps(e, neighboring_relation=REPLACE_ONE) for e in within],
        )
        assert eps(par, neighboring_relation=REPLACE_ONE) == pytest.approx(full, rel=1e-12)


@pytest.mark.parametrize("accountant", ["rdp", "gdp", "zcdp", "pure"])
def test_nested_parallel_under_replace_one_is_the_flat_parallel(accountant):
    # A partition of a partition is a partition: under replace-one the record may move
    # between two sub-partitions of one part, or be replaced inside a sub-partition.
    leaf = ev.PureDpEvent(1.0) if accountant == "pure" else G(1.0)
    nested = ev.ParallelComposedDpEvent(
        [ev.ParallelComposedDpEvent([leaf, leaf]), ev.NoOpDpEvent()]
    )
    flat = ev.ParallelComposedDpEvent([leaf, leaf, ev.NoOpDpEvent()])
    delta = 0 if accountant == "pure" else 1e-5
    within = convert_relation(leaf, ADD_OR_REMOVE_ONE, REPLACE_ONE)
    kwargs = {"accountant": accountant, "neighboring_relation": REPLACE_ONE}
    expected = compute_epsilon(flat, delta, **kwargs)
    assert compute_epsilon(nested, delta, **kwargs) == pytest.approx(expected, rel=1e-12)
    assert expected >= compute_epsilon(ev.ComposedDpEvent([leaf, leaf]), delta, **kwargs)
    assert expected >= compute_epsilon(within, delta, **kwargs)


def test_parallel_nested_inside_a_composition_is_walked_under_replace_one():
    inner = ev.ParallelComposedDpEvent([G(1.0), G(1.0)])
    par = ev.ParallelComposedDpEvent([ev.ComposedDpEvent([inner, G(4.0)]), ev.NoOpDpEvent()])
    orders = rdp.DEFAULT_ORDERS
    # worst case: the record is replaced inside one sub-partition of part 0, so the inner
    # Gaussian sees a replacement (z / 2) and so does the G(4) release on part 0.
    within = rdp.gaussian_rdp(0.5, orders) + rdp.gaussian_rdp(2.0, orders)
    np.testing.assert_allclose(rdp.event_rdp(par, neighboring_relation=REPLACE_ONE), within)
    with pytest.raises(ValueError, match="ADD_OR_REMOVE_ONE"):
        compute_epsilon(par, 1e-5, accountant="pld", neighboring_relation=REPLACE_ONE)
    with pytest.raises(ValueError, match="ParallelComposedDpEvent"):
        compute_epsilon(par, 1e-5, accountant="moments", neighboring_relation=REPLACE_ONE)


def test_pure_accounting_and_non_private():
    event = ev.ComposedDpEvent(
        [
            ev.PureDpEvent(0.5),
            ev.SelfComposedDpEvent(ev.LaplaceDpEvent(2.0), 4),
            ev.PoissonSampledDpEvent(0.1, ev.PureDpEvent(1.0)),
        ]
    )
    expected = 0.5 + 4 * 0.5 + math.log1p(0.1 * math.expm1(1.0))
    assert compute_epsilon(event, 0) == pytest.approx(expected)
    assert compute_epsilon(event, 1e-5, accountant="pure") == pytest.approx(expected)
    assert compute_delta(event, expected, accountant="pure") == 0.0
    assert 0 < compute_delta(event, expected - 1, accountant="pure") < 1
    assert compute_epsilon(G(1.0), 0) == math.inf
    assert compute_epsilon(ev.ComposedDpEvent([G(1.0), ev.NonPrivateDpEvent()]), 1e-5) == math.inf
    assert compute_epsilon(G(0.0), 1e-5) == math.inf  # sigma = 0: the non-private limit
    with pytest.raises(ValueError, match="pure accountant"):
        compute_epsilon(G(1.0), 1e-5, accountant="pure")


def test_dpsgd_event_and_effective_multiplier():
    assert dpsgd_event(1.0, 0.1, 5) == ev.SelfComposedDpEvent(
        ev.PoissonSampledDpEvent(0.1, G(1.0)), 5
    )
    wor = dpsgd_event(1.0, 0.1, 5, sampling="without_replacement", dataset_size=1000)
    # z = std / C; the clipped sum's replace-one sensitivity is 2C, so the Gaussian is z / 2
    assert wor == ev.SelfComposedDpEvent(ev.SampledWithoutReplacementDpEvent(1000, 100, G(0.5)), 5)
    assert effective_noise_multiplier([2.0, 2.0]) == pytest.approx(math.sqrt(2.0))
    assert gaussian_multipliers(
        ev.ComposedDpEvent([G(1.0), ev.SelfComposedDpEvent(G(2.0), 2)])
    ) == [1.0, 2.0, 2.0]
    assert gaussian_multipliers(ev.LaplaceDpEvent(1.0)) is None


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: dpsgd_event(0.0, 0.1, 5), "noise_multiplier"),
        (lambda: dpsgd_event(-1.0, 0.1, 5), "noise_multiplier"),
        (lambda: dpsgd_event(1.0, 0.0, 5), "sampling_prob"),
        (lambda: dpsgd_event(1.0, 1.01, 5), "sampling_prob"),
        (lambda: dpsgd_event(1.0, float("nan"), 5), "sampling_prob"),
        (lambda: dpsgd_event(1.0, 0.1, -1), "steps"),
        (lambda: dpsgd_event(1.0, 0.1, 5, sampling="shuffle"), "sampling"),
        (lambda: dpsgd_sensitivity_factor("shuffle"), "sampling"),
        (lambda: compute_epsilon(G(1.0), 1.0), "delta"),
        (lambda: compute_epsilon(G(1.0), -0.1), "delta"),
        (lambda: compute_epsilon(G(1.0), float("nan")), "delta"),
        (lambda: compute_delta(G(1.0), -1.0), "epsilon"),
        (lambda: compute_epsilon(G(1.0), 1e-5, accountant="nope"), "accountant"),
        (lambda: compute_epsilon(G(1.0), 1e-5, neighboring_relation="x"), "neighboring_relation"),
        (lambda: PrivacyLedger().record("x", G(1.0)).epsilon(2.0), "delta"),
    ],
)
def test_invalid_arguments_raise_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_report_labels_paper_mode_entries_as_the_papers_claim():
    from accounting.ledger import PAPER_CLAIM

    strict = PrivacyLedger().record("dp-sgd", G(3.0))
    assert PAPER_CLAIM not in strict.report(1e-5) and "NOT a DP guarantee" not in strict.report(
        1e-5
    )
    paper = strict.record("mixing", G(2.0), mode="paper", note=f"{PAPER_CLAIM}: Eq. 8")
    paper = paper.record("clustering", ev.NoOpDpEvent(), mode="paper")
    first, *_ = paper.report(1e-5).splitlines()
    _, mixing, clustering = [x for x in paper.report(1e-5).splitlines() if x.startswith("  - ")]
    assert first.startswith(f"Paper mode: {PAPER_CLAIM} -- NOT a DP guarantee.")
    assert mixing.endswith(f"[paper mode: {PAPER_CLAIM}: Eq. 8]")
    assert clustering.endswith(f"[paper mode: {PAPER_CLAIM}]")  # no note: the claim itself


# -- the privacy statement --------------------------------------------------------------------
def _p3gm_like() -> PrivacyLedger:
    ledger = PrivacyLedger().record("dp-pca", G(4.0))
    for _ in range(20):
        ledger = ledger.record("dp-em", G(30.0))
    return ledger.record("dp-sgd", dpsgd_event(1.1, 0.01, 300))


def test_report_groups_repeated_entries_with_each_and_group_epsilon():
    ledger = _p3gm_like()
    lines = ledger.report(1e-5).splitlines()
    assert len(lines) <= 10  # P3GM's statement stays short
    em = [x for x in lines if "dp-em" in x]
    assert len(em) == 1 and "dp-em x 20:" in em[0]
    each = PrivacyLedger().record("dp-em", G(30.0)).epsilon(1e-5)
    together = PrivacyLedger().record("dp-em", ev.SelfComposedDpEvent(G(30.0), 20)).epsilon(1e-5)
    assert f"epsilon {each:.4g} each, {together:.4g} together" in em[0]
    assert together < 20 * each  # composition is tighter than adding
    assert "22 ledger entries" in lines[0]
    assert "do not add up" in ledger.report(1e-5)
    # the groups: consecutive runs of one label and mode
    assert [len(g) for g in ledger.groups()] == [1, 20, 1]
    split = PrivacyLedger().record("a", G(2.0)).record("b", G(2.0)).record("a", G(2.0))
    assert [len(g) for g in split.groups()] == [1, 1, 1]
    # notes that count iterations (as P3GM's DP-EM entries do) do not split a group
    counted = PrivacyLedger()
    for i in range(20):
        counted = counted.record("dp-em", G(30.0), note=f"iteration {i + 1} of 20")
    assert [len(g) for g in counted.groups()] == [20]
    assert "dp-em x 20:" in counted.report(1e-5)


def test_report_names_the_accountant_and_what_the_others_give():
    ledger = _p3gm_like()
    bound = ledger.epsilon_bound(1e-5)
    first = ledger.report(1e-5).splitlines()[0]
    assert first.startswith(f"Privacy: ({bound.value:.4g}, 1e-05)-DP under add/remove-one")
    title = {"rdp": "RDP", "pld": "PLD", "gdp": "GDP", "zcdp": "zCDP", "pure": "pure"}
    assert f"({title[bound.accountant]} accountant;" in first
    for name, value in bound.by_accountant.items():
        if value > bound.value:
            assert f"{title[name]} gives {value:.4g}" in first
    forced = ledger.report(1e-5, accountant="rdp").splitlines()[0]
    assert f"({ledger.epsilon(1e-5, accountant='rdp'):.4g}, 1e-05)" in forced
    assert "(RDP accountant; 22 ledger entries)" in forced


def test_report_states_relation_and_delta_in_words():
    one = PrivacyLedger().record("dp-pca", G(4.0))
    text = one.report(1e-5)
    assert "1 ledger entry)" in text and "entries" not in text.splitlines()[0]
    assert "whether or not any one row is in the data" in text
    assert f"e^epsilon = {math.exp(one.epsilon(1e-5)):.3g}x" in text
    assert "delta = 1e-05 is the probability that the epsilon bound may fail" in text
    assert "1/n" in text
    assert "do not add up" not in text  # one step: nothing to add up
    replace = PrivacyLedger(neighboring_relation=REPLACE_ONE).record(
        "x", G(2.0), neighboring_relation=REPLACE_ONE
    )
    assert "number of rows is treated as public" in replace.report(1e-5)
    pure = PrivacyLedger().record("marginals", ev.LaplaceDpEvent(0.5)).report(0)
    assert pure.startswith("Privacy: (2, 0)-DP") and "pure DP" in pure
    none = PrivacyLedger().record("raw", ev.NonPrivateDpEvent()).report(1e-5)
    assert none.startswith("Privacy: (inf, 1e-05)-DP") and "not private" in none
