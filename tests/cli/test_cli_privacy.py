"""Privacy of the command line's own output and bookkeeping (issue 10, items 11-13):
stderr shows no private counts unless ``--verbose``; ``fit`` and ``sample`` with the same
``--seed`` use distinct key streams; ``fit`` never silently overwrites a saved model."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _cli_run import run

from jdp.cli._args import command_key

N = 137  # a distinctive private row count (1/137 = 0.0073)
CLIPPED = 29  # a distinctive private count of clipped values


@pytest.fixture()
def private_csv(tmp_path, adult):
    """137 Adult rows, 29 of them with an age above the declared bound 90 (clipped)."""
    frame = adult.train.iloc[:N].copy()
    frame.loc[: CLIPPED - 1, "age"] = 95
    frame.to_csv(tmp_path / "train.csv", index=False)
    adult.schema.save(tmp_path / "schema.json")
    return tmp_path / "train.csv", tmp_path / "schema.json"


def fit(capsys, tmp_path, data, schema, *extra: object) -> tuple[int, str, str]:
    return run(
        capsys, "fit", "--data", data, "--schema", schema, "--epsilon", 1, "--delta", 0.01,
        "--out", tmp_path / "m", "--force", *extra,
    )  # fmt: skip


# -- item 11: no private counts on stderr by default ---------------------------------------------


def test_fit_warnings_hide_the_row_count_and_clip_counts(capsys, tmp_path, private_csv):
    """Not even whether values were clipped or delta >= 1/n (issue 24, item 3): no
    data-dependent warning by default; the text output says what a fit does whatever the
    data (``DATA_NOTE``), the same for every table."""
    from jdp.cli.fit import DATA_NOTE

    code, out, err = fit(capsys, tmp_path, *private_csv)
    assert code == 0, err
    # the no-signal verdict reads the released values only (jdp.synth.signal): it may appear
    released_only = "too small for any signal"
    err = "\n".join(line for line in err.splitlines() if released_only not in line)
    assert "delta=0.01" not in err and "clipped" not in err and "warning" not in err
    for secret in (str(N), "0.0073", str(CLIPPED)):
        assert secret not in err
    assert DATA_NOTE in out
    code, out, _ = fit(capsys, tmp_path, *private_csv, "--verbose")
    assert code == 0 and DATA_NOTE not in out  # --verbose shows the warnings themselves


def test_fit_verbose_shows_the_counts_to_the_data_holder(capsys, tmp_path, private_csv):
    code, _, err = fit(capsys, tmp_path, *private_csv, "--verbose")
    assert code == 0, err
    assert "1/n = 0.0073" in err and f"{CLIPPED} value(s) of column 'age'" in err


def test_a_table_of_one_row_fits_like_any_other(capsys, tmp_path, adult):
    """The row count is private (DESIGN rule 7): one row used to be refused ("too few
    rows"), which told whoever saw the refusal that the table had fewer than two."""
    adult.train.iloc[:1].to_csv(tmp_path / "one.csv", index=False)
    adult.schema.save(tmp_path / "schema.json")
    code, _, err = fit(capsys, tmp_path, tmp_path / "one.csv", tmp_path / "schema.json")
    assert code == 0, err
    assert "too few rows" not in err


# -- item 12: fit and sample with the same seed use different keys -------------------------------


def test_command_key_separates_the_streams_of_fit_and_sample():
    fit_key, sample_key = command_key(7, "fit"), command_key(7, "sample")
    data = [np.asarray(jax.random.key_data(k)) for k in (fit_key, sample_key)]
    assert not np.array_equal(*data)
    np.testing.assert_array_equal(jax.random.key_data(command_key(7, "fit")), data[0])
    with pytest.raises(ValueError, match="expected command in"):
        command_key(7, "fti")


def test_fit_and_sample_commands_draw_their_keys_from_their_own_streams(
    capsys, tmp_path, private_csv, monkeypatch
):
    from jdp.synth import base

    seen = {}
    fit_model, sample_model = base.fit_model, base.sample_model

    def spy(name, real):
        def wrapped(key, *args, **kwargs):
            seen[name] = np.asarray(jax.random.key_data(key))
            return real(key, *args, **kwargs)

        return wrapped

    monkeypatch.setattr(base, "fit_model", spy("fit", fit_model))
    monkeypatch.setattr(base, "sample_model", spy("sample", sample_model))
    assert fit(capsys, tmp_path, *private_csv, "--seed", 7)[0] == 0
    code, _, err = run(capsys, "sample", "--model", tmp_path / "m", "-n", 5, "--out",
                       tmp_path / "s.csv", "--seed", 7)  # fmt: skip
    assert code == 0, err
    np.testing.assert_array_equal(seen["fit"], jax.random.key_data(command_key(7, "fit")))
    np.testing.assert_array_equal(seen["sample"], jax.random.key_data(command_key(7, "sample")))
    assert not np.array_equal(seen["fit"], seen["sample"])


# -- item 13: fit refuses to overwrite a saved model without --force -----------------------------


def test_fit_refuses_a_non_empty_output_directory_without_force(capsys, tmp_path, private_csv):
    data, schema = private_csv
    args = ("fit", "--data", data, "--schema", schema, "--epsilon", 1, "--out", tmp_path / "m")
    assert run(capsys, *args)[0] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("jdp fit: error: ") and "--overwrite" in err
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    code, _, err = run(capsys, *args[:-1], tmp_path / "other")
    assert code == 2 and sorted(p.name for p in (tmp_path / "other").iterdir()) == ["notes.txt"]
    code, _, err = run(capsys, *args, "--force")
    assert code == 0, err
    assert (tmp_path / "m" / "params.npz").read_bytes() != before["params.npz"]  # fresh noise


def test_fit_writes_into_an_empty_existing_directory(capsys, tmp_path, private_csv):
    data, schema = private_csv
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "fit", "--data", data, "--schema", schema, "--epsilon", 1,
                       "--out", tmp_path / "empty")  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "empty" / "model.json").is_file()
