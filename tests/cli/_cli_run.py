"""One way for the CLI tests to run ``jdp`` in-process and read what it printed."""

from __future__ import annotations

import pytest

from jdp.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """``jdp ARGV...`` in this process: its exit code, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
