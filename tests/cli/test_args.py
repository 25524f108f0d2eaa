"""The shared CLI flags: declared once in jdp.cli._args, used by every command."""

from __future__ import annotations

import argparse
import json

import pytest

from jdp.cli import COMMANDS, build_parser
from jdp.cli._args import FLAGS, add_flags

#: The shared flags each command takes (a command's own flags are not listed).
EXPECTED = {
    "demo": {"method", "epsilon", "delta", "out", "seed", "quiet", "json"},
    "fit": {
        "method",
        "epsilon",
        "delta",
        "dataset",
        "data",
        "schema",
        "out",
        "seed",
        "json",
        "quiet",
        "verbose",
    },
    "sample": {"out", "seed", "json"},
    "evaluate": {"dataset", "seed", "quiet", "json"},
    "report": {"out", "dataset", "seed", "quiet", "json"},
    "datasets": {"out", "json"},
}


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: a for a in parser._actions for opt in a.option_strings}


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.choices[name] for name in COMMANDS}


def test_every_command_takes_its_shared_flags_with_the_shared_spelling_and_type():
    parsers = _command_parsers()
    for command, names in EXPECTED.items():
        options = _options(parsers[command])
        for name in names:
            (flag,), kwargs = FLAGS[name]
            assert flag in options, (command, flag)
            assert options[flag].type == kwargs.get("type"), (command, flag)
    account = _options(
        next(
            a for a in parsers["account"]._actions if isinstance(a, argparse._SubParsersAction)
        ).choices["dpsgd"]
    )
    assert "--json" in account


def test_overrides_change_defaults_and_unknown_flags_are_refused():
    parser = argparse.ArgumentParser()
    add_flags(parser, "seed", "out", seed={"default": 0}, out={"required": True})
    assert parser.parse_args(["--out", "d"]) == argparse.Namespace(seed=0, out="d")
    with pytest.raises(ValueError, match="got 'nope'"):
        add_flags(argparse.ArgumentParser(), "nope")
    with pytest.raises(ValueError, match="got 'json'"):
        add_flags(argparse.ArgumentParser(), "seed", json={"help": "x"})


def test_every_command_prints_warnings_in_one_style(capsys, tmp_path):
    """A warning raised inside any command (here ``jdp evaluate`` fed a synthetic table with
    a single class, which warns that the TSTR row is chance-level) comes out as one
    ``jdp evaluate: warning: ...`` line, not Python's two-line ``file:line: UserWarning``."""

    from jdp.cli import main
    from jdp.data.datasets import load_adult

    adult = load_adult()
    train = adult.train.sample(400, random_state=0)
    test = adult.test.sample(400, random_state=0)
    synthetic = train.assign(income=train["income"].iloc[0])
    paths = {}
    for name, frame in {"train": train, "test": test, "synthetic": synthetic}.items():
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    argv = ["evaluate", "--real-train", str(paths["train"]), "--real-test", str(paths["test"]),
            "--synthetic", str(paths["synthetic"]), "--target", "income", "--classifiers",
            "LogisticRegression", "--queries", "0", "--quiet", "--json"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert err and all(line.startswith("jdp evaluate: warning: ") for line in err), err
    assert any("single class" in line for line in err)
    # --json: the same warnings in the object, for a program that reads only stdout
    shown = json.loads(captured.out)["warnings"]
    assert shown == [line.removeprefix("jdp evaluate: warning: ") for line in err]
