"""Every shipped method has its privacy derivation in ``docs/privacy.md``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jdp.synth.registry import METHODS

PRIVACY = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"


def _headings() -> list[str]:
    return [line for line in PRIVACY.read_text().splitlines() if re.match(r"#{2,3} ", line)]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_has_a_privacy_section(name: str) -> None:
    """A section heading names the method's module (``jdp/synth/mwem.py``) or package
    (``jdp/synth/p3gm/``), so a reader finds its sensitivities from the code's path."""
    path = METHODS[name][0].replace(".", "/")
    named = [h for h in _headings() if f"`{path}.py`" in h or f"`{path}/" in h]
    assert named, f"docs/privacy.md has no section for {name!r} (a heading naming `{path}`)"
