"""The data holder's own table of the issue "A data holder's own table": an integer ID, a
date, a free-text comment, missing values, an 800-level city, a skewed income, a
zero-inflated count, as the CLI tests read it from a CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 1852


def write_own_csv(path: Path, rows: int = ROWS) -> Path:
    """Write the table to ``path`` (missing incomes as empty cells) and return ``path``."""
    rng = np.random.default_rng(3)
    income = np.round(rng.lognormal(10, 1.5, rows), 2)
    visits = np.where(rng.random(rows) < 0.7, 0, rng.geometric(0.2, rows))
    frame = pd.DataFrame(
        {
            "id": np.arange(500_000, 500_000 + rows),
            "visit_date": pd.Timestamp("2021-03-01")
            + pd.to_timedelta(rng.integers(0, 700, rows), "D"),
            "comment": [f"private remark number {i}" for i in range(rows)],
            "city": rng.choice([f"Town{k:03d}" for k in range(800)], rows),
            "region": rng.choice(["North", "South", "NA"], rows),  # "NA" is a region
            "income": income,
            "visits": visits,
            "age": rng.integers(18, 90, rows),
            "y": rng.choice(["no", "yes"], rows),
        }
    )
    frame.loc[rng.random(rows) < 0.05, "income"] = np.nan
    frame.to_csv(path, index=False)
    return path
