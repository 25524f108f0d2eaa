"""The shared CLI flags: declared once in jdp.cli._args, used by every command."""

from __future__ import annotations

import argparse

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
