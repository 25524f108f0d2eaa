"""Every shipped method has its privacy derivation in ``docs/privacy.md``; the API reference
builds from the docstrings; the packages say they are typed."""

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


def test_the_api_reference_builds_from_the_docstrings(tmp_path: Path) -> None:
    """``scripts/api_docs.py`` writes a page per module and an index linking it (one
    package here: the whole reference takes seconds more)."""
    import sys

    sys.path.insert(0, str(PRIVACY.parents[1] / "scripts"))
    try:
        import api_docs
    finally:
        sys.path.pop(0)
    written, failed = api_docs.build(tmp_path, "accounting")
    assert not failed and "accounting.budget" in written
    page = (tmp_path / "accounting.budget.html").read_text()
    assert "PrivacyBudget" in page and "less" in page
    assert 'href="accounting.budget.html"' in (tmp_path / "index.html").read_text()


def test_every_package_ships_its_typed_marker() -> None:
    root = PRIVACY.parents[1]
    for package in ("jdp", "accounting", "kip"):
        assert (root / package / "py.typed").is_file()
