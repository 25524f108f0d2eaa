"""Files and failures of the CLI (issue 17): outputs written atomically, clean exit-2 errors,
Ctrl-C, broken pipes, ``-n noisy``, chunked sampling, ``--version`` and per-method help.

Most checks call :func:`jdp.cli.main` in-process (a traceback there fails the test); the ones
that need a real process (signals, pipes, ``kill -9``, the console's exit status) run
``python -c 'from jdp.cli import main; ...'`` as a subprocess.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_run import run

from jdp.cli import main
from jdp.cli.fit import option_meanings
from jdp.random import key_from_seed
from jdp.synth import base, io, marginals

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {
    "columns": [
        {"name": "x", "kind": "continuous", "lower": 0, "upper": 1},
        {"name": "c", "kind": "categorical", "categories": ["a", "b"]},
    ]
}


def one_line(err: str, command: str) -> bool:
    return err.count("\n") == 1 and err.startswith(f"jdp {command}: error: ")


def jdp(*argv, cwd: Path, **kwargs) -> subprocess.Popen:
    """``jdp ARGV`` as a subprocess (stdout/stderr piped unless given).

    The child raises KeyboardInterrupt on SIGINT, as a command typed at a terminal does: a
    test suite run in the background (``cmd &`` in a non-interactive shell) inherits SIGINT
    ignored, and Python then keeps it ignored in the child.
    """
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from jdp.cli import main; sys.exit(main())"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, argv)], cwd=cwd, env=env, text=True, **kwargs
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny private CSV, its schema, and a marginals model fitted on it."""
    root = tmp_path_factory.mktemp("cli_files")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.uniform(size=200), "c": rng.choice(["a", "b"], size=200)})
    frame.to_csv(root / "d.csv", index=False)
    (root / "s.json").write_text(json.dumps(SCHEMA))
    (root / "afile").write_text("not a directory")
    code = main(["fit", "--data", str(root / "d.csv"), "--schema", str(root / "s.json"),
                 "--epsilon", "1", "--out", str(root / "m"), "--seed", "1"])  # fmt: skip
    assert code == 0
    return root


def fit_args(files, *extra):
    return ("fit", "--data", files / "d.csv", "--schema", files / "s.json", "--epsilon", 1, *extra)


# -- item 3: clean failures, exit 2 and one line, nothing written ------------------------------


@pytest.mark.parametrize(
    "out, message",
    [
        ("afile", "exists and is not a directory"),
        ("afile/m", "afile is a file, not a directory"),
        ("", "expected a path for --out, got an empty string"),
        ("/proc/jdp-m", "/proc"),  # not writable (also as root: the write itself fails)
    ],
    ids=["existing-file", "file-parent", "empty", "unwritable"],
)
def test_fit_refuses_an_unusable_out(capsys, files, out, message):
    target = out if out.startswith("/") or not out else files / out
    before = sorted(p.name for p in files.iterdir())
    code, stdout, err = run(capsys, *fit_args(files, "--out", target))
    assert code == 2 and stdout == "" and one_line(err, "fit") and message in err, err
    assert sorted(p.name for p in files.iterdir()) == before


def test_fit_overwrite_and_its_force_alias(capsys, files, tmp_path):
    code, _, _ = run(capsys, *fit_args(files, "--out", tmp_path / "m"))
    assert code == 0
    code, _, err = run(capsys, *fit_args(files, "--out", tmp_path / "m"))
    assert code == 2 and one_line(err, "fit") and "pass --overwrite" in err
    for flag in ("--overwrite", "--force"):
        before = (tmp_path / "m" / io.PARAMS_FILE).read_bytes()
        assert run(capsys, *fit_args(files, "--out", tmp_path / "m", flag))[0] == 0
        assert (tmp_path / "m" / io.PARAMS_FILE).read_bytes() != before  # fresh noise


def test_fit_on_a_csv_is_fit_model_on_its_frame(files):
    """``jdp fit`` conforms the table as it reads it (the frame as read is dropped before the
    fit, issue 29 item 4): the model is the one fit_model makes from the DataFrame."""
    from accounting import PrivacyBudget
    from jdp.cli._args import command_key
    from jdp.data.read import read_csv
    from jdp.data.schema import Schema

    schema = Schema.from_dict(SCHEMA)
    expected = base.fit_model(
        command_key(1, "fit"), "marginals", read_csv(files / "d.csv", schema),
        PrivacyBudget(epsilon=1.0, delta=1e-5), schema=schema,
    )  # fmt: skip
    saved = io.load(files / "m")
    assert saved.ledger.to_dict() == expected.ledger.to_dict()
    for name, value in expected.params.items():
        np.testing.assert_array_equal(saved.params[name], value)


