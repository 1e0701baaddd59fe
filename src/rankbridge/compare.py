"""Deprecated alias of :mod:`rankbridge.analysis` for :func:`compare`, :func:`slices` and :func:`failures`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new modules
(:mod:`rankbridge.analysis.comparison`, :mod:`~rankbridge.analysis.slicing`, :mod:`~rankbridge.analysis.failed`).
Use ``rankbridge.compare(...)`` or ``from rankbridge.analysis import compare``.
"""

from __future__ import annotations

from rankbridge._deprecated import warn_moved
from rankbridge.analysis import (
    NO_VALUE,
    TIE_TOLERANCE,
    Comparison,
    FailedQuery,
    Failures,
    PairedComparison,
    QueryRow,
    RunFailures,
    Slice,
    SliceTable,
    compare,
    failures,
    slices,
)

__all__ = [
    "NO_VALUE",
    "TIE_TOLERANCE",
    "Comparison",
    "FailedQuery",
    "Failures",
    "PairedComparison",
    "QueryRow",
    "RunFailures",
    "Slice",
    "SliceTable",
    "compare",
    "failures",
    "slices",
]

warn_moved(__name__, "rankbridge.analysis", also_called=True)
