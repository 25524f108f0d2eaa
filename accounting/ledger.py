"""The privacy ledger: an immutable record of every mechanism that touched private data.

A fitted model carries a :class:`PrivacyLedger`. Each entry holds a label (``"dp-pca"``,
``"dp-em"``, ``"dp-sgd"``, ...), the :mod:`accounting.events` event the mechanism actually
spent, the neighbouring relation under which that event was analysed, and whether the entry
follows a paper's own (unproven) argument (``mode="paper"``) or one we can prove
(``mode="strict"``). The (epsilon, delta) a model reports is always computed from these
entries, never typed in.

All entries of one ledger share one neighbouring relation (DESIGN.md, privacy rule 3):
recording an event analysed under another relation raises, and the caller must convert it
explicitly first (:func:`accounting.relations.convert_relation`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import attr

from accounting import events as ev
from accounting.compose import compute_delta, compute_epsilon
from accounting.relations import ADD_OR_REMOVE_ONE
from accounting.validation import check_nonnegative, check_open_unit

Mode = Literal["strict", "paper"]
#: How :meth:`PrivacyLedger.report` labels a ledger with ``mode="paper"`` entries.
PAPER_CLAIM = "paper's claimed guarantee, not proven"


def event_to_dict(event: ev.DpEvent) -> dict[str, Any]:
    """Serialise an event (ours or dp_accounting's) to plain JSON types."""
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in attr.fields(type(event)):
        value = getattr(event, f.name)
        if isinstance(value, ev.DpEvent):
            value = event_to_dict(value)
        elif isinstance(value, (list, tuple)):
            value = [event_to_dict(v) if isinstance(v, ev.DpEvent) else v for v in value]
        out[f.name] = value
    return out


def _event_classes() -> dict[str, type]:
    classes = {}
    for module in _event_modules():
        for name in dir(module):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, ev.DpEvent):
                classes[obj.__name__] = obj
    return classes


def _event_modules() -> list[Any]:
    from dp_accounting import dp_event

    return [dp_event, ev]


