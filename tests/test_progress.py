"""One progress rule for the whole library (:mod:`jdp.progress`; issue "What a person sees").

On a terminal (stderr a TTY, not silenced) long work shows its phase, ``i/T``, an ETA and
where known the epsilon spent; on a pipe or a file nothing at all (no carriage return in a
log); under ``no_progress()`` / ``--quiet`` nothing either. The terminal cases run a child
Python process with its stderr on a pseudo-terminal and read what it wrote there.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from accounting.calibrate import calibrate, calibrate_shares, set_search_observer
from accounting.events import ComposedDpEvent, GaussianDpEvent
from jdp import progress
from jdp.progress import phase, track
from jdp.verbosity import no_progress, progress_on_terminal

ROOT = Path(__file__).resolve().parents[1]
JDP = [sys.executable, "-c", "import sys; from jdp.cli import main; sys.exit(main())"]


def run_on(argv: list[str], *, terminal: bool = True, timeout: float = 120.0) -> tuple[int, str]:
    """Run ``argv`` with its stderr on a pseudo-terminal (``terminal``) or a pipe; return its
    exit code and everything it wrote to stderr."""
    if not terminal:
        done = subprocess.run(
            argv,
            check=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            cwd=ROOT,
        )
        return done.returncode, done.stderr.decode()
    master, slave = pty.openpty()
    # a terminal 160 columns wide (a fresh pseudo-terminal reports 0)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    child = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, cwd=ROOT
    )
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not data:
                    break
                chunks.append(data)
            elif child.poll() is not None:
                break
        else:
            child.kill()
            pytest.fail(f"{argv} ran past {timeout} s")
        code = child.wait(timeout=10)
    finally:
        os.close(master)
    return code, b"".join(chunks).decode(errors="replace")


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


LOOP = python(
    """
    import time
    from jdp.progress import phase, track
    with phase("DP-EM iteration", total=3) as p:
        for _ in range(3):
            time.sleep(0.12)
            p.update()
    for _ in track(range(4), "DP-SGD step", epsilon=lambda t: 0.25 * t):
        time.sleep(0.12)
    """
)


# -- the rule, on a pseudo-terminal ---------------------------------------------------------------


def test_a_loop_shows_its_phase_and_steps_on_a_terminal():
    code, err = run_on(LOOP)
    assert code == 0, err
    assert "jdp: DP-EM iteration 1/3" in err and "DP-EM iteration 3/3 | done in 0:00" in err
    assert "DP-SGD step 4/4 | eps=1 spent | done in" in err
    assert "ETA 0:00" in err  # between the first and the last step
    assert "\r\033[K" in err  # the line is rewritten in place


def test_nothing_is_written_to_a_pipe():
    code, err = run_on(LOOP, terminal=False)
    assert code == 0 and err == ""


def test_no_progress_silences_a_terminal():
    silenced = python(
        """
        from jdp.verbosity import no_progress
        from jdp.progress import phase
        with no_progress():
            with no_progress(False):  # an inner block cannot undo the outer silence
                with phase("DP-EM iteration", total=2) as p:
                    p.update(2)
        """
    )
    code, err = run_on(silenced)
    assert code == 0 and err == ""


def test_dpsgd_training_shows_its_steps_and_epsilon_on_a_terminal():
    """The library's own DP-SGD loop (:func:`jdp.dpsgd.train`), no CLI: ``DP-SGD step i/T``
    with the epsilon the run's steps spent (at the config's target delta)."""
    child = python(
        """
        import jax, jax.numpy as jnp, numpy as np, optax
        from jdp.dpsgd import DPSGDConfig, train
        config = DPSGDConfig(l2_clip_norm=1.0, noise_multiplier=2.0, sampling_prob=0.2,
                             expected_batch_size=4.0, steps=5, target_delta=1e-5)
        loss = lambda p, x, k: jnp.sum((p - x) ** 2)
        train(jax.random.key(0), loss, jnp.zeros(2), optax.sgd(0.1),
              np.ones((20, 2), np.float32), config)
        """
    )
    code, err = run_on(child)
    assert code == 0, err
    assert "DP-SGD step 5/5 | eps=" in err and "spent | done in" in err
    # (a pipe gets nothing: the rule is one, tested on a pipe above)


@pytest.mark.slow
def test_jdp_fit_p3gm_shows_its_phases_on_a_terminal_and_quiet_silences_them(tmp_path, adult):
    """A tiny ``jdp fit --method p3gm`` (about 20 s): calibration, DP-PCA, DP-EM, the
    decoder's initial fit and DP-SGD each get a line; ``--quiet`` shows none of them."""
    adult.train.iloc[:60].to_csv(tmp_path / "train.csv", index=False)
    adult.schema.save(tmp_path / "schema.json")
    tiny = [
        "latent_dim=2", "n_components=2", "em_iterations=2", "hidden=4", "decoder_init_steps=20",
        "dpsgd.epochs=0.3", "dpsgd.sampling_prob=0.1", "dpsgd.expected_batch_size=6.0",
        "performance.clipping=general",
    ]  # fmt: skip
    argv = [
        *JDP, "fit", "--method", "p3gm", "--data", str(tmp_path / "train.csv"), "--schema",
        str(tmp_path / "schema.json"), "--epsilon", "1", "--delta", "0.01", "--seed", "0",
        *(a for option in tiny for a in ("--set", option)),
    ]  # fmt: skip
    code, err = run_on([*argv, "--out", str(tmp_path / "a")])
    assert code == 0, err
    for line in (
        "jdp fit: calibrating noise",
        "jdp fit: DP-PCA | done in",
        "jdp fit: DP-EM iteration 2/2 | done in",
        "jdp fit: decoder init step 20/20 | done in",
        "jdp fit: DP-SGD step 3/3 | eps=",
        "jdp fit: spent dp-sgd",
    ):
        assert line in err, (line, err)
    code, err = run_on([*argv, "--out", str(tmp_path / "b"), "--quiet"])
    assert code == 0, err
    # (the terminal itself turns each "\n" into "\r\n": the rewrite is "\r" + erase-line)
    assert "\033[K" not in err and "DP-SGD" not in err and "calibrating" not in err


