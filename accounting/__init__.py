"""Privacy accounting: events, accountants, the ledger and calibration.

numpy/scipy only: this package never sees data, keys or arrays of records.
"""

from accounting.budget import PrivacyBudget
from accounting.ledger import LedgerEntry, PrivacyLedger

__all__ = ["LedgerEntry", "PrivacyBudget", "PrivacyLedger"]
