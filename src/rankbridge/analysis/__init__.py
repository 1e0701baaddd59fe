"""Analysis of evaluations: comparing runs, slicing, failure lists, the quality gate, the relevance profile.

Everything here works on :class:`~rankbridge.Evaluation` objects (per-query values) and produces plain,
JSON-ready results; nothing here renders a report or parses a command line.

* :mod:`rankbridge.analysis.paired` -- the paired-comparison kernel (difference with its interval, paired
  test, effect size, wins/ties/losses), used by both :func:`compare` and :func:`gate`;
* :mod:`rankbridge.analysis.comparison` -- :func:`compare` and :class:`Comparison` (means, paired
  comparisons with Holm's correction, per-query table);
* :mod:`rankbridge.analysis.slicing` -- :func:`slices` (means per query category or metadata field);
* :mod:`rankbridge.analysis.failed` -- :func:`failures` (the queries a run gets wrong);
* :mod:`rankbridge.analysis.quality_gate` -- :func:`gate` and :func:`assert_retrieval_quality` (CI gates);
* :mod:`rankbridge.analysis.relevance` -- the relevance profile of a run's top results.

The module names differ from the function names on purpose: importing a submodule binds its name on the
package, which would otherwise replace the function ``rankbridge.analysis.compare`` by a module.
"""

from __future__ import annotations

from rankbridge.analysis.comparison import Comparison, PairedComparison, QueryRow, compare
from rankbridge.analysis.failed import FailedQuery, Failures, RunFailures, failures
from rankbridge.analysis.paired import TIE_TOLERANCE, PairedDifference, paired_differences
from rankbridge.analysis.quality_gate import EXIT_FAILED, EXIT_PASSED, GateResult, assert_retrieval_quality, gate
from rankbridge.analysis.relevance import TopLabels, top_labels
from rankbridge.analysis.slicing import NO_VALUE, Slice, SliceTable, slices

__all__ = [
    "EXIT_FAILED",
    "EXIT_PASSED",
    "NO_VALUE",
    "TIE_TOLERANCE",
    "Comparison",
    "FailedQuery",
    "Failures",
    "GateResult",
    "PairedComparison",
    "PairedDifference",
    "QueryRow",
    "RunFailures",
    "Slice",
    "SliceTable",
    "TopLabels",
    "assert_retrieval_quality",
    "compare",
    "failures",
    "gate",
    "paired_differences",
    "slices",
    "top_labels",
]