# -- in process, with a stand-in terminal -------------------------------------------------------


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def on_terminal(stream: io.StringIO | None = None) -> Iterator[io.StringIO]:
    """``sys.stderr`` is ``stream`` (default: a new stand-in terminal) in the block (set in
    the test's body: pytest puts its own capture back before each test phase)."""
    stream = Terminal() if stream is None else stream
    saved, sys.stderr = sys.stderr, stream
    try:
        yield stream
    finally:
        sys.stderr = saved


def test_nested_phases_share_one_line_and_the_outer_leaves_it():
    with on_terminal() as terminal:
        assert progress_on_terminal()
        for _ in track(range(2), "cluster", current=True):
            with phase("DP-SGD step", total=2) as p:
                p.update(2)
    text = terminal.getvalue()
    assert "jdp: cluster 1/2 > DP-SGD step 2/2" in text
    assert "jdp: cluster 2/2 > DP-SGD step 0/2" in text
    lines = text.split("\n")
    assert lines[-1] == ""  # the outer phase's last line, ended
    assert lines[-2].endswith("jdp: cluster 2/2 | done in 0:00")
    assert text.count("\n") == 1  # the inner phases leave no line of their own


def test_a_failing_phase_says_it_stopped():
    with on_terminal() as terminal, pytest.raises(RuntimeError), phase("DP-EM iteration", 5) as p:
        p.update()
        raise RuntimeError("boom")
    assert "DP-EM iteration 1/5 | stopped after 0:00\n" in terminal.getvalue()


def test_calibration_is_a_phase():
    """accounting imports nothing of jdp: its searches tell an observer, which
    :mod:`jdp.progress` installed (one phase for a search, whatever it nests)."""
    with on_terminal() as terminal:
        calibrate_shares(
            lambda z: ComposedDpEvent([GaussianDpEvent(v) for v in z.values()]),
            {"a": 1.0, "b": 2.0}, target_epsilon=1.0, target_delta=1e-5, accountant="rdp",
        )  # fmt: skip
    text = terminal.getvalue()
    assert "jdp: calibrating noise" in text and "accountant evaluations | done in" in text
    assert text.count("\n") == 1


def test_the_observer_sees_every_search_once_even_when_it_raises():
    seen: list[str] = []
    previous = set_search_observer(seen.append)
    try:
        calibrate(lambda s: GaussianDpEvent(s), target_epsilon=1.0, target_delta=1e-5)
        with pytest.raises(ValueError):
            calibrate(
                lambda s: GaussianDpEvent(s), target_epsilon=1.0, target_delta=1e-5,
                accountant="gdp_clt",
            )  # fmt: skip
    finally:
        set_search_observer(previous)
    assert seen[0] == "start" and seen[-3:] == ["end", "start", "end"]
    assert seen.count("start") == seen.count("end") == 2 and seen.count("step") > 3


