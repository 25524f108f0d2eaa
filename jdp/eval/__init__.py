"""Evaluation of synthetic data against the user's own real data.

Evaluation is not a release: it reads the real tables freely and its numbers carry no
privacy guarantee. Nothing computed here is ever passed to a synthesizer.
"""

from jdp.eval.marginals import column_distances, two_way_tvd
from jdp.eval.queries import query_error_summary, random_queries, relative_errors
from jdp.eval.report import evaluate_tables, write_report
from jdp.eval.utility import METRICS, paper_classifiers, tstr_table

__all__ = [
    "METRICS",
    "column_distances",
    "evaluate_tables",
    "paper_classifiers",
    "query_error_summary",
    "random_queries",
    "relative_errors",
    "tstr_table",
    "two_way_tvd",
    "write_report",
]