def test_fit_refuses_a_non_private_method_before_reading_data(capsys, files, tmp_path):
    """``pgm`` is refused up front: the data path does not even exist."""
    code, _, err = run(capsys, "fit", "--data", tmp_path / "missing.csv", "--schema",
                       files / "s.json", "--epsilon", 1, "--method", "pgm",
                       "--out", tmp_path / "m")  # fmt: skip
    assert code == 2 and one_line(err, "fit") and "'pgm' is a non-private reference" in err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--delta", "-1e-5"), "expected delta >= 0, got -1e-05"),
        (("--seed", str(10**30)), "expected a seed in [0, 2**63 - 1]"),
        (("--seed", "-1"), "expected a seed in [0, 2**63 - 1]"),
    ],
    ids=["negative-delta", "huge-seed", "negative-seed"],
)
def test_bad_numbers_are_range_errors(capsys, files, tmp_path, extra, message):
    code, _, err = run(capsys, *fit_args(files, "--out", tmp_path / "m", *extra))
    assert code == 2 and one_line(err, "fit") and message in err, err
    assert not (tmp_path / "m").exists()


def test_a_large_seed_within_range_works(capsys, files, tmp_path):
    seed = 2**63 - 1
    code, _, err = run(capsys, *fit_args(files, "--out", tmp_path / "m", "--seed", seed))
    assert code == 0, err
    code, _, err = run(capsys, "sample", "--model", tmp_path / "m", "-n", 3, "--seed", seed,
                       "--out", tmp_path / "s.csv")  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    "out, message",
    [
        ("m", "is a directory; expected a file path"),
        ("afile/s.csv", "afile is a file, not a directory"),
        ("", "expected a path for --out"),
    ],
    ids=["directory", "file-parent", "empty"],
)
def test_sample_refuses_an_unusable_out(capsys, files, out, message):
    target = files / out if out else out
    code, _, err = run(capsys, "sample", "--model", files / "m", "-n", 5, "--out", target)
    assert code == 2 and one_line(err, "sample") and message in err, err


def test_truncated_params_and_corrupt_model_json_name_the_file(capsys, files, tmp_path):
    model = tmp_path / "m"
    (tmp_path / "m").mkdir()
    for name in (io.PARAMS_FILE, io.MODEL_FILE):
        (model / name).write_bytes((files / "m" / name).read_bytes())
    data = (model / io.PARAMS_FILE).read_bytes()
    (model / io.PARAMS_FILE).write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, "sample", "--model", model, "-n", 5, "--out", tmp_path / "s.csv")
    assert code == 2 and one_line(err, "sample") and str(model / io.PARAMS_FILE) in err
    assert "pickle" not in err and not (tmp_path / "s.csv").exists()
    (model / io.MODEL_FILE).write_text('{"format_version": ')
    code, _, err = run(capsys, "sample", "--model", model, "-n", 5, "--out", tmp_path / "s.csv")
    assert code == 2 and one_line(err, "sample") and str(model / io.MODEL_FILE) in err
    assert "is not valid JSON" in err


def test_json_errors_are_one_json_object_on_stderr(capsys, files, tmp_path):
    code, out, err = run(capsys, "sample", "--model", tmp_path / "nowhere", "-n", 5,
                         "--out", tmp_path / "s.csv", "--json")  # fmt: skip
    assert code == 2 and out == "" and err.count("\n") == 1
    doc = json.loads(err)
    assert doc["command"] == "sample" and "no saved model" in doc["error"]
    code, _, err = run(capsys, *fit_args(files, "--out", tmp_path / "m", "--delta", "x", "--json"))
    assert code == 2 and json.loads(err)["command"] == "fit"  # argparse's own errors too


def test_datasets_export_refuses_a_file_out(capsys, files):
    code, _, err = run(capsys, "datasets", "--export", "adult", "--out", files / "afile")
    assert code == 2 and one_line(err, "datasets") and "not a directory" in err
    assert (files / "afile").read_text() == "not a directory"


# -- item 2: -n noisy, chunks with bounded memory, refusal of what cannot be written -----------


