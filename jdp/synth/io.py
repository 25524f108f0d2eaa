"""Saving and loading fitted models: ``params.npz`` (arrays) + ``model.json`` (the rest).

A saved model is a directory holding

* ``params.npz`` -- the released parameters, a nested ``dict`` of arrays flattened to
  ``"group/name"`` keys (:func:`flatten_params`), read back with ``allow_pickle=False``;
* ``model.json`` -- the method's name, its config (a dataclass of JSON values), the public
  schema, the budget and the ledger, with a format version.

Nothing executable is stored: loading looks the method up in the registry
(:func:`jdp.synth.base.get_method`) and rebuilds its config class from the JSON fields.

Saving is atomic: both files are written to a fresh temporary directory beside the target,
which then replaces the target by renames, so a crash leaves the old model or none -- never
a mix of old and new files or a partial file. Other files found in an existing target
directory are copied into the new one first (a save replaces the model, nothing else).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.schema import Schema
from jdp.synth.base import FittedModel, Params, get_method

__all__ = [
    "FORMAT_VERSION",
    "MODEL_FILE",
    "PARAMS_FILE",
    "flatten_params",
    "load",
    "save",
    "unflatten_params",
]

FORMAT_VERSION = 1
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


def _config_to_dict(config: Any) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def _config_from_dict(cls: type, data: Mapping[str, Any]) -> Any:
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - fields
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields in saved model: {sorted(unknown)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def save(model: FittedModel, directory: str | Path) -> Path:
    """Write ``model`` to ``directory`` (``params.npz`` + ``model.json``), atomically.

    Returns the directory. Raises (leaving ``directory`` as it was) when a parameter is not a
    numeric array or ``directory`` is an existing file.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"expected a directory to save the model in, {directory} is a file")
    flat = flatten_params(model.params)
    doc = {
        "format_version": FORMAT_VERSION,
        "method": model.method,
        "config": _config_to_dict(model.config),
        "schema": model.schema.to_dict(),
        "budget": {"epsilon": model.budget.epsilon, "delta": model.budget.delta},
        "ledger": model.ledger.to_dict(),
    }
    text = json.dumps(doc, indent=1) + "\n"
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(directory, "tmp")
    try:
        np.savez(staging / PARAMS_FILE, **flat)
        (staging / MODEL_FILE).write_text(text)
        _replace_directory(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory


def _replace_directory(new: Path, target: Path) -> None:
    """Put the complete directory ``new`` at ``target`` by renames (same file system).

    Files of an existing ``target`` other than the model's are copied into ``new`` first;
    the old ``target`` is then renamed aside, ``new`` renamed into place, the old one removed.
    A crash at any point leaves the old directory at ``target`` or nothing there.
    """
    if not target.exists():
        os.replace(new, target)
        return
    for entry in target.iterdir():
        if entry.name in (PARAMS_FILE, MODEL_FILE):
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
    """Inverse of :func:`save` (arrays loaded with ``allow_pickle=False``)."""
    directory = Path(directory)
    if not (directory / MODEL_FILE).is_file():
        raise FileNotFoundError(f"no saved model in {directory} (missing {MODEL_FILE})")
    doc = json.loads((directory / MODEL_FILE).read_text())
    if doc.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"unsupported model format version {doc.get('format_version')!r}")
    method = get_method(doc["method"])
    with np.load(directory / PARAMS_FILE, allow_pickle=False) as npz:
        flat = {name: npz[name] for name in npz.files}
    return FittedModel(
        method=method.name,
        params=unflatten_params(flat),
        schema=Schema.from_dict(doc["schema"]),
        config=_config_from_dict(method.config_cls, doc["config"]),
        budget=PrivacyBudget(**doc["budget"]),
        ledger=PrivacyLedger.from_dict(doc["ledger"]),
    )
