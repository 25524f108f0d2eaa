"""Saving and loading fitted models: ``params.npz`` (arrays) + ``model.json`` (the rest).

A saved model is a directory holding

* ``params.npz`` -- the released parameters, a nested ``dict`` of arrays flattened to
  ``"group/name"`` keys (:func:`flatten_params`), read back with ``allow_pickle=False``;
* ``model.json`` -- the method's name, its config (a dataclass of JSON values), the public
  schema, the budget and the ledger, with a format version, the SHA-256 of ``params.npz``'s
  bytes (``params_sha256``) and a SHA-256 over the rest of ``model.json`` (``digest``: of
  the canonical JSON -- sorted keys, no spaces -- of every field but ``digest``). The schema
  is ``Schema.to_dict``'s, marks included: ``"nonprivate": true`` for a schema read off the
  data (``infer_schema_nonprivate``; the loaded model's privacy statement then says it is not
  DP as a whole). The key is optional, so models saved before it existed load unchanged (as
  declared schemas) and the format version stays.

Nothing executable is stored: loading looks the method up in the registry
(:func:`jdp.synth.base.get_method`) and rebuilds its config class from the JSON fields.

Saving is atomic and exclusive: an exclusive lock (``fcntl.flock`` on the file
``.NAME.lock`` beside the target ``NAME``, left in place) serialises concurrent saves to one
target; both files are written to a fresh temporary directory beside the target, which then
replaces the target by renames, so a crash leaves the old model or none -- never a mix of
old and new files or a partial file. Other files found in an existing target directory are
copied into the new one first (a save replaces the model, nothing else).

Loading verifies both digests and refuses, naming the file, a ``params.npz`` that is not
the one saved with this ``model.json`` (truncated, corrupted, or from another save) and a
``model.json`` whose ledger, budget or any other field was edited. A digest detects
corruption, mixed files and naive edits; it is not a signature: anyone who edits the files
can recompute it, so it does not protect a model against a deliberate forger.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import secrets
import shutil
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.schema import Schema
from jdp.synth.base import FittedModel, Params, get_method
from jdp.synth.configs import config_from_dict, config_to_dict

__all__ = [
    "FORMAT_CHANGES",
    "FORMAT_VERSION",
    "MODEL_FILE",
    "PARAMS_FILE",
    "flatten_params",
    "load",
    "model_directory",
    "replace_directory",
    "save",
    "staged_directory",
    "unflatten_params",
]

#: What each format version changed; a model of an older version is refused (refit it).
FORMAT_CHANGES = {
    2: "adds integrity digests",
    3: "P3GM's binned and state decoder heads, ClustMix's unclipped stored mixtures"
    "; DPGM's and dp-GAN's state_counts (noisy state counts sampling matches)",
    4: "configs nest their DP-SGD settings and performance flags (dpsgd, performance)",
}
FORMAT_VERSION = max(FORMAT_CHANGES)
PARAMS_FILE = "params.npz"
MODEL_FILE = "model.json"
_SEP = "/"


def flatten_params(params: Params, prefix: str = "") -> dict[str, np.ndarray]:
    """``{"a": {"b": x}}`` -> ``{"a/b": x}``; raises on a name with ``/`` or a non-numeric leaf."""
    flat: dict[str, np.ndarray] = {}
    for name, value in params.items():
        if not isinstance(name, str) or not name or _SEP in name:
            raise ValueError(
                f"parameter names must be non-empty strings without {_SEP!r}: {name!r}"
            )
        path = f"{prefix}{name}"
        if isinstance(value, Mapping):
            flat.update(flatten_params(value, path + _SEP))
        else:
            array = np.asarray(value)
            if array.dtype == object:
                raise TypeError(f"parameter {path!r} is not a numeric array")
            flat[path] = array
    return flat


def unflatten_params(flat: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Inverse of :func:`flatten_params`."""
    params: dict[str, Any] = {}
    for path, value in flat.items():
        node = params
        *parents, leaf = path.split(_SEP)
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return params