def test_sample_defaults_to_the_noisy_row_count(capsys, files, tmp_path):
    """marginals releases a noisy n (its histograms' pooled noisy totals); sampling uses it by
    default and for ``-n noisy``, and a method that releases none needs ``-n``."""
    model = io.load(files / "m")
    noisy = base.noisy_row_count(model)
    # post-processing of the released counts (every histogram's total, pooled by inverse
    # variance: weights 1 / cells), never the private n: the released histograms decide it
    hists = marginals.noisy_histograms(model.params, model.schema, model.config)
    weights = np.array([1 / h.size for h in hists])
    pooled = weights @ np.array([h.sum() for h in hists]) / weights.sum()
    assert noisy == max(1, round(float(pooled)))
    for extra in ((), ("-n", "noisy")):
        code, out, err = run(capsys, "sample", "--model", files / "m", "--out",
                             tmp_path / "s.csv", "--json", *extra)  # fmt: skip
        assert code == 0, err
        assert json.loads(out)["rows"] == noisy == len(pd.read_csv(tmp_path / "s.csv"))


def test_sample_without_a_noisy_count_needs_n(capsys, files, tmp_path, monkeypatch):
    method = base.get_method("marginals")
    monkeypatch.setitem(base._REGISTRY, "marginals", dataclasses.replace(method, noisy_rows=None))
    code, _, err = run(capsys, "sample", "--model", files / "m", "--out", tmp_path / "s.csv")
    assert code == 2 and one_line(err, "sample") and "give the number of rows (-n N)" in err