def event_from_dict(data: dict[str, Any]) -> ev.DpEvent:
    """Inverse of :func:`event_to_dict`."""
    data = dict(data)
    name = data.pop("type")
    classes = _event_classes()
    if name not in classes:
        raise ValueError(f"unknown privacy event type {name!r}")
    kwargs = {}
    for key, value in data.items():
        if isinstance(value, dict) and "type" in value:
            value = event_from_dict(value)
        elif isinstance(value, list):
            value = [
                event_from_dict(v) if isinstance(v, dict) and "type" in v else v for v in value
            ]
        kwargs[key] = value
    return classes[name](**kwargs)


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism application: what was spent, under which relation, and on what proof."""

    label: str
    event: ev.DpEvent
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE
    mode: Mode = "strict"
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.event, ev.DpEvent):
            raise TypeError(f"expected event to be a DpEvent, got {type(self.event).__name__}")
        if self.mode not in ("strict", "paper"):
            raise ValueError(f"expected mode in ('strict', 'paper'), got {self.mode!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "event": event_to_dict(self.event),
            "neighboring_relation": self.neighboring_relation.name,
            "mode": self.mode,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        return cls(
            label=data["label"],
            event=event_from_dict(data["event"]),
            neighboring_relation=ev.NeighboringRelation[data["neighboring_relation"]],
            mode=data.get("mode", "strict"),
            note=data.get("note", ""),
        )


@dataclass(frozen=True)
class PrivacyLedger:
    """An immutable, composable list of :class:`LedgerEntry`.

    Example:
        >>> ledger = PrivacyLedger().record("dp-pca", ev.GaussianDpEvent(4.0))
        >>> ledger.epsilon(1e-5) > 0
        True
    """

    entries: tuple[LedgerEntry, ...] = ()
    neighboring_relation: ev.NeighboringRelation = ADD_OR_REMOVE_ONE
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for entry in self.entries:
            self._check_relation(entry)

    def _check_relation(self, entry: LedgerEntry) -> None:
        if entry.neighboring_relation != self.neighboring_relation:
            raise ValueError(
                f"entry {entry.label!r} was analysed under {entry.neighboring_relation.name} but "
                f"this ledger composes under {self.neighboring_relation.name}; convert it "
                "explicitly with accounting.relations.convert_relation before recording it"
            )

    # -- building ---------------------------------------------------------------------------
    def record(
        self,
        label: str,
        event: ev.DpEvent,
        *,
        neighboring_relation: ev.NeighboringRelation | None = None,
        mode: Mode = "strict",
        note: str = "",
    ) -> PrivacyLedger:
        """Return a new ledger with one more entry (the ledger itself is never mutated)."""
        relation = (
            self.neighboring_relation if neighboring_relation is None else neighboring_relation
        )
        entry = LedgerEntry(label, event, relation, mode, note)
        return PrivacyLedger(self.entries + (entry,), self.neighboring_relation)

    def extend(self, other: PrivacyLedger) -> PrivacyLedger:
        """Sequential composition of two ledgers (same relation required)."""
        if other.neighboring_relation != self.neighboring_relation:
            raise ValueError(
                f"cannot compose a {other.neighboring_relation.name} ledger into a "
                f"{self.neighboring_relation.name} ledger without an explicit conversion"
            )
        return PrivacyLedger(self.entries + other.entries, self.neighboring_relation)

    __add__ = extend

    @property
    def event(self) -> ev.DpEvent:
        """The sequential composition of all entries as one ``ComposedDpEvent``."""
        return ev.ComposedDpEvent([e.event for e in self.entries])

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.entries]

    @property
    def has_paper_mode(self) -> bool:
        return any(e.mode == "paper" for e in self.entries)

    # -- accounting -------------------------------------------------------------------------
    def epsilon(self, delta: float, accountant: str = "rdp") -> float:
        """Smallest epsilon such that the composed ledger is (epsilon, delta)-DP.

        ``delta = 0`` asks for pure DP and is finite only when every entry is pure.
        """
        if delta != 0:
            check_open_unit("delta", delta)
        return self._account(compute_epsilon, delta, accountant)

    def delta(self, epsilon: float, accountant: str = "rdp") -> float:
        """Smallest delta such that the composed ledger is (epsilon, delta)-DP."""
        check_nonnegative("epsilon", epsilon)
        return self._account(compute_delta, epsilon, accountant)

    def _account(self, compute: Callable[..., float], value: float, accountant: str) -> float:
        """``compute(self.event, value, ...)`` under this ledger's relation, cached."""
        key = (compute.__name__, float(value), accountant)
        if key not in self._cache:
            self._cache[key] = compute(
                self.event,
                value,
                accountant=accountant,
                neighboring_relation=self.neighboring_relation,
            )
        return self._cache[key]

    def breakdown(self, delta: float, accountant: str = "rdp") -> list[dict[str, Any]]:
        """Per-entry epsilon at ``delta`` (each entry accounted alone, for reading only:
        the composed epsilon is smaller than the sum)."""
        rows = []
        for entry in self.entries:
            single = PrivacyLedger((entry,), self.neighboring_relation)
            rows.append(
                {
                    "label": entry.label,
                    "mode": entry.mode,
                    "epsilon_alone": single.epsilon(delta, accountant),
                    "event": event_to_dict(entry.event),
                }
            )
        return rows

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "neighboring_relation": self.neighboring_relation.name,
            "entries": [e.to_dict() for e in self.entries],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyLedger:
        relation = ev.NeighboringRelation[data.get("neighboring_relation", "ADD_OR_REMOVE_ONE")]
        return cls(tuple(LedgerEntry.from_dict(e) for e in data["entries"]), relation)

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        return cls.from_dict(json.loads(text))

    def report(self, delta: float, accountant: str = "rdp") -> str:
        """A human-readable privacy statement."""
        eps = self.epsilon(delta, accountant)
        relation = {"ADD_OR_REMOVE_ONE": "add/remove-one", "REPLACE_ONE": "replace-one"}.get(
            self.neighboring_relation.name, self.neighboring_relation.name
        )
        lines = [
            (
                f"Privacy: ({eps:.4g}, {delta:.3g})-DP under {relation} neighbours "
                f"({accountant} accountant, {len(self.entries)} ledger entries)"
            ),
        ]
        if self.has_paper_mode:
            lines[0] = f"Paper mode: {PAPER_CLAIM} -- NOT a DP guarantee. {lines[0]}"
        for row, entry in zip(self.breakdown(delta, accountant), self.entries, strict=True):
            flag = f"  [paper mode: {entry.note or PAPER_CLAIM}]" if row["mode"] == "paper" else ""
            lines.append(f"  - {row['label']}: epsilon alone {row['epsilon_alone']:.4g}{flag}")
        return "\n".join(lines)
