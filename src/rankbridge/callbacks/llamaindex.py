"""Deprecated alias of :mod:`rankbridge.frameworks.llamaindex.capture`.

Importing it warns once (``DeprecationWarning``); every name is the object of the new module.
"""

from __future__ import annotations

import warnings

from rankbridge.frameworks.llamaindex.capture import *  # noqa: F403
from rankbridge.frameworks.llamaindex.capture import __all__ as __all__

warnings.warn(
    "rankbridge.callbacks.llamaindex is deprecated: import from "
    "rankbridge.frameworks.llamaindex.capture instead (same names)",
    DeprecationWarning,
    stacklevel=2,
)
