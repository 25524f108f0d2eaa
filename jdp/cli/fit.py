"""``jdp fit``: fit a DP synthesizer on a table and save the model (arrays + JSON).

The data is a CSV with a public schema JSON (``--data PATH --schema PATH``) or a named dataset's
training split with its public schema (``--dataset adult``). The schema file may be a saved DP
schema release (``SchemaRelease.save``): its cost is then part of the model's ledger. Method
options are set with ``--set NAME=VALUE`` (repeatable; nested ones dotted: ``--set dpsgd.epochs=3``). Without ``--seed`` the noise comes from
fresh OS entropy; a seed is for research reproducibility only.

Every fit spends its budget again and no ledger spans several fits, so ``fit`` refuses a
non-empty ``--out`` (exit 2, nothing written) unless ``--overwrite`` (alias ``--force``); the
model is saved atomically under a lock (:func:`jdp.synth.io.save`). A non-private method
(``pgm``) is refused before any data is read. On a terminal the fit shows each phase as it
runs (calibrating noise, DP-PCA, DP-EM, DP-SGD step i/T with the epsilon spent so far, cluster
j/k, ...) with an ETA, and each privacy-ledger entry as it is spent (:mod:`jdp.progress`);
nothing when stderr is not a terminal, nor with ``--quiet``. ``jdp fit --help`` lists the methods, ``jdp fit
--method M --help`` the options of M. Warnings and errors show no private counts unless
``--verbose``, and the warnings whose presence depends on the data (values clipped to the
bounds, records dropped for a suppressed category, delta >= 1/n) appear only with
``--verbose``: without it the text output says, whatever the data, what the fit does to such
values (:data:`DATA_NOTE`). ``--json`` reports ``delta_ge_1_over_n`` (with ``--verbose``:
true when delta >= 1/n; without it ``null``, as ``n`` is private) and ``nonprivate_schema``
(true when the schema was read off the data without DP, ``infer_schema_nonprivate``: the
model is then not DP as a whole, and its privacy statement says so). The key is drawn from
the ``fit`` stream of ``--seed`` (:func:`jdp.cli._args.command_key`), never the one ``jdp
sample --seed`` uses.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jdp.cli._args import (
    DATA_FLAGS,
    add_command,
    add_flags,
    json_line,
    model_summary,
    one_line_warnings,
    output_path,
)

if TYPE_CHECKING:
    from jdp.data.dp_schema import SchemaRelease
    from jdp.data.schema import Schema, Table


DEFAULT_METHOD = "marginals"
#: What ``jdp fit`` (text output, without ``--verbose``) says of the data whatever it holds,
#: in place of the warnings whose presence would reveal something about the records.
DATA_NOTE = (
    "Numeric values outside the schema's bounds are clipped to them, and records holding a "
    "category a DP schema release suppressed are dropped (or mapped to its 'other'); whether "
    "any were, and whether delta >= 1/n, is private: --verbose shows it on your own terminal."
)
#: Longest one-line meaning of an option in ``jdp fit --method M --help``.
MEANING_WIDTH = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "fit",
        __doc__,
        help="fit a DP synthesizer and save it",
        add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-h",
        "--help",
        action=_MethodHelp,
        help="show this help (with --method M before it: M's options) and exit",
    )
    add_flags(
        parser,
        "method",
        "epsilon",
        "delta",
        *DATA_FLAGS,
        "out",
        method={"help": f"synthesizer name (default: {DEFAULT_METHOD}; listed below)"},
        epsilon={"required": True},
        out={"required": True, "help": "directory to save the model in"},
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a method option (repeatable)",
    )
    parser.add_argument(
        "--rows",
        type=float,
        default=None,
        metavar="N",
        help="the table's row count, declared public: methods that judge whether they can work "
        "on the table's shape read it instead of releasing a noisy count (1%% of epsilon)",
    )
    parser.add_argument(
        "--overwrite",
        "--force",
        dest="overwrite",
        action="store_true",
        help="replace a model already saved in --out (a new fit spends the budget again)",
    )
    add_flags(parser, "seed", "json", "quiet", "verbose")
    parser.set_defaults(func=run)


class _MethodHelp(argparse.Action):
    """``-h``: the help, then the methods, or with ``--method M`` before it M's options."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[no-untyped-def]
        method = getattr(namespace, "method", None)
        parser.epilog = methods_help() if method is None else options_help(method)
        parser.print_help()
        parser.exit()


