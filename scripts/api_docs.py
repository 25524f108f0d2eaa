"""The API reference: one HTML page per module of ``jdp``, ``accounting`` and ``kip``, generated
from the docstrings by the standard library's ``pydoc``, and an index page.

Usage::

    python scripts/api_docs.py                 # writes docs/api/ (ignored by git)
    python scripts/api_docs.py --out DIR --only jdp.synth

Every module is imported to be documented (JAX included: about half a minute); a module that
fails to import is listed on the index with its error instead of a page, and the command exits
1, so that a broken docstring link or import does not go unnoticed.
"""

from __future__ import annotations

import argparse
import html
import importlib
import os
import pkgutil
import pydoc
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jdp", "accounting", "kip")


def module_names(prefix: str | None = None) -> list[str]:
    """Every module of the three packages (``prefix``: only those under it), sorted."""
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            names.append(info.name)
    if prefix:
        names = [n for n in names if n == prefix or n.startswith(prefix + ".")]
    return sorted(set(names))


def build(out: Path, prefix: str | None = None) -> tuple[list[str], dict[str, str]]:
    """Write one page per module into ``out`` and ``index.html``; the pages written and the
    modules that failed to import (name -> error)."""
    out.mkdir(parents=True, exist_ok=True)
    written, failed = [], {}
    for name in module_names(prefix):
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 (reported on the index, exit 1)
            failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        page = pydoc.html.page(pydoc.describe(module), pydoc.html.document(module, name))
        tmp = out / f".{name}.html.tmp"
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out / f"{name}.html")
        written.append(name)
    items = [f'<li><a href="{n}.html">{n}</a></li>' for n in written]
    items += [f"<li>{n}: failed to import ({html.escape(e)})</li>" for n, e in failed.items()]
    index = (
        "<!doctype html><html><head><meta charset='utf-8'><title>jdp API reference</title>"
        "</head><body><h1>jdp API reference</h1><p>Generated from the docstrings by "
        "<code>python scripts/api_docs.py</code> (pydoc).</p><ul>" + "".join(items) + "</ul>"
        "</body></html>"
    )
    tmp = out / ".index.html.tmp"
    tmp.write_text(index, encoding="utf-8")
    os.replace(tmp, out / "index.html")
    return written, failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="api_docs.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "api", help="output folder")
    p.add_argument("--only", help="a package or module: document only what is under it")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    written, failed = build(args.out, args.only)
    print(f"wrote {len(written)} pages and {args.out / 'index.html'}")
    for name, error in failed.items():
        print(f"failed to import {name}: {error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
