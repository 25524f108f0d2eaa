"""The report's tables in words, shared by its Markdown (:mod:`jdp.eval.report`) and HTML
(:mod:`jdp.eval.html_report`) renderings: per-column rows with the real split beside them,
settings and privacy-ledger entries as rows a person reads (never a Python dict repr)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

#: The per-column table's fields, in order, in both renderings (:func:`column_rows`).
COLUMN_FIELDS = (
    "column", "kind", "tvd", "tvd_real_split", "ks", "ks_real_split", "ks_pvalue",
    "wasserstein_scaled",
)  # fmt: skip


def column_rows(evaluation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-column distances, each with the held-out real table's ``tvd_real_split`` and
    ``ks_real_split`` beside it (``None`` without a real split)."""
    reference = evaluation.get("reference")
    rows = [dict(row) for row in evaluation["columns"]]
    for i, row in enumerate(rows):
        ref = None if reference is None else reference["columns"][i]
        row["tvd_real_split"] = None if ref is None else ref["tvd"]
        row["ks_real_split"] = None if ref is None else ref["ks"]
    return rows


def settings_rows(settings: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """A nested mapping as ``(dotted name, text)`` rows: nested mappings flattened
    (``scale.kind``), sequences joined with commas, numbers in their shortest form."""
    rows = []
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows += settings_rows(value, prefix=f"{name}.")
        else:
            rows.append((name, plain_value(value)))
    return rows


def plain_value(value: Any) -> str:
    """A value as a person reads it: ``None`` as "-", numbers in short form (``1e-05``,
    ``0.25``), sequences joined with commas, mappings as ``key: value`` pairs."""
    if value is None:
        return "-"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {plain_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(plain_value(v) for v in value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def ledger_rows(ledger: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per ledger entry (``ledger.to_dict()``): the step's label, its mechanism in
    words (:func:`event_text`), its mode (strict or paper) and note."""
    return [
        {
            "step": entry["label"],
            "mechanism": event_text(entry["event"]),
            "mode": entry.get("mode") or "-",
            "note": entry.get("note") or "-",
        }
        for entry in ledger["entries"]
    ]


def event_text(event: Mapping[str, Any]) -> str:
    """A privacy event's dict as one line: ``Gaussian(noise_multiplier=3.73) +
    NoiseCut(tail_mass=5.57e-296)``; composed events joined with ``+``, nested ones in
    brackets."""
    kind = str(event.get("type", "event")).removesuffix("DpEvent")
    if kind == "Composed":
        return " + ".join(event_text(e) for e in event.get("events", ()))
    params = []
    for key, value in event.items():
        if key == "type":
            continue
        if isinstance(value, Mapping):
            params.append(f"{key}=[{event_text(value)}]")
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], Mapping):
            params.append(f"{key}=[{' + '.join(event_text(v) for v in value)}]")
        else:
            params.append(f"{key}={plain_value(value)}")
    return f"{kind}({', '.join(params)})"
