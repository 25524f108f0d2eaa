"""Evaluation of synthetic data against the user's own real data.

Evaluation is not a release: it reads the real tables freely and its numbers carry no
privacy guarantee. Nothing computed here is ever passed to a synthesizer.
"""

from jdp.eval.utility import METRICS, paper_classifiers, tstr_table

__all__ = ["METRICS", "paper_classifiers", "tstr_table"]