def test_the_ledger_entries_show_beside_the_phase_that_spends_them():
    from accounting import PrivacyLedger

    with on_terminal() as terminal, progress.command("fit"), progress.show_ledger():
        PrivacyLedger().record("row count", GaussianDpEvent(10.0))
        with phase("DP-EM iteration", total=1) as p:
            PrivacyLedger().record("dp-em", GaussianDpEvent(3.0))
            p.update()
    text = terminal.getvalue()
    assert "jdp fit: spent row count (1 entries)\n" in text
    assert "jdp fit: DP-EM iteration 1/1 | done in 0:00 | spent dp-em (1 entries)\n" in text


def test_tstr_shows_its_fits_on_a_terminal_only():
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from jdp.eval.utility import tstr_table

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=40), "y": ["a", "b"] * 20})
    args = (frame, frame, frame, "y")
    classifiers = {"LogisticRegression": LogisticRegression()}
    with on_terminal() as terminal:
        tstr_table(*args, classifiers=classifiers)
    assert "jdp: TSTR fit 2/2 | done in" in terminal.getvalue()
    with on_terminal(io.StringIO()) as log:  # a log file: nothing, not even a carriage return
        tstr_table(*args, classifiers=classifiers)
    assert log.getvalue() == ""
    with on_terminal() as terminal, no_progress():
        tstr_table(*args, classifiers=classifiers)
    assert terminal.getvalue() == ""


def test_evaluate_writes_no_carriage_return_into_a_log(capsys, tmp_path, adult):
    """``jdp evaluate`` without ``--quiet`` and stderr not a terminal (a log file): the TSTR
    fits and fidelity measures used to write tqdm's carriage returns there."""
    from jdp.cli import main

    adult.train.iloc[:200].to_csv(tmp_path / "train.csv", index=False)
    adult.test.iloc[:200].to_csv(tmp_path / "test.csv", index=False)
    code = main(
        ["evaluate", "--real-train", str(tmp_path / "train.csv"), "--real-test",
         str(tmp_path / "test.csv"), "--synthetic", str(tmp_path / "train.csv"), "--target",
         "income", "--classifiers", "LogisticRegression", "--queries", "20", "--json"]
    )  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 0 and "\r" not in err and "TSTR" not in err


def test_a_warning_is_shown_when_raised_not_after_the_work(capsys):
    """``jdp``'s one warning style prints each warning as it is raised (a method that cannot
    work here says so before its fit starts), and still returns every warning caught."""
    import warnings

    from jdp.cli._args import one_line_warnings

    with one_line_warnings("fit") as caught:
        warnings.warn("cannot work here", UserWarning)
        print("the fit runs", file=sys.stderr)
    err = capsys.readouterr().err.splitlines()
    assert err == ["jdp fit: warning: cannot work here", "the fit runs"]
    assert [str(w.message) for w in caught] == ["cannot work here"]


def test_the_eta_waits_for_the_steps_after_the_first(monkeypatch):
    """The first step often includes compiling: no ETA until a second update, and then the
    pace of the steps after the first (a capture showed "ETA 43:43" after step 1 of a
    seven-second fit)."""
    from jdp import progress

    clock = iter([0.0, 30.0, 30.0, 31.0, 31.0])  # open; compile + step 1; steps 2-3 at 0.5 s
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    p = progress.Phase("DP-SGD step", total=103)
    p.update()  # at 30 s
    assert "ETA" not in p.timing()  # at 30 s: one update, nothing to pace
    p.update(2)  # at 31 s
    assert p.timing() == "0:31, ETA 0:50"  # 100 steps left at 0.5 s each


def test_the_epsilon_is_re_evaluated_at_each_quarter_of_a_run(monkeypatch):
    """However slow an evaluation, the shown epsilon is at most a quarter of the run behind
    (a dp-GAN capture read its first figure until step 378 of 500)."""
    from jdp import progress

    monkeypatch.setattr(progress.time, "monotonic", lambda: 0.0)  # the throttle never expires
    asked = []
    p = progress.Phase("DP-SGD step", total=100, epsilon=lambda t: asked.append(t) or t / 100)
    for _ in range(100):
        p.update()
        p.epsilon_text()
    assert asked == [1, 25, 50, 75, 100]
