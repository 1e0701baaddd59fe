"""Deprecated alias of :mod:`rankbridge.frameworks.llamaindex.capture_legacy`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.frameworks.llamaindex.capture_legacy import *  # noqa: F403
from rankbridge.frameworks.llamaindex.capture_legacy import __all__ as __all__

warnings.warn(
    "rankbridge.callbacks.llamaindex_legacy is deprecated: import from "
    "rankbridge.frameworks.llamaindex.capture_legacy instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
