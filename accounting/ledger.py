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
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import attr

from accounting import events as ev
from accounting.compose import (
    BEST,
    Bound,
    best_delta,
    best_epsilon,
    compute_delta,
    compute_epsilon,
    make_accountant,
)
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
    def epsilon(self, delta: float, accountant: str = BEST) -> float:
        """Smallest epsilon such that the composed ledger is (epsilon, delta)-DP.

        ``accountant`` defaults to :data:`~accounting.compose.BEST`: the minimum over the
        rigorous accountants that analyse every entry (:meth:`epsilon_bound` names which);
        any name of :data:`accounting.compose.ACCOUNTANTS` forces that one. ``delta = 0``
        asks for pure DP and is finite only when every entry is pure.
        """
        return self.epsilon_bound(delta, accountant).value

    def epsilon_bound(self, delta: float, accountant: str = BEST) -> Bound:
        """:meth:`epsilon` with the accountant that gave it and the others' answers
        (:func:`accounting.compose.best_epsilon`; a forced ``accountant`` is the only one)."""
        if delta != 0:
            check_open_unit("delta", delta)
        return self._account(best_epsilon, compute_epsilon, delta, accountant)

    def delta(self, epsilon: float, accountant: str = BEST) -> float:
        """Smallest delta such that the composed ledger is (epsilon, delta)-DP (accountants
        as :meth:`epsilon`)."""
        check_nonnegative("epsilon", epsilon)
        return self._account(best_delta, compute_delta, epsilon, accountant).value

    def _account(
        self,
        best: Callable[..., Bound],
        compute: Callable[..., float],
        value: float,
        accountant: str,
    ) -> Bound:
        """``best`` (or ``compute`` with a forced accountant) of :attr:`event` at ``value``,
        under this ledger's relation, cached."""
        key = (compute.__name__, float(value), accountant)
        if key not in self._cache:
            kwargs = {"neighboring_relation": self.neighboring_relation}
            if accountant == BEST:
                self._cache[key] = best(self.event, value, **kwargs)
            else:
                answer = compute(self.event, value, accountant=accountant, **kwargs)
                self._cache[key] = Bound(answer, accountant, {accountant: answer})
        return self._cache[key]

    def breakdown(self, delta: float, accountant: str = BEST) -> list[dict[str, Any]]:
        """Per-entry epsilon at ``delta`` (each entry accounted alone, for reading only:
        the composed epsilon is smaller than the sum)."""
        rows = []
        for entry in self.entries:
            rows.append(
                {
                    "label": entry.label,
                    "mode": entry.mode,
                    "epsilon_alone": self._alone([entry]).epsilon(delta, accountant),
                    "event": event_to_dict(entry.event),
                }
            )
        return rows

    def _alone(self, entries: list[LedgerEntry]) -> PrivacyLedger:
        """A ledger of ``entries`` only (this one, with its cache, when they are all of it)."""
        if tuple(entries) == self.entries:
            return self
        return PrivacyLedger(tuple(entries), self.neighboring_relation)

    def groups(self) -> list[list[LedgerEntry]]:
        """Runs of consecutive entries with the same label and mode (e.g. the 20 ``dp-em``
        iterations of a P3GM fit, whose notes count them: "iteration 3 of 20"), in order.
        Notes are not compared: the statement summarises, the full ledger keeps each note."""
        out: list[list[LedgerEntry]] = []
        for entry in self.entries:
            last = out[-1][0] if out else None
            if last is not None and (last.label, last.mode) == (entry.label, entry.mode):
                out[-1].append(entry)
            else:
                out.append([entry])
        return out

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

    def report(self, delta: float, accountant: str = BEST) -> str:
        """A privacy statement a data holder can read.

        The first line is the guarantee, ``(epsilon, delta)`` of the whole ledger, naming the
        accountant that gave it (and what the other valid ones give); then what the
        neighbouring relation and delta mean; then what each step spent, repeated entries
        grouped (``dp-em x 20: epsilon 0.1 each, 0.5 together``). Each figure is that step
        accounted alone at the same delta: they do not add up to the total, which composes
        all steps together (tighter than adding).
        """
        bound = self.epsilon_bound(delta, accountant)
        n = len(self.entries)
        relation = self.neighboring_relation.name
        entries = "entry" if n == 1 else "entries"
        head = (
            f"Privacy: ({_num(bound.value)}, {delta:.3g})-DP under {_RELATION_NAMES[relation]} "
            f"neighbours ({_accountants(bound)}; {n} ledger {entries})"
        )
        lines = [head]
        if self.has_paper_mode:
            lines[0] = f"Paper mode: {PAPER_CLAIM} -- NOT a DP guarantee. {lines[0]}"
        lines.append(f"  {_meaning(bound.value, relation)}")
        lines.append(f"  {_delta_words(delta)}")
        if len(self.groups()) > 1:
            lines.append(
                "  Each step below is accounted alone at the same delta; the steps do not add "
                "up to the total, which composes them together (tighter than adding):"
            )
        for group in self.groups():
            head = group[0]
            alone = self._alone(group).epsilon(delta, accountant)
            if len(group) == 1:
                text = f"  - {head.label}: epsilon {_num(alone)}"
            else:
                each = sorted({self._alone([e]).epsilon(delta, accountant) for e in group})
                per = _num(each[0]) if len(each) == 1 else f"{_num(each[0])}-{_num(each[-1])}"
                text = (
                    f"  - {head.label} x {len(group)}: epsilon {per} each, {_num(alone)} together"
                )
            if head.mode == "paper":
                text += f"  [paper mode: {head.note or PAPER_CLAIM}]"
            lines.append(text)
        return "\n".join(lines)


_RELATION_NAMES = {"ADD_OR_REMOVE_ONE": "add/remove-one", "REPLACE_ONE": "replace-one"}
#: What each relation protects, in a data holder's words.
_RELATION_MEANING = {
    "ADD_OR_REMOVE_ONE": "whether or not any one row is in the data",
    "REPLACE_ONE": "whatever any one row holds (the number of rows is treated as public)",
}


def _meaning(epsilon: float, relation: str) -> str:
    """What the guarantee protects: ``e^epsilon`` as a likelihood factor, per relation."""
    factor = "an unbounded factor" if epsilon > 700 else f"e^epsilon = {math.exp(epsilon):.3g}x"
    return (
        f"Meaning: {_RELATION_MEANING[relation]}, no outcome becomes more than {factor} more "
        "likely; each row is protected."
    )


def _num(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.4g}"


def _accountants(bound: Bound) -> str:
    """``"PLD accountant; RDP gives 1.07"``: who gave the bound, and the others' answers."""
    if math.isinf(bound.value):
        return "not private: an entry has no finite guarantee"
    title = _title(bound.accountant)
    others = [
        f"{_title(name)} gives {_num(value)}"
        for name, value in bound.by_accountant.items()
        if value not in (bound.value, float("inf"))
    ]
    return f"{title} accountant" + "".join(f"; {o}" for o in others)


def _title(name: str) -> str:
    """An accountant's title; ``"basic+<name>"`` (:func:`accounting.compose.best_epsilon`'s
    split) as basic composition of the pure steps with that accountant on the rest."""
    if name.startswith("basic+"):
        return f"pure steps added to the {make_accountant(name[len('basic+'):]).title}"
    return make_accountant(name).title


def _delta_words(delta: float) -> str:
    if delta == 0:
        return "delta = 0: pure DP, the bound holds for every output with no exception."
    return (
        f"delta = {delta:.3g} is the probability that the epsilon bound may fail; it must be "
        "well below 1/n for n rows (else one row could be released outright)."
    )