def test_sample_chunks_bound_memory_and_keep_one_chunk_equal_to_one_call(files):
    model = io.load(files / "m")
    key = key_from_seed(4)
    chunks = list(base.sample_chunks(key, model, 23, chunk_rows=10))
    assert [len(c) for c in chunks] == [10, 10, 3]
    pd.testing.assert_frame_equal(chunks[0], base.sample_model(key, model, 10))
    again = list(base.sample_chunks(key, model, 23, chunk_rows=10))
    for a, b in zip(chunks, again, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert not chunks[0].equals(chunks[1])  # each chunk has its own key
    with pytest.raises(ValueError, match="at most 2\\*\\*32 chunks"):
        next(base.sample_chunks(key, model, 2**33 + 1, chunk_rows=2))


def test_cli_sample_draws_in_chunks(capsys, files, tmp_path, monkeypatch):
    sizes = []

    def spy(key, model, n):
        sizes.append(n)
        return sample_model(key, model, n)

    sample_model = base.sample_model
    monkeypatch.setattr(base, "sample_model", spy)
    code, _, err = run(capsys, "sample", "--model", files / "m", "-n", 120_001,
                       "--out", tmp_path / "s.csv")  # fmt: skip
    assert code == 0, err
    assert sizes == [50_000, 50_000, 20_001]
    assert len(pd.read_csv(tmp_path / "s.csv")) == 120_001


def test_sample_refuses_fast_what_its_disk_cannot_hold(capsys, files, tmp_path):
    start = time.monotonic()
    code, _, err = run(capsys, "sample", "--model", files / "m", "-n", 10**12,
                       "--out", tmp_path / "s.csv")  # fmt: skip
    assert code == 2 and one_line(err, "sample") and "-n 1000000000000 would write about" in err
    assert time.monotonic() - start < 60
    assert list(tmp_path.iterdir()) == []  # no CSV, no temporary file


# -- item 2: interrupted outputs leave the old one or none -------------------------------------


def _wait_for_temp(directory: Path, proc: subprocess.Popen, pattern: str) -> None:
    deadline = time.monotonic() + 120
    while not any(p.stat().st_size > 0 for p in directory.glob(pattern) if p.is_file()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sampler never started writing"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_an_interrupted_sample_leaves_the_old_csv(files, tmp_path, how):
    (tmp_path / "s.csv").write_text("old\n")
    proc = jdp("sample", "--model", files / "m", "-n", 20_000_000, "--out", "s.csv",
               cwd=tmp_path)  # fmt: skip
    _wait_for_temp(tmp_path, proc, ".s.csv.*.tmp")
    proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert (tmp_path / "s.csv").read_text() == "old\n"
    if how == "sigint":
        assert proc.returncode == 130 and err == "jdp sample: error: interrupted\n", err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]  # temp removed
    else:
        assert proc.returncode == -signal.SIGKILL


def test_an_interrupted_report_leaves_the_old_report(capsys, files, tmp_path, monkeypatch):
    from jdp.cli import report

    run(capsys, "sample", "--model", files / "m", "-n", 50, "--out", tmp_path / "s.csv")
    args = ("report", "--model", files / "m", "--synthetic", tmp_path / "s.csv")
    assert run(capsys, *args, "--out", tmp_path / "r")[0] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()}

    def interrupted(out, **kwargs):
        (Path(out) / "report.md").write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "write_report", interrupted)
    code, _, err = run(capsys, *args, "--out", tmp_path / "r")
    assert code == 130 and err == "jdp report: error: interrupted\n"
    assert {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r", "s.csv"]


def test_report_takes_model_like_sample_and_refuses_a_foreign_directory(capsys, files, tmp_path):
    run(capsys, "sample", "--model", files / "m", "-n", 50, "--out", tmp_path / "s.csv")
    code, _, err = run(capsys, "report", files / "m", "--model", files / "m", "--synthetic",
                       tmp_path / "s.csv", "--out", tmp_path / "r")  # fmt: skip
    assert code == 2 and one_line(err, "report") and "model directory once" in err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    code, _, err = run(capsys, "report", "--model", files / "m", "--synthetic",
                       tmp_path / "s.csv", "--out", tmp_path / "mine")  # fmt: skip
    assert code == 2 and one_line(err, "report") and "holds no report" in err
    code, _, err = run(capsys, "report", "--model", files / "m", "--synthetic",
                       tmp_path / "s.csv", "--out", files / "afile")  # fmt: skip
    assert code == 2 and one_line(err, "report") and "not a directory" in err


# -- broken pipe, --version, help, progress, delta flag ----------------------------------------


def test_piping_into_head_exits_quietly_with_141(files, tmp_path):
    proc = jdp("sample", "--model", files / "m", "-n", 300_000, "--out", "-", cwd=tmp_path)
    first = proc.stdout.readline()
    proc.stdout.close()  # what head does after its lines
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert first == "x,c\n"
    assert proc.returncode == 141 and err == "", err


def test_version_in_a_real_process(tmp_path):
    from jdp import __version__

    proc = jdp("--version", cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == f"jdp {__version__}\n" and err == ""


def test_fit_help_lists_methods_and_a_methods_options(capsys):
    assert main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    assert "  p3gm " in out and "  marginals " in out and "  pgm " not in out
    assert main(["fit", "--method", "marginals", "--help"]) == 0
    out = capsys.readouterr().out
    assert "options of --method marginals (MarginalsConfig" in out
    assert 'bins = "auto"' in out and "cells per continuous column" in out


def test_every_methods_options_are_listed_by_help(capsys):
    """``jdp fit --method M --help`` for every method, including those whose nested configs
    (the clipping path) have no docstring entries."""
    for name in base.available_methods():
        assert main(["fit", "--method", name, "--help"]) == 0, name
        assert f"options of --method {name} (" in capsys.readouterr().out


def test_every_option_of_every_method_has_a_meaning():
    """The config docstrings' entries cover every field of every registered method."""
    missing = {}
    for name in base.available_methods():
        cls = base.get_method(name).config_cls
        meanings = option_meanings(cls)
        lacking = [f.name for f in dataclasses.fields(cls) if not meanings.get(f.name)]
        if lacking:
            missing[cls.__name__] = lacking
    assert missing == {}


def test_fit_progress_shows_ledger_entries_and_quiet_silences_it(
    capsys, files, tmp_path, monkeypatch
):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # as on a terminal
    code, _, err = run(capsys, *fit_args(files, "--out", tmp_path / "a"))
    assert code == 0 and "jdp fit: spent marginals (1 entries)" in err
    code, _, err = run(capsys, *fit_args(files, "--out", tmp_path / "b", "--quiet"))
    assert code == 0 and "spent" not in err


def test_fit_json_flags_delta_at_least_one_over_n(capsys, files, tmp_path):
    """With --verbose only: n is private, so whether delta >= 1/n is too (issue 24, item 3);
    without it the flag is null whatever the data."""
    code, out, err = run(capsys, *fit_args(files, "--out", tmp_path / "a", "--delta", 0.1,
                                           "--json", "--verbose"))  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["delta_ge_1_over_n"] is True
    assert doc["nonprivate_schema"] is False  # a declared schema
    code, out, err = run(capsys, *fit_args(files, "--out", tmp_path / "b", "--delta", 0.1,
                                           "--json"))  # fmt: skip
    assert code == 0 and json.loads(out)["delta_ge_1_over_n"] is None and "delta" not in err
    code, out, _ = run(capsys, *fit_args(files, "--out", tmp_path / "c", "--json", "--verbose"))
    assert json.loads(out)["delta_ge_1_over_n"] is False


def test_a_genuine_bug_keeps_its_traceback(capsys, files, tmp_path, monkeypatch):
    """main() turns bad input and OSError into exit 2, but not a bug in the code."""

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(base, "sample_model", broken)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        main(["sample", "--model", str(files / "m"), "-n", "5", "--out", str(tmp_path / "s.csv")])
    assert not (tmp_path / "s.csv").exists() and list(tmp_path.iterdir()) == []
