"""Public constraints between columns, declared in the schema and enforced on synthetic rows.

Every constraint is declared by the data holder from public knowledge, never read off the
private table (reading the combinations seen in it would release them), and is enforced on
the synthetic side only (post-processing: no privacy cost, Dwork & Roth 2014, Prop. 2.1):

* :class:`FunctionalDependency` -- one column's value determines another's (Adult's
  ``education`` determines ``education-num`` by the data set's codebook), as SDV's
  ``FixedCombinations`` but declared. :func:`enforce` rewrites the dependent column from its
  determinant.
* :class:`ForbiddenCombination` -- values that never occur together in a row (Adult's
  ``relationship=Husband`` with ``sex=Female``).
* :class:`Inequality` -- ``left <= right`` between two numeric columns in every row (two
  date columns: ``start <= end``).

A ``date`` column (sampled as ``datetime64`` dates) takes part only in an inequality with
another date column; functional dependencies and forbidden combinations refuse it.

Rows breaking a forbidden combination or an inequality cannot be repaired by rewriting one
column without changing the joint distribution in ways hard to state, so they are rejected
(:func:`admissible`) and redrawn by :func:`jdp.synth.base.sample_model`: the rows returned are
the model's own draws conditioned on meeting the constraints. :func:`violations` counts the
rows breaking each constraint (to judge a table before enforcement).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

__all__ = [
    "CONSTRAINT_TYPES",
    "Constraint",
    "ForbiddenCombination",
    "FunctionalDependency",
    "Inequality",
    "admissible",
    "constraint_from_dict",
    "describe",
    "enforce",
    "violations",
]


def _pairs(items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> tuple[tuple[Any, Any], ...]:
    """A mapping or pairs as a tuple of pairs (so that constraints and schemas stay hashable)."""
    pairs = items.items() if isinstance(items, Mapping) else items
    return tuple((k, v) for k, v in pairs)


def _fields(data: Mapping[str, Any], type_name: str, fields: set[str]) -> None:
    """Raise ``ValueError`` unless ``data`` is a constraint of ``type_name`` with no field
    outside ``fields`` (besides ``"type"``)."""
    if data.get("type") != type_name:
        raise ValueError(f"unknown constraint type {data.get('type')!r}")
    unknown = set(data) - fields - {"type"}
    if unknown:
        raise ValueError(f"unknown {type_name} fields: {sorted(unknown)}")


@dataclass(frozen=True, kw_only=True)
class FunctionalDependency:
    """Public constraint: the value of ``dependent`` is ``mapping[value of determinant]``.

    Attributes:
        determinant: a categorical or integer column.
        dependent: the column it determines.
        mapping: every value of ``determinant`` -> the value of ``dependent`` (declared by
            the data holder from public knowledge, e.g. a codebook).
    """

    TYPE: ClassVar[str] = "functional_dependency"

    determinant: str
    dependent: str
    mapping: Mapping[Any, Any] | tuple[tuple[Any, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "mapping", _pairs(self.mapping))

    @property
    def lookup(self) -> dict[Any, Any]:
        """``mapping`` as a dict: determinant value -> dependent value."""
        return dict(self.mapping)

    @property
    def label(self) -> str:
        """``"determinant -> dependent"``."""
        return f"{self.determinant} -> {self.dependent}"

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
        for name in (self.determinant, self.dependent):
            if schema[name].kind == "date":
                raise ValueError(
                    f"functional dependency {self.label}: {name!r} is a date column (not "
                    "supported in a functional dependency)"
                )
        source, target = schema[self.determinant], schema[self.dependent]
        if source.kind == "categorical":
            missing = [c for c in source.categories if c not in self.lookup]
            if missing:
                raise ValueError(
                    f"functional dependency {self.label}: no value "
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
                    f"functional dependency {self.label}: "
                    f"{value!r} is outside {self.dependent!r}'s support"
                )

    def implied(self, frame: pd.DataFrame) -> pd.Series:
        return frame[self.determinant].map(self.lookup)

    def violated(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of the rows whose dependent differs from the value it should have."""
        return (frame[self.dependent] != self.implied(frame)).to_numpy(dtype=bool)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "determinant": self.determinant,
            "dependent": self.dependent,
            "mapping": [[k, v] for k, v in self.mapping],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FunctionalDependency:
        _fields(data, cls.TYPE, {"determinant", "dependent", "mapping"})
        return cls(
            determinant=data["determinant"],
            dependent=data["dependent"],
            mapping=data["mapping"],
        )


