"""Deprecated alias of :mod:`rankbridge.frameworks.llamaindex.adapter`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.frameworks.llamaindex.adapter import *  # noqa: F403
from rankbridge.frameworks.llamaindex.adapter import __all__ as __all__

warnings.warn(
    "rankbridge.adapters.llamaindex is deprecated: import from "
    "rankbridge.frameworks.llamaindex.adapter instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
