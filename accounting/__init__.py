"""Privacy accounting: events, neighbouring relations, accountants, the ledger and calibration.

numpy/scipy (and ``dp_accounting``) only: this package never sees data, keys or arrays of
records, and imports nothing of ``jdp``, ``kip`` or JAX.

* :mod:`accounting.events` -- the vocabulary of privacy events.
* :mod:`accounting.relations` -- neighbouring relations and the one conversion between them.
* :mod:`accounting.builders` -- the events of multi-step mechanisms (:func:`dpsgd_event`).
* :mod:`accounting.accountants` -- the accountant protocol, its one composition walker, and
  the accountants (RDP, PLD, GDP, zCDP, pure, moments).
* :func:`compute_epsilon` / :func:`compute_delta` -- any event, any registered accountant, or
  ``"best"``: :func:`best_epsilon` / :func:`best_delta`, the minimum over the rigorous ones that
  analyse the event, named (what :class:`PrivacyLedger` reports by default).
* :func:`calibrate` / :func:`calibrate_noise_multiplier` -- the smallest noise meeting a target.
* :class:`PrivacyLedger` -- what a fitted model spent; :class:`PrivacyBudget` -- what a user
  allows.
* :mod:`accounting.validation` -- the argument checks every layer shares.
"""

from accounting import events, relations, validation
from accounting.accountants.base import Accountant, UnsupportedEventError
from accounting.budget import PrivacyBudget
from accounting.builders import dpsgd_event
from accounting.calibrate import (
    BudgetTooSmallError,
    calibrate,
    calibrate_noise_multiplier,
    calibrate_shares,
)
from accounting.compose import (
    ACCOUNTANTS,
    BEST,
    RIGOROUS,
    Bound,
    best_delta,
    best_epsilon,
    compute_delta,
    compute_epsilon,
    make_accountant,
)
from accounting.ledger import LedgerEntry, PrivacyLedger
from accounting.relations import (
    ADD_OR_REMOVE_ONE,
    REPLACE_ONE,
    NeighboringRelation,
    convert_relation,
    dpsgd_neighboring_relation,
    dpsgd_sensitivity_factor,
)

__all__ = [
    "ACCOUNTANTS",
    "ADD_OR_REMOVE_ONE",
    "BEST",
    "REPLACE_ONE",
    "RIGOROUS",
    "Accountant",
    "Bound",
    "BudgetTooSmallError",
    "LedgerEntry",
    "NeighboringRelation",
    "PrivacyBudget",
    "PrivacyLedger",
    "UnsupportedEventError",
    "best_delta",
    "best_epsilon",
    "calibrate",
    "calibrate_noise_multiplier",
    "calibrate_shares",
    "compute_delta",
    "compute_epsilon",
    "convert_relation",
    "dpsgd_event",
    "dpsgd_neighboring_relation",
    "dpsgd_sensitivity_factor",
    "events",
    "make_accountant",
    "relations",
    "validation",
]
