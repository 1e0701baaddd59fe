"""Deprecated alias of :mod:`rankbridge.analysis.quality_gate` (:func:`gate`, :func:`assert_retrieval_quality`).

Importing it warns once (``DeprecationWarning``); every name is the object of the new module. Use
``rankbridge.gate(...)`` or ``from rankbridge.analysis import gate``.
"""

from __future__ import annotations

from rankbridge._deprecated import warn_moved
from rankbridge.analysis.quality_gate import (
    EXIT_FAILED,
    EXIT_PASSED,
    MAX_UNSCORED,
    GateResult,
    assert_retrieval_quality,
    gate,
)

__all__ = ["EXIT_FAILED", "EXIT_PASSED", "MAX_UNSCORED", "GateResult", "assert_retrieval_quality", "gate"]

warn_moved(__name__, "rankbridge.analysis", also_called=True)
