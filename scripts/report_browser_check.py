"""Render a ``report.html`` in headless Chromium and check that it displays.

Checks, each printed as one line (exit status 1 when one fails):

- the page loads with no console error: Chromium's ``--enable-logging=stderr`` log holds no
  page console message and no failed load (``net::ERR_``). Headless Chromium logs every
  console message at level INFO, whatever its level in the page, so any ``CONSOLE`` line
  counts: the report has no script, so a console message can only be an error (an uncaught
  exception, a blocked or failed resource);
- every figure is present and decoded: the DOM after load (``--dump-dom``) holds the expected
  number of ``<img>`` elements whose ``src`` is a non-empty ``data:image/png;base64`` URI
  that decodes to a PNG (and the page names no ``http(s)://`` resource);
- the screenshot (``--screenshot``, 1280 px wide, ``--height`` px tall: 4000 by default) is
  a PNG that is not blank (its pixels vary).

Usage::

    python scripts/report_browser_check.py REPORT_DIR/report.html --screenshot shot.png

Chromium runs with a fresh temporary profile, no network services and no GPU (the flags in
:data:`FLAGS`); it is Debian's ``chromium`` at ``/usr/bin/chromium`` unless ``--chromium``
names another. Prints a JSON summary with ``--json``.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.image import imread

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Chromium's log: console messages of the page (all logged as INFO), and failed loads
CONSOLE_ERROR = re.compile(r":CONSOLE[:(]|net::ERR_")
IMG = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", re.IGNORECASE)
EXTERNAL = re.compile(r"(?:src|href)\s*=\s*[\"']?\s*https?://", re.IGNORECASE)


def chromium(
    binary: str, page: Path, extra: list[str], timeout: float
) -> subprocess.CompletedProcess:
    """Run headless Chromium once on ``page`` with a fresh profile; return the finished
    process (stdout: the dump, stderr: the log)."""
    with tempfile.TemporaryDirectory(prefix="jdp-chromium-") as profile:
        return subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def console_errors(log: str) -> list[str]:
    """The lines of a Chromium log that report a page console message or a failed load."""
    return [line for line in log.splitlines() if CONSOLE_ERROR.search(line)]


def decoded_images(dom: str) -> tuple[int, int]:
    """``(number of <img>, number whose src is a base64 PNG data URI that decodes to a PNG)``."""
    sources = IMG.findall(dom)
    good = 0
    for src in sources:
        prefix = "data:image/png;base64,"
        if not src.startswith(prefix) or len(src) == len(prefix):
            continue
        try:
            data = base64.b64decode(src[len(prefix) :], validate=True)
        except ValueError:
            continue
        good += data[:8] == PNG_MAGIC
    return len(sources), good


def check(
    page: Path,
    screenshot: Path,
    *,
    binary: str = CHROMIUM,
    expected_images: int | None = None,
    height: int = 4000,
    timeout: float = 120.0,
) -> dict:
    """Render ``page``, write ``screenshot``; return the checks' results.

    Returns:
        ``{"ok": bool, "console_errors": lines, "images": n, "decoded_images": n,
        "external_resources": n, "screenshot": path, "screenshot_std": float,
        "failures": [text]}``; ``ok`` is true when there is no console error, no external
        resource, every ``<img>`` decodes (at least one, or ``expected_images``), and the
        screenshot is a non-blank PNG.
    """
    page = Path(page)
    screenshot = Path(screenshot)
    logging = ["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]
    dumped = chromium(binary, page, [*logging, "--dump-dom"], timeout)
    shot = chromium(
        binary,
        page,
        [*logging, f"--screenshot={screenshot.resolve()}", f"--window-size=1280,{height}"],
        timeout,
    )
    errors = console_errors(dumped.stderr) + console_errors(shot.stderr)
    n_images, n_decoded = decoded_images(dumped.stdout)
    external = len(EXTERNAL.findall(page.read_text()))
    std = 0.0
    if screenshot.is_file() and screenshot.read_bytes()[:8] == PNG_MAGIC:
        std = float(np.asarray(imread(screenshot), dtype=float).std())
    failures = []
    if dumped.returncode or shot.returncode:
        failures.append(f"chromium exited with {dumped.returncode} / {shot.returncode}")
    if errors:
        failures.append(f"{len(errors)} console error line(s), first: {errors[0]}")
    if external:
        failures.append(f"{external} external http(s) resource(s) in the page")
    if n_decoded != n_images or n_images == 0:
        failures.append(f"{n_decoded} of {n_images} <img> decode as PNG data URIs")
    if expected_images is not None and n_images != expected_images:
        failures.append(f"expected {expected_images} images in the page, found {n_images}")
    if std == 0.0:
        failures.append(f"screenshot {screenshot} is missing or blank")
    return {
        "ok": not failures,
        "console_errors": errors,
        "images": n_images,
        "decoded_images": n_decoded,
        "external_resources": external,
        "screenshot": str(screenshot),
        "screenshot_std": std,
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="the report.html to render")
    parser.add_argument("--screenshot", type=Path, required=True, help="PNG to write")
    parser.add_argument("--chromium", default=CHROMIUM, help=f"browser binary ({CHROMIUM})")
    parser.add_argument("--images", type=int, help="the number of figures the page must hold")
    parser.add_argument("--height", type=int, default=4000, help="screenshot height in px")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if not Path(args.chromium).is_file():
        print(f"chromium not found at {args.chromium} (apt-get install chromium)", file=sys.stderr)
        return 2
    result = check(
        args.page,
        args.screenshot,
        binary=args.chromium,
        expected_images=args.images,
        height=args.height,
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(f"images: {result['decoded_images']} of {result['images']} decoded")
        print(f"console errors: {len(result['console_errors'])}")
        print(f"external resources: {result['external_resources']}")
        print(f"screenshot: {result['screenshot']} (pixel std {result['screenshot_std']:.3f})")
        print("ok" if result["ok"] else "FAILED: " + "; ".join(result["failures"]))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
