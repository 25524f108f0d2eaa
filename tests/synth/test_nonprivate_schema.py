"""A schema read off the data without DP is marked, and so is every model built on it
(issue 24, item 4).

``infer_schema_nonprivate`` copies exact minima, maxima and the observed categories (one
97-year-old makes the saved age bound 97). A model fitted on such a schema says in its
privacy statement, as paper mode does, that the release is NOT DP as a whole; the mark is
saved with the schema in ``model.json`` and reported by ``jdp fit --json``.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import jax
import numpy as np
import pandas as pd
import pytest

from accounting import PrivacyBudget
from jdp.cli import main
from jdp.data.schema import (
    NONPRIVATE_SCHEMA_CLAIM,
    Column,
    NonPrivateSchemaWarning,
    Schema,
    infer_schema_nonprivate,
)
from jdp.synth import base, io

DECLARED = Schema(
    columns=(
        Column(name="age", kind="integer", lower=17, upper=90),
        Column(name="c", kind="categorical", categories=("a", "b")),
    )
)


def _frame(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 60, size=n), "c": rng.choice(["a", "b"], n)})


def _infer(frame: pd.DataFrame) -> Schema:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonPrivateSchemaWarning)
        return infer_schema_nonprivate(frame)


def test_inferred_schema_is_marked_and_the_mark_round_trips(tmp_path):
    inferred = _infer(_frame())
    assert inferred.nonprivate
    assert inferred.to_dict()["nonprivate"] is True
    assert Schema.from_dict(inferred.to_dict()) == inferred
    inferred.save(tmp_path / "s.json")
    assert Schema.load(tmp_path / "s.json").nonprivate
    assert not DECLARED.nonprivate
    assert "nonprivate" not in DECLARED.to_dict()  # files written before the mark still load
    with pytest.raises(ValueError, match="at most one of from_release and nonprivate"):
        Schema(columns=DECLARED.columns, from_release=True, nonprivate=True)


def test_model_on_a_nonprivate_schema_saves_the_mark_and_says_it_is_not_dp(tmp_path):
    frame = _frame()
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    model = base.fit_model(jax.random.key(0), "marginals", frame, budget, schema=_infer(frame))
    assert model.schema.nonprivate
    io.save(model, tmp_path / "m")
    doc = json.loads((tmp_path / "m" / io.MODEL_FILE).read_text())
    assert doc["schema"]["nonprivate"] is True
    loaded = io.load(tmp_path / "m")
    assert loaded.schema.nonprivate
    statement = loaded.privacy_statement()
    assert statement.startswith(NONPRIVATE_SCHEMA_CLAIM)
    assert "NOT differentially private" in statement and "infer_schema_nonprivate" in statement
    assert model.ledger.report(budget.delta) in statement  # the fit's own guarantee follows

    declared = dataclasses.replace(model, schema=DECLARED)  # same ledger, declared schema
    io.save(declared, tmp_path / "d")
    assert "nonprivate" not in json.loads((tmp_path / "d" / io.MODEL_FILE).read_text())["schema"]
    reloaded = io.load(tmp_path / "d")
    assert not reloaded.schema.nonprivate
    assert reloaded.privacy_statement() == model.ledger.report(budget.delta)
    assert "NOT differentially private" not in reloaded.privacy_statement()


def test_fit_json_and_statement_carry_the_mark(capsys, tmp_path):
    frame = _frame()
    frame.to_csv(tmp_path / "d.csv", index=False)
    _infer(frame).save(tmp_path / "inferred.json")
    argv = ["fit", "--data", tmp_path / "d.csv", "--schema", tmp_path / "inferred.json",
            "--epsilon", 1, "--out", tmp_path / "m", "--seed", 0, "--json", "--quiet"]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nonprivate_schema"] is True
    assert NONPRIVATE_SCHEMA_CLAIM in io.load(tmp_path / "m").privacy_statement()


def test_report_privacy_section_carries_the_mark():
    """``jdp report``'s privacy section (``write_report``) opens its statement the same way."""
    from accounting import PrivacyLedger
    from accounting import events as ev
    from jdp.eval.report import privacy_section

    ledger = PrivacyLedger().record("toy", ev.LaplaceDpEvent(1.0))
    marked = privacy_section(ledger, 1e-6, nonprivate_schema=True)
    assert marked["nonprivate_schema"] is True
    assert marked["statement"] == f"{NONPRIVATE_SCHEMA_CLAIM}\n{ledger.report(1e-6)}"
    plain = privacy_section(ledger, 1e-6)
    assert plain["nonprivate_schema"] is False and plain["statement"] == ledger.report(1e-6)