@dataclass(frozen=True, kw_only=True)
class ForbiddenCombination:
    """Public constraint: no row holds all of ``values`` at once.

    ``ForbiddenCombination(values={"relationship": "Husband", "sex": "Female"})`` forbids
    female husbands; a single pair forbids one value of a column outright.

    Attributes:
        values: column -> value, at least one pair, each column once: a category of a
            categorical column or a whole number within an integer column's bounds
            (continuous columns are refused: one value has probability 0). A missing value
            never matches.
    """

    TYPE: ClassVar[str] = "forbidden_combination"

    values: Mapping[str, Any] | tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _pairs(self.values))

    @property
    def label(self) -> str:
        """``"not (relationship=Husband, sex=Female)"``."""
        return "not (" + ", ".join(f"{name}={value}" for name, value in self.values) + ")"

    def check(self, schema: Any) -> None:
        """Raise ``ValueError`` unless there is at least one pair, no column is named twice,
        and every value lies in its column's public support (all the bad pairs in one
        message). ``schema`` is the :class:`jdp.data.schema.Schema` declaring it."""
        if not self.values:
            raise ValueError("forbidden combination: expected at least one column=value pair")
        names = [name for name, _ in self.values]
        problems = [f"column {n!r} named twice" for n in sorted(set(names)) if names.count(n) > 1]
        problems += [p for name, value in self.values if (p := _outside(schema, name, value))]
        if problems:
            raise ValueError(f"forbidden combination {self.label}: " + "; ".join(problems))

    def violated(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of the rows holding every value of the combination."""
        mask = np.ones(len(frame), dtype=bool)
        for name, value in self.values:
            mask &= (frame[name] == value).to_numpy(dtype=bool, na_value=False)
        return mask

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "values": dict(self.values)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ForbiddenCombination:
        _fields(data, cls.TYPE, {"values"})
        if not isinstance(data["values"], Mapping):
            raise TypeError(
                f"expected values to be an object column -> value, got {data['values']!r}"
            )
        return cls(values=data["values"])


def _outside(schema: Any, name: str, value: Any) -> str | None:
    """Why ``name=value`` is outside the public support of ``schema``, else ``None``."""
    if name not in schema.names:
        return f"no column {name!r} in the schema"
    column = schema[name]
    if column.kind == "categorical":
        return None if value in column.categories else f"{value!r} is not a category of {name!r}"
    if column.kind == "date":
        return f"{name!r} is a date column (not supported in a forbidden combination)"
    if column.kind == "continuous":
        return f"{name!r} is continuous (one value has probability 0)"
    whole = (
        isinstance(value, Real)
        and not isinstance(value, (bool, np.bool_))
        and float(value).is_integer()
    )
    if not whole:
        return f"{name!r} holds integers, got {value!r}"
    if not column.lower <= value <= column.upper:
        return f"{value!r} is outside {name!r}'s bounds [{column.lower}, {column.upper}]"
    return None


@dataclass(frozen=True, kw_only=True)
class Inequality:
    """Public constraint: ``left <= right`` in every row where both are present.

    Attributes:
        left: a numeric (integer, continuous or date) column.
        right: another numeric column, whose upper bound is at least ``left``'s lower bound
            (else no row could meet it); a date column if and only if ``left`` is one.
    """

    TYPE: ClassVar[str] = "less_equal"

    left: str
    right: str

    @property
    def label(self) -> str:
        """``"left <= right"``."""
        return f"{self.left} <= {self.right}"

    def check(self, schema: Any) -> None:
        """Raise ``ValueError`` unless both columns exist, differ, are numeric and some pair
        of values within their bounds meets the inequality."""
        for name in (self.left, self.right):
            if name not in schema.names:
                raise ValueError(f"inequality {self.label}: no column {name!r} in the schema")
            if schema[name].kind == "categorical":
                raise ValueError(f"inequality {self.label}: {name!r} is categorical")
        if self.left == self.right:
            raise ValueError(f"inequality {self.label}: the two columns must differ")
        left, right = schema[self.left], schema[self.right]
        if (left.kind == "date") != (right.kind == "date"):
            raise ValueError(
                f"inequality {self.label}: a date column is compared only with another date column"
            )
        if left.lower > right.upper:
            raise ValueError(
                f"inequality {self.label}: no row can meet it ({self.left!r} >= {left.lower} "
                f"> {right.upper} >= {self.right!r})"
            )

    def violated(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of the rows with ``left > right`` (a missing value never violates)."""
        return (frame[self.left] > frame[self.right]).to_numpy(dtype=bool, na_value=False)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "left": self.left, "right": self.right}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Inequality:
        _fields(data, cls.TYPE, {"left", "right"})
        return cls(left=data["left"], right=data["right"])


Constraint = FunctionalDependency | ForbiddenCombination | Inequality
#: The constraint classes a schema accepts.
CONSTRAINT_TYPES: tuple[type, ...] = (FunctionalDependency, ForbiddenCombination, Inequality)


def constraint_from_dict(data: Mapping[str, Any]) -> Constraint:
    """The constraint of the JSON object ``data``, by its ``"type"``."""
    by_type = {cls.TYPE: cls for cls in CONSTRAINT_TYPES}
    kind = data.get("type") if isinstance(data, Mapping) else None
    if kind not in by_type:
        raise ValueError(f"unknown constraint type {kind!r}, expected one of {sorted(by_type)}")
    return by_type[kind].from_dict(data)


def describe(constraints: Sequence[Constraint]) -> str:
    """The constraints as text: ``"education -> education-num, not (sex=Female, ...)"``."""
    return ", ".join(c.label for c in constraints)


def violations(frame: pd.DataFrame, constraints: Sequence[Constraint]) -> dict[str, int]:
    """Per constraint (its ``label``, e.g. ``"determinant -> dependent"``), the rows of
    ``frame`` breaking it."""
    return {c.label: int(c.violated(frame).sum()) for c in constraints}


def enforce(frame: pd.DataFrame, constraints: Sequence[Constraint]) -> pd.DataFrame:
    """``frame`` with each functional dependency's dependent column rewritten from its
    determinant (in order); the other constraints are left to :func:`admissible`."""
    out = frame.copy()
    for c in constraints:
        if isinstance(c, FunctionalDependency):
            out[c.dependent] = c.implied(out).astype(frame[c.dependent].dtype)
    return out


def admissible(frame: pd.DataFrame, constraints: Sequence[Constraint]) -> np.ndarray:
    """Boolean mask of the rows of ``frame`` that break no forbidden combination and no
    inequality (the constraints :func:`enforce` cannot repair, so the rows are redrawn)."""
    mask = np.ones(len(frame), dtype=bool)
    for c in constraints:
        if not isinstance(c, FunctionalDependency):
            mask &= ~c.violated(frame)
    return mask