def _digest(doc: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``doc`` without its ``digest`` field."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def model_directory(directory: str | Path) -> Path:
    """``directory`` normalised (absolute when it ends in ``.`` or ``..``, so that it has a
    name to put the lock and staging directory beside); raises on an empty path."""
    if not str(directory).strip():
        raise ValueError("expected a model directory path, got an empty string")
    path = Path(os.path.normpath(directory))
    return Path(os.path.abspath(path)) if path.name in ("", ".", "..") else path


def save(model: FittedModel, directory: str | Path, *, overwrite: bool = True) -> Path:
    """Write ``model`` to ``directory`` (``params.npz`` + ``model.json``), atomically.

    Holds the target's lock (see the module docstring) from the check to the final rename.
    With ``overwrite=False`` a non-empty ``directory`` is refused (``FileExistsError``), so of
    two concurrent saves into one new directory exactly one succeeds.

    Returns the directory. Raises (leaving ``directory`` as it was) when a parameter is not a
    numeric array, ``directory`` is an existing file or an empty path.
    """
    directory = model_directory(directory)
    flat = flatten_params(model.params)
    buffer = io.BytesIO()
    np.savez(buffer, **flat)
    params_bytes = buffer.getvalue()
    doc = {
        "format_version": FORMAT_VERSION,
        "method": model.method,
        "config": config_to_dict(model.config),
        "schema": model.schema.to_dict(),
        "budget": {"epsilon": model.budget.epsilon, "delta": model.budget.delta},
        "ledger": model.ledger.to_dict(),
        "params_sha256": hashlib.sha256(params_bytes).hexdigest(),
    }
    doc["digest"] = _digest(doc)
    text = json.dumps(doc, indent=1) + "\n"
    directory.parent.mkdir(parents=True, exist_ok=True)
    with target_lock(directory):
        if directory.exists() and not directory.is_dir():
            raise ValueError(f"expected a directory to save the model in, {directory} is a file")
        if not overwrite and directory.is_dir() and any(directory.iterdir()):
            raise FileExistsError(f"{directory} is not empty (a saved model?)")
        with staged_directory(directory) as staging:
            (staging / PARAMS_FILE).write_bytes(params_bytes)
            (staging / MODEL_FILE).write_text(text)
    return directory


@contextlib.contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """Yield a new empty directory beside ``target``; when the block ends without an error,
    it replaces ``target`` (:func:`replace_directory`). It is removed on any error, so an
    interrupted write leaves the old ``target`` (or none) and no temporary directory; only a
    ``kill -9`` can leave a hidden ``.NAME.*.tmp`` beside it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(target, "tmp")
    try:
        yield staging
        replace_directory(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def target_lock(target: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``.NAME.lock`` beside ``target`` (blocks until free).

    The lock file stays after release (removing it would let a waiting process lock a file
    no longer on disk); the lock itself dies with the process, so a crash never leaves it held.
    """
    lock = target.with_name(f".{target.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


def replace_directory(new: Path, target: Path) -> None:
    """Put the complete directory ``new`` at ``target`` by renames (same file system).

    Entries of an existing ``target`` whose names ``new`` does not hold are copied into
    ``new`` first; the old ``target`` is then renamed aside, ``new`` renamed into place, the
    old one removed. A crash at any point leaves the old directory at ``target`` or nothing
    there. (Used for models and for ``jdp report``'s output.)
    """
    if not target.exists():
        os.replace(new, target)
        return
    for entry in target.iterdir():
        if (new / entry.name).exists() or (new / entry.name).is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, new / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, new / entry.name, follow_symlinks=False)
    old = _sibling(target, "old")
    os.replace(target, old / target.name)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)


def _sibling(path: Path, tag: str) -> Path:
    """A new, empty, hidden directory beside ``path`` (same file system: renames are atomic)."""
    sibling = path.with_name(f".{path.name}.{secrets.token_hex(8)}.{tag}")
    sibling.mkdir()
    return sibling


def load(directory: str | Path) -> FittedModel:
    """Inverse of :func:`save`: verify both digests, then rebuild the model.

    Raises ``FileNotFoundError`` when a file is missing and ``ValueError`` naming the file when
    ``model.json`` is not valid JSON, has another format version or an edited field, or
    ``params.npz`` is not the file saved with it (arrays are read with ``allow_pickle=False``).
    """
    directory = model_directory(directory)
    model_file, params_file = directory / MODEL_FILE, directory / PARAMS_FILE
    if not model_file.is_file():
        raise FileNotFoundError(f"no saved model in {directory} (missing {MODEL_FILE})")
    doc = _read_model_json(model_file)
    if not params_file.is_file():
        raise FileNotFoundError(f"{params_file} is missing")
    params_bytes = params_file.read_bytes()
    if hashlib.sha256(params_bytes).hexdigest() != doc["params_sha256"]:
        raise ValueError(
            f"{params_file} does not match the SHA-256 stored in {MODEL_FILE} (truncated, "
            "corrupted, or from another save)"
        )
    try:
        with np.load(io.BytesIO(params_bytes), allow_pickle=False) as npz:
            flat = {name: npz[name] for name in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{params_file} is not a readable parameter archive ({exc})") from None
    method = get_method(doc["method"])
    return FittedModel(
        method=method.name,
        params=unflatten_params(flat),
        schema=Schema.from_dict(doc["schema"]),
        config=config_from_dict(method.config_cls, doc["config"]),
        budget=PrivacyBudget(**doc["budget"]),
        ledger=PrivacyLedger.from_dict(doc["ledger"]),
    )


def _read_model_json(path: Path) -> dict[str, Any]:
    """``model.json``'s fields, after checking its format version and digest."""
    try:
        doc = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc})") from None
    version = doc.get("format_version") if isinstance(doc, dict) else None
    if version != FORMAT_VERSION:
        raise ValueError(
            f"{path} has model format version {version!r}, this jdp reads version "
            f"{FORMAT_VERSION} ({FORMAT_CHANGES[FORMAT_VERSION]}): refit the model"
        )
    if not isinstance(doc.get("params_sha256"), str) or doc.get("digest") != _digest(doc):
        raise ValueError(
            f"{path} does not match its digest: it was edited or corrupted (the ledger, "
            "budget and every other field are covered)"
        )
    return doc
