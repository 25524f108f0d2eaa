"""The scripts' shared harness: common flags, progress log, measurement, output, results file.

A script declares its flags with :func:`parser` and makes one call, :func:`run`: it parses the
flags, runs the script's ``compute(args) -> dict``, adds ``seconds`` (wall time) and
``peak_rss_mb`` (peak resident memory, MiB) to the result, prints the script's table
(``render(result) -> str``) on stdout, or under ``--json`` on stderr followed by exactly one
JSON object on stdout (anything else printed on the way goes to stderr), and writes the table
to ``docs/results/<script>.md`` (not when the result says ``skipped``: nothing ran).

A results file holds one section per command, keyed by its flags less those that only choose
outputs (``--json``, ``--out``, ``--png``, ``--results``): a run replaces its own section and
keeps the others, including sections recorded in earlier sessions. ``--results PATH`` writes
elsewhere, ``--no-results`` nowhere.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
#: Flags that choose where output goes, not what is computed (with whether they take a value).
OUTPUT_FLAGS = {
    "--json": False,
    "--no-results": False,
    "--out": True,
    "--png": True,
    "--results": True,
}
RECORDED = "recorded"  # key prefix of sections kept from earlier sessions
_SECTION = re.compile(r"<!-- section: (.*?) -->\n(.*?)<!-- /section -->\n", re.DOTALL)


def log(*parts: object) -> None:
    """Progress for a reader: stderr, flushed (stdout carries results only)."""
    print(*parts, file=sys.stderr, flush=True)


def parser(
    file: str,
    doc: str | None,
    *,
    quick: str | None = "a short smoke run",
    out: str | None = None,
    seed: int | None = None,
) -> argparse.ArgumentParser:
    """The parser of script ``file`` with the common flags: ``--json``, ``--quick`` (help
    ``quick``), ``--out DIR`` (default ``out``), ``--seed`` (default ``seed``) -- each of the
    last three only when given -- and ``--results`` / ``--no-results``. A script adds its
    own flags with ``add_argument``."""
    p = argparse.ArgumentParser(prog=Path(file).name, description=(doc or "").split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    if quick is not None:
        p.add_argument("--quick", action="store_true", help=quick)
    if out is not None:
        p.add_argument("--out", type=Path, default=Path(out), help=f"output path (default {out})")
    if seed is not None:
        p.add_argument("--seed", type=int, default=seed, help="research reproducibility only")
    p.add_argument("--results", type=Path, help="results file (default docs/results/NAME.md)")
    p.add_argument("--no-results", action="store_true", help="write no results file")
    return p


def subset(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """An argparse ``type``: a comma-separated subset of ``choices``, as a list."""

    def parse(text: str) -> list[str]:
        chosen = [c for c in text.split(",") if c]
        unknown = sorted(set(chosen) - set(choices))
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown}; expected a subset of {choices}")
        return chosen

    return parse


def run(
    p: argparse.ArgumentParser,
    compute: Callable[[argparse.Namespace], dict[str, Any]],
    render: Callable[[dict[str, Any]], str] | None = None,
    argv: list[str] | None = None,
) -> int:
    """Parse ``argv``, compute, measure, print, write the results file (module docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    stdout, start = sys.stdout, time.perf_counter()
    try:
        if args.json:
            sys.stdout = sys.stderr  # whatever prints on the way is progress
        result = compute(args)
        result["seconds"] = time.perf_counter() - start
        result["peak_rss_mb"] = peak_rss_mb()
        table = render(result) if render else ""
    finally:
        sys.stdout = stdout
    if args.json:
        if table:
            log(table)
        print(json.dumps(result, default=_plain))
    elif table:
        print(table)
    if result.get("skipped"):  # nothing ran: an earlier section stays as it is
        log(f"results file not updated: {result['skipped']}")
    elif not args.no_results:
        script = Path(p.prog).stem
        command = shlex.join(["python", f"scripts/{p.prog}", *argv])
        section = run_section(command, result, table)
        path = write_section(script, section_key(argv), section, path=args.results)
        log(f"results: {path}")
    return 0


# -- measurement --------------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB (``VmHWM``: unlike ``ru_maxrss`` it is not
    inherited from a forking parent across ``exec``)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """(wall seconds, output) of one call."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def best_of(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(least wall seconds, least CPU seconds of this process) over ``repeats`` calls. CPU
    time is the work on a shared machine, where the wall clock also counts the wait for a
    core; make ``fn`` block until its result is ready (``jax.block_until_ready``)."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu


def time_round_robin(
    runs: Mapping[str, Callable[[], object]], reps: int, slow_reps: int, slow_ms: float = 200.0
) -> dict[str, float]:
    """Median ms per path, timing one step of each path in turn, so that load spikes of a
    shared machine hit every path alike. Paths whose warm step takes over ``slow_ms`` get
    ``slow_reps`` rounds, the others ``reps``; every round visits every path still due."""
    due = {p: slow_reps if 1e3 * timed(run)[0] > slow_ms else reps for p, run in runs.items()}
    times: dict[str, list[float]] = {p: [] for p in runs}
    for r in range(max(due.values())):
        for p, run in runs.items():
            if r < due[p]:
                times[p].append(timed(run)[0])
    return {p: 1e3 * statistics.median(t) for p, t in times.items()}


# -- scoring ------------------------------------------------------------------------------------


def median_run(runs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One row for repeated measurements: each float's median, the first run's other fields."""
    return {
        name: statistics.median(r[name] for r in runs) if isinstance(value, float) else value
        for name, value in runs[0].items()
    }


