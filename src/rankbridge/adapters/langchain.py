"""Deprecated alias of :mod:`rankbridge.frameworks.langchain.adapter`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.frameworks.langchain.adapter import *  # noqa: F403
from rankbridge.frameworks.langchain.adapter import __all__ as __all__

warnings.warn(
    "rankbridge.adapters.langchain is deprecated: import from "
    "rankbridge.frameworks.langchain.adapter instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
