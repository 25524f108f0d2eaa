"""Public constraints between columns, declared in the schema and enforced on synthetic rows.

A :class:`FunctionalDependency` is a declared, public mapping from one column's value to
another's (Adult's ``education`` determines ``education-num`` by the data set's codebook),
as SDV's ``FixedCombinations`` but declared rather than read off the data (reading the
combinations seen in the private table would release them). Synthesizers model the columns
as usual; :func:`enforce` then rewrites each dependent column from its determinant on the
synthetic side (post-processing: no privacy cost, Dwork & Roth 2014, Prop. 2.1), and
:func:`violations` counts the rows that broke it before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = ["FunctionalDependency", "enforce", "violations"]


@dataclass(frozen=True, kw_only=True)
class FunctionalDependency:
    """Public constraint: the value of ``dependent`` is ``mapping[value of determinant]``.

    Attributes:
        determinant: a categorical or integer column.
        dependent: the column it determines.
        mapping: every value of ``determinant`` -> the value of ``dependent`` (declared by
            the data holder from public knowledge, e.g. a codebook).
    """

    determinant: str
    dependent: str
    mapping: Mapping[Any, Any] | tuple[tuple[Any, Any], ...] = ()

    def __post_init__(self) -> None:
        # stored as a tuple of pairs, so the constraint (and the schema) stay hashable
        pairs = self.mapping.items() if isinstance(self.mapping, Mapping) else self.mapping
        object.__setattr__(self, "mapping", tuple((k, v) for k, v in pairs))

    @property
    def lookup(self) -> dict[Any, Any]:
        """``mapping`` as a dict: determinant value -> dependent value."""
        return dict(self.mapping)

    def check(self, schema: Any) -> None:
        """Raise ``ValueError`` unless both columns exist, they differ, the mapping covers
        every category of a categorical determinant, and every image is in the dependent's
        public support. ``schema`` is the :class:`jdp.data.schema.Schema` that declares the
        constraint (not imported here: the schema imports this module)."""
        for name in (self.determinant, self.dependent):
            if name not in schema.names:
                raise ValueError(f"functional dependency: no column {name!r} in the schema")
        if self.determinant == self.dependent:
            raise ValueError(f"functional dependency of {self.dependent!r} on itself")
        source, target = schema[self.determinant], schema[self.dependent]
        if source.kind == "categorical":
            missing = [c for c in source.categories if c not in self.lookup]
            if missing:
                raise ValueError(
                    f"functional dependency {self.determinant} -> {self.dependent}: no value "
                    f"for {len(missing)} categories, e.g. {missing[0]!r}"
                )
        for value in self.lookup.values():
            inside = (
                value in target.categories
                if target.kind == "categorical"
                else target.lower <= value <= target.upper
            )
            if not inside:
                raise ValueError(
                    f"functional dependency {self.determinant} -> {self.dependent}: "
                    f"{value!r} is outside {self.dependent!r}'s support"
                )

    def implied(self, frame: pd.DataFrame) -> pd.Series:
        return frame[self.determinant].map(self.lookup)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "functional_dependency",
            "determinant": self.determinant,
            "dependent": self.dependent,
            "mapping": [[k, v] for k, v in self.mapping],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FunctionalDependency:
        if data.get("type") != "functional_dependency":
            raise ValueError(f"unknown constraint type {data.get('type')!r}")
        unknown = set(data) - {"type", "determinant", "dependent", "mapping"}
        if unknown:
            raise ValueError(f"unknown functional dependency fields: {sorted(unknown)}")
        return cls(
            determinant=data["determinant"],
            dependent=data["dependent"],
            mapping=data["mapping"],
        )


def violations(frame: pd.DataFrame, constraints: Sequence[FunctionalDependency]) -> dict[str, int]:
    """Per constraint (``"determinant -> dependent"``), the rows of ``frame`` breaking it."""
    return {
        f"{c.determinant} -> {c.dependent}": int((frame[c.dependent] != c.implied(frame)).sum())
        for c in constraints
    }


def enforce(frame: pd.DataFrame, constraints: Sequence[FunctionalDependency]) -> pd.DataFrame:
    """``frame`` with each dependent column rewritten from its determinant (in order)."""
    out = frame.copy()
    for c in constraints:
        out[c.dependent] = c.implied(out).astype(frame[c.dependent].dtype)
    return out