def methods_help() -> str:
    """The registered DP methods, one line each (non-private references are left out)."""
    from jdp.synth.base import available_methods, get_method

    methods = [get_method(n) for n in available_methods()]
    methods = [m for m in methods if m.private]
    width = max(len(m.name) for m in methods)
    lines = [f"  {m.name.ljust(width)}  {m.description}" for m in methods]
    return "\n".join(
        [
            "methods (--method NAME):",
            *lines,
            "",
            "options of a method: jdp fit --method NAME --help (set with --set NAME=VALUE)",
        ]
    )


def options_help(method: str) -> str:
    """The options of ``method`` (nested ones dotted): name, default and one-line meaning
    (:func:`option_meanings` of the class that declares the field)."""
    from jdp.synth.base import get_method
    from jdp.synth.configs import config_options

    m = get_method(method)
    rows = [(name, _default_text(default)) for name, default in config_options(m.config_cls)]
    meanings = _nested_meanings(m.config_cls)
    width = max(len(f"{n} = {d}") for n, d in rows)
    lines = [f"  {f'{n} = {d}'.ljust(width)}  {meanings.get(n, '')}".rstrip() for n, d in rows]
    head = f"options of --method {m.name} ({m.config_cls.__name__}; set with --set NAME=VALUE):"
    return "\n".join([f"{m.name}: {m.description}", "", head, *lines])


def _nested_meanings(config_cls: type, prefix: str = "") -> dict[str, str]:
    """:func:`option_meanings` of ``config_cls`` and of the config classes its fields hold,
    by dotted name."""
    out = {f"{prefix}{k}": v for k, v in option_meanings(config_cls).items()}
    for f in dataclasses.fields(config_cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            out.update(_nested_meanings(type(default), f"{prefix}{f.name}."))
    return out


def _default_text(value: Any) -> str:
    if value is dataclasses.MISSING:
        return "(required)"
    try:
        return json.dumps(value)
    except TypeError:
        return getattr(value, "name", None) or repr(value)


def option_meanings(config_cls: type) -> dict[str, str]:
    """Field name -> the first sentence of its entry in the config class's docstring.

    Entries are Google-style lines ``name: meaning`` (or ``a, b: meaning`` for several
    fields, possibly after a sentence on the same line) with indented continuation lines,
    under any section heading; a field without an entry is left out.
    """
    doc = inspect.getdoc(config_cls) or ""
    names = sorted((re.escape(f.name) for f in dataclasses.fields(config_cls)), key=len)
    name = "|".join(reversed(names))
    entry = re.compile(
        rf"(?:^[ \t]*|(?<=\.)[ \t]+)((?:{name})(?:,[ \t]*(?:{name}))*):[ \t]+", re.MULTILINE
    )
    matches = list(entry.finditer(doc))
    meanings: dict[str, str] = {}
    ends = [m.start() for m in matches[1:]] + [len(doc)]
    for match, end in zip(matches, ends, strict=False):  # no entries: no ends either
        text = doc[match.end() : end]
        text = re.split(r"\n[ \t]*\n|\n(?=\S)", text)[0]  # up to a blank line or a heading
        text = " ".join(text.split()).replace("``", "")
        sentence = re.split(r"(?<=\.)\s+(?=[A-Z])", text)[0]
        if len(sentence) > MEANING_WIDTH:
            sentence = sentence[: MEANING_WIDTH - 3].rstrip() + "..."
        for field in re.split(r",[ \t]*", match.group(1)):
            meanings.setdefault(field, sentence)
    return meanings


def training_data(args: argparse.Namespace) -> tuple[Table, Schema | SchemaRelease]:
    """The private training table, conformed (:meth:`~jdp.data.schema.Schema.conform`, by the
    release when the schema is one), and its public schema (a saved DP schema release is kept
    whole, with its ledger), from the parsed arguments. The frame as read is dropped once
    conformed: a fit holds the conformed table only."""
    from jdp.data.datasets import load_dataset
    from jdp.data.dp_schema import SchemaRelease, load_schema
    from jdp.data.read import read_csv

    if args.dataset:
        if args.data:
            raise ValueError("give either --dataset or --data, not both")
        dataset = load_dataset(args.dataset)
        schema = load_schema(args.schema) if args.schema else dataset.schema
        return schema.conform(dataset.train), schema
    if not args.data or not args.schema:
        raise ValueError("expected --data PATH and --schema PATH (or --dataset NAME)")
    schema = load_schema(args.schema)
    public = schema.schema if isinstance(schema, SchemaRelease) else schema
    return schema.conform(read_csv(args.data, public)), schema


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["bins=64", "noise=laplace"]`` -> ``{"bins": 64, "noise": "laplace"}`` (JSON values
    where they parse, strings otherwise)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"expected --set NAME=VALUE, got {item!r}")
        try:
            out[name] = json.loads(text)
        except json.JSONDecodeError:
            out[name] = text
    return out


