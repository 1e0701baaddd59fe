"""Deprecated alias of :mod:`rankbridge.frameworks`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module:
``adapt`` and the adapters now live in :mod:`rankbridge.frameworks` (``frameworks/llamaindex/adapter.py``,
``frameworks/langchain/adapter.py``, ``frameworks/plain.py``).
"""

from __future__ import annotations

from rankbridge._deprecated import warn_moved
from rankbridge.frameworks import (
    DEFAULT_K,
    AdapterBase,
    CallableRetriever,
    LangChainRetriever,
    LlamaIndexRetriever,
    Staged,
    adapt,
)

__all__ = [
    "DEFAULT_K",
    "AdapterBase",
    "CallableRetriever",
    "LangChainRetriever",
    "LlamaIndexRetriever",
    "Staged",
    "adapt",
]

warn_moved(__name__, "rankbridge.frameworks")
