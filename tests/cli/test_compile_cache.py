"""The CLI keeps compiled programs between runs in the user's cache directory (JAX's
persistent compilation cache), owner-only, with an off switch."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from jdp.cli import compile_cache_dir

ROOT = Path(__file__).resolve().parents[2]


def test_the_cache_directory_follows_the_users_cache_home_and_its_switches():
    assert compile_cache_dir({"XDG_CACHE_HOME": "/c"}) == os.path.join("/c", "jdp", "jax")
    home = os.path.join(os.path.expanduser("~"), ".cache", "jdp", "jax")
    assert compile_cache_dir({}) == home
    for off in ("off", "0", "False", " no "):
        assert compile_cache_dir({"JDP_COMPILE_CACHE": off, "XDG_CACHE_HOME": "/c"}) is None
    # JAX's own setting wins: the CLI leaves it to JAX
    assert compile_cache_dir({"JAX_COMPILATION_CACHE_DIR": "/mine"}) is None


def _fit(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    environ |= {"PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"  # keep even tiny programs
    code = "import sys; from jdp.cli import main; sys.exit(main())"
    argv = ["fit", "--dataset", "adult", "--epsilon", "1", "--out", str(tmp_path / "m"),
            "--seed", "0", "--quiet"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], env=environ, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_a_fit_leaves_its_programs_in_an_owner_only_cache(tmp_path):
    _fit(tmp_path)
    cache = tmp_path / "cache" / "jdp" / "jax"
    assert cache.is_dir() and any(cache.iterdir())
    assert stat.S_IMODE(cache.stat().st_mode) & 0o077 == 0