def make_config(method: str, overrides: dict[str, Any]) -> Any:
    """The method's default config with ``overrides`` (dotted names reach nested configs:
    ``dpsgd.sampling_prob``, ``performance.clipping``; :func:`jdp.synth.configs.apply_overrides`)."""
    from jdp.synth.base import get_method
    from jdp.synth.configs import apply_overrides

    m = get_method(method)
    try:
        return apply_overrides(m.make_config(None), overrides)
    except TypeError as err:  # an unknown option: a usage error of the command line
        raise ValueError(f"{err} (method {method!r})") from None


def check_output_directory(text: str, *, overwrite: bool) -> Path:
    """Refuse (before any data is read) an ``--out`` that cannot take the model, and a
    non-empty one without ``--overwrite``.

    Every fit spends its budget anew, and nothing records the earlier fits: overwriting a saved
    model silently loses the record that the data was already used once.
    """
    path = output_path(text, kind="dir")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise ValueError(_not_empty(path))
    return path


def _not_empty(path: Path) -> str:
    return (
        f"--out {path} is not empty (a saved model?); a new fit spends the privacy budget "
        "again: choose another directory or pass --overwrite"
    )


def check_private(method: str) -> None:
    """Refuse a non-private reference method (``pgm``) before any data is read."""
    from jdp.synth.base import get_method

    if not get_method(method).private:
        raise ValueError(
            f"method {method!r} is a non-private reference (infinite epsilon): jdp fit "
            "trains DP methods only (jdp fit --help lists them)"
        )


def run(args: argparse.Namespace) -> int:
    from accounting import PrivacyBudget
    from jdp.cli._args import command_key
    from jdp.progress import show_ledger
    from jdp.synth.base import DeltaWarning, fit_model
    from jdp.synth.io import save
    from jdp.verbosity import no_progress, private_details_shown

    method = args.method or DEFAULT_METHOD
    out = check_output_directory(args.out, overwrite=args.overwrite)
    budget = PrivacyBudget(epsilon=args.epsilon, delta=args.delta)
    check_private(method)
    with no_progress(args.quiet), one_line_warnings("fit") as caught:
        config = make_config(method, parse_overrides(args.set))
        table, schema = training_data(args)
        with show_ledger():
            model = fit_model(
                command_key(args.seed, "fit"),
                method,
                table,
                budget,
                config,
                schema=schema,
                rows=args.rows,
            )
    try:
        path = save(model, out, overwrite=args.overwrite)
    except FileExistsError:  # another fit wrote into --out meanwhile
        raise ValueError(_not_empty(out)) from None
    shown = private_details_shown()  # --verbose: the data-dependent warnings were raised
    if args.json:
        delta_flag = any(issubclass(w.category, DeltaWarning) for w in caught) if shown else None
        details = {
            "model_dir": str(path),
            "delta_ge_1_over_n": delta_flag,
            "nonprivate_schema": model.schema.nonprivate,
        }
        print(json_line(model_summary(model, **details)))
    else:
        print(model.privacy_statement())
        print(f"saved {model.method} model to {path}")
        if not shown:
            print(DATA_NOTE)
    return 0