def mean_scores(
    rows: list[dict], side: str, metrics: tuple[str, ...] = ("AUROC", "AUPRC")
) -> dict[str, float]:
    """Per metric, the mean over the classifiers that scored it on ``side`` (``"real"`` or
    ``"synthetic"``) of a TSTR table; a classifier whose fit diverged is logged, never
    averaged in."""
    from jdp.eval.utility import mean_score

    out = {}
    for metric in metrics:
        out[metric], dropped = mean_score(rows, metric, side)
        if dropped:
            log(f"    {side} {metric}: left out (diverged): {', '.join(dropped)}")
    return out


# -- output -------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON for numpy scalars and arrays and for paths."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def section_key(argv: list[str]) -> str:
    """The flags of a command that choose what it computes (``(defaults)`` when none)."""
    kept, value_next = [], False
    for arg in argv:
        name = arg.split("=", 1)[0]
        if value_next:  # the value of an output flag
            value_next = False
        elif name in OUTPUT_FLAGS:
            value_next = OUTPUT_FLAGS[name] and "=" not in arg
        else:
            kept.append(arg)
    return shlex.join(kept) or "(defaults)"


def run_section(command: str, result: Mapping[str, Any], table: str) -> str:
    """A results section: the command, when and where it ran, its cost, its table."""
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    facts = f"{when}, {_commit()}, {os.cpu_count()} CPUs; "
    facts += f"{result['seconds']:.0f} s wall, peak RSS {result['peak_rss_mb']:.0f} MiB."
    if result.get("baseline"):  # a tree measured beside this one (--baseline DIR)
        facts += f" Baseline: {result['baseline']}, {_commit(Path(result['baseline']))}."
    return f"## `{command}`\n\n{facts}\n\n```text\n{table.rstrip()}\n```\n"


def write_section(script: str, key: str, body: str, *, path: Path | None = None) -> Path:
    """Replace (or add) section ``key`` of ``docs/results/<script>.md`` (or ``path``),
    keeping the others: run sections first, then those recorded earlier. Atomic."""
    path = Path(path) if path is not None else RESULTS / f"{script}.md"
    sections = dict(_SECTION.findall(path.read_text())) if path.is_file() else {}
    sections[key] = body
    sections = {k: v.strip() + "\n\n" for k, v in sections.items()}  # a blank line ends a table
    order = sorted(sections, key=lambda k: k.startswith(RECORDED))  # stable: file order kept
    text = (
        f"# Results of `scripts/{script}.py`\n\n"
        f"Generated by `scripts/{script}.py` (through `scripts/_harness.py`); do not edit. "
        "Each command writes its own section; sections marked as recorded in an earlier "
        "session hold numbers that were not re-run since.\n\n"
    )
    text += "\n".join(f"<!-- section: {k} -->\n{sections[k]}<!-- /section -->\n" for k in order)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        from jdp.data.schema import write_atomic
    except ImportError:  # a pinned environment without jdp (scripts/ntk_oracle_fixture.py)
        log(f"results file not written (jdp is not importable here): {path}")
        return path
    write_atomic(path, text)
    return path


def _commit(root: Path = ROOT) -> str:
    """The commit of the checkout at ``root``, and whether files differ from it (read-only
    git calls)."""
    git = ["git", "-C", str(root)]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "diff", "--quiet", "HEAD", "--"], capture_output=True, env=env, check=False
        )
    except (OSError, subprocess.CalledProcessError):
        return "commit unknown"
    return f"commit {head}" + (" with uncommitted changes" if dirty.returncode else "")
